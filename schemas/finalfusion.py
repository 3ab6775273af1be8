"""finalfusion (``.fifu``): a header listing chunk ids, then chunks framed as ``u32 id, u64 length, body``.

All integers little-endian. Array chunks pad with 1 to 4 zero bytes (never 0) so their f32 payload starts at
a 4-aligned absolute file offset. The chunk length counts the bytes after the length field, padding
included. (The published spec gives the wrong subword-vocab field order and quantized array shapes; this
follows finalfusion-rust and finalfusion-python 0.7.1.)
"""

from enum import IntEnum

from construct import Const, If, Int32ul, Int64ul, Struct, len_, this
from wvformats.schemas.identity import FINALFUSION_MAGIC as MAGIC
from wvformats.schemas.identity import FINALFUSION_VERSION as VERSION

from wvformats.framework import (
    AlignTo,
    CheckedBytes,
    CheckedString,
    Chunks,
    Derived,
    NumpyArray,
    ShapeOf,
    StringTable,
    Valid,
)

F32 = 10  # finalfusion's type id of float32 (its TypeId)

simple_vocab = Struct(
    "n_words" / Derived(Int64ul, len_(this.words)) * "number of words",
    "words" / StringTable(this.n_words) * "u32 byte length + UTF-8, in index order",
)

bucket_subword_vocab = Struct(
    "n_words" / Derived(Int64ul, len_(this.words)) * "number of words (first, despite the spec)",
    "min_n" / Int32ul * "shortest n-gram, in code points",
    "max_n" / Int32ul * "longest n-gram, in code points",
    "bucket_exp" / Int32ul * "2^bucket_exp buckets of the finalfusion FNV-1a hash",
    Valid("bucket_exp", this.bucket_exp < 64) * "bucket_exp < 64: the hash has 64 bits",
    "words" / StringTable(this.n_words) * "u32 byte length + UTF-8, in index order",
)

fasttext_subword_vocab = Struct(
    "n_words" / Derived(Int64ul, len_(this.words)) * "number of words (first, despite the spec)",
    "min_n" / Int32ul * "shortest n-gram, in code points",
    "max_n" / Int32ul * "longest n-gram, in code points",
    "buckets" / Int32ul * "exact number of fastText hash buckets",
    Valid("buckets", this.buckets > 0) * "buckets > 0: each n-gram's row is its hash modulo buckets",
    "words" / StringTable(this.n_words) * "u32 byte length + UTF-8, in index order",
)

floret_subword_vocab = Struct(
    "min_n" / Int32ul * "shortest n-gram, in code points",
    "max_n" / Int32ul * "longest n-gram, in code points",
    "n_buckets" / Int64ul * "number of hash buckets (there is no word list)",
    Valid("n_buckets", this.n_buckets > 0) * "n_buckets > 0: each hash word's row is it modulo n_buckets",
    "n_hashes" / Int32ul * "1 to 4 MurmurHash3 words used per n-gram",
    Valid("n_hashes", (this.n_hashes >= 1) & (this.n_hashes <= 4)) * "1 <= n_hashes <= 4: a hash has 4 words",
    "seed" / Int32ul * "MurmurHash3 x64_128 seed",
    "bow" / CheckedString("u32") * "begin-of-word marker",
    "eow" / CheckedString("u32") * "end-of-word marker",
)

explicit_subword_vocab = Struct(
    "n_words" / Derived(Int64ul, len_(this.words)) * "number of words",
    "n_ngrams" / Derived(Int64ul, lambda ctx: len(ctx.ngrams["strings"])) * "number of n-grams in the table",
    "min_n" / Int32ul * "shortest n-gram, in code points",
    "max_n" / Int32ul * "longest n-gram, in code points",
    "words" / StringTable(this.n_words) * "u32 byte length + UTF-8, in index order",
    "ngrams" / StringTable(this.n_ngrams, index="u64")
    * "u32 byte length + UTF-8 + u64 index (row - n_words), indices in first-appearance order",
)

ndarray = Struct(
    "rows" / Derived(Int64ul, ShapeOf(this.data, 0)) * "rows: word rows first, then subword rows",
    "cols" / Derived(Int32ul, ShapeOf(this.data, 1)) * "dimensionality",
    "type_id" / Const(F32, Int32ul) * "10 = f32",
    "padding" / AlignTo(4, never_zero=True) * "1 to 4 zero bytes: the f32 data starts 4-aligned",
    "data" / NumpyArray("<f4", (this.rows, this.cols)) * "row-major f32 matrix",
)

