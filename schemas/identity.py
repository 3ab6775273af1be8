"""The identity of each format that the sniffers need before anything else is imported: magic numbers and the
versions they accept, and for a format without magic the plausibility of its leading fields (:class:`Head`).
Standard library only (``wvformats sniff`` imports neither numpy nor construct), and the one home of these
numbers: the schema modules declare their fields with them, the sniffers test them."""

import functools
import re
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

    @functools.cached_property
    def prefix(self) -> bytes:
        """The bytes every plausible head starts with: its leading fields whose range is one value, as the layout
        packs them (b"" when the first field's is not): a head that does not start with them is not plausible."""
        fixed = []
        for name in self.names:
            bound = self.ranges.get(name)
            if not (isinstance(bound, tuple) and bound[0] is not None and bound[0] == bound[1]):
                break
            fixed.append(bound[0])
        if not fixed:
            return b""
        fmt = self.layout.format
        order, body = (fmt[0], fmt[1:]) if fmt[:1] in "@=<>!" else ("@", fmt)
        fields, pending, count = [], "", ""  # each field's codes (pad bytes before it included): "4s", "i"
        for c in body:  # (struct's grammar: a count, then a code; "4s" is one field, "3i" three, "2x" none)
            if c.isdigit():
                count += c
            elif c in "sp":
                fields.append(pending + count + c)
                pending = count = ""
            elif c == "x":
                pending, count = pending + count + c, ""
            else:
                fields.extend([pending + c] + [c] * (int(count or 1) - 1))
                pending = count = ""
        fill = {"s": b"", "p": b"", "c": b"\0", "?": False, "e": 0.0, "f": 0.0, "d": 0.0}
        packed = self.layout.pack(*fixed, *(fill.get(f[-1], 0) for f in fields[len(fixed):]))
        return packed[: struct.calcsize(order + "".join(fields[: len(fixed)]))]

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


# -- formats without magic whose head is text: their header line, then records walked through the head --------

HEAD_BYTES = 65536  # the bytes a sniffer sees (wvformats.fileio.HEAD): a head this long is cut, its last line partial
WHITESPACE = b" \t\n\r\x0b\x0c"  # ASCII whitespace: what a blank line holds


# (patterns compiled when a sniffer first runs, not when sniffing or opening a file of another format imports this)
_compiled = functools.cache(re.compile)


def _cut(head: bytes) -> bool:
    return len(head) >= HEAD_BYTES


class TextLine:
    """A header line, declared as a regular expression over its bytes (its newline included) whose groups are
    the decimal fields ``names``, in order."""

    def __init__(self, pattern: bytes, names: tuple[str, ...]) -> None:
        self.pattern, self.names = rb"\A" + pattern, names

    def read(self, head: bytes) -> tuple[dict[str, int], int] | None:
        """The fields by name and where the line ends; None where the head does not start with the line."""
        m = _compiled(self.pattern).match(head)
        return None if m is None else (dict(zip(self.names, map(int, m.groups()), strict=True)), m.end())


class WordLines:
    """Text records, one a line: a word, then numbers spelt as ``number`` (a regular expression), each after one
    ``separator``; the bytes of ``trailing`` at a line's end are not its content. Blank lines are not records."""

    blank = WHITESPACE  # what may follow a header that counts no records

    def __init__(self, number: bytes, separator: bytes = b" ", trailing: bytes = b" \r\t") -> None:
        self.number = rb"(?:" + number + rb")\Z"
        self.separator, self.trailing = separator, trailing

    def width(self, line: bytes) -> int | None:
        """How many numbers the record ``line`` holds; None where it is no record (no word, no number, or a
        number spelt otherwise)."""
        parts = line.rstrip(self.trailing).split(self.separator)
        number = _compiled(self.number).match
        if len(parts) < 2 or not parts[0] or not all(number(p) for p in parts[1:]):
            return None
        return len(parts) - 1

    def fits(self, line: bytes, width: int | None = None) -> bool:
        """Whether ``line`` is a record (of ``width`` numbers, unless None)."""
        found = self.width(line)
        return found is not None and (width is None or found == width)

    def walk(self, head: bytes, pos: int, n: int, width: int | None) -> list[bytes] | None:
        """The records among the first ``n`` complete lines from ``pos`` on (a cut head's last line is not
        complete; blank lines skipped), each ``width`` numbers wide (None: as wide as the first); None where
        there is none, or a line is no such record."""
        lines = head[pos:].split(b"\n")
        lines = [x for x in (lines[:-1] if _cut(head) else lines)[:n] if x.strip(WHITESPACE)]
        if not lines:
            return None
        width = self.width(lines[0]) if width is None else width
        return lines if all(self.fits(x, width) for x in lines) else None

    def text(self, head: bytes, pos: int) -> bool:
        """From ``pos`` on, ``head`` is UTF-8 text (no NUL) whose first line is a record of any width: float32
        rows almost never are (negative numbers and most exponents are bytes UTF-8 refuses)."""
        body = head[pos:]
        if b"\x00" in body or not self.fits(body.split(b"\n", 1)[0]):
            return False
        try:
            body[: body.rfind(b"\n") + 1 if _cut(head) else len(body)].decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True


