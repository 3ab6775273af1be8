"""The :class:`Format` a codec registers (:func:`wvformats.registry.register`): its own module, so that a read
through a format's ``fast`` reader, which needs only the registry's sniffers, makes no dataclass. The registry
gives it as ``registry.Format``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import construct as cs


@dataclass
class Format:
    """How wvformats handles one format.

    ``parse(buffer, **options)`` returns the raw parsed object (a construct Container) and ``build(obj,
    stream)`` writes it back: together they are the byte-exact round trip. ``to_model`` turns the parsed
    object into the user-facing model, and ``from_model`` does the reverse for writing.
    """

    name: str
    extensions: tuple[str, ...]
    description: str
    schema: cs.Construct | None
    sniff: Callable[[bytes], bool]
    parse: Callable[..., Any]
    build: Callable[[Any, Any], None]
    to_model: Callable[..., Any]
    from_model: Callable[..., Any]
    model: type | None = None
    # other types the writer (``from_model``) takes besides ``model`` (fastText writes any Embeddings); a type may
    # be named "module:QualName" instead, so that registering the format imports nothing of its module
    writes: tuple[type | str, ...] = ()
    inspect: Callable[[Any], dict[str, Any]] | None = None
    # a summary from the header and a sample, in bounded time and memory whatever the file's size:
    # ``inspect_head(buffer, complete=..., **read_options)`` (the path, for a folder format); ``complete`` is
    # False when the buffer holds only the first bytes of the file (a compressed one). ``inspect(full=True)``,
    # and every inspect of a format without one, parses the whole file and calls ``inspect``
    inspect_head: Callable[..., dict[str, Any]] | None = None
    # what the format's tools refuse or misread in a parsed file, a line each (``validate`` fails on them); a line
    # starting "note: " is said and not failed (a file they read, in a way worth saying)
    check: Callable[[Any], list[str]] | None = None
    is_directory: bool = False
    # sniffers run in ascending priority: magic bytes first (0), content heuristics later
    priority: int = 50
    schemas: dict[str, cs.Construct] = field(default_factory=dict)
    # the options ``read`` takes for this format (others are refused); None: not checked
    read_options: tuple[str, ...] | None = None
    # the parse keeps bulk arrays as views of the file's buffer: ``read(mmap=False)`` then parses the mapped
    # file while a worker thread reads it into memory, and takes the arrays from that copy
    array_views: bool = False
    # a looser sniffer for damaged files of the format: when no format's ``sniff`` matches, the first (by
    # priority) whose ``resembles`` does is the file's format, so that reading it reports this format's error
    resembles: Callable[[bytes], bool] | None = None
    # the sniffer's summary that needs no codec (see :class:`Sniffer`), tried before ``inspect_head``
    quick_inspect: Callable[..., dict[str, Any] | None] | None = None
    # reads a compressed file from its decompressed blocks of whole lines (``stream(blocks, **options)``, the
    # blocks as :func:`compression.line_blocks` gives them) instead of one buffer of the whole file: a text
    # format's memory then holds the result and one block
    stream: Callable[..., Any] | None = None
    # what the family's commands do with such files, what can be looked up in them, and the command that makes
    # them when ``write`` cannot (see :class:`Sniffer`)
    commands: tuple[str, ...] = ()
    lookups: str = ""
    built_by: str = ""
    entry: Callable[[Any], Any] | None = None  # (see :class:`Sniffer`)
    fast: str | None = None  # (see :class:`Sniffer`)
    magic: bytes = b""  # (see :class:`Sniffer`)
