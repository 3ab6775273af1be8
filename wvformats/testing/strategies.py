"""hypothesis strategies for valid instances of a schema, derived from its constructs, and the property tests
of a schema or format as pytest functions.

A value is drawn field by field in file order, each in the context of the fields before it, so that counts,
shapes, lengths, conditions and switches (``this`` expressions or functions) are evaluated as the parser
will. An integer field that some expression of the schema reads (a count, a dimension, a flag) is drawn
small, from its least valid value, or across its range where its checks allow only a few values (a type code,
a version); a :class:`~wvformats.framework.Valid` that a draw does not satisfy discards it (``assume``).

Covered: construct's integers, floats, ``Const``, ``Computed``, ``Rebuild`` (and the framework's
``Derived``: drawn for the fields after it, None in the value, so that the builder computes it),
``If``/``IfThenElse``, ``Switch``, ``Array``, ``Bytes``, ``GreedyBytes``, strings, ``Flag``, padding,
``Terminated``; the framework's ``NumpyArray``, ``AlignTo``, ``Valid``, ``EnumField``, ``CheckedString``,
``CheckedBytes``, ``StringTable``, ``JSONField``, ``Table``, ``Tensors`` (its table, a field before it, drawn
by :func:`tensor_table`), ``Chunks``. Anything else takes its strategy
from ``fields={"dotted.path": strategy or function of the context}`` or from a method
``strategy(context)`` of the construct (which imports hypothesis itself, when called).
"""

from __future__ import annotations

import math
import operator
import re
import struct
import types
from typing import Any

import construct as cs
import numpy as np

from .. import framework
from .dependencies import require
from .roundtrip import Target, assert_truncations_fail, check_roundtrip, roundtrip, target

hypothesis = require("hypothesis")
st = require("hypothesis.strategies")
hnp = require("hypothesis.extra.numpy")

__all__ = ["json_values", "property_tests", "strategy", "tensor_table"]

# a field that expressions read and whose checks allow fewer values than this (a type code, a version, a bool)
# is drawn across its range; other such fields (counts, sizes) are drawn small
FEW = 16


def referenced_names(schema: cs.Construct) -> set[str]:
    """The field names that the schema's expressions and functions read (counts, shapes, conditions)."""
    names: set[str] = set()
    seen: set[int] = set()

    def scan(v: Any) -> None:
        if isinstance(v, cs.Construct):
            if id(v) not in seen:
                seen.add(id(v))
                for x in vars(v).values():
                    scan(x)
        elif isinstance(v, types.FunctionType):
            code = [v.__code__]
            while code:
                c = code.pop()
                names.update(c.co_names)
                code += [k for k in c.co_consts if isinstance(k, types.CodeType)]
        elif isinstance(v, (cs.expr.ExprMixin, cs.expr.Path)):
            names.update(re.findall(r"\['(\w+)'\]", repr(v)))
        elif isinstance(v, (list, tuple)):
            for x in v:
                scan(x)
        elif isinstance(v, dict):
            for x in v.values():
                scan(x)

    scan(schema)
    return names


def json_values(max_leaves: int = 8) -> Any:
    """JSON values: null, booleans, integers, finite floats, text, and arrays and objects of them."""
    scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**64) | st.floats(allow_nan=False, allow_infinity=False)
               | st.text(max_size=6))
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                              max_size=3),
                        max_leaves=max_leaves)