class WordBytes:
    """Binary records: line ends (``skip``, one byte) before a record, a word up to ``separator``, then
    ``width`` values of ``size`` bytes each."""

    blank = b""  # nothing may follow a header that counts no records

    def __init__(self, separator: bytes = b" ", size: int = 4, skip: bytes = b"\n") -> None:
        self.separator, self.size, self.skip = separator, size, skip

    def walk(self, head: bytes, pos: int, n: int, width: int | None) -> list[tuple[int, int]] | None:
        """The (start, end) of the first ``n`` records from ``pos`` on, as far as the head holds their words;
        None where one has no word before its separator."""
        found: list[tuple[int, int]] = []
        while len(found) < n and pos < len(head):
            while head[pos : pos + 1] == self.skip:
                pos += 1
            sp = head.find(self.separator, pos)
            if sp <= pos:
                return None
            found.append((pos, sp + len(self.separator) + self.size * (width or 0)))
            pos = found[-1][1]
        return found or None


class TextHead:
    """The plausibility of a format without magic whose head starts as text: its ``header`` line (None: none),
    then ``walk`` records read through the head, each as wide as the header field ``width`` says (None: as
    the first is). A header field ``count`` of 0 leaves nothing but the records' ``blank`` after the header.

    For binary records, ``unlike`` (text records) tells a text file apart: a first record whose bytes read as
    a text line of the width, or a body that is text, is not this format's. For text records without a
    header, the first ``nul_free`` bytes hold no NUL, and the first record decodes as UTF-8 (a cut head may
    end inside a character). ``resembles``, the test of a damaged file: the header (or, without one, not the
    line ``not_after``), then a body that is text of any width."""

    def __init__(self, header: TextLine | None, records: WordLines | WordBytes, *, width: str | None = None,
                 count: str | None = None, walk: int = 1, unlike: WordLines | None = None, nul_free: int = 0,
                 not_after: TextLine | None = None) -> None:
        self.header, self.records, self.width, self.count, self.walk = header, records, width, count, walk
        self.unlike, self.nul_free, self.not_after = unlike, nul_free, not_after

    def _start(self, head: bytes) -> tuple[dict[str, int], int] | None:
        return ({}, 0) if self.header is None else self.header.read(head)

    def plausible(self, head: bytes) -> bool:
        start = self._start(head)
        if start is None:
            return False
        values, pos = start
        if self.count is not None and values[self.count] == 0:
            return not head[pos:].strip(self.records.blank)
        width = values[self.width] if self.width is not None else None
        found = self.records.walk(head, pos, self.walk, width)
        if not found:
            return False
        if isinstance(self.records, WordBytes):
            first, end = found[0]
            if self.unlike is not None and (
                    len(head) >= end and self.unlike.fits(head[first:end].split(b"\n", 1)[0], width)
                    or self.unlike.text(head, first)):
                return False  # a text file (whose lines may be shorter than its header says: damaged text)
            return True
        if b"\x00" in head[: self.nul_free]:
            return False
        if self.header is None and len(head) <= HEAD_BYTES - 8:  # (near a cut, a character may be cut)
            try:
                found[0].decode("utf-8")
            except UnicodeDecodeError:
                return False
        return True

    def resembles(self, head: bytes) -> bool:
        start = self._start(head)
        if start is None or (self.not_after is not None and self.not_after.read(head) is not None):
            return False
        return isinstance(self.records, WordLines) and self.records.text(head, start[1])


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
LEADER_HEAD = Head("<Q", ("magic",), {"magic": (LEADER_MAGIC, LEADER_MAGIC)})

