"""The format registry: one entry per format, with its name, extensions, sniffer, schema and codec.

Each format family is a package under ``wvformats.families`` whose ``codec`` module registers the family's
formats when imported; :func:`load` imports them all, so a new family is a new package there (or a call to
:func:`register` from user code or a plugin).

A family may also declare its formats in a light ``sniff`` module (standard library only): their names,
extensions, priorities and sniffers, as :class:`Sniffer` entries in ``FORMATS``. Then telling a file's
format imports no codec (no numpy, no construct), and :func:`get` imports only the codec of the family
asked for; the codec's ``Format`` takes those fields from the ``sniff`` module, their one home.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import UnknownFormatError

if TYPE_CHECKING:
    import construct as cs

    from .formatclass import Format


class Sniffer(NamedTuple):
    """What the registry knows of a format before its family's codec is imported: enough to tell a file
    (or folder) of that format, in the order sniffers run. A codec passes them on: ``Format(**s._asdict(), ...)``."""

    name: str
    extensions: tuple[str, ...]
    sniff: Callable[[Any], bool]
    # sniffers run in ascending priority: magic bytes first (0), content heuristics later
    priority: int = 50
    is_directory: bool = False
    # a looser test, tried only when no format's sniff matched: the format a damaged file is closest to, so that
    # its error is the one reported
    resembles: Callable[[bytes], bool] | None = None
    # the summary ``inspect`` gives without ``--full``, made without the codec (standard library only), so that
    # inspecting a small file imports no numpy: ``quick_inspect(buffer, **read_options)`` of a whole uncompressed
    # file, the same keys as the codec's ``inspect_head``; None where the codec must read it (it then reports any
    # fault)
    quick_inspect: Callable[..., dict[str, Any] | None] | None = None
    # what the family's own commands do with a file of this format, one phrase each naming the command
    # ("`wvformats rwkv quantize FILE OUT --type T` quantizes it"): errors that meet such a file where another
    # kind was wanted say them
    commands: tuple[str, ...] = ()
    # what can be looked up in such a file, and with which command (the `wvformats formats` table); an
    # embedding format's default is "similar, analogy"
    lookups: str = ""
    # the command that makes files of a format that ``write`` cannot write (a folder format), for that table
    built_by: str = ""
    # a folder format whose layout one file of it holds (a sharded checkpoint's index): that file, given the
    # folder or the file; a path to such a file (named with one of the format's extensions, and that ``sniff``
    # takes) reads as the folder format, and ``dump`` shows that file
    entry: Callable[[Any], Any] | None = None
    # "module:function" of a reader of the format's files that needs no codec: ``function(buffer)`` gives the
    # model, or None where it cannot (then the codec reads the file, and says what is wrong). Used by ``read``
    # without options; its module imports no construct (a schema's cached plan, :mod:`.framework.plans`)
    fast: str | None = None
    # the bytes every file of the format starts with (its magic, from ``schemas/identity.py``), where it has
    # some: a head that does not start with them is not asked ``sniff`` (b"": every head is)
    magic: bytes = b""


def schema_io(name: str, schema: cs.Construct, params: tuple[str, ...] = ()) -> tuple[Callable[..., Any],
                                                                                   Callable[[Any, Any], None]]:
    """The ``parse``/``build`` pair of a format whose file is one schema; ``params`` are the read options
    passed to the schema (as construct ``_params``)."""
    from . import framework

    def parse(buf: Any, **options: Any) -> Any:
        load_plugins()  # (a plugin may add to the schema: a chunk type, for one)
        wanted = {k: options[k] for k in params if options.get(k) is not None}
        return framework.parse(schema, buf, format=name, **wanted)

    def build(obj: Any, stream: Any) -> None:
        load_plugins()
        framework.build(schema, obj, stream, format=name)

    return parse, build


_FORMATS: dict[str, Format] = {}
# format name -> (family, sniffer), from the families' ``sniff`` modules; None until read
_DECLARED: dict[str, tuple[str, Sniffer]] | None = None
# format name -> (codec module, sniffer), from plugins that declare their formats (``FORMATS`` and ``CODEC``)
_PLUGIN_DECLARED: dict[str, tuple[str, Sniffer]] = {}
_PLUGIN_CODECS: list[str] = []  # the ``CODEC`` modules of those plugins not yet imported (:func:`load_plugins`)
_OLD_STYLE: list[str] = []  # families without a ``sniff`` module: their codec is imported to sniff
_scanned = _loaded = False
_scan_done = False  # (_scanned is set as the scan begins; this once it has ended: what may be read without the lock)
# codec modules that failed to import, with the error: one broken codec must not take the others down
LOAD_ERRORS: dict[str, str] = {}
_LOADING = threading.RLock()  # a thread arriving while another imports waits for the whole registry
_CHANGES = 0  # formats registered (or replaced) so far: what the sorted sniffers were made from
_SORTED: tuple[tuple[int, int, int], list[Sniffer | Format], SniffOrder] | None = None  # (made from, sniffers(),
# sniff_order())

FAMILIES = "wvformats.families"


def __getattr__(name: str) -> Any:
    """``Format``, made when first asked for (by a codec, or the user): a read through a format's ``fast`` reader
    needs none, and the dataclass costs a fresh process ~1.5 ms (``dataclasses`` imported, its methods made)."""
    if name == "Format":
        from .formatclass import Format

        globals()["Format"] = Format
        return Format
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(fmt: Format, *, replace: bool = False) -> Format:
    """Add a format; ``replace=True`` to override an existing one of the same name."""
    with _LOADING:
        family = _declared().get(fmt.name, ("", None))[0]
        if family:  # a format a family declares: its codec registers it first (a plugin's replace= comes after)
            _import_codec(family)
        if replace and fmt.name in _PLUGIN_DECLARED:  # (likewise a plugin's codec, for a plugin that replaces)
            _import(_PLUGIN_DECLARED[fmt.name][0], fmt.name, "plugin")
        if fmt.name in _FORMATS and not replace:
            raise ValueError(f"format {fmt.name!r} is already registered")
        global _CHANGES
        _FORMATS[fmt.name] = fmt
        _CHANGES += 1
    return fmt


PLUGIN_GROUP = "wvformats.plugins"  # entry points (modules) of installed packages that extend wvformats
PLUGIN_VARIABLE = "WVFORMATS_PLUGINS"  # or modules named here, comma-separated (importable from sys.path)


def load() -> dict[str, Format]:
    """Import every family's codec module once, then the plugins, and return the registry.

    Plugins are how user formats and finalfusion chunk types reach every process, the ``wvformats`` command
    included, without editing the library: a module that calls :func:`register` or ``register_chunk`` when
    imported, named by an installed package's ``wvformats.plugins`` entry point or in ``WVFORMATS_PLUGINS``.
    A plugin module may instead declare its formats (see :func:`load_plugins`): then telling a file's
    format imports only that declaration, and its codec is imported before anything is read or written.
    """
    global _loaded
    with _LOADING:
        if not _loaded:
            _loaded = True  # (a codec that asks for the registry while it is imported gets it as it is)
            for family in sorted({family for family, _ in _declared().values()}):
                _import_codec(family)
            load_plugins()
    return _FORMATS


def load_plugins() -> None:
    """Every plugin imported, its codec included: what any read, write, build or validation needs first
    (a plugin may add a chunk type to a built-in format, so every plugin counts, not only those of the format
    at hand). Cheap once done; :func:`get`, :func:`load` and every ``schema_io`` parse and build call it.

    A plugin module (the entry point's, or one named in ``WVFORMATS_PLUGINS``) is one of two kinds:
    a *codec* that registers its formats (or chunk types) when imported, imported whenever the registry is
    first consulted, ``sniff`` included; or a *declaration*, standard library only, whose ``FORMATS`` are
    :class:`Sniffer` entries (possibly none) and whose ``CODEC`` names the module that registers them:
    sniffing imports only the declaration, and the codec is imported here."""
    if not _PLUGIN_CODECS and _scanned:
        return
    with _LOADING:
        _scan()
        while _PLUGIN_CODECS:  # (each tried once: one that fails is reported once, in LOAD_ERRORS)
            module = _PLUGIN_CODECS.pop(0)
            if module not in sys.modules:
                _import(module, module, "plugin")


def sniffers() -> list[Sniffer | Format]:
    """Every format's sniffer in the order :func:`wvformats.sniff` tries them (ascending priority, then
    name), with no family's codec imported where the family declares its formats in a ``sniff`` module.
    Formats registered in this process (codecs, plugins, user code) stand over those declared. Sorted once
    for each state of the registry (every ``sniff`` and ``read`` asks)."""
    return list(_sorted()[1])


class SniffOrder:
    """The sniffers in the order :func:`wvformats.sniff` asks them, by what they are asked of."""

    __slots__ = ("folders", "entries", "tests")

    def __init__(self, folders: tuple[Sniffer | Format, ...], entries: tuple[Sniffer | Format, ...],
                 tests: tuple[tuple[Callable[[bytes], bool], str, bytes], ...]) -> None:
        self.folders = folders  # of a folder: the folder formats' sniffers
        self.entries = entries  # of a file, first: the folder formats that one file of them names
        # then of its first bytes: (test, format name, the bytes the head must start with for the test to be
        # asked), every file format's sniff (after its magic), then their ``resembles`` (of any head)
        self.tests = tests


def sniff_order() -> SniffOrder:
    """:func:`sniffers` as :func:`wvformats.sniff` asks them (made with them, once for each state)."""
    return _sorted()[2]


def _sorted() -> tuple[tuple[int, int, int], list[Sniffer | Format], SniffOrder]:
    global _SORTED
    made = _SORTED  # (as it was when this call began, while nothing is being registered: no lock needed)
    if made is not None and made[0] == (_CHANGES, len(_FORMATS), len(_PLUGIN_DECLARED)) and _scan_done:
        return made
    with _LOADING:
        if not _scanned:
            _scan()
        made_from = (_CHANGES, len(_FORMATS), len(_PLUGIN_DECLARED))
        if _SORTED is None or _SORTED[0] != made_from:
            found: dict[str, Sniffer | Format] = {name: s for name, (_, s) in _declared().items()}
            found.update({name: s for name, (_, s) in _PLUGIN_DECLARED.items()})
            found.update(_FORMATS)
            fmts = sorted(found.values(), key=lambda f: (f.priority, f.name))
            files = [f for f in fmts if not f.is_directory]
            order = SniffOrder(tuple(f for f in fmts if f.is_directory),
                               tuple(f for f in fmts if f.is_directory and f.entry is not None),
                               tuple((test, f.name, getattr(f, "magic", b"") if kind == "sniff" else b"")
                                     for kind in ("sniff", "resembles") for f in files
                                     if (test := getattr(f, kind)) is not None))
            _SORTED = (made_from, fmts, order)
        return _SORTED


def _scan() -> None:
    """Once: the codecs of the families without a ``sniff`` module, then the plugins."""
    global _scanned, _scan_done
    with _LOADING:
        if _scanned:
            return
        _scanned = True
        _declared()
        for family in _OLD_STYLE:
            _import_codec(family)
        for name, module in _plugin_modules():
            plugin = _import(module, name, "plugin")
            codec = getattr(plugin, "CODEC", None)
            if isinstance(codec, str):  # a declaration: its formats' sniffers now, its codec when needed
                _PLUGIN_CODECS.append(codec)
                for sniffer in getattr(plugin, "FORMATS", ()):
                    _PLUGIN_DECLARED[sniffer.name] = (codec, sniffer)
        _scan_done = True


def _declared() -> dict[str, tuple[str, Sniffer]]:
    """Format name -> (family, sniffer) for the families that have a ``sniff`` module (read once)."""
    global _DECLARED
    with _LOADING:
        if _DECLARED is None:
            _DECLARED = {}
            for family in _families():
                try:
                    module = importlib.import_module(f"{FAMILIES}.{family}.sniff")
                except ModuleNotFoundError as e:
                    if e.name != f"{FAMILIES}.{family}.sniff":  # (a module the sniff module imports)
                        module = _import(f"{FAMILIES}.{family}.sniff", family, "codec")
                    else:
                        module = None  # a family without a sniff module: its codec is imported to sniff
                except Exception:  # noqa: BLE001 - reported (LOAD_ERRORS) and warned once, as any import
                    module = _import(f"{FAMILIES}.{family}.sniff", family, "codec")
                if module is None:  # (its codec is tried too, when sniffing: it says why it fails)
                    _OLD_STYLE.append(family)
                for s in getattr(module, "FORMATS", ()):
                    _DECLARED[s.name] = (family, s)
        return _DECLARED


def _families() -> list[str]:
    """The family packages, by name: the folders of ``wvformats.families`` that hold an ``__init__.py``."""
    found: set[str] = set()
    for folder in importlib.import_module(FAMILIES).__path__:
        try:
            with os.scandir(folder) as it:
                found.update(e.name for e in it if e.is_dir() and e.name.isidentifier()
                             and os.path.isfile(os.path.join(e.path, "__init__.py")))
        except OSError:
            continue
    return sorted(found)


def _import_codec(family: str) -> None:
    """The family's codec, imported unless it is (or is being) imported already."""
    if f"{FAMILIES}.{family}.codec" not in sys.modules:
        _import(f"{FAMILIES}.{family}.codec", family, "codec")


