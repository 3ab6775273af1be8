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
from collections import namedtuple
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import UnknownFormatError

if TYPE_CHECKING:
    from pathlib import Path

    import construct as cs

    from .formatclass import Format


_REQUIRED = object()  # (a Sniffer field without a default)
# Sniffer's fields in order, each with its type and its default
_SNIFFER_FIELDS = {
    "name": _REQUIRED,  # str
    "extensions": _REQUIRED,  # tuple[str, ...]
    "sniff": _REQUIRED,  # Callable[[Any], bool]: of a file's first bytes (of the path, for a folder format)
    # int: sniffers run in ascending priority: magic bytes first (0), content heuristics later
    "priority": 50,
    "is_directory": False,  # bool
    # Callable[[bytes], bool] | None: a looser test, tried only when no format's sniff matched: the format a
    # damaged file is closest to, so that its error is the one reported
    "resembles": None,
    # Callable[..., dict[str, Any] | None] | None: the summary ``inspect`` gives without ``--full``, made
    # without the codec (standard library only), so that inspecting a small file imports no numpy:
    # ``quick_inspect(buffer, **read_options)`` of a whole uncompressed file, the same keys as the codec's
    # ``inspect_head``; None where the codec must read it (it then reports any fault)
    "quick_inspect": None,
    # tuple[str, ...]: what the family's own commands do with a file of this format, one phrase each naming
    # the command ("`wvformats rwkv quantize FILE OUT --type T` quantizes it"): errors that meet such a file
    # where another kind was wanted say them
    "commands": (),
    # str: what can be looked up in such a file, and with which command (the `wvformats formats` table); an
    # embedding format's default is "similar, analogy"
    "lookups": "",
    # str: the command that makes files of a format that ``write`` cannot write (a folder format), for that
    # table
    "built_by": "",
    # Callable[[Any], Any] | None: a folder format whose layout one file of it holds (a sharded checkpoint's
    # index): that file, given the folder or the file; a path to such a file (named with one of the format's
    # extensions, and that ``sniff`` takes) reads as the folder format, and ``dump`` shows that file
    "entry": None,
    # str | None: "module:function" of a reader of the format's files that needs no codec:
    # ``function(buffer)`` gives the model, or None where it cannot (then the codec reads the file, and says
    # what is wrong). Used by ``read`` without options; its module imports no construct (a schema's cached
    # plan, :mod:`.framework.plans`)
    "fast": None,
    # bytes: the bytes every file of the format starts with (its magic, from ``schemas/identity.py``), where
    # it has some: a head that does not start with them is not asked ``sniff`` (b"": every head is)
    "magic": b"",
}


