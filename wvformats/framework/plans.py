"""Cached plans: a schema's fields as plain data, read again without importing construct.

Opening a file costs what its format's peers cost only if the open imports little: construct alone takes
longer to import than safetensors' whole open. So a schema whose fields are all of kinds this module can read
(constants, scalars, ``Valid`` checks, greedy bytes, and the field constructs that say how in a ``plan()``
method: :class:`JSONField`, :class:`Tensors`, a format's own) is turned once into a *plan*, a list of
``[kind, name, params]`` steps derived from the schema object itself, and kept as JSON in a cache folder, valid
while the source files it came from are unchanged (as a ``.pyc`` is). A later process reads the file through
the plan with the same readers the constructs parse with (:mod:`.plain`), and none of construct.

Only the path where every field is fine is served so: a step that fails or meets what it does not know gives
``None``, and the caller parses the file with the schema, whose error is the located one (the plan never
reports a fault of its own). The folder is ``WVFORMATS_CACHE_DIR`` (empty: no cache), else
``$XDG_CACHE_HOME/wvformats`` or ``~/.cache/wvformats``, one sub-folder per installed copy of the package.
"""

from __future__ import annotations

import importlib
import operator
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .cache import cache_folder, keep, loads, stamp
from .plain import TensorLayout, read_json
from .scalars import scalar, scalar_size
from .streams import BufferStream

VERSION = 1  # of the plans' form: a plan of another is derived again
_OPS = {name: getattr(operator, name) for name in ("add", "sub", "mul", "floordiv", "mod", "lshift", "rshift",
                                                   "and_", "or_", "xor", "eq", "ne", "lt", "le", "gt", "ge",
                                                   "neg", "invert")}
_PLANS: dict[str, list[Any] | None] = {}  # "module:attr" -> its plan (None: the schema has none), this process
_LAYOUTS: dict[int, TensorLayout] = {}  # id of a tensors step's params -> its rules, made once

Reader = Callable[[Any, dict[str, Any], str, dict[str, Any]], Any]


# ---------------------------------------------------------------------------------------------------------
# deriving a plan from a schema (imports construct: done once, then cached)


def _expression(x: Any) -> Any:
    """A ``this`` expression as plain data (``["this", "major"]``, ``["ge", a, b]``, a literal), or raise
    ValueError where it is of another kind."""
    import construct as cs

    if isinstance(x, cs.expr.Path):
        parent, field = x._Path__parent, x._Path__field
        if parent is None or parent._Path__parent is not None or not isinstance(field, str):
            raise ValueError(f"expression {x!r}")
        return ["this", field]
    if isinstance(x, cs.expr.BinExpr) and getattr(x.op, "__name__", None) in _OPS:
        return [x.op.__name__, _expression(x.lhs), _expression(x.rhs)]
    if isinstance(x, cs.expr.UniExpr) and getattr(x.op, "__name__", None) in _OPS:
        return [x.op.__name__, _expression(x.operand)]
    if type(x) in (int, bool):
        return ["value", x]
    raise ValueError(f"expression {x!r}")


def field_of(expr: Any) -> str | None:
    """The field a ``this.name`` expression reads (for a step's parameters), else None."""
    try:
        found = _expression(expr)
    except ValueError:
        return None
    return found[1] if found[0] == "this" else None


def plan_of(schema: Any) -> tuple[list[Any], set[str]] | None:
    """The steps of ``schema`` (a Struct or PackedStruct) and the source files they depend on; None where a
    field is of a kind no step reads."""
    import construct as cs

    from .fields import Valid, unnamed

    packed = sys.modules.get(f"{__package__}.packed")  # (a PackedStruct is one where the module is imported)
    if type(schema) is not cs.Struct and (packed is None or type(schema) is not packed.PackedStruct):
        return None
    steps: list[Any] = []
    sources = {__file__, sys.modules[TensorLayout.__module__].__file__}
    for sub in schema.subcons:
        name = sub.name if isinstance(sub, cs.Renamed) else None
        con = unnamed(sub)
        try:
            if isinstance(con, Valid):
                steps.append(["valid", con.field, {"test": _expression(con.test)}])
            elif type(con) is cs.Const and type(con.subcon) is cs.Bytes and isinstance(con.value, bytes):
                steps.append(["const", name, {"value": con.value.hex()}])
            elif type(con) is cs.FormatField and name:
                steps.append(["scalar", name, {"fmt": con.fmtstr}])
            elif type(con) is type(cs.GreedyBytes) and name:
                steps.append(["greedy", name, {}])
            elif name and callable(getattr(con, "plan", None)) and (step := con.plan()) is not None:
                steps.append([step[0], name, step[1]])
                sources.add(sys.modules[type(con).__module__].__file__)
            else:
                return None
        except ValueError:  # (an expression no step evaluates)
            return None
    return steps, sources