def tensor_table(tensors: framework.Tensors, *, names: Any = None, max_tensors: int = 4, max_dim: int = 3,
                 metadata: Any = None) -> Any:
    """Tables for a :class:`~wvformats.framework.Tensors` field: entries of its dtypes, with shapes of up to
    three dimensions (``[]``, 0-d, included) and byte ranges that tile the data in table order; each entry
    under the key names the field reads. ``metadata``: a strategy of the value kept under its first
    ``skip`` name (safetensors' ``__metadata__``), when given."""
    kd, ks, ko = tensors.keys
    codes = sorted(tensors.dtypes, key=str)
    names = names if names is not None else st.text(min_size=1, max_size=6).filter(lambda n: n not in tensors.skip)

    @st.composite
    def table(draw: Any) -> dict[str, Any]:
        chosen = draw(st.lists(names, max_size=max_tensors, unique=True))
        out: dict[str, Any] = {}
        if metadata is not None and tensors.skip:
            out[tensors.skip[0]] = draw(metadata)
        for name in chosen:
            code = draw(st.sampled_from(codes))
            bits = tensors.bits.get(code)
            shape = draw(st.lists(st.integers(0, max_dim), min_size=bits is not None, max_size=3))
            if bits is not None:  # packed: rows that end on a byte
                shape[-1] *= 8 // math.gcd(bits, 8)
            out[name] = {kd: code, ks: shape}
        return tensors.laid_out(out)  # (the byte ranges: the declaration's)

    return table()