class Sniffer(namedtuple("Sniffer", _SNIFFER_FIELDS,
                         defaults=[v for v in _SNIFFER_FIELDS.values() if v is not _REQUIRED])):
    """What the registry knows of a format before its family's codec is imported: enough to tell a file
    (or folder) of that format, in the order sniffers run (its fields: ``_SNIFFER_FIELDS``). A codec passes
    them on: ``Format(**s._asdict(), ...)``. (A ``collections.namedtuple``: ``typing.NamedTuple`` compiles
    each field's annotation, ~0.3 ms of every fresh process.)"""

    __slots__ = ()


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
# format name -> (family, sniffer), from every family's ``sniff`` module; None until all are read
_DECLARED: dict[str, tuple[str, Sniffer]] | None = None
_FAMILY_SNIFFERS: dict[str, dict[str, Sniffer]] = {}  # family -> its sniff module's formats by name, imported
# the index of the declared sniffers (:func:`_indexed`): format name -> its stand-in, and the families without
# a ``sniff`` module; None where there is none (no cache, or out of date: every sniff module is imported)
_INDEX: tuple[dict[str, Declared], list[str]] | None = None
_INDEX_READ = False
_INDEX_AT: tuple[Path, list[str]] | None = None  # (its file, and the families' folders it was read for)
_BROKEN: set[str] = set()  # families whose sniff module failed to import
_SNIFFER_OF: dict[str, Sniffer] = {}  # format name -> its family's sniffer, as sniffer() has found it
# format name -> (codec module, sniffer), from plugins that declare their formats (``FORMATS`` and ``CODEC``)
_PLUGIN_DECLARED: dict[str, tuple[str, Sniffer]] = {}
_PLUGIN_CODECS: list[str] = []  # the ``CODEC`` modules of those plugins not yet imported (:func:`load_plugins`)
_OLD_STYLE: list[str] = []  # families without a ``sniff`` module: their codec is imported to sniff
_scanned = _loaded = False
_scan_done = False  # (_scanned is set as the scan begins; this once it has ended: what may be read without the lock)
# codec modules that failed to import, with the error: one broken codec must not take the others down
LOAD_ERRORS: dict[str, str] = {}
_LOADING = threading.RLock()  # a thread arriving while another imports waits for the whole registry
# formats registered (or replaced) and families' sniff modules imported so far: what the sorted sniffers were
# made from; and (made from, sniffers(), sniff_order())
_CHANGES = 0
_SORTED: tuple[tuple[int, int, int], list[Sniffer | Format | Declared], SniffOrder] | None = None

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
        family = _family_of(fmt.name)
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
    _declared()  # (the sniffers themselves: every family's sniff module imported)
    return list(_sorted()[1])  # type: ignore[arg-type]


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
    """:func:`sniffers` as :func:`wvformats.sniff` asks them (made with them, once for each state). Where the
    index of the declared sniffers is current (:func:`_indexed`), a family's are its stand-ins
    (:class:`Declared`) until its ``sniff`` module is imported: a head is asked only the tests of the families
    whose magic it starts with (and those without magic, in order), and only their modules are imported."""
    return _sorted()[2]


def _sorted() -> tuple[tuple[int, int, int], list[Sniffer | Format | Declared], SniffOrder]:
    global _SORTED
    made = _SORTED  # (as it was when this call began, while nothing is being registered: no lock needed)
    if made is not None and made[0] == (_CHANGES, len(_FORMATS), len(_PLUGIN_DECLARED)) and _scan_done:
        return made
    with _LOADING:
        if not _scanned:
            _scan()
        made_from = (_CHANGES, len(_FORMATS), len(_PLUGIN_DECLARED))
        if _SORTED is None or _SORTED[0] != made_from:
            found: dict[str, Sniffer | Format | Declared] = {n: s for n, (_, s) in _declared_now().items()}
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
        for family in _old_style():
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
    """Format name -> (family, sniffer) for the families that have a ``sniff`` module (each imported once)."""
    global _DECLARED
    with _LOADING:
        if _DECLARED is None:
            _DECLARED = {}  # (as it fills: a codec a sniff module imports gets it as it is)
            for family in _families():
                for s in _sniffers_of(family).values():
                    _DECLARED[s.name] = (family, s)
        return _DECLARED


def _sniffers_of(family: str) -> dict[str, Sniffer]:
    """The formats the family's ``sniff`` module declares, by name; none where it has no such module (or it
    fails to import: reported once), and the family is then one whose codec is imported to sniff. Imported
    once; where the index recorded the family otherwise (an edit its stamps did not see), the index is
    dropped (:class:`Declared` then raises :class:`StaleIndex`)."""
    found = _FAMILY_SNIFFERS.get(family)
    if found is not None:
        return found
    global _CHANGES, _INDEX
    with _LOADING:
        if family in _FAMILY_SNIFFERS:
            return _FAMILY_SNIFFERS[family]
        try:
            module = importlib.import_module(f"{FAMILIES}.{family}.sniff")
        except ModuleNotFoundError as e:
            if e.name != f"{FAMILIES}.{family}.sniff":  # (a module the sniff module imports)
                module = _import(f"{FAMILIES}.{family}.sniff", family, "codec")
                _BROKEN.add(family)
            else:
                module = None  # a family without a sniff module: its codec is imported to sniff
        except Exception:  # noqa: BLE001 - reported (LOAD_ERRORS) and warned once, as any import
            module = _import(f"{FAMILIES}.{family}.sniff", family, "codec")
            _BROKEN.add(family)
        if module is None and family not in _OLD_STYLE:  # (its codec is tried too, when sniffing: it says why
            _OLD_STYLE.append(family)  # it fails)
        found = _FAMILY_SNIFFERS[family] = {s.name: s for s in getattr(module, "FORMATS", ())}
        if _INDEX is not None and ({n: d.record for n, d in _INDEX[0].items() if d.family == family},
                                   family in _INDEX[1]) != ({n: _record(family, s) for n, s in found.items()},
                                                            module is None):
            _INDEX = None
            if _INDEX_AT is not None:
                _keep_index(*_INDEX_AT)  # (derived again from every module, for the next process)
        _CHANGES += 1  # (the sorted sniffers take the family's own, or are made again without the index)
        return found


