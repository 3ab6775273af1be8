"""The identity of each format that the sniffers need before anything else is imported: magic numbers and the
versions they accept, and for a format without magic the plausibility of its leading fields (:class:`Head`).
Standard library only (``wvformats sniff`` imports neither numpy nor construct), and the one home of these
numbers: the schema modules declare their fields with them, the sniffers test them."""

import struct
from collections.abc import Callable
from typing import Any


class Head:
    """A file's leading fields as a sniffer reads them, declared beside the schema: their names in file order
    and ``struct`` layout, the range each must lie in (``lo <= value <= hi``, None for no bound, or a
    ``range``) and relations between them (a test of the values, with the rule it states). A file is
    plausible when its head holds the fields and every range and relation holds."""

    def __init__(self, layout: str, names: tuple[str, ...], ranges: dict[str, Any],
                 relations: tuple[tuple[str, Callable[[dict[str, int]], bool]], ...] = ()) -> None:
        self.layout = struct.Struct(layout)
        if len(names) != len(self.layout.unpack(bytes(self.layout.size))):
            raise ValueError("one name per field of the layout")
        self.names, self.ranges, self.relations = names, ranges, relations
        # each bound by the field's place in the layout (every sniff of every file tests them: no dict made
        # before a field is out of range)
        self._bounds = tuple((names.index(name), bound) for name, bound in ranges.items())

    def read(self, head: bytes, offset: int = 0) -> dict[str, int] | None:
        """The fields at ``offset`` by name (None where the head is too short)."""
        if len(head) < offset + self.layout.size:
            return None
        return dict(zip(self.names, self.layout.unpack_from(head, offset), strict=True))

    def plausible(self, head: bytes, offset: int = 0) -> bool:
        if len(head) < offset + self.layout.size:
            return False
        fields = self.layout.unpack_from(head, offset)
        for i, bound in self._bounds:
            v = fields[i]
            if isinstance(bound, range):
                if v not in bound:
                    return False
            elif (bound[0] is not None and v < bound[0]) or (bound[1] is not None and v > bound[1]):
                return False
        if not self.relations:
            return True
        values = dict(zip(self.names, fields, strict=True))
        return all(test(values) for _, test in self.relations)



# finalfusion: the 4 magic bytes, then a u32 format version
FINALFUSION_MAGIC = b"FiFu"
FINALFUSION_VERSION = 0
FINALFUSION_HEAD = Head("<4sI", ("magic", "version"), {"magic": (FINALFUSION_MAGIC, FINALFUSION_MAGIC),
                                                       "version": (FINALFUSION_VERSION, FINALFUSION_VERSION)})

# fastText: the i32 current releases start with (older releases start with their args), and the versions read
FASTTEXT_MAGIC = 793712314
FASTTEXT_VERSIONS = range(1, 13)
FASTTEXT_LOSSES = range(1, 5)  # loss_name: hs, ns, softmax, ova
FASTTEXT_MODELS = range(1, 4)  # model_name: cbow, skipgram, supervised

# fastText of a current release: the magic, then a version fastText reads
FASTTEXT_HEAD = Head("<2i", ("magic", "version"),
                     {"magic": (FASTTEXT_MAGIC, FASTTEXT_MAGIC), "version": FASTTEXT_VERSIONS})

# fastText of an older release (no magic): its args (Args::save), then the dictionary's counts; plausible where
# they are what fastText trains with
FASTTEXT_OLD_HEAD = Head(
    "<12iq3i",
    ("dim", "ws", "epoch", "minCount", "neg", "wordNgrams", "loss", "model", "bucket", "minn", "maxn",
     "lrUpdateRate", "t", "size", "nwords", "nlabels"),
    {"dim": (1, 1 << 16), "ws": (1, 1000), "epoch": (1, None), "minCount": (0, None), "neg": (0, None),
     "wordNgrams": (1, 100), "loss": FASTTEXT_LOSSES, "model": FASTTEXT_MODELS, "bucket": (0, None),
     "minn": (0, 1000), "maxn": (0, 1000), "lrUpdateRate": (1, None), "nwords": (0, None), "nlabels": (0, None)},
    (("minn <= maxn", lambda v: v["minn"] <= v["maxn"]),
     ("nwords + nlabels == size", lambda v: v["nwords"] + v["nlabels"] == v["size"])),
)

# Leader: the u64 a Leader file starts with (bytes 1d 98 00 00 00 00 00 00)
LEADER_MAGIC = 38941

# rwkv.cpp: "ggmf" as a little-endian u32 (bytes 66 6d 67 67), then the versions rwkv.cpp reads
RWKV_MAGIC = 0x67676D66
RWKV_VERSIONS = range(100, 102)
RWKV_HEAD = Head("<2I", ("magic", "version"), {"magic": (RWKV_MAGIC, RWKV_MAGIC), "version": RWKV_VERSIONS})

# GGUF: the 4 magic bytes, then a u32 version
GGUF_MAGIC = b"GGUF"

# safetensors: no magic; a u64 header length (at most this many bytes, safetensors' MAX_HEADER_SIZE), then
# a JSON object, so the text starts with "{"
SAFETENSORS_HEADER_LIMIT = 100_000_000
SAFETENSORS_HEADER_START = b"{"
SAFETENSORS_HEADER_LENGTH = "u64"  # the header's byte count before it (LEN_FORMATS' name)
SAFETENSORS_METADATA = "__metadata__"  # the header's key that names no tensor: str -> str

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
