"""fastText binary models (``.bin``; quantized ``.ftz``), as ``FastText::saveModel`` writes them.

All values little-endian, no padding anywhere. Current releases start with the magic and a version; files of
older releases start straight with the args (``dim`` where the magic would be) and have no prune index and no
quantization flags. (Checked against fastText's ``args.cc``, ``dictionary.cc``, ``fasttext.cc``,
``densematrix.cc``, ``quantmatrix.cc``, ``productquantizer.cc`` and the files in gensim's test data.)
"""

from enum import IntEnum

from construct import (
    Computed,
    Const,
    If,
    IfThenElse,
    Int8ul,
    Int32sl,
    Int64sl,
    Struct,
    Terminated,
    len_,
    this,
)
from wvformats.schemas.constructs.fasttext import EntryTable, Head
from wvformats.schemas.identity import FASTTEXT_MAGIC as MAGIC
from wvformats.schemas.identity import FASTTEXT_VERSIONS

from wvformats.framework import Derived, EnumField, NumpyArray, ShapeOf, Valid

KSUB = 256  # centroids per sub-quantizer: fastText codes with 8 bits


class Loss(IntEnum):
    """fastText's ``loss_name``: the loss a model was trained with."""

    hs = 1
    ns = 2
    softmax = 3
    ova = 4


class Model(IntEnum):
    """fastText's ``model_name`` (as its Python module names them)."""

    cbow = 1
    skipgram = 2
    supervised = 3


args = Struct(
    "dim" / Int32sl * "dimension of the vectors",
    "ws" / Int32sl * "context window size",
    "epoch" / Int32sl * "training epochs",
    "minCount" / Int32sl * "minimal number of word occurrences",
    "neg" / Int32sl * "number of negatives sampled",
    "wordNgrams" / Int32sl * "max length of word n-grams (supervised input)",
    "loss" / EnumField(Int32sl, Loss, unknown="keep") * "the training loss (another value is kept; check() names it)",
    "model" / EnumField(Int32sl, Model, unknown="keep") * "the model kind (another value is kept; check() names it)",
    "bucket" / Int32sl * "number of hash buckets for character and word n-grams",
    "minn" / Int32sl * "min length of character n-grams",
    "maxn" / Int32sl * "max length of character n-grams (0: none)",
    "lrUpdateRate" / Int32sl * "rate of learning-rate updates",
    "t" / Int64sl * "sampling threshold, the bits of an f64 (kept as bits: NaN payloads round-trip)",
)

DOUBLE_ARGS = ("t",)  # the args fastText writes as f64 (Args::save), kept above as their bits
DOUBLE_BITS, DOUBLE = "<q", "<d"  # how: an i64 (Int64sl) holding an f64's bytes (framework.reinterpret reads it)

dictionary = Struct(
    "size" / Derived(Int32sl, len_(this.entries.types)) * "number of entries: words, then labels",
    Valid("size", this.size >= 0) * "size >= 0",
    "nwords" / Int32sl * "number of words (entries of type 0, first; the rest are labels)",
    "nlabels" / Derived(Int32sl, this.size - this.nwords) * "number of labels (entries of type 1, after the words)",
    Valid("nlabels", (this.nwords >= 0) & (this.nlabels >= 0) & (this.nwords + this.nlabels == this.size))
    * "nwords, nlabels >= 0 and nwords + nlabels == size",
    "ntokens" / Int64sl * "number of tokens seen in training",
    "pruneidx_size" / If(this._.new_format, Int64sl) * "prune index pairs (-1: not pruned; current releases)",
    "entries" / EntryTable(this.size)
    * "per entry: the bytes up to a NUL, i64 count, i8 type (0 word, 1 label); a word listed twice is found as its "
      "last entry (Dictionary::load)",
    "pruneidx" / If(this._.new_format, NumpyArray("<i4", (lambda this: max(this.pruneidx_size, 0), 2)))
    * "i32 pairs (n-gram bucket, row after nwords) of a pruned model (current releases)",
)