def _index_in_use() -> tuple[dict[str, Declared], list[str]] | None:
    """The index of the declared sniffers while it stands in for the modules: current, and not every ``sniff``
    module imported (:func:`_declared`) yet."""
    return None if _DECLARED is not None else _indexed()


def _declared_now() -> dict[str, tuple[str, Sniffer | Declared]]:
    """:func:`_declared`, but while the index stands in for the modules, the formats of the families whose
    ``sniff`` module is not imported yet are their stand-ins."""
    index = _index_in_use()
    if index is None:
        return _declared()  # type: ignore[return-value]
    return {name: (d.family, _FAMILY_SNIFFERS[d.family][name] if d.family in _FAMILY_SNIFFERS else d)
            for name, d in index[0].items()}


def _family_of(name: str) -> str:
    """The family whose ``sniff`` module declares the format ``name`` ('' where none does)."""
    index = _index_in_use()
    if index is None:
        return _declared().get(name, ("", None))[0]
    return d.family if (d := index[0].get(name)) is not None else ""


def _declared_sniffer(name: str) -> Sniffer | None:
    """The sniffer a family's ``sniff`` module declares for the format ``name`` (None where none does): while
    the index stands in, only that family's module imported. Kept by name (``_SNIFFER_OF``): every read asks."""
    index = _index_in_use()
    if index is not None:
        d = index[0].get(name)
        if d is None:
            return None
        found = _sniffers_of(d.family).get(name)
    if index is None or _INDEX is None:  # (of the modules themselves: no index in use, or it was dropped just now)
        found = _declared().get(name, ("", None))[1]
    if found is not None:
        _SNIFFER_OF[name] = found
    return found


def _old_style() -> list[str]:
    """The families without a ``sniff`` module (their codecs are imported to sniff)."""
    index = _index_in_use()
    if index is not None:
        return list(index[1])
    _declared()
    return list(_OLD_STYLE)


class StaleIndex(Exception):  # noqa: N818 - not an error: the sniff that meets it starts again
    """Raised by a :class:`Declared` whose family's ``sniff`` module declares otherwise than the index
    recorded: the index is dropped, and :func:`wvformats.sniff` asks again, of the modules themselves."""


class Declared:
    """A format of a family's ``sniff`` module as the index of declared sniffers records it
    (:func:`_indexed`): what :func:`wvformats.sniff` reads before asking (name, extensions, priority, kind,
    magic, ``fast``), and ``sniff``, ``resembles`` and ``entry`` that import that family's module, and only
    it, to ask its own."""

    __slots__ = ("family", "name", "extensions", "priority", "is_directory", "magic", "fast", "resembles",
                 "entry", "record")

    def __init__(self, record: list[Any]) -> None:
        self.record = record
        self.name, self.family, extensions, self.priority, self.is_directory, magic, self.fast = record[:7]
        resembles, entry = record[7:]
        self.extensions, self.magic = tuple(extensions), bytes.fromhex(magic)
        self.resembles = self._resembles if resembles else None
        self.entry = self._entry if entry else None

    def _own(self) -> Sniffer:
        found = _sniffers_of(self.family).get(self.name)
        if _INDEX is None or found is None:
            raise StaleIndex(self.name)
        return found

    def sniff(self, of: Any) -> bool:
        return self._own().sniff(of)

    def _resembles(self, head: bytes) -> bool:
        return self._own().resembles(head)  # type: ignore[misc]

    def _entry(self, path: Any) -> Any:
        return self._own().entry(path)  # type: ignore[misc]


