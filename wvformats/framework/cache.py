"""The cache folder of this installed copy of wvformats and its JSON files (standard library only: the
registry reads one while it tells a file's format, before numpy is imported).

The folder is ``WVFORMATS_CACHE_DIR`` (empty: no cache), else ``$XDG_CACHE_HOME/wvformats`` or
``~/.cache/wvformats``, with one sub-folder per installed copy of the package. What is kept there (the
schemas' plans, :mod:`.plans`; whether any distribution declares plugins) is derived again whenever it is
missing, unreadable or out of date.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

CACHE_ENV = "WVFORMATS_CACHE_DIR"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # (wvformats/)


def cache_folder() -> Path | None:
    """This installed copy's folder of the cache (None: no cache, ``WVFORMATS_CACHE_DIR`` empty)."""
    given = os.environ.get(CACHE_ENV)
    if given is not None:
        base = Path(given) if given else None
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wvformats"
    if base is None:
        return None
    return base / f"{zlib.crc32(_PACKAGE.encode('utf-8', 'surrogatepass')):08x}"  # (one per installed copy)


def stamp(path: str) -> list[int] | None:
    """A file's modification time and size, as the cache's files record the sources they were made from (one that
    differs, or None where the file is gone, says the kept value is out of date)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def keep(file: Path, value: Any) -> None:
    """``value`` as JSON in ``file`` of the cache, written whole or not at all (a temporary file renamed); a
    folder that cannot be written is no cache."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
        import json

        tmp.write_text(json.dumps(value), encoding="utf-8")
        os.replace(tmp, file)
    except OSError:
        pass




class _Hooks:
    """What CPython's JSON scanner reads of a decoder (as ``json.JSONDecoder`` holds them)."""

    strict = True
    object_hook = None
    parse_float = float

    def __init__(self, pairs: Any, constant: Any, integer: Any) -> None:
        self.object_pairs_hook, self.parse_constant, self.parse_int = pairs, constant, integer
        self.memo: dict[str, str] = {}


_SPACE = " \t\n\r"  # JSON's white space


try:
    from _json import make_scanner as _make_scanner
except ImportError:  # (an interpreter without it)
    _make_scanner = None
_SCANNERS: dict[tuple[Any, Any, Any], Any] = {}  # the scanners of hooks that are module-level functions


def decode_json(text: str, pairs: Any, constant: Any, integer: Any, *, keep: bool = False) -> Any:
    """``json.loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_int=integer)``, by the
    scanner json.loads itself runs (``_json``) where there is one, without importing the json package: its
    import compiles four patterns, a millisecond of a file's open. A text the scanner does not take whole is
    handed to json.loads, whose error is the one raised. ``keep``: the hooks are module-level functions, and
    their scanner is made once (as json.loads keeps its default decoder's)."""
    if _make_scanner is not None:
        hooks = (pairs, constant, integer)
        scan = _SCANNERS.get(hooks) if keep else None
        if scan is None:
            scan = _make_scanner(_Hooks(pairs, constant, integer))  # (its memo of keys is emptied after each text)
            if keep:
                _SCANNERS[hooks] = scan
        start = 0 if text[:1] not in _SPACE else len(text) - len(text.lstrip(_SPACE))
        try:
            value, end = scan(text, start)
        except StopIteration:
            value, end = None, -1
        if end >= 0 and (end == len(text) or not text[end:].strip(_SPACE)):
            return value
    import json

    return json.loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_int=integer)


def loads(text: str) -> Any:
    """``json.loads(text)`` without importing the json package (see :func:`decode_json`): for the cache's own
    files, read on every open."""
    return decode_json(text, None, float, int, keep=True)