def _plugin_modules() -> list[tuple[str, str]]:
    """(name, module) of every plugin: the ``wvformats.plugins`` entry points, then ``WVFORMATS_PLUGINS``."""
    found = []
    if may_have_entry_points(PLUGIN_GROUP):  # (importlib.metadata and its scan cost more than the rest of sniff)
        import importlib.metadata

        found = [(ep.name, ep.value) for ep in sorted(importlib.metadata.entry_points(group=PLUGIN_GROUP),
                                                      key=lambda e: e.name)]
    variable = filter(None, (m.strip() for m in os.environ.get(PLUGIN_VARIABLE, "").split(",")))
    return found + [(name, name) for name in variable]


def may_have_entry_points(group: str) -> bool:
    """False only when no installed distribution can declare entry points in ``group``: no
    ``entry_points.txt`` of a ``.dist-info`` or ``.egg-info`` folder on ``sys.path`` names it, and no
    ``sys.path`` entry is an archive (whose metadata only importlib.metadata reads). The answer is cached
    (:func:`framework.plans.cache_folder`) while every ``sys.path`` folder's modification time is the same:
    installing or removing a distribution adds or removes its metadata folder there."""
    from .framework import cache_folder, keep, loads

    folder = cache_folder()
    file = folder / "entry-points.json" if folder is not None else None
    stamps = []
    for entry in sys.path:
        try:
            stamps.append([entry, os.stat(entry or ".").st_mtime_ns])
        except OSError:
            stamps.append([entry, None])
    try:
        with open(file, "rb") as f:  # type: ignore[arg-type]
            kept = loads(f.read().decode("utf-8"))
        if kept["path"] == stamps and group in kept["groups"]:
            return bool(kept["groups"][group])
    except (OSError, TypeError, ValueError, KeyError):
        kept = {}
    answer = _scan_entry_points(group)
    if file is not None:
        groups = kept.get("groups", {}) if kept.get("path") == stamps else {}
        keep(file, {"path": stamps, "groups": {**groups, group: answer}})
    return answer


