"""Opening inputs as buffers and writing outputs atomically."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from . import compression
from .errors import FormatError


def open_buffer(path: str | os.PathLike[str], *, use_mmap: bool = True) -> Any:
    """The whole file as a buffer: a read-only mmap (zero-copy) or a writable in-memory copy (a numpy uint8
    array, read straight into uninitialised memory). A compressed file is decompressed into memory."""
    if kind := compression.detect(path):  # a compressed file cannot be mapped: its bytes, in memory
        import numpy as np  # (here, not at the top: the command's start-up, sniff, needs no numpy)

        return np.frombuffer(compression.read_all(path, kind), np.uint8)
    p = Path(path)
    try:
        with open(p, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return b""
            if use_mmap:
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            return _read_into_memory(f, size)
    except IsADirectoryError:
        raise FormatError(f"{p} is a directory", path=None) from None
    except OSError as e:
        raise FormatError(f"cannot read {p}: {e.strerror or e}") from None


def _read_into_memory(f: Any, size: int) -> Any:
    """The file's bytes in an uninitialised numpy buffer (a bytearray would be zero-filled first, a second
    pass over the whole size), filled by unbuffered reads straight into it: a parse of it sees a writable
    memoryview, bulk arrays become views of it."""
    import numpy as np

    buf = np.empty(size, np.uint8)
    view, got = memoryview(buf), 0
    while got < size:
        n = f.readinto(view[got:])
        if not n:
            break
        got += n
    return buf if got == size else buf[:got]


def read_head(path: str | os.PathLike[str], n: int = 65536) -> bytes:
    """The first ``n`` bytes of a file (decompressed, if it is compressed)."""
    if kind := compression.detect(path):
        return compression.head(path, kind, n)
    with open(path, "rb") as f:
        return f.read(n)


def check_target(path: str | os.PathLike[str], *, overwrite: bool) -> Path:
    """The folder an output file goes to, once it is known that the file can be written there: the folder
    exists, and the file does not unless ``overwrite``."""
    target = Path(path)
    if target.is_dir():  # (os.replace would say "[Errno 21] Is a directory: '.x.tmp' -> 'x'")
        raise IsADirectoryError(errno.EISDIR, "is a folder; name a file to write (a path inside it)", str(target))
    if not overwrite and target.exists():
        raise FileExistsError(f"{target} exists (use --force / overwrite=True to replace it)")
    folder = target.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {target}: the folder {folder} does not exist")
    return folder


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], *, overwrite: bool = True,
                  fsync: bool = True) -> Iterator[IO[bytes]]:
    """A binary file object whose contents replace ``path`` only when the block succeeds.

    Writes go to a temporary file in the target folder, which is renamed over ``path`` at the end and
    removed on any failure, so a failed write leaves nothing behind and never a half-written target.
    ``fsync``: flush the data to disk before the rename (durable against a crash). A name ending in
    ``.gz``, ``.bz2``, ``.xz`` or ``.zst`` is written compressed: the file object compresses what it gets
    (it cannot seek back).
    """
    target = Path(path)
    folder = check_target(target, overwrite=overwrite)
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        # mkstemp makes 0600; give the file the mode a plain open() would (or the replaced file's)
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            if kind := compression.for_output(target):
                with compression.writer(f, kind) as z:
                    yield z
            else:
                yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
