"""finalfusion embeddings (``.fifu``): the public names of the ``finalfusion`` family.

    import wvformats as wv
    ff = wv.read("model.fifu", mmap=True)            # an Embeddings: words, vectors, subword lookups
    ff.embedding("unseenword"), ff.most_similar("berlin")
    finalfusion.register_chunk(42, "MyChunk", Struct(...))   # a chunk type of your own (docs/extending.md)

``reconstruct`` gives the rows of quantized storage, ``ngrams`` the character n-grams finalfusion looks a word
up by, and the three hash functions are finalfusion's (FNV-1a), fastText's and floret's.
"""

from .families.fasttext.hashing import fasttext_hash
from .families.finalfusion.codec import register_chunk
from .families.finalfusion.lookups import finalfusion_hash, floret_hashes, ngrams
from .families.finalfusion.quantized import reconstruct
from .schemas.finalfusion import CHUNK_TYPES

__all__ = ["CHUNK_TYPES", "fasttext_hash", "finalfusion_hash", "floret_hashes", "ngrams", "reconstruct",
           "register_chunk"]