def _scan_entry_points(group: str) -> bool:
    """:func:`_may_have_entry_points`, found by reading every ``entry_points.txt``."""
    needle = group.encode()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                folders = [e.path for e in it if e.name.endswith((".dist-info", ".egg-info"))]
        except NotADirectoryError:
            return True  # a zip or egg on the path
        except OSError:
            continue
        for folder in folders:
            try:
                with open(os.path.join(folder, "entry_points.txt"), "rb") as f:
                    if needle in f.read():
                        return True
            except OSError:
                continue
    return False


def _import(module: str, name: str, kind: str) -> Any:
    try:
        return importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - reported by tests and by `wvformats formats`
        LOAD_ERRORS[name] = f"{type(e).__name__}: {e}"
        warnings.warn(f"wvformats {kind} {name!r} failed to load: {e}", RuntimeWarning, stacklevel=3)
        return None


def failed_note() -> str:
    """For an error that says no format fits: the codecs and plugins that failed to import ('' when none
    did), since the format wanted may be one of them."""
    if not LOAD_ERRORS:
        return ""
    return "; these failed to load: " + "; ".join(f"{k} ({v})" for k, v in sorted(LOAD_ERRORS.items()))


def sniffer(name: str) -> Sniffer | Format | None:
    """The registered format called ``name``, else the sniffer a family declares for it (no codec imported),
    else None."""
    if not _scan_done:
        with _LOADING:
            _scan()
    return _FORMATS.get(name) or (_DECLARED or _declared()).get(name, ("", None))[1] or \
        _PLUGIN_DECLARED.get(name, ("", None))[1]


def get(name: str) -> Format:
    """The format called ``name``; UnknownFormatError lists the known ones otherwise. Only the codec of
    the family that declares it is imported (every codec, for a format no ``sniff`` module declares)."""
    with _LOADING:
        _scan()
        if name not in _FORMATS and name in _declared():
            _import_codec(_declared()[name][0])
    load_plugins()  # (what reads or writes a file of any format: a plugin may extend it)
    if name in _FORMATS:
        return _FORMATS[name]
    formats = load()
    try:
        return formats[name]
    except KeyError:
        raise UnknownFormatError(
            f"unknown format {name!r}; known formats: {', '.join(sorted(formats))}{failed_note()}", format=name
        ) from None


def by_extension(suffix: str) -> list[Format]:
    """The formats whose files take ``suffix``, by name (the registry's own order depends on which family's
    codec a process imported first)."""
    suffix = suffix.lower()
    return sorted((f for f in load().values() if suffix in f.extensions), key=lambda f: f.name)
