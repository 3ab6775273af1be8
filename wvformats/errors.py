"""The one exception hierarchy of wvformats.

Every failure to read, build or check a file surfaces as a :class:`FormatError` (or a subclass), carrying
the format name, the field path with array indices (``vocab.words[1234]``), the absolute byte offset and,
where known, what was expected versus what was found.
"""

from __future__ import annotations

import errno
import os


class FormatError(Exception):
    """A file (or an object to be written) does not fit its format. ``file`` names the file, where the public
    API opened one to read or write (the command line's error line starts with it)."""

    file: str | None = None

    def __init__(
        self,
        message: str,
        *,
        format: str | None = None,
        path: str | None = None,
        offset: int | None = None,
        expected: object = None,
        found: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.format = format
        self.path = path
        self.offset = offset
        self.expected = expected
        self.found = found

    def located(self, *, format: str | None = None, prefix: str | None = None) -> FormatError:
        """Fill in the format name and prepend a parent field path; returns self."""
        if format and not self.format:
            self.format = format
        if prefix:
            self.path = f"{prefix}.{self.path}" if self.path and not self.path.startswith("[") else (
                f"{prefix}{self.path or ''}"
            )
        return self

    def __str__(self) -> str:
        return self._text(with_format=True)

    def detail(self) -> str:
        """The message with its field path and offset, without the format's name (for a sentence that
        names the format itself)."""
        return self._text(with_format=False)

    def _text(self, *, with_format: bool) -> str:
        where = []
        if self.format and with_format:
            where.append(self.format)
        if self.path:
            where.append(self.path)
        if self.offset is not None:
            where.append(f"at byte {self.offset}")
        head = ": ".join([" ".join(where)] if where else [])
        text = f"{head}: {self.message}" if head else self.message
        known = [f"{k} {shown(v)}" for k, v in (("expected", self.expected), ("found", self.found))
                 if v is not None]
        if known:
            text += f" ({', '.join(known)})"
        return text


# the most characters of a value an error shows (a padding of 219 bytes is shown by its start and length)
SHOWN = 48


def shown(value: object) -> str:
    """``repr(value)``, cut to about ``SHOWN`` characters with the length of what was left out: an error
    names a long byte string or list without printing all of it."""
    text = repr(value)
    if len(text) <= SHOWN:
        return text
    size = f"{len(value)} bytes" if isinstance(value, (bytes, bytearray, memoryview)) else f"{len(text)} characters"
    return f"{text[:SHOWN]}... ({size} in all)"


class WrongFormatError(FormatError):
    """A file read as a format it is not: the message names the format its content has and what can be done
    with it, then the error of the format asked for, kept as ``within`` (with its field path and offset)."""

    def __init__(self, message: str, within: FormatError, *, format: str | None = None) -> None:
        super().__init__(message, format=format)
        self.within = within


class TruncatedError(FormatError):
    """The file ends before a field is complete."""


class ValueMismatchError(FormatError):
    """A field holds a value its format does not allow (bad magic, bad padding, out of range)."""


class BuildError(FormatError):
    """An object cannot be written in the requested format."""


class UnknownFormatError(FormatError):
    """No registered format matches a file, or a format name is unknown."""


class MissingFileError(FormatError, FileNotFoundError):
    """The path names no file: a FormatError like every failure to read, and a FileNotFoundError, as
    ``open`` raises, so that ``except FileNotFoundError`` catches it."""

    def __init__(self, path: object) -> None:
        super().__init__(f"{path}: no such file or folder")
        self.errno, self.strerror, self.filename = errno.ENOENT, os.strerror(errno.ENOENT), str(path)


class OptionError(TypeError, ValueError):
    """A read or write option the format does not take: a TypeError, as for any unexpected keyword, and a
    ValueError, as for any other argument a call refuses (the command line's usage errors, exit 2). ``file``
    as a FormatError's: the file it was given for, where the public API opened one."""

    file: str | None = None


class NoFinalNewlineWarning(UserWarning):
    """A text file's last line has no newline: it is read as complete, as the peers read it, but a file cut
    off inside its last number looks the same."""
