"""Plain word-vector files (word2vec binary and text, fastText ``.vec``, GloVe, Leader): the public names of the
``wordvec`` family.

    import wvformats as wv
    emb = wv.read("vectors.bin")                     # an Embeddings
    emb["king"], emb.most_similar("king")
    wv.write(emb, "vectors.txt", format="word2vec-text", style="%.6f")

``Embeddings`` is the model every embedding format reads into, with its declared parts ``Subwords`` (a subword
vocabulary) and ``Storage`` (a whole storage matrix, quantized rows); the warnings are those a read or a
conversion may give.
"""

from .embeddings import Embeddings, LazyRows, Storage, Subwords, ValuesChangedWarning
from .errors import NoFinalNewlineWarning
from .words import DuplicateWordsWarning

__all__ = ["DuplicateWordsWarning", "Embeddings", "LazyRows", "NoFinalNewlineWarning", "Storage", "Subwords",
           "ValuesChangedWarning"]