INDEX_VERSION = 1  # of the index's form: an index of another is derived again
INDEX_FILE = "sniffers.json"  # in the cache folder (:func:`framework.cache.cache_folder`)


def _record(family: str, s: Sniffer) -> list[Any]:
    """What the index keeps of a declared sniffer (as JSON): what telling a file reads before asking it."""
    return [s.name, family, list(s.extensions), s.priority, s.is_directory, s.magic.hex(), s.fast,
            s.resembles is not None, s.entry is not None]


def _indexed() -> tuple[dict[str, Declared], list[str]] | None:
    """The index of the declared sniffers, read once a process from the cache folder: each family's formats
    as its ``sniff`` module declares them (:func:`_record`), and the families without one, valid while the
    files it was derived from have the modification time and size they had (as a ``.pyc`` is): the
    families' folders (a family added or removed), each family's package and ``sniff`` module (or their
    absence), and the package's modules imported with them (registry, schemas, framework). Where it is
    missing, out of date or unreadable, every ``sniff`` module is imported and the index derived from them is
    kept for the next process (not where one failed to import); None then, and where there is no cache."""
    global _INDEX, _INDEX_READ, _INDEX_AT
    if _INDEX_READ:
        return _INDEX
    with _LOADING:
        if not _INDEX_READ:
            from .framework import cache_folder

            folder = cache_folder()
            if folder is not None:
                _INDEX_AT = folder / INDEX_FILE, list(importlib.import_module(FAMILIES).__path__)
                _INDEX = _read_index(*_INDEX_AT)
                if _INDEX is None:
                    _keep_index(*_INDEX_AT)
            _INDEX_READ = True
    return _INDEX


def _read_index(file: Path, folders: list[str]) -> tuple[dict[str, Declared], list[str]] | None:
    from .framework import loads, stamp

    try:
        with open(file, "rb") as f:
            kept = loads(f.read().decode("utf-8"))
        if kept["version"] != INDEX_VERSION or kept["folders"] != folders or \
                any(stamp(path) != kept_stamp for path, kept_stamp in kept["stamps"]):
            return None
        return {r[0]: Declared(r) for r in kept["formats"]}, list(kept["old_style"])
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def _keep_index(file: Path, folders: list[str]) -> None:
    """Every ``sniff`` module imported, and the index of what they declare kept in ``file`` (unless one failed
    to import: then each process imports them and reports it)."""
    from .framework import keep, stamp

    declared = _declared()
    if _BROKEN:
        return
    package = __name__.rpartition(".")[0]
    paths = {*folders, *(os.path.join(folder, family, name) for folder in folders
                         for family in _FAMILY_SNIFFERS if os.path.isdir(os.path.join(folder, family))
                         for name in ("__init__.py", "sniff.py"))}
    # (whatever the sniff modules are made of is among the package's modules imported by now: in the first
    # process after an install, those of `import wvformats` and the sniff modules)
    paths.update(m.__file__ for name, m in list(sys.modules.items())
                 if name.partition(".")[0] == package and getattr(m, "__file__", None))
    keep(file, {"version": INDEX_VERSION, "folders": folders,
                "stamps": [[p, stamp(p)] for p in sorted(paths)],
                "formats": [_record(family, s) for _, (family, s) in sorted(declared.items())],
                "old_style": sorted(_OLD_STYLE)})


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
    return _FORMATS.get(name) or _SNIFFER_OF.get(name) or _declared_sniffer(name) or \
        _PLUGIN_DECLARED.get(name, ("", None))[1]


def get(name: str) -> Format:
    """The format called ``name``; UnknownFormatError lists the known ones otherwise. Only the codec of
    the family that declares it is imported (every codec, for a format no ``sniff`` module declares)."""
    with _LOADING:
        _scan()
        if name not in _FORMATS and (family := _family_of(name)):
            _import_codec(family)
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
