"""Opening inputs as buffers and writing outputs atomically."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from . import compression
from .errors import FormatError

HEAD = 65536  # the first bytes the sniffers see


class Source:
    """One input, resolved once: the path as given, the file (an archive, for ``archive.zip::member``) and
    member, what kind of path it is, its compression, its first bytes and its whole buffer, all from one
    ``stat`` and at most one open of a plain file. ``sniff``, ``read``, ``validate`` and ``inspect`` take one
    (or a path, which they make one of) and share it.

    Use it as a context manager (or call :meth:`close`): the file it opened is closed at the end; buffers
    already handed out (a memory map) stay valid."""

    def __init__(self, path: str | os.PathLike[str] | Source) -> None:
        if isinstance(path, Source):
            path = path.path
        elif isinstance(path, bytes):  # a bytes path, as open() takes one: decoded as the file system does
            path = os.fsdecode(path)
        self.path = path
        self.file_name, self.member = compression.split_member_name(path)  # (the file as a string: what is
        self._file_path: Path | None = None  # opened and stat'ed; :attr:`file` as a Path, made when asked)
        self._stat: os.stat_result | None | bool = False  # False: not looked at yet; None: no such path
        self._fd: int | None = None  # (a descriptor, not a file object: the read of a small file is this cheap)
        self._compression: str | None | bool = False
        self._heads: dict[int, bytes] = {}
        self._first: bytes | None = None  # the file's first HEAD bytes as stored (one read serves every look)

    @property
    def file(self) -> Path:
        """The file: the path, or the archive of ``archive.zip::member``."""
        if self._file_path is None:
            self._file_path = Path(self.file_name)
        return self._file_path

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file this source opened (buffers handed out stay valid)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __str__(self) -> str:
        return os.fspath(self.path)

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def _status(self) -> os.stat_result | None:
        if self._stat is False:
            try:
                self._stat = os.stat(self.file_name)
            except OSError:
                self._stat = None
        return self._stat  # type: ignore[return-value]

    @property
    def exists(self) -> bool:
        return self._status() is not None

    @property
    def is_dir(self) -> bool:
        st = self._status()
        return st is not None and stat.S_ISDIR(st.st_mode)

    @property
    def is_file(self) -> bool:
        st = self._status()
        return st is not None and stat.S_ISREG(st.st_mode)

    @property
    def is_special(self) -> bool:
        """A pipe, device or socket: no file of any format (a FIFO would block the open)."""
        st = self._status()
        return st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)

    def _file(self) -> int:
        """The file's descriptor, opened once (unbuffered: reads go straight into their buffers)."""
        if self._fd is None:
            if self.is_dir:
                raise FormatError(f"{self.file} is a directory", path=None)
            try:
                self._fd = os.open(self.file_name, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            except IsADirectoryError:
                raise FormatError(f"{self.file} is a directory", path=None) from None
            except OSError as e:
                raise FormatError(f"cannot read {self.path}: {e.strerror or e}") from None
        return self._fd

    @property
    def compression(self) -> str | None:
        """The file's compression (gzip, bzip2, xz, zip, zstd) from its first bytes, or None (and None for a
        folder or a missing path)."""
        if self._compression is False:
            self._compression = None
            if self.is_file:
                self._compression = compression.kind_of(self._stored(compression.MAGIC_SIZE))
                if (self._compression == "zip" and self.member is None
                        and compression.is_format_archive(self._stored(compression.ARCHIVE_HEAD), self.file)):
                    self._compression = None  # (an .npz: the npz format reads the archive)
        return self._compression  # type: ignore[return-value]

    def _pread(self, n: int, at: int = 0) -> bytes:
        try:
            return os.pread(self._file(), n, at)
        except OSError as e:
            raise FormatError(f"cannot read {self.path}: {e.strerror or e}") from None

    def _stored(self, n: int) -> bytes:
        """The first ``n`` bytes as stored (not decompressed): one read of the first HEAD bytes serves them."""
        if n > HEAD:
            return self._pread(n)
        if self._first is None:
            self._first = self._pread(HEAD)
        return self._first[:n]

    def head(self, n: int = HEAD) -> bytes:
        """The first ``n`` bytes (decompressed, if the file is compressed)."""
        got = self._heads.get(n)
        if got is None:
            kind = self.compression
            got = self._heads[n] = compression.head(self.path, kind, n) if kind else self._stored(n)
        return got

    def whole(self) -> bytes | None:
        """The whole file, where its first read held all of it (a file of at most HEAD bytes, uncompressed):
        buffer enough for a small file, with no memory map to make and unmap. None otherwise."""
        first, st = self._first, self._status()
        if first is None or st is None or st.st_size != len(first) or self.compression:
            return None
        return first

    def buffer(self, *, use_mmap: bool = True) -> Any:
        """The whole file as a buffer: a read-only mmap (zero-copy) or a writable in-memory copy (a numpy
        uint8 array, read straight into uninitialised memory). A compressed file is decompressed into memory."""
        if kind := self.compression:  # a compressed file cannot be mapped: its bytes, in memory
            import numpy as np  # (here, not at the top: the command's start-up, sniff, needs no numpy)

            return np.frombuffer(compression.read_all(self.path, kind), np.uint8)
        fd = self._file()
        try:
            st = os.fstat(fd)
            size = st.st_size
            if size == 0:
                return b""
            if use_mmap:
                from .framework.mapped import remember_file

                m = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                remember_file(m, self.file_name, st)
                return m
            with open(fd, "rb", buffering=0, closefd=False) as f:
                f.seek(0)
                return _read_into_memory(f, size)
        except OSError as e:
            raise FormatError(f"cannot read {self.path}: {e.strerror or e}") from None


def open_buffer(path: str | os.PathLike[str], *, use_mmap: bool = True) -> Any:
    """The whole file as a buffer (see :meth:`Source.buffer`)."""
    with Source(path) as source:
        return source.buffer(use_mmap=use_mmap)


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


def read_head(path: str | os.PathLike[str], n: int = HEAD) -> bytes:
    """The first ``n`` bytes of a file (decompressed, if it is compressed)."""
    with Source(path) as source:
        return source.head(n)


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


def refuse_own_input(dst: str | os.PathLike[str], src: str | os.PathLike[str]) -> None:
    """A FormatError when ``dst`` is the file ``src``: an input is never overwritten by accident."""
    if Path(dst).exists() and (same_file(src, dst) or Path(src).resolve() == Path(dst).resolve()):
        raise FormatError(f"refusing to write {dst} over its own input")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