dense_matrix = Struct(
    "m" / Derived(Int64sl, ShapeOf(this.data, 0)) * "rows",
    "n" / Derived(Int64sl, ShapeOf(this.data, 1)) * "columns (dim)",
    "data" / NumpyArray("<f4", (this.m, this.n)) * "row-major f32 matrix",
)

product_quantizer = Struct(
    "dim" / Int32sl * "dimension of the vectors coded",
    "nsubq" / Int32sl * "number of sub-quantizers (code bytes per row)",
    "dsub" / Int32sl * "dimensions per sub-quantizer",
    "lastdsub" / Int32sl * "dimensions of the last sub-quantizer",
    Valid("lastdsub", (this.nsubq > 0) & (this.dsub > 0) & (this.lastdsub > 0)
          & ((this.nsubq - 1) * this.dsub + this.lastdsub == this.dim))
    * "(nsubq - 1) * dsub + lastdsub == dim, all > 0",
    "centroids" / NumpyArray("<f4", this.dim * KSUB) * "f32 centroids: 256 per sub-quantizer, packed",
)

quant_matrix = Struct(
    "qnorm" / Int8ul * "1 when the norms are quantized apart",
    Valid("qnorm", this.qnorm <= 1) * "qnorm is 0 or 1 (a bool)",
    "m" / Int64sl * "rows",
    "n" / Int64sl * "columns (dim)",
    "codesize" / Derived(Int32sl, len_(this.codes)) * "code bytes: m * nsubq",
    "codes" / NumpyArray("u1", this.codesize) * "u8 centroid index per row and sub-quantizer",
    "pq" / product_quantizer * "the product quantizer of the (normalised, if qnorm) rows",
    Valid("pq", (this.pq.dim == this.n) & (this.codesize == this.m * this.pq.nsubq))
    * "pq.dim == n and codesize == m * pq.nsubq",
    "norm_codes" / If(this.qnorm, NumpyArray("u1", this.m)) * "u8 norm code per row, if qnorm",
    "npq" / If(this.qnorm, product_quantizer) * "the quantizer of the norms (dim 1), if qnorm",
)

fasttext = Struct(
    "head" / Head(MAGIC) * "(not consumed) the first i32: the magic in current releases, dim in older ones",
    "new_format" / Computed(this.head == MAGIC) * "(not stored) the file starts with the magic",
    "magic" / If(this.new_format, Const(MAGIC, Int32sl)) * "793712314, in current releases only",
    "version" / If(this.new_format, Int32sl) * "format version (12 today), after the magic",
    If(this.new_format, Valid("version", (this.version >= FASTTEXT_VERSIONS[0]) & (this.version <= FASTTEXT_VERSIONS[-1]),
                              f"fastText reads versions {FASTTEXT_VERSIONS[0]} to {FASTTEXT_VERSIONS[-1]}"))
    * f"a version fastText reads: {FASTTEXT_VERSIONS[0]} to {FASTTEXT_VERSIONS[-1]}",
    "args" / args * "training arguments",
    "dictionary" / dictionary * "words and labels with their counts",
    "quant_input" / If(this.new_format, Int8ul) * "1: the input matrix is quantized (current releases)",
    Valid("quant_input", lambda this: this.quant_input in (None, 0, 1)) * "quant_input is 0 or 1 (a bool)",
    "input" / IfThenElse(this.quant_input == 1, quant_matrix, dense_matrix)
    * "word rows, then n-gram bucket rows (fewer when pruned)",
    "qout" / If(this.new_format, Int8ul) * "1: the output matrix is quantized (current releases)",
    Valid("qout", lambda this: this.qout in (None, 0, 1)) * "qout is 0 or 1 (a bool)",
    "output" / IfThenElse(this.qout == 1, quant_matrix, dense_matrix)
    * "output rows: one per word (unsupervised) or label (supervised)",
    Terminated * "end of file",
)


def args_offset(new_format: bool, field: str) -> int:
    """The byte offset of an args field in the file: after a current release's magic and version, at the start
    of an older one's."""
    at = 0
    for sub in fasttext.subcons:
        if sub.name == "args":
            break
        at += sub.sizeof(new_format=new_format)
    for sub in args.subcons:
        if sub.name == field:
            return at
        at += sub.sizeof()
    raise KeyError(field)
