"""SentencePiece ``tokenizer.model`` files: the public names of the ``sentencepiece`` family.

    import wvformats as wv
    from wvformats import sentencepiece as spm
    sp = wv.read("tokenizer.model")                  # an spm.SentencePieceModel
    sp2 = spm.add_piece(sp, "<sep>", type="USER_DEFINED")   # edits return a new model
    spm.to_hf_tokenizer(sp2)                         # a tokenizer.json as a dict
    sp2.check()                                      # what SentencePieceProcessor refuses
    spm.from_gguf(wv.read("model.gguf"))             # a GGUF's SentencePiece vocabulary; spm.to_gguf(sp) back

Every edit keeps the bytes it does not touch.
"""

from .families.sentencepiece.charsmap import CharsMap
from .families.sentencepiece.checks import check_pieces
from .families.sentencepiece.edits import add_piece, merge, remove_piece, set_normalizer, set_piece
from .families.sentencepiece.exports import InexactExportWarning, to_hf_tokenizer, to_json, to_tsv
from .families.sentencepiece.gguf import from_gguf, to_gguf
from .families.sentencepiece.model import SentencePieceModel

__all__ = ["CharsMap", "InexactExportWarning", "SentencePieceModel", "add_piece", "check_pieces", "from_gguf", "merge",
           "remove_piece", "set_normalizer", "set_piece", "to_gguf", "to_hf_tokenizer", "to_json", "to_tsv"]