# word2vec text and binary, GloVe: no magic. word2vec's header line "<count> <dim>\n" (the schema's HeaderLine,
# which reads it within HEADER_MOST bytes), then a record per word: a text line of the word and its numbers
# (decimal, exponent and integer forms, and the spellings of nan and infinity writers use), or the word, a
# space and dim float32 values
WORDVEC_HEADER = TextLine(rb"[ \t]*(\d+)[ \t]+(\d+)[ \t]*\r?\n", ("count", "dim"))
WORDVEC_HEADER_MOST = 256
WORDVEC_NUMBER = rb"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|-?Infinity|Inf)"
WORDVEC_LINES = WordLines(WORDVEC_NUMBER)
WORDVEC_BYTES = WordBytes(b" ", 4, b"\n")
# word2vec text: the header, then the first line a record of dim numbers
WORD2VEC_TEXT_HEAD = TextHead(WORDVEC_HEADER, WORDVEC_LINES, width="dim", count="count")
# word2vec binary: the header, then a word and its space (a record that reads as text is a text file's)
WORD2VEC_BINARY_HEAD = TextHead(WORDVEC_HEADER, WORDVEC_BYTES, width="dim", count="count", unlike=WORDVEC_LINES)
# GloVe: no header; the first three lines records of one width, no NUL in the first 4 KiB
GLOVE_HEAD = TextHead(None, WORDVEC_LINES, walk=3, nul_free=4096, not_after=WORDVEC_HEADER)

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


class FileSet:
    """A folder format's files, declared: each shard has files of ``kinds`` (``required`` among them), named
    ``<kind><separator><shard>`` in the folder (``<kind>`` alone: a shard named ""), or, where the folder holds
    none, ``<kind>`` in a folder per shard (one that holds the first required kind). A folder is plausible when
    it has a shard and every shard has the required kinds."""

    def __init__(self, kinds: tuple[str, ...], required: tuple[str, ...], separator: str = ".") -> None:
        self.kinds, self.required, self.separator = kinds, required, separator

    def in_folder(self, names: list[str]) -> dict[str, dict[str, str]]:
        """Shard -> kind -> file name, of the files among ``names`` (the folder's, in order) named as a shard's."""
        found: dict[str, dict[str, str]] = {}
        for name in names:
            kind, _, shard = name.partition(self.separator)
            if kind in self.kinds:
                found.setdefault(shard, {})[kind] = name
        return found

    def in_subfolder(self, names: list[str]) -> dict[str, str] | None:
        """Kind -> file name, of a shard's own folder holding the files ``names``; None where it lacks the
        first required kind."""
        found = {name: name for name in names if name in self.kinds}
        return found if self.required[0] in found else None

    def plausible(self, shards: dict[str, dict[str, Any]]) -> bool:
        return bool(shards) and all(set(self.required) <= set(files) for files in shards.values())


# the file set of an index: suffixed files (versions 4 and 5, ``table.0``), one shard's bare files or a folder
# per shard (version 6)
INFINIGRAM_FILES = FileSet(INFINIGRAM_KINDS, INFINIGRAM_REQUIRED)


def infinigram_name(kind: str, shard: int | str, *, version: int, shards: int) -> str:
    """Where a shard's file lies in the index folder, as the indexer of ``version`` names it: ``table.0``
    (versions 4 and 5: a suffix per shard), ``table`` (version 6, one shard) or ``0/table`` (version 6: a
    folder per shard)."""
    if version == 6:
        return kind if shards == 1 else f"{shard}/{kind}"
    return f"{kind}.{shard}"