quantized_array = Struct(
    "use_projection" / Int32ul * "1 when an (r x r) projection follows",
    "use_norms" / Int32ul * "1 when per-row norms follow the subquantizers",
    "quantized_len" / Int32ul * "q: subquantizers = code bytes per row",
    Valid("quantized_len", this.quantized_len > 0) * "q > 0: each row is coded in q parts",
    "reconstructed_len" / Int32ul * "r: dimensionality",
    Valid("reconstructed_len", this.reconstructed_len % this.quantized_len == 0)
    * "r is a multiple of q: each part has r/q dimensions",
    "n_centroids" / Int32ul * "centroids per subquantizer (2^bits, bits <= 8)",
    "n_embeddings" / Int64ul * "storage rows, subword rows included",
    "quantized_type" / Const(1, Int32ul) * "1 = u8 codes",
    "reconstructed_type" / Const(10, Int32ul) * "10 = f32",
    "padding" / AlignTo(4, never_zero=True) * "1 to 4 zero bytes before the first f32 array",
    "projection" / If(this.use_projection, NumpyArray("<f4", (this.reconstructed_len, this.reconstructed_len)))
    * "f32[r][r], if use_projection",
    "subquantizers" / NumpyArray("<f4", (this.quantized_len, this.n_centroids,
                                         this.reconstructed_len // this.quantized_len))
    * "f32[q][n_centroids][r/q]",
    "norms" / If(this.use_norms, NumpyArray("<f4", this.n_embeddings)) * "f32[n_embeddings], if use_norms",
    "codes" / NumpyArray("u1", (this.n_embeddings, this.quantized_len)) * "u8[n_embeddings][q]",
)

metadata = Struct(
    "toml" / CheckedBytes(this._.chunk_len) * "UTF-8 TOML text filling the chunk (no padding, no terminator)",
)

nd_norms = Struct(
    "n_norms" / Derived(Int64ul, len_(this.norms)) * "number of words (not storage rows)",
    "type_id" / Const(F32, Int32ul) * "10 = f32",
    "padding" / AlignTo(4, never_zero=True) * "1 to 4 zero bytes: the f32 data starts 4-aligned",
    "norms" / NumpyArray("<f4", this.n_norms) * "the L2 norm each word row had before normalisation",
)



class ChunkId(IntEnum):
    """finalfusion's chunk type ids (finalfusion-rust's ``ChunkIdentifier``)."""

    SIMPLE_VOCAB = 1
    NDARRAY = 2
    BUCKET_SUBWORD_VOCAB = 3
    QUANTIZED_ARRAY = 4
    METADATA = 5
    ND_NORMS = 6
    FASTTEXT_SUBWORD_VOCAB = 7
    EXPLICIT_SUBWORD_VOCAB = 8
    FLORET_SUBWORD_VOCAB = 9


# Chunk id -> (name, body). Users register new chunk types here (see wvformats.finalfusion.register_chunk);
# ids not listed here are kept as raw bytes.
CHUNK_TYPES = {
    ChunkId.SIMPLE_VOCAB: ("simple_vocab", simple_vocab),
    ChunkId.NDARRAY: ("ndarray", ndarray),
    ChunkId.BUCKET_SUBWORD_VOCAB: ("bucket_subword_vocab", bucket_subword_vocab),
    ChunkId.QUANTIZED_ARRAY: ("quantized_array", quantized_array),
    ChunkId.METADATA: ("metadata", metadata),
    ChunkId.ND_NORMS: ("nd_norms", nd_norms),
    ChunkId.FASTTEXT_SUBWORD_VOCAB: ("fasttext_subword_vocab", fasttext_subword_vocab),
    ChunkId.EXPLICIT_SUBWORD_VOCAB: ("explicit_subword_vocab", explicit_subword_vocab),
    ChunkId.FLORET_SUBWORD_VOCAB: ("floret_subword_vocab", floret_subword_vocab),
}
# the chunks that hold the vocabulary and the storage: a file has one of each
VOCAB_CHUNKS = (ChunkId.SIMPLE_VOCAB, ChunkId.BUCKET_SUBWORD_VOCAB, ChunkId.FASTTEXT_SUBWORD_VOCAB,
                ChunkId.EXPLICIT_SUBWORD_VOCAB, ChunkId.FLORET_SUBWORD_VOCAB)
STORAGE_CHUNKS = (ChunkId.NDARRAY, ChunkId.QUANTIZED_ARRAY)

# finalfusion-python 0.7.1 writes explicit vocab lengths 8 bytes short per n-gram; read by content and
# write the same length back so its files rebuild byte-exact (inspect reports it)
LENGTH_QUIRKS = {8: lambda body: 8 * body.n_ngrams}

header = Struct(
    "magic" / Const(MAGIC) * 'b"FiFu"',
    "version" / Const(VERSION, Int32ul) * "format version 0 (readers reject others)",
    "n_chunks" / Int32ul * "number of chunk ids that follow",
    "chunk_ids" / NumpyArray("<u4", this.n_chunks) * "chunk ids in file order",
)

# what frames every chunk (the framework's Chunks reads and writes it)
chunk_header = Struct(
    "chunk_id" / Int32ul * "the chunk's type (CHUNK_TYPES)",
    "length" / Int64ul * "bytes after this field: the body, padding included",
)

finalfusion = Struct(
    *header.subcons,
    "chunks" / Chunks(CHUNK_TYPES, listed=this.n_chunks, quirks=LENGTH_QUIRKS)
    * "to the end of the file (at least n_chunks): u32 id, u64 length, body",
)
