"""Compressed files: the compression told by magic bytes, read as a stream of decompressed bytes, written
by the output name's suffix. The stdlib does gzip, bzip2, xz and zip; zstd needs the ``zstandard`` package.

A file inside a zip archive is named ``archive.zip::member``; an archive of one member needs no name.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .errors import FormatError, OptionError
from .schemas.identity import NPZ_MEMBER_SUFFIX, NPZ_SUFFIX, ZIP_LOCAL_FIXED, zip_first_member

if TYPE_CHECKING:  # (the codecs' modules are imported where a compressed file is read or written: a plain
    import zipfile  # file's read imports none)

# (name, magic bytes at offset 0); the suffix a written file of each gets
MAGIC = (
    ("gzip", b"\x1f\x8b"),
    ("bzip2", b"BZh"),
    ("xz", b"\xfd7zXZ\x00"),
    ("zip", b"PK\x03\x04"),
    ("zstd", b"\x28\xb5\x2f\xfd"),
)
SUFFIXES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd", ".zip": "zip"}
MEMBER_SEPARATOR = "::"
CHUNK = 1 << 20  # decompressed bytes read at a time
LINE_BLOCK = 8 << 20  # decompressed bytes of whole lines a text format parses at a time (tests lower it)
# the most decompressed bytes held in memory as one buffer; None: what the machine has available now
# (MemAvailable). A caller with room to spare (or swap) may raise it.
MAX_IN_MEMORY: int | None = None


def split_member(path: str | os.PathLike[str]) -> tuple[Path, str | None]:
    """``archive.zip::member`` as (archive, member); any other path as (path, None). A file whose own name
    holds ``::`` is taken as it is."""
    file, member = split_member_name(path)
    return Path(file), member


def split_member_name(path: str | os.PathLike[str]) -> tuple[str, str | None]:
    """:func:`split_member`, the file as a string (what a read of a small file opens: no Path made)."""
    text = path if type(path) is str else os.fsdecode(path)  # (a bytes path, as open() takes one, decoded as the
    if MEMBER_SEPARATOR not in text:  # file system does)
        return text, None
    archive, _, member = text.rpartition(MEMBER_SEPARATOR)
    if not os.path.exists(text) and os.path.isfile(archive):
        return archive, member
    return text, None


def detect(path: str | os.PathLike[str]) -> str | None:
    """The compression of a file from its first bytes (gzip, bzip2, xz, zip, zstd), or None."""
    file, _ = split_member(path)
    if not file.is_file():
        return None
    with open(file, "rb") as f:
        return kind_of(f.read(MAGIC_SIZE))


MAGIC_SIZE = max(len(magic) for _, magic in MAGIC)  # the first bytes that tell every compression


def kind_of(first: bytes) -> str | None:
    """The compression whose magic ``first`` (a file's first bytes) starts with, or None."""
    for name, magic in MAGIC:
        if first.startswith(magic):
            return name
    return None


ARCHIVE_HEAD = ZIP_LOCAL_FIXED + 256  # a zip's first local header and the start of its member's name


def is_format_archive(first: bytes, file: Path) -> bool:
    """A zip archive that is a format of its own, read whole rather than opened as a compressed file:
    NumPy's ``.npz``, whose first member (named in its local header) is a ``.npy`` file, or that is named
    ``.npz`` (a damaged one then fails as an npz)."""
    return file.suffix.lower() == NPZ_SUFFIX or (zip_first_member(first) or b"").endswith(NPZ_MEMBER_SUFFIX)


def for_output(path: str | os.PathLike[str]) -> str | None:
    """The compression an output name asks for by its last suffix (``x.vec.gz``: gzip), or None. A
    ``.zip`` is refused: an archive is a folder of files, not a stream."""
    kind = SUFFIXES.get(Path(path).suffix.lower())
    if kind == "zip":
        raise OptionError(f"cannot write {path}: writing a zip archive is not supported; write .gz, .bz2, .xz "
                          "or .zst, or zip the written file")
    if kind == "zstd":
        _zstandard()
    return kind


def inner_name(path: str | os.PathLike[str]) -> str:
    """The name without its compression suffix (``x.vec.gz`` -> ``x.vec``): what tells the inner format."""
    p = Path(path)
    return str(p.with_suffix("")) if p.suffix.lower() in SUFFIXES else str(p)


def chunks(path: str | os.PathLike[str], kind: str) -> Iterator[bytes]:
    """The decompressed bytes of a compressed file, a chunk at a time (memory bounded by a chunk). A
    truncated or corrupt stream raises FormatError naming the compression and the offset in the
    decompressed bytes up to which it was read."""
    import lzma
    import zipfile

    file, member = split_member(path)
    got = 0
    try:
        with _open(file, kind, member) as f:
            # read1: what one step decompresses, so that the bytes before a fault are all counted
            while chunk := f.read1(CHUNK):
                got += len(chunk)
                yield chunk
    except FormatError:
        raise
    except (EOFError, OSError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, _ZstdError) as e:
        reason = "ends before its end-of-stream marker" if isinstance(e, EOFError) else f"is corrupt ({e})"
        raise FormatError(f"{file}: the {kind} stream {reason} (the offset is in the decompressed bytes)",
                          format=kind, offset=got) from None


def head(path: str | os.PathLike[str], kind: str, n: int) -> bytes:
    """The first ``n`` decompressed bytes (fewer if the file is shorter)."""
    out = bytearray()
    stream = chunks(path, kind)
    try:
        for chunk in stream:
            out += chunk
            if len(out) >= n:
                break
    finally:
        stream.close()
    return bytes(out[:n])


def read_all(path: str | os.PathLike[str], kind: str) -> bytearray:
    """All the decompressed bytes in memory (one growing buffer: the allocator extends it in place); a
    stream that decompresses to more than can be held (:func:`memory_cap`) is a FormatError, not an OOM kill."""
    cap, out = memory_cap(), bytearray()
    with contextlib.closing(chunks(path, kind)) as stream:
        for chunk in stream:
            if cap is not None and len(out) + len(chunk) > cap:
                raise _too_big(path, kind, cap, len(out))
            out += chunk
    return out


def line_blocks(path: str | os.PathLike[str], kind: str) -> Iterator[tuple[int, bytes]]:
    """The decompressed bytes in blocks of whole lines, each with its offset in the decompressed stream: a
    block is about ``LINE_BLOCK`` bytes cut after its last newline (the last block is what remains), so
    memory holds one block, not the file. A line longer than :func:`memory_cap` is a FormatError."""
    cap, pending, at, searched = memory_cap(), bytearray(), 0, 0
    with contextlib.closing(chunks(path, kind)) as stream:
        for chunk in stream:
            pending += chunk
            if len(pending) < LINE_BLOCK:
                continue
            cut = pending.rfind(b"\n", searched) + 1  # (what was searched before holds no newline)
            if not cut:
                if cap is not None and len(pending) > cap:
                    raise _too_big(path, kind, cap, at + len(pending))
                searched = len(pending)
                continue
            with memoryview(pending) as view:
                block = bytes(view[:cut])
            del pending[:cut]
            searched = len(pending)
            yield at, block
            at += cut
    if pending:
        yield at, bytes(pending)


def memory_cap() -> int | None:
    """The most decompressed bytes one buffer may hold: ``MAX_IN_MEMORY`` when set, else the memory the
    machine has available (MemAvailable in /proc/meminfo), else None (no cap known)."""
    if MAX_IN_MEMORY is not None:
        return MAX_IN_MEMORY
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _too_big(path: str | os.PathLike[str], kind: str, cap: int, got: int) -> FormatError:
    return FormatError(f"{path}: the {kind} stream decompresses to more than {cap} bytes, more than can be held "
                       "in memory (the memory available, or wvformats.compression.MAX_IN_MEMORY); decompress it "
                       "to a file, or raise MAX_IN_MEMORY", format=kind, offset=got)


class _ZstdError(Exception):
    """A zstd stream that is truncated or corrupt (zstandard's own errors are translated to this)."""


@contextlib.contextmanager
def _open(file: Path, kind: str, member: str | None) -> Iterator[IO[bytes]]:
    if member is not None and kind != "zip":
        raise FormatError(f"{file} is {kind}-compressed, not a zip archive: it has no member {member!r}",
                          format=kind)
    if kind == "zip":
        import zipfile

        with zipfile.ZipFile(file) as archive, archive.open(_member(file, archive, member)) as f:
            yield f
        return
    import bz2
    import gzip
    import lzma

    opener = {"gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open, "zstd": _ZstdReader}[kind]
    with opener(file, "rb") as f:
        yield f


def _member(file: Path, archive: zipfile.ZipFile, member: str | None) -> str:
    """The member to read: the one named, or the only file in the archive; else an error listing them."""
    names = [i.filename for i in archive.infolist() if not i.is_dir()]
    listed = ", ".join(names) if names else "none"
    if member is None and len(names) != 1:
        raise FormatError(f"{file} holds {len(names)} files; name one as {file}{MEMBER_SEPARATOR}MEMBER "
                          f"(members: {listed})", format="zip")
    if member is not None and member not in names:
        raise FormatError(f"{file} has no member {member!r} (members: {listed})", format="zip")
    return member if member is not None else names[0]


def _zstandard() -> Any:
    try:
        import zstandard
    except ImportError:
        raise FormatError("this file is zstd-compressed: reading or writing it needs the zstandard package "
                          "(pip install zstandard)", format="zstd") from None
    return zstandard


class _ZstdReader:
    """The decompressed bytes of a zstd file, frame after frame. Unlike zstandard's stream_reader, a stream
    that ends inside a frame is an error rather than a quiet end."""

    def __init__(self, file: Path, mode: str = "rb") -> None:
        self._zstd = _zstandard()
        self._raw = open(file, "rb")  # noqa: SIM115 - closed by __exit__
        self._dec = self._zstd.ZstdDecompressor().decompressobj()
        self._inside = False  # some of the current frame has been fed

    def read1(self, n: int) -> bytes:
        """Some decompressed bytes (what the next compressed chunk holds; not exactly ``n``); b"" at the end."""
        while data := self._raw.read(n):
            out = bytearray()
            while data:
                self._inside = True
                try:
                    out += self._dec.decompress(data)
                except self._zstd.ZstdError as e:
                    raise _ZstdError(str(e)) from None
                if not self._dec.eof:
                    break
                data, self._inside = self._dec.unused_data, False
                self._dec = self._zstd.ZstdDecompressor().decompressobj()  # the next frame
            if out:
                return bytes(out)
        if self._inside:
            raise _ZstdError("the stream ends inside a frame")
        return b""

    def __enter__(self) -> _ZstdReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._raw.close()


@contextlib.contextmanager
def writer(out: IO[bytes], kind: str) -> Iterator[Any]:
    """A file object that compresses what is written to it into ``out``, which stays open. It only goes
    forward: a seek elsewhere raises ForwardOnly (a writer that patches a length it wrote
    earlier, as finalfusion's chunks do, is built uncompressed first: see :func:`copy_into`)."""
    import bz2
    import gzip
    import lzma

    if kind == "gzip":
        z: Any = gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6, mtime=0)
    elif kind == "bzip2":
        z = bz2.BZ2File(out, "wb")
    elif kind == "xz":
        z = lzma.LZMAFile(out, "wb")
    else:
        z = _zstandard().ZstdCompressor(level=3).stream_writer(out, closefd=False)
    with z:
        yield _Forward(z)


class ForwardOnly(Exception):  # noqa: N818 - not an error the user sees: the caller builds another way
    """A writer sought back in a compressed output (not a ValueError/OSError, which the framework would
    report as a failed build)."""


class _Forward:
    """A compressing writer with the seek of a forward-only stream."""

    def __init__(self, z: Any) -> None:
        self._z = z
        self.write, self.tell, self.flush = z.write, z.tell, z.flush

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        here = self._z.tell()
        if (offset, whence) not in ((here, os.SEEK_SET), (0, os.SEEK_CUR)):
            raise ForwardOnly("a compressed output is written forward only")
        return here

    def writable(self) -> bool:
        return True


def copy_into(src: IO[bytes], out: Any) -> None:
    """Copy an uncompressed file object into a compressing writer, a chunk at a time."""
    src.seek(0)
    while chunk := src.read(CHUNK):
        out.write(chunk)