class _Draw:
    """Draws one value of a construct in a context, as :func:`strategy` describes."""

    def __init__(self, fields: dict[str, Any], counts: set[str], small: int, items: int) -> None:
        self.fields = fields
        self.counts = counts
        self.small = small
        self.items = items
        self.derived: list[tuple[Any, str]] = []  # (container, field) of the derived fields drawn
        self.derived_at: set[str] = set()  # the paths drawn through a derived construct

    def given(self, draw: Any, path: str, context: Any) -> Any:
        f = self.fields[path]
        return draw(f if isinstance(f, st.SearchStrategy) else f(context))

    def value(self, draw: Any, con: cs.Construct, ctx: Any, path: str) -> Any:
        if path in self.fields:
            return self.given(draw, path, ctx)
        while isinstance(con, cs.Renamed):
            con = con.subcon
        name = path.rsplit(".", 1)[-1].split("[", 1)[0]
        if hasattr(con, "strategy"):
            if con.strategy.__code__.co_argcount > 2:  # (it draws a schema of its own: the kit's values of it)
                return draw(con.strategy(ctx, lambda schema, context: self.of(schema, context, path)))
            return draw(con.strategy(ctx))
        if isinstance(con, cs.Struct):
            return self.struct(draw, con, ctx, path)
        if isinstance(con, (cs.FormatField, cs.BytesInteger)):
            return draw(self.number(con, ctx, name))
        if isinstance(con, cs.Const):
            return con.value
        if isinstance(con, cs.Rebuild):  # (Derived: what follows is drawn to fit it, the builder computes it)
            self.derived_at.add(path)  # (a branch of a field may be derived: the field is then)
            try:  # (what it derives from is drawn already: its value, which the checks after it see)
                return framework.evaluate(con.func, ctx)
            except Exception:  # noqa: BLE001 - from fields after it: drawn
                return self.value(draw, con.subcon, ctx, path)
        if isinstance(con, cs.Computed):
            return framework.evaluate(con.func, ctx)
        if isinstance(con, cs.IfThenElse):
            branch = con.thensubcon if framework.evaluate(con.condfunc, ctx) else con.elsesubcon
            return self.value(draw, branch, ctx, path)
        if isinstance(con, cs.Switch):
            key = framework.evaluate(con.keyfunc, ctx)
            return self.value(draw, con.cases.get(key, con.default), ctx, path)
        if isinstance(con, cs.Array):
            n = int(framework.evaluate(con.count, ctx))
            return cs.ListContainer(self.value(draw, con.subcon, ctx, f"{path}[{i}]") for i in range(n))
        if isinstance(con, cs.Bytes):
            n = int(framework.evaluate(con.length, ctx))
            return draw(st.binary(min_size=n, max_size=n))
        if con is cs.GreedyBytes:
            lo, hi = self.length or (0, 16)
            return draw(st.binary(min_size=lo, max_size=hi))
        if isinstance(con, cs.StringEncoded) and isinstance(con.subcon, cs.Prefixed):
            return draw(st.text(st.characters(codec=con.encoding), max_size=8))
        if con is cs.Flag:
            return draw(st.booleans())
        if isinstance(con, framework.Valid):  # (a check under a condition: one in a Struct is taken there)
            hypothesis.assume(bool(framework.evaluate(con.test, ctx)))
            return None
        if isinstance(con, (cs.Padded, framework.AlignTo, cs.Peek)) or con is cs.Pass or con is cs.Terminated:
            return None
        return self.framework_value(draw, con, ctx, path)

    def of(self, schema: cs.Construct, ctx: Any, path: str) -> Any:
        """A strategy of values of ``schema`` in ``ctx`` (a construct's own sub-schema, drawn as the kit draws)."""
        return st.composite(lambda draw: self.value(draw, schema, ctx, path))()

    def struct(self, draw: Any, con: cs.Struct, ctx: Any, path: str) -> cs.Container:
        inner = cs.Container(_=ctx, _params=ctx.get("_params", ctx), _root=ctx.get("_root"), _parsing=False,
                             _building=True, _sizing=False)
        if inner._root is None:
            inner._root = inner
        obj = cs.Container()
        checks = _checks(con)
        tables = _tensor_tables(con)
        for sub in con.subcons:
            core = sub
            while isinstance(core, cs.Renamed) and not core.name:
                core = core.subcon
            if isinstance(core, framework.Valid):
                hypothesis.assume(bool(framework.evaluate(core.test, inner)))  # (drawn within it where it can)
                continue
            where = f"{path}.{sub.name}" if path and sub.name else (sub.name or path)
            self.within = _within(checks.get(sub.name, ()), sub.name, inner) if sub.name else None
            self.length = _length_within(checks.get(sub.name, ()), sub.name, inner) if sub.name else None
            if sub.name in tables and where not in self.fields:  # the table a later Tensors field lays out
                text = st.text(max_size=4)
                v = draw(tensor_table(tables[sub.name], metadata=st.dictionaries(text, text, max_size=2)))
            else:
                v = self.value(draw, sub, inner, where)
            self.within = self.length = None
            if sub.name:
                obj[sub.name] = inner[sub.name] = v
                if _derived(sub) or where in self.derived_at:  # drawn for the fields after it (None once drawn):
                    # the builder computes it
                    self.derived.append((obj, sub.name))
                    inner._derived = inner.get("_derived", frozenset()) | {sub.name}
        return obj

    within: tuple[int | None, int | None] | None = None  # the bounds the checks of the field drawn set
    length: tuple[int, int] | None = None  # the bounds they set on its length (a table's records, bytes)

    def number(self, con: Any, ctx: Any, name: str) -> Any:
        if isinstance(con, cs.BytesInteger):
            bits, signed = 8 * int(framework.evaluate(con.length, ctx)), con.signed
        else:
            code = con.fmtstr[-1]
            if code in "efd":
                return st.floats(width={"e": 16, "f": 32, "d": 64}[code], allow_nan=False)
            bits, signed = 8 * struct.calcsize(con.fmtstr), code.islower()
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        within, self.within = self.within, None
        if within is not None:  # a Valid's bounds: drawn inside them, not filtered after
            lo, hi = max(lo, within[0] if within[0] is not None else lo), min(hi, within[1] if within[1] is not None else hi)
        if name in self.counts:  # a count, a size or a flag: small (from its least valid value)
            least = max(lo, 0)
            if within is not None and 0 <= hi - least < FEW:  # a range of a few values its checks declare: all of it
                return st.integers(least, hi)
            return st.integers(least, max(min(hi, least + self.small), least))
        return st.integers(lo, hi)

    def framework_value(self, draw: Any, con: Any, ctx: Any, path: str) -> Any:
        ev = framework.evaluate
        if isinstance(con, framework.NumpyArray):
            name = path.rsplit(".", 1)[-1].split("[", 1)[0]
            small = name in self.counts and con.dtype.kind in "iu"  # a shape or counts: small
            return draw(hnp.arrays(con.dtype, con._dims(ctx, path, None),
                                   elements=st.integers(0, self.small) if small else None))
        if isinstance(con, framework.EnumField):
            members = st.sampled_from(list(con.enum))
            if con.unknown == "keep":
                members = members | self.number(con.subcon, ctx, "")
            return draw(members)
        if isinstance(con, framework.CheckedString):
            return draw(st.text(max_size=8))
        if isinstance(con, framework.CheckedBytes):
            n = ev(con.length, ctx)
            return draw(st.binary(max_size=8) if n is None else st.binary(min_size=int(n), max_size=int(n)))
        if isinstance(con, framework.StringTable):
            n = int(ev(con.count, ctx))
            strings = draw(st.lists(st.text(max_size=6), min_size=n, max_size=n))
            if con.index:
                return cs.Container(strings=strings, indices=draw(hnp.arrays(np.uint64, n)))
            return strings
        if isinstance(con, framework.JSONField):
            if con.top is dict:
                return draw(st.dictionaries(st.text(max_size=6), json_values(), max_size=4))
            return draw(st.lists(json_values(), max_size=4))
        sized = isinstance(con, framework.Table) and _field_of(con.length) in ctx.get("_derived", ())
        if isinstance(con, framework.Table) and (con.length is None or sized or _fixed_size(con.subcon)):
            if con.length is not None and not sized:  # fixed-size records that fill the length drawn before
                size, length = con.subcon.sizeof(), int(ev(con.length, ctx))
                hypothesis.assume(size > 0 and length % size == 0)
                n = length // size
            else:
                lo, hi = self.length or (0, self.items)
                n = int(ev(con.count, ctx)) if con.count is not None else draw(st.integers(lo, hi))
                # (a length the builder derives from the records: as many as drawn; as many as checks say)
            return cs.ListContainer(self.value(draw, con.subcon, ctx, f"{path}[{i}]") for i in range(n))
        if isinstance(con, framework.Tensors):
            return {name: draw(hnp.arrays(dtype, dims))
                    for name, dtype, dims, _, _ in sorted(con.layout(ctx, path, 0, None), key=lambda t: t[0])}
        if isinstance(con, framework.Chunks):
            n = max(int(ev(con.listed, ctx)), draw(st.integers(0, 2)))
            chunks = cs.ListContainer()
            for i in range(n):
                chunk_id = draw(st.sampled_from(sorted(con.types)))
                name, body = con.types[chunk_id]
                inner = cs.Container(_=ctx, _params=ctx.get("_params", ctx), _root=ctx.get("_root"), chunk_len=None)
                chunks.append(cs.Container(chunk_id=chunk_id, name=name,
                                           body=self.value(draw, body, inner, f"{path}[{i}].body")))
            return chunks
        raise TypeError(f"no strategy for {type(con).__name__} at {path or 'the top'}: give one as "
                        f"fields={{{path!r}: strategy}} or define {type(con).__name__}.strategy(context)")


