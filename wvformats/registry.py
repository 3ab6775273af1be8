"""The format registry: one entry per format, with its name, extensions, sniffer, schema and codec.

Each format family is a package under ``wvformats.families`` whose ``codec`` module registers the family's
formats when imported; :func:`load` imports them all, so a new family is a new package there (or a call to
:func:`register` from user code or a plugin).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import pkgutil
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import construct as cs

from .errors import UnknownFormatError


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
    inspect: Callable[[Any], dict[str, Any]] | None = None
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
    # reads a compressed file from its decompressed blocks of whole lines (``stream(blocks, **options)``, the
    # blocks as :func:`compression.line_blocks` gives them) instead of one buffer of the whole file: a text
    # format's memory then holds the result and one block
    stream: Callable[..., Any] | None = None


def schema_io(name: str, schema: cs.Construct, params: tuple[str, ...] = ()) -> tuple[Callable[..., Any],
                                                                                   Callable[[Any, Any], None]]:
    """The ``parse``/``build`` pair of a format whose file is one schema; ``params`` are the read options
    passed to the schema (as construct ``_params``)."""
    from . import framework

    def parse(buf: Any, **options: Any) -> Any:
        wanted = {k: options[k] for k in params if options.get(k) is not None}
        return framework.parse(schema, buf, format=name, **wanted)

    def build(obj: Any, stream: Any) -> None:
        framework.build(schema, obj, stream, format=name)

    return parse, build


_FORMATS: dict[str, Format] = {}
_loaded = False
# codec modules that failed to import, with the error: one broken codec must not take the others down
LOAD_ERRORS: dict[str, str] = {}


def register(fmt: Format, *, replace: bool = False) -> Format:
    """Add a format; ``replace=True`` to override an existing one of the same name."""
    if fmt.name in _FORMATS and not replace:
        raise ValueError(f"format {fmt.name!r} is already registered")
    _FORMATS[fmt.name] = fmt
    return fmt


PLUGIN_GROUP = "wvformats.plugins"  # entry points (modules) of installed packages that extend wvformats
PLUGIN_VARIABLE = "WVFORMATS_PLUGINS"  # or modules named here, comma-separated (importable from sys.path)


def load() -> dict[str, Format]:
    """Import every family's codec module once, then the plugins, and return the registry.

    Plugins are how user formats and finalfusion chunk types reach every process, the ``wvformats`` command
    included, without editing the library: a module that calls :func:`register` or ``register_chunk`` when
    imported, named by an installed package's ``wvformats.plugins`` entry point or in ``WVFORMATS_PLUGINS``.
    """
    global _loaded
    with _LOADING:  # a thread arriving while another imports waits for the whole registry
        if not _loaded:
            _loaded = True  # (a codec that asks for the registry while it is imported gets it as it is)
            from . import families

            for info in sorted(pkgutil.iter_modules(families.__path__), key=lambda m: m.name):
                if info.ispkg:
                    _import(f"{families.__name__}.{info.name}.codec", info.name, "codec")
            for ep in sorted(importlib.metadata.entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
                _import(ep.value, ep.name, "plugin")
            for name in filter(None, (m.strip() for m in os.environ.get(PLUGIN_VARIABLE, "").split(","))):
                _import(name, name, "plugin")
    return _FORMATS


_LOADING = threading.RLock()


def _import(module: str, name: str, kind: str) -> None:
    try:
        importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - reported by tests and by `wvformats formats`
        LOAD_ERRORS[name] = f"{type(e).__name__}: {e}"
        warnings.warn(f"wvformats {kind} {name!r} failed to load: {e}", RuntimeWarning, stacklevel=3)


def failed_note() -> str:
    """For an error that says no format fits: the codecs and plugins that failed to import ('' when none
    did), since the format wanted may be one of them."""
    if not LOAD_ERRORS:
        return ""
    return "; these failed to load: " + "; ".join(f"{k} ({v})" for k, v in sorted(LOAD_ERRORS.items()))


def get(name: str) -> Format:
    """The format called ``name``; UnknownFormatError lists the known ones otherwise."""
    formats = load()
    try:
        return formats[name]
    except KeyError:
        raise UnknownFormatError(
            f"unknown format {name!r}; known formats: {', '.join(sorted(formats))}{failed_note()}", format=name
        ) from None


def by_extension(suffix: str) -> list[Format]:
    suffix = suffix.lower()
    return [f for f in load().values() if suffix in f.extensions]