# ---------------------------------------------------------------------------------------------------------
# the cache


def _load(file: Path) -> list[Any] | None:
    try:
        with open(file, "rb") as f:
            kept = loads(f.read().decode("utf-8"))
        if kept.get("version") != VERSION or any(stamp(p) != s for p, s in kept["sources"].items()):
            return None
        return kept["steps"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _store(file: Path, steps: list[Any], sources: set[str]) -> None:
    stamps = {p: stamp(p) for p in sorted(sources)}
    if None not in stamps.values():  # (a source gone meanwhile: nothing kept)
        keep(file, {"version": VERSION, "sources": stamps, "steps": steps})


def forget_plans() -> None:
    """Drop the plans this process holds: the next read takes them from the cache again (or derives them)."""
    _PLANS.clear()
    _LAYOUTS.clear()


def cached_plan(ref: str) -> list[Any] | None:
    """The plan of the schema ``ref`` ("module:attr"): from this process, else from the cache, else derived
    from the schema (its module imported) and cached. None where the schema has none."""
    if ref in _PLANS:
        return _PLANS[ref]
    folder = cache_folder()
    file = folder / f"{ref.replace(':', '.')}.json" if folder is not None else None
    steps = _load(file) if file is not None else None
    if steps is None:
        module, attr = ref.split(":")
        derived = plan_of(getattr(importlib.import_module(module), attr))
        if derived is not None:
            steps, sources = derived
            # (whatever the schema and its readers are made of: a change to any of them derives it again)
            sources.update(m.__file__ for name, m in list(sys.modules.items())
                           if name.startswith(("wvformats.schemas.", "wvformats.framework.")) and
                           getattr(m, "__file__", None) and m.__file__.endswith(".py"))
            if file is not None:
                _store(file, steps, sources)
    _PLANS[ref] = steps
    return steps


# ---------------------------------------------------------------------------------------------------------
# running a plan


def _value(expr: Any, context: dict[str, Any]) -> Any:
    op = expr[0]
    if op == "this":
        return context[expr[1]]
    if op == "value":
        return expr[1]
    return _OPS[op](*(_value(e, context) for e in expr[1:]))


class _NotFine(Exception):
    """A step that does not read as the schema would: the schema parses the file instead."""


def _const(stream: Any, context: dict[str, Any], path: str, params: dict[str, Any]) -> bytes:
    value = bytes.fromhex(params["value"])
    if stream.read(len(value)) != value:
        raise _NotFine
    return value


def _scalar(stream: Any, context: dict[str, Any], path: str, params: dict[str, Any]) -> Any:
    at = stream.tell()
    value = scalar(params["fmt"], stream.raw, at)
    if value is None:
        raise _NotFine
    stream.seek(at + scalar_size(params["fmt"]))
    return value


def _valid(stream: Any, context: dict[str, Any], path: str, params: dict[str, Any]) -> None:
    if not _value(params["test"], context):
        raise _NotFine


def _greedy(stream: Any, context: dict[str, Any], path: str, params: dict[str, Any]) -> bytes:
    return stream.read()


_TOPS = {"dict": dict, "list": list}


def _json(stream: Any, context: dict[str, Any], path: str, params: dict[str, Any]) -> Any:
    return read_json(stream, params["length"], params["limit"], _TOPS[params["top"]], path)


def _tensors(stream: Any, context: dict[str, Any], path: str, params: dict[str, Any]) -> Any:
    rules = _LAYOUTS.get(id(params))
    if rules is None:
        rules = _LAYOUTS[id(params)] = TensorLayout(params["dtypes"], tuple(params["keys"]), tuple(params["skip"]),
                                                    params["exact"])
    return rules.read(stream, context[params["table"]], None, path)


READERS: dict[str, Reader] = {"const": _const, "scalar": _scalar, "valid": _valid, "greedy": _greedy, "json": _json,
                              "tensors": _tensors}


def run_plan(steps: list[Any], buffer: Any, readers: dict[str, Reader] | None = None) -> dict[str, Any] | None:
    """The fields of ``buffer`` read by the plan ``steps`` (a dict name -> value, as the schema's parse gives
    them), or None where any step does not read as the schema would (then parse it with the schema, which says
    why). ``readers``: the readers of a format's own steps, by kind."""
    stream = BufferStream(buffer)
    out: dict[str, Any] = {}
    try:
        for kind, name, params in steps:
            reader = READERS.get(kind) or (readers or {}).get(kind)
            if reader is None:
                return None
            value = reader(stream, out, name or "", params)
            if kind != "valid":
                out[name] = value
    except Exception:  # noqa: BLE001 - any fault: the schema's parse reports it, located
        return None
    return out