def _tensor_tables(con: cs.Struct) -> dict[str, Any]:
    """The fields of a Struct that a later :class:`~wvformats.framework.Tensors` field reads its table from
    (``this.header``), by name: drawn as :func:`tensor_table` draws them."""
    out = {}
    for sub in con.subcons:
        core = sub
        while isinstance(core, cs.Renamed):
            core = core.subcon
        if isinstance(core, framework.Tensors) and (name := _field_of(core.table)) is not None:
            out[name] = core
    return out


def _derived(con: cs.Construct) -> bool:
    """Whether a field is derived (``Rebuild``, ``Derived``): the builder computes it."""
    while isinstance(con, cs.Renamed):
        con = con.subcon
    return isinstance(con, cs.Rebuild)


def _fixed_size(con: cs.Construct) -> bool:
    try:
        con.sizeof()
    except (cs.SizeofError, KeyError, AttributeError, TypeError):
        return False
    return True


def _checks(con: cs.Struct) -> dict[str, list[Any]]:
    """The tests of a Struct's Valid checks by the field each checks (a check under an ``If`` too: where the
    condition is false, so is the field's)."""
    out: dict[str, list[Any]] = {}
    for sub in con.subcons:
        core = sub
        while isinstance(core, (cs.Renamed, cs.IfThenElse)):
            core = core.thensubcon if isinstance(core, cs.IfThenElse) else core.subcon
        if isinstance(core, framework.Valid):
            out.setdefault(core.field, []).append(core.test)
    return out


