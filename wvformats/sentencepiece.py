"""SentencePiece ``tokenizer.model`` files: the public names of the ``sentencepiece`` family.

    import wvformats as wv
    from wvformats import sentencepiece as spm
    sp = wv.read("tokenizer.model")                  # an spm.SentencePieceModel
    sp2 = spm.add_piece(sp, "<sep>", type="USER_DEFINED")   # edits return a new model
    spm.to_hf_tokenizer(sp2)                         # a tokenizer.json as a dict

Every edit keeps the bytes it does not touch.
"""

from .families.sentencepiece.model import (
    CharsMap,
    InexactExportWarning,
    SentencePieceModel,
    add_piece,
    merge,
    remove_piece,
    set_normalizer,
    set_piece,
    to_hf_tokenizer,
    to_json,
    to_tsv,
)

__all__ = ["CharsMap", "InexactExportWarning", "SentencePieceModel", "add_piece", "merge", "remove_piece",
           "set_normalizer", "set_piece", "to_hf_tokenizer", "to_json", "to_tsv"]
