"""Plain word-vector files: Leader, word2vec binary, word2vec text (and fastText ``.vec``), GloVe.

Every layout is a header (or none) followed by one record per word: the framework's word tables
(:mod:`wvformats.framework.wordtables`, :mod:`wvformats.framework.texttable`), one tight loop per table, never
per-record construct code. None but Leader has magic: the plausibility the sniffers test (the header line,
records walked through the head) is declared in :mod:`wvformats.schemas.identity` (standard library only).
"""

from construct import Const, Int64ul, Struct, this
from wvformats.schemas.constructs.wordvec_lines import MAX_DIM
from wvformats.schemas.identity import (  # noqa: F401 - what the sniffers test, named here with the schemas
    GLOVE_HEAD,
    LEADER_HEAD,
    LEADER_MAGIC,
    WORD2VEC_BINARY_HEAD,
    WORD2VEC_TEXT_HEAD,
)

from wvformats.framework import HeaderLine, LeaderRecords, TextRecords, Trailer, Word2VecRecords

leader = Struct(
    "magic" / Const(LEADER_MAGIC, Int64ul) * "u64 38941 (bytes 1d 98 00 00 00 00 00 00)",
    "vocab_size" / Int64ul * "number of records",
    "dim" / Int64ul * "float32 values per vector",
    "records" / LeaderRecords(this.vocab_size, this.dim, max_dim=MAX_DIM)
    * "vocab_size x (u32 byte length, UTF-8 word, dim x f32 little-endian); no padding",
    "trailer" / Trailer() * "bytes after the last record (ignored by readers, kept for the round trip)",
)

word2vec_binary = Struct(
    "header" / HeaderLine() * 'ASCII "<vocab_size> <dim>\\n"',
    "records" / Word2VecRecords(this.header.count, this.header.dim, max_dim=MAX_DIM)
    * "vocab_size x ([\\n...] word bytes, space, dim x f32 little-endian); word2vec.c adds \\n after each",
    "trailer" / Trailer() * "bytes after the last record (word2vec.c's final \\n)",
)

word2vec_text = Struct(
    "header" / HeaderLine() * 'ASCII "<vocab_size> <dim>\\n"',
    "records" / TextRecords(this.header.count, this.header.dim, max_dim=MAX_DIM)
    * "vocab_size lines: word, then dim decimal numbers, separated by single ASCII spaces",
    "trailer" / Trailer() * "text after the declared lines",
)

glove = Struct(
    "records" / TextRecords(None, None)
    * "lines to the end of the file: word, then dim decimal numbers, separated by single ASCII spaces",
)