_FLIP = {operator.ge: operator.le, operator.le: operator.ge, operator.gt: operator.lt, operator.lt: operator.gt,
         operator.eq: operator.eq}


def _within(tests: Any, name: str, context: Any) -> tuple[int | None, int | None] | None:
    """The bounds ``lo <= field <= hi`` that checks of the plain form ``this.f >= 100``, ``this.f < 64``,
    ``this.f == 3`` and their ``&`` set on field ``name`` (None where no check is of that form): the kit draws
    inside them, so that chained checks do not make hypothesis discard nearly every draw. An equality whose
    other terms are fields drawn before (``this.a + this.f == this.size``) gives the one value that fits."""
    lo = hi = None
    found = False

    def solve(side: Any, value: int) -> int | None:
        """The value of ``this.<name>`` that makes ``side`` equal ``value`` (sums and differences)."""
        if _field_of(side) == name:
            return value
        if isinstance(side, cs.expr.BinExpr) and side.op in (operator.add, operator.sub):
            try:
                if _mentions(side.rhs, name):
                    other = framework.evaluate(side.lhs, context)
                    return solve(side.rhs, value - other if side.op is operator.add else other - value)
                other = framework.evaluate(side.rhs, context)
                return solve(side.lhs, value - other if side.op is operator.add else value + other)
            except Exception:  # noqa: BLE001 - a term not drawn yet
                return None
        return None

    def bound(op: Any, value: Any) -> None:
        nonlocal lo, hi, found
        if type(value) is not int:
            return
        found = True
        if op in (operator.ge, operator.gt, operator.eq):
            low = value + (op is operator.gt)
            lo = low if lo is None else max(lo, low)
        if op in (operator.le, operator.lt, operator.eq):
            high = value - (op is operator.lt)
            hi = high if hi is None else min(hi, high)

    def visit(x: Any) -> None:
        if not isinstance(x, cs.expr.BinExpr):
            return
        if x.op is operator.and_:
            visit(x.lhs)
            visit(x.rhs)
        elif x.op in _FLIP:
            if _field_of(x.lhs) == name:
                bound(x.op, x.rhs)
            elif _field_of(x.rhs) == name:
                bound(_FLIP[x.op], x.lhs)
            elif x.op is operator.eq:
                for side, other in ((x.lhs, x.rhs), (x.rhs, x.lhs)):
                    if _mentions(side, name) and not _mentions(other, name):
                        try:
                            value = framework.evaluate(other, context)
                        except Exception:  # noqa: BLE001 - a term not drawn yet
                            continue
                        if type(value) is int:
                            bound(operator.eq, solve(side, value))

    for test in tests:
        visit(test)
    return (lo, hi) if found else None


def _length_within(tests: Any, name: str, context: Any) -> tuple[int, int] | None:
    """The bounds ``lo <= len(field) <= hi`` that checks of the form ``len_(this.f) == len_(this.g)``,
    ``len_(this.f) <= 1`` (and their ``&``) set on field ``name``, the other side evaluated in ``context``
    (None where no check is of that form): a table drawn with as many records as they allow."""
    lo, hi, found = 0, None, False

    def visit(x: Any) -> None:
        nonlocal lo, hi, found
        if not isinstance(x, cs.expr.BinExpr):
            return
        if x.op is operator.and_:
            visit(x.lhs)
            visit(x.rhs)
            return
        for side, other, op in ((x.lhs, x.rhs, x.op), (x.rhs, x.lhs, _FLIP.get(x.op))):
            if op is None or _length_of(side) != name:
                continue
            try:
                value = framework.evaluate(other, context)
            except Exception:  # noqa: BLE001 - a term not drawn yet
                continue
            if type(value) is not int:
                continue
            found = True
            if op in (operator.ge, operator.gt, operator.eq):
                lo = max(lo, value + (op is operator.gt))
            if op in (operator.le, operator.lt, operator.eq):
                high = value - (op is operator.lt)
                hi = high if hi is None else min(hi, high)

    for test in tests:
        visit(test)
    return (lo, max(lo, hi if hi is not None else lo + 4)) if found else None


