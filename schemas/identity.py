"""The identity of each format that the sniffers need before anything else is imported: magic numbers and the
versions they accept. Standard library only (``wvformats sniff`` imports neither numpy nor construct), and the
one home of these numbers: the schema modules declare their fields with them, the sniffers test them."""

# finalfusion: the 4 magic bytes, then a u32 format version
FINALFUSION_MAGIC = b"FiFu"
FINALFUSION_VERSION = 0

# fastText: the i32 current releases start with (older releases start with their args), and the versions read
FASTTEXT_MAGIC = 793712314
FASTTEXT_VERSIONS = range(1, 13)

# Leader: the u64 a Leader file starts with (bytes 1d 98 00 00 00 00 00 00)
LEADER_MAGIC = 38941

# rwkv.cpp: "ggmf" as a little-endian u32 (bytes 66 6d 67 67), then the versions rwkv.cpp reads
RWKV_MAGIC = 0x67676D66
RWKV_VERSIONS = (100, 101)

# GGUF: the 4 magic bytes, then a u32 version
GGUF_MAGIC = b"GGUF"

# safetensors: no magic; a u64 header length (at most this many bytes, safetensors' MAX_HEADER_SIZE), then
# a JSON object, so the text starts with "{"
SAFETENSORS_HEADER_LIMIT = 100_000_000
SAFETENSORS_HEADER_START = b"{"

# NumPy .npy: the 6 magic bytes, then the format version (major, minor) that numpy writes and reads
NPY_MAGIC = b"\x93NUMPY"
NPY_VERSIONS = ((1, 0), (2, 0), (3, 0))

# NumPy .npz: a zip archive (its local file header's magic) of .npy members, read whole as one format rather
# than opened as a compressed file
ZIP_LOCAL_MAGIC = b"PK\x03\x04"
NPZ_MEMBER_SUFFIX = b".npy"
NPZ_SUFFIX = ".npz"
# where a local header's u16 name length lies and where its name starts (its fixed part): schemas/npz.py's
# local_entry, which tests/families/numpy holds these to
ZIP_LOCAL_NAME_LENGTH_AT = 26
ZIP_LOCAL_FIXED = 30


def zip_first_member(head: bytes) -> bytes | None:
    """The name of a zip archive's first member, from its local header at the start of ``head`` (as much of
    it as ``head`` holds), or None where ``head`` is no local header."""
    if head[:4] != ZIP_LOCAL_MAGIC or len(head) < ZIP_LOCAL_FIXED:
        return None
    n = int.from_bytes(head[ZIP_LOCAL_NAME_LENGTH_AT : ZIP_LOCAL_NAME_LENGTH_AT + 2], "little")
    return head[ZIP_LOCAL_FIXED : ZIP_LOCAL_FIXED + n]

# infini-gram: an index is a folder of files with no header (their sizes give every count); a shard's files
# are these kinds, the first three required. The indexer's versions and token widths; version 5 stores each
# document's tokens reversed.
INFINIGRAM_KINDS = ("tokenized", "table", "offset", "metadata", "metaoff", "unigram")
INFINIGRAM_REQUIRED = INFINIGRAM_KINDS[:3]
INFINIGRAM_VERSIONS = (4, 5, 6)
INFINIGRAM_REVERSED = (5,)
INFINIGRAM_TOKEN_WIDTHS = (1, 2, 4)


def infinigram_name(kind: str, shard: int | str, *, version: int, shards: int) -> str:
    """Where a shard's file lies in the index folder, as the indexer of ``version`` names it: ``table.0``
    (versions 4 and 5: a suffix per shard), ``table`` (version 6, one shard) or ``0/table`` (version 6: a
    folder per shard)."""
    if version == 6:
        return kind if shards == 1 else f"{shard}/{kind}"
    return f"{kind}.{shard}"