def _length_of(x: Any) -> str | None:
    """``len_(this.name)`` -> "name"; None for any other expression."""
    if isinstance(x, cs.expr.FuncPath) and x._FuncPath__func is len:
        return _field_of(x._FuncPath__operand)
    return None


def _mentions(x: Any, name: str) -> bool:
    """Whether expression ``x`` reads ``this.<name>``."""
    if _field_of(x) == name:
        return True
    if isinstance(x, cs.expr.BinExpr):
        return _mentions(x.lhs, name) or _mentions(x.rhs, name)
    return isinstance(x, cs.expr.UniExpr) and _mentions(x.operand, name)


def _field_of(x: Any) -> str | None:
    """``this.name`` -> "name"; None for any other expression."""
    if isinstance(x, cs.expr.Path) and x._Path__parent is not None and x._Path__parent._Path__parent is None:
        return x._Path__field
    return None


def strategy(what: Any, *, format: str | None = None, fields: dict[str, Any] | None = None,
             params: dict[str, Any] | None = None, small: int = 3, max_items: int = 4) -> Any:
    """A strategy of values that the schema (or a registered format's schema) builds into a valid file.

    ``fields``: strategies (or functions of the context giving one) for fields by dotted path
    (``"header"``, ``"dictionary.entries"``), for constructs this module cannot derive or to draw a field
    as a test wants it. ``params``: the values of the schema's parameters (``this._.tok_cnt``). ``small``:
    the largest value of an integer that an expression reads (a count); ``max_items``: of a table to the end.
    """
    t = target(what, format)
    draw_one = _Draw(dict(fields or {}), referenced_names(t.schema), small, max_items)
    root = cs.Container(params or {})
    root._params = root

    @st.composite
    def values(draw: Any) -> Any:
        draw_one.derived, draw_one.derived_at = [], set()
        value = draw_one.value(draw, t.schema, root, "")
        for obj, name in draw_one.derived:  # (the builder computes them)
            obj[name] = None
        return value

    return values()


def property_tests(what: Any, *, format: str | None = None, samples: Any = (), fields: dict[str, Any] | None = None,
                   params: dict[str, Any] | None = None, cases: int = 24, truncations: bool = True) -> dict[str, Any]:
    """The property tests of a schema or registered format as pytest test functions, by name:

    * ``test_roundtrip``: for drawn values, parse of build equals the value and build of parse the bytes, in
      interpreted and compiled mode (and through a registered format's codec);
    * ``test_truncations``: every strict prefix of a drawn file fails with the format's own error (or is a
      whole file of its own: a table to the end cut between records);
    * ``test_mutants`` (given ``samples``, bytes of valid files): :func:`~wvformats.testing.fuzz`.

    A test module takes them with ``globals().update(property_tests(...))``."""
    pytest = require("pytest")
    t: Target = target(what, format)
    values = strategy(t, fields=fields, params=params)
    modes = pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
    tests: dict[str, Any] = {}
    # drawing a file can be slow on a loaded machine: that is no failure of the format
    relaxed = hypothesis.settings(suppress_health_check=[hypothesis.HealthCheck.too_slow,
                                                         hypothesis.HealthCheck.data_too_large])

    @relaxed
    @hypothesis.given(value=values)
    def test_roundtrip(value: Any) -> None:
        check_roundtrip(t, value, **(params or {}))

    tests["test_roundtrip"] = test_roundtrip

    if truncations:
        @modes
        @relaxed
        @hypothesis.given(value=values)
        def test_truncations(compiled: bool, value: Any) -> None:
            data = roundtrip(t, value, compiled=compiled, **(params or {}))
            assert_truncations_fail(t, data, compiled=compiled, step=max(1, len(data) // 64), whole=True,
                                    **(params or {}))

        tests["test_truncations"] = test_truncations

    if samples:
        from .fuzz import fuzz

        def test_mutants() -> None:
            assert fuzz(t, samples, cases=cases) >= cases * len(samples)

        tests["test_mutants"] = test_mutants
    return tests
