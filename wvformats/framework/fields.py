"""Field constructs that stay compiled and keep their checks: bulk arrays, absolute alignment, constraints,
length-prefixed strings and raw bytes.

construct 2.10.70 has four traps for these formats (see the construct note in ``shared/research``):
compiled parsers skip length checks, ``Aligned`` pads relative to the field, ``Prefixed`` resets ``tell()``
when building, and per-element arrays are hundreds of times slower than a memcpy. Every construct here emits
compiled code that calls back into its checked ``_parse``/``_build`` (:class:`Checked`), so a compiled
schema keeps every check.
"""

from __future__ import annotations

import enum as _enum
import operator
import re
import struct
from collections.abc import Sequence
from typing import Any

import construct as cs
import numpy as np

from ..errors import BuildError, FormatError, ValueMismatchError
from .located import check_length, fail, tell
from .plain import array_dims, decode_utf8, explicit_dtype, read_array  # noqa: F401 - (their names here too)
from .scalars import LEN_FORMATS
from .streams import byte_view

# ---------------------------------------------------------------------------------------------------------
# a mixin for custom constructs that stay compiled and keep their checks


class Checked(cs.Construct):
    """The base of a custom construct that stays checked when compiled: subclass it and write ``_parse``,
    ``_build`` and ``_sizeof`` as for any construct; compiled schemas call back into them (one call per
    field, not per item) instead of construct's generated code, which skips length checks."""

    def _emitparse(self, code: Any) -> str:
        code.linkedinstances[id(self)] = self
        return f"linkedinstances[{id(self)}]._parse(io, this, '(compiled)')"

    def _emitbuild(self, code: Any) -> str:
        code.linkedinstances[id(self)] = self
        return f"linkedinstances[{id(self)}]._build(obj, io, this, '(compiled)')"


def unnamed(con: cs.Construct) -> cs.Construct:
    """The construct inside a field's names and docs (``"x" / Int32ul * "doc"`` -> ``Int32ul``)."""
    while isinstance(con, cs.Renamed):
        con = con.subcon
    return con


def unnamed_field(con: cs.Construct) -> str:
    """The path segment of a field that has no name (``<Terminated>``, ``<Padded>``): its construct's kind, so
    that an error in it and its bytes in a dump are located all the same. Empty for a ``Valid``, which names
    the field it checks."""
    con = unnamed(con)
    if isinstance(con, cs.IfThenElse):  # a check made only in some files: If(this.new, Valid(...))
        return "" if all(isinstance(unnamed(c), Valid) or c is cs.Pass
                         for c in (con.thensubcon, con.elsesubcon)) else "<IfThenElse>"
    return "" if isinstance(con, Valid) else f"<{type(con).__name__}>"


def evaluate(value: Any, context: Any) -> Any:
    """A construct parameter's value in ``context``: a ``this`` expression or a callable is called with it,
    anything else is the value itself."""
    if not isinstance(value, cs.expr.ExprMixin):
        return value(context) if callable(value) else value
    fast = _FAST.get(id(value))
    if fast is None or fast[0] is not value:
        if len(_FAST) >= 4096:  # (expressions made on the fly: the cache stays bounded)
            _FAST.clear()
        fast = _FAST[id(value)] = (value, _compiled_expression(value) or value)
    return fast[1](context)


# a schema's ``this`` expressions, each as one Python function (construct calls a method per node of it)
_FAST: dict[int, tuple[Any, Any]] = {}  # id -> (expression, its function)


def _source(x: Any) -> str | None:
    """Python source of a ``this`` expression (paths, operators, literals), as construct's compiler writes it;
    None for anything else."""
    if isinstance(x, cs.expr.Path):
        parent, field = x._Path__parent, x._Path__field
        if parent is None:
            return "this" if x._Path__name == "this" else None
        inner = _source(parent)
        return None if inner is None or not isinstance(field, str) else f"{inner}[{field!r}]"
    if isinstance(x, cs.expr.BinExpr) and x.op in _BINARY:
        lhs, rhs = _source(x.lhs), _source(x.rhs)
        return None if lhs is None or rhs is None else f"({lhs} {_BINARY[x.op]} {rhs})"
    if isinstance(x, cs.expr.UniExpr) and x.op in _UNARY:
        operand = _source(x.operand)
        return None if operand is None else f"({_UNARY[x.op]}{operand})"
    if type(x) in (int, bytes, str, bool) or x is None:
        return repr(x)
    return None


def _compiled_expression(x: Any) -> Any:
    """A ``this`` expression as one Python function (what construct's own compiler does with it), or None."""
    text = _source(x)
    return None if text is None else eval(f"lambda this: {text}", {})  # noqa: S307 - source built above


_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.floordiv: "//", operator.truediv: "/",
           operator.mod: "%", operator.pow: "**", operator.lshift: "<<", operator.rshift: ">>",
           operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.eq: "==", operator.ne: "!=",
           operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


class ShapeOf(cs.expr.ExprMixin):
    """``ShapeOf(this.matrix, 0)``: a compilable expression for one dimension of an array field."""

    def __init__(self, array: Any, axis: int) -> None:
        self.array = array
        self.axis = axis

    def __call__(self, context: Any) -> int:
        return int(np.shape(evaluate(self.array, context))[self.axis])

    def __repr__(self) -> str:
        return f"np.shape({self.array!r})[{self.axis}]"


# ---------------------------------------------------------------------------------------------------------
# NumpyArray

def write_array(stream: Any, obj: Any, dtype: np.dtype, dims: tuple[int, ...], path: str) -> np.ndarray:
    """Write ``obj`` as a C-order array of ``dtype`` and shape ``dims`` from its own memory (no ``tobytes()``
    copy); a value of another kind or shape is a located BuildError. Returns the array written."""
    arr = np.asarray(obj)
    if arr.dtype.kind not in "biuf" and dtype.kind in "iuf":
        raise fail(path, tell(stream), f"cannot store {arr.dtype} as {dtype.str}", BuildError)
    if arr.shape != dims:  # (before the cast: np.ascontiguousarray makes a 0-d array 1-d)
        raise fail(path, tell(stream), "array shape does not match its header", BuildError,
                   expected=dims, found=arr.shape)
    arr = np.require(arr.astype(dtype, copy=False), requirements="C")
    if arr.size:
        view = byte_view(arr)
        # in 16 MB pieces: one multi-GB write() can stall for seconds in the kernel's dirty-page
        # throttling, where a run of moderate writes streams
        for a in range(0, len(view), 1 << 24):
            stream.write(view[a : a + (1 << 24)])
    return arr


class NumpyArray(Checked):
    """A packed array of ``dtype`` with ``shape`` as one numpy array. ``shape`` is a tuple of ints or ``this``
    expressions, ``()`` for a 0-d array (one value), or one expression whose value is the whole shape (a
    list read from another field: ``NumpyArray("<f4", this.shape)``).

    Parsing returns a zero-copy, read-only view when the stream is a :class:`BufferStream` or an mmap, and
    reads into a fresh array otherwise. The byte count is checked against what remains before allocating.
    Building writes the array's memory directly (no ``tobytes()`` copy) after casting to ``dtype``.
    """

    def __init__(self, dtype: Any, shape: Sequence[Any] | Any) -> None:
        super().__init__()
        self.dtype = explicit_dtype(dtype)
        self.shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)

    def _dims(self, context: Any, path: str, offset: int | None) -> tuple[int, ...]:
        shape = [evaluate(d, context) for d in self.shape]
        if len(shape) == 1 and isinstance(shape[0], (Sequence, np.ndarray)) and not isinstance(shape[0], (str, bytes)):
            shape = list(shape[0])  # one expression whose value is the whole shape
        return array_dims(shape, path, offset)

    def _parse(self, stream: Any, context: Any, path: str) -> np.ndarray:
        return read_array(stream, self.dtype, self._dims(context, path, tell(stream)), path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> np.ndarray:
        return write_array(stream, obj, self.dtype, self._dims(context, path, tell(stream)), path)

    def _sizeof(self, context: Any, path: str) -> int:
        try:
            dims = self._dims(context, path, None)
        except Exception as e:
            raise cs.SizeofError(path=path) from e
        return int(np.prod(dims, dtype=object)) * self.dtype.itemsize


# ---------------------------------------------------------------------------------------------------------
# AlignTo


class AlignTo(Checked):
    """Zero padding up to the next multiple of ``modulus`` of the absolute stream position.

    ``never_zero=True`` gives finalfusion's rule ``modulus - pos % modulus`` (1 to ``modulus`` bytes, never
    0). Computed from the stream passed in, never from ``context._io``, so parsing and building agree.
    ``modulus`` may be a ``this`` expression (GGUF's ``general.alignment``); it must be positive.
    The parsed value is the number of padding bytes; pad bytes that are not zero are an error.
    """

    def __init__(self, modulus: Any, never_zero: bool = False) -> None:
        super().__init__()
        self.modulus = modulus
        self.never_zero = never_zero
        self.flagbuildnone = True

    def padding(self, pos: int, context: Any = None) -> int:
        modulus = int(evaluate(self.modulus, context))
        if modulus < 1:
            raise fail(None, pos, f"alignment must be positive, not {modulus}", ValueMismatchError)
        if self.never_zero:
            return modulus - pos % modulus
        return -pos % modulus

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        pos = stream.tell()
        n = self.padding(pos, context)
        check_length(stream, n, path, "alignment padding")
        data = stream.read(n)
        if data.count(0) != n:
            raise fail(path, pos, "padding bytes are not zero", ValueMismatchError, found=bytes(data))
        return n

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> int:
        n = self.padding(stream.tell(), context)
        stream.write(bytes(n))
        return n

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError("padding depends on the stream position", path=path)


class Derived(Checked, cs.Rebuild):
    """A count, length, size or offset derived from the data it describes (construct's ``Rebuild``, kept
    checked when compiled and taking a function too): parsed as ``subcon`` reads it (the fields that use it
    check it against the bytes), built from ``value``, a ``this`` expression (``len_(this.words)``), a
    function of the context (which holds the fields after it too) or :func:`size_of`; the value given is
    ignored (None will do). ``Derived(Int32ul, len_(this.words))``."""

    def __init__(self, subcon: cs.Construct, value: Any) -> None:
        cs.Rebuild.__init__(self, subcon, value)

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        return self.subcon._build(evaluate(self.func, context), stream, context, path)


class _Count:
    """A write-only sink that counts the bytes written to it."""

    def __init__(self) -> None:
        self.n = 0

    def write(self, b: Any) -> int:
        self.n += len(memoryview(b).cast("B"))
        return len(b)

    def tell(self) -> int:
        return self.n

    def seek(self, n: int, whence: int = 0) -> int:  # (a construct that seeks back to patch only rewrites)
        return self.n


class size_of:  # noqa: N801 - used as an expression, like construct's len_
    """The bytes ``construct`` builds ``value`` (a ``this`` expression, a field after the derived one) to, in
    the context: a header's size or length field, ``Derived(Int16ul, size_of(extras, this.extra))``; called
    without a context, of a value on its own (``size_of(entry, record)()``, the bytes a record takes). Sizes
    that depend on the stream position (padding) are taken from position 0; nothing is kept."""

    def __init__(self, construct: cs.Construct, value: Any) -> None:
        self.construct = construct
        self.value = value

    def __call__(self, context: Any = None) -> int:
        """The size in ``context`` (None: of a value given as such, measured on its own: a record's size)."""
        if context is None:  # (construct's root context of a build)
            context = cs.Container(_parsing=False, _building=True, _sizing=False)
            context._params = context
        sink = _Count()
        self.construct._build(evaluate(self.value, context), sink, context, "(size)")
        return sink.n

    @property
    def text(self) -> str:
        """How the docs write it: ``size_of(extra)``."""
        return f"size_of({expression(self.value)})"

    def __repr__(self) -> str:
        return self.text


def fixed_size(struct: cs.Construct, start: str | None = None, stop: str | None = None) -> int:
    """The bytes that the fields of ``struct`` from field ``start`` up to field ``stop`` take (None: from the
    first, to the end), each of a fixed size: a record's fixed part (``fixed_size(entry, stop="name")``),
    where a field lies from the record's start (``fixed_size(entry, stop="crc32")``) or before its end
    (``fixed_size(info, "type")``), from the schema instead of numbers spelt again beside it."""
    names = [sc.name for sc in struct.subcons]
    lo, hi = names.index(start) if start is not None else 0, names.index(stop) if stop is not None else None
    return sum(sc.sizeof() for sc in struct.subcons[lo:hi])


# ---------------------------------------------------------------------------------------------------------
# Valid


def expression(x: object) -> str:
    """A ``this`` expression as the spec would write it: ``this.rows * this.cols`` as ``(rows * cols)``."""
    text = repr(x)
    return re.sub(r"this\['([^']+)'\]", r"\1", text).replace("][", ".").replace("['", ".").replace("']", "")


class Valid(Checked):
    """A constraint on the field just before it (Kaitai's ``valid``), documented like a field:
    ``Valid("bucket_exp", this.bucket_exp < 64) * "bucket_exp < 64: the hash has 64 bits"``.

    Takes no bytes. When ``test`` is false, parsing fails with a ValueMismatchError (building with a
    BuildError) that names the field, where it starts, the test and the value found.
    """

    def __init__(self, field: str, test: Any, why: str | None = None) -> None:
        super().__init__()
        self.field = field
        self.test = test
        self.why = why  # said after the test in the error, where the test alone would puzzle
        self.flagbuildnone = True

    def _check(self, stream: Any, context: Any, path: str, cls: type[FormatError]) -> None:
        if evaluate(self.test, context):
            return
        offset = tell(stream)
        field = (context.get("_subcons") or {}).get(self.field)  # interpreted Structs pass their fields
        if offset is not None and field is not None:
            try:  # sized in this context: a conditional field's size depends on the fields before it
                offset -= field._sizeof(context, path)
            except cs.SizeofError:  # a variable-size field: where it ends
                pass
        if callable(self.test) and not isinstance(self.test, cs.expr.ExprMixin):  # (a function: its name, not
            name = getattr(self.test, "__name__", "<lambda>")  # its repr and address)
            text = "its test" if name == "<lambda>" else name
        else:
            text = expression(self.test)
            text = text[1:-1] if text.startswith("(") and text.endswith(")") else text
        why = f" ({self.why})" if self.why else ""
        raise fail(f"{path} -> {self.field}", offset, f"does not satisfy {text}{why}", cls,
                   found=context.get(self.field))

    def _parse(self, stream: Any, context: Any, path: str) -> None:
        self._check(stream, context, path, ValueMismatchError)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> None:
        self._check(stream, context, path, BuildError)

    def _sizeof(self, context: Any, path: str) -> int:
        return 0


def bound_checks(schema: cs.Construct) -> list[str]:
    """What is wrong with the placement of the schema's :class:`Valid` checks: each must come right after the
    field it names (after other checks of that field, at most), since it locates its error from where that
    field starts. Empty when every check is bound to its field."""
    problems: list[str] = []
    seen: set[int] = set()

    def visit(con: Any, where: str) -> None:
        if not isinstance(con, cs.Construct) or id(con) in seen:
            return
        seen.add(id(con))
        if isinstance(con, cs.Renamed):
            return visit(con.subcon, f"{where}.{con.name}" if where and con.name else con.name or where)
        if isinstance(con, cs.Struct):
            last: str | None = ""  # the field before: "" none yet, None an unnamed one
            for sub in con.subcons:
                inner = sub
                while isinstance(inner, cs.Renamed) and not inner.name:
                    inner = inner.subcon
                if isinstance(inner, Valid):
                    if inner.field != last:
                        after = f"field {last!r}" if last else "an unnamed field" if last is None else \
                            "the start of the struct"
                        problems.append(f"{where or 'schema'}: Valid({inner.field!r}, ...) follows {after}: a Valid "
                                        "goes right after the field it checks")
                else:
                    last = sub.name  # (an unnamed field between a field and its check breaks the binding)
                visit(sub, where)
            return
        for attr in ("subcon", "thensubcon", "elsesubcon", "default"):
            visit(getattr(con, attr, None), where)
        for sub in getattr(con, "subcons", None) or ():
            visit(sub, where)
        for case in (getattr(con, "cases", None) or {}).values():
            visit(case, where)
        for entry in (getattr(con, "types", None) or {}).values():  # Chunks: id -> (name, body)
            visit(entry[1] if isinstance(entry, tuple) else entry, where)

    visit(schema, "")
    return problems


class SchemaError(Exception):
    """A schema that cannot work as written (a programming error, not a fault of the file)."""


_BOUND: dict[int, cs.Construct] = {}


def require_bound_checks(schema: cs.Construct) -> None:
    """Make ``schema`` ready to run, once per schema: raise :class:`SchemaError` unless every Valid follows its
    field, and read its half and single floats bit for bit (:func:`exact_floats`)."""
    if _BOUND.get(id(schema)) is schema:
        return
    problems = bound_checks(schema)
    if problems:
        raise SchemaError("; ".join(problems))
    exact_floats(schema)
    _BOUND[id(schema)] = schema


# ---------------------------------------------------------------------------------------------------------
# floats kept bit for bit


class ExactFloat(float):
    """A float read from a file that keeps the bytes it was read from (``raw``, in the format ``fmt``), so
    that it is written back as those bytes: a half or single float becomes a Python float (a double) on the
    way, and a signalling NaN is made quiet there. Arithmetic gives plain floats."""

    __slots__ = ("raw", "fmt")


class ExactFloatField(cs.FormatField):
    """construct's ``Float16*``/``Float32*``, read as an :class:`ExactFloat` and written back as the bytes it
    was read from (a signalling NaN, a NaN's payload); any other float, or a numpy float of the field's
    width, is written as ``struct`` (numpy) writes it."""

    def __init__(self, endianity: str, format: str) -> None:
        super().__init__(endianity, format)
        self.packer = struct.Struct(self.fmtstr)
        self.dtype = np.dtype(f"{'>' if endianity == '>' else '<'}f{self.length}")

    def _parse(self, stream: Any, context: Any, path: str) -> ExactFloat:
        raw = cs.stream_read(stream, self.length, path)
        value = ExactFloat(self.packer.unpack(raw)[0])
        value.raw, value.fmt = bytes(raw), self.fmtstr
        return value

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if isinstance(obj, ExactFloat) and obj.fmt == self.fmtstr:
            raw = obj.raw
        elif isinstance(obj, np.floating) and obj.dtype.itemsize == self.length:
            raw = np.asarray(obj).astype(self.dtype).tobytes()  # (numpy keeps the bits: no double between)
        else:
            try:
                raw = self.packer.pack(obj)
            except Exception:
                raise cs.FormatFieldError(f"struct {self.fmtstr!r} error during building, given value {obj!r}",
                                          path=path) from None
        cs.stream_write(stream, raw, self.length, path)
        return obj

    _emitparse = Checked._emitparse
    _emitbuild = Checked._emitbuild


def exact_floats(schema: cs.Construct) -> None:
    """Put an :class:`ExactFloatField` in ``schema`` wherever it holds construct's half or single float field
    (``Float16l``, ``Float32b``, ...), in place: its floats are then rebuilt bit for bit. Doubles need no
    change (``struct`` keeps a double's bits)."""
    seen: set[int] = set()

    def swap(con: Any) -> Any:
        if type(con) is cs.FormatField and con.fmtstr[-1] in "ef":
            return ExactFloatField(con.fmtstr[0], con.fmtstr[-1])
        if isinstance(con, cs.Construct) and id(con) not in seen:
            seen.add(id(con))
            for attr in ("subcon", "thensubcon", "elsesubcon", "default"):
                if isinstance(getattr(con, attr, None), cs.Construct):
                    setattr(con, attr, swap(getattr(con, attr)))
            if isinstance(getattr(con, "subcons", None), list):
                con.subcons[:] = [swap(sub) for sub in con.subcons]
            if isinstance(getattr(con, "cases", None), dict):
                con.cases.update({key: swap(case) for key, case in con.cases.items()})
        return con

    swap(schema)


# ---------------------------------------------------------------------------------------------------------
# enums


class EnumField(Checked):
    """An integer field whose values an enum names: ``"loss" / EnumField(Int32sl, Loss)``, ``Loss`` an
    ``enum.IntEnum`` (or a dict number -> name, made into one). Parsed as the enum's member, which equals its
    number and prints its name; built from a member, a number or a name.

    A value the enum does not name is refused, a ValueMismatchError naming the field, where it starts and the
    value (``unknown="refuse"``), or kept as a plain int and written back as it was (``unknown="keep"``: a
    value a newer writer may use).
    """

    def __init__(self, subcon: cs.Construct, enum: Any, unknown: str = "refuse") -> None:
        super().__init__()
        if unknown not in ("refuse", "keep"):
            raise ValueError("unknown must be 'refuse' or 'keep'")
        if isinstance(enum, dict):
            enum = _enum.IntEnum("Enum", {name: value for value, name in enum.items()})
        self.subcon = subcon
        self.enum = enum
        self.unknown = unknown

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        at = tell(stream)
        value = self.subcon._parsereport(stream, context, path)
        try:
            return self.enum(value)
        except ValueError:
            if self.unknown == "keep":
                return value
            raise fail(path, at, f"{value} is not a {self.enum.__name__} ({self.names()})", ValueMismatchError,
                       found=value) from None

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if isinstance(obj, str):
            try:
                obj = self.enum[obj]
            except KeyError:
                raise fail(path, tell(stream), f"{obj!r} is not a {self.enum.__name__} ({self.names()})",
                           BuildError, found=obj) from None
        elif self.unknown == "refuse" and obj not in set(self.enum):
            raise fail(path, tell(stream), f"{obj!r} is not a {self.enum.__name__} ({self.names()})", BuildError,
                       found=obj)
        self.subcon._build(int(obj), stream, context, path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        return self.subcon._sizeof(context, path)

    def names(self) -> str:
        """``1 hs, 2 ns, 3 softmax``: the values and their names, for errors and docs."""
        return ", ".join(f"{int(m)} {m.name}" for m in self.enum)


# ---------------------------------------------------------------------------------------------------------
# strings


def encode_utf8(s: Any, path: str, stream: Any) -> bytes:
    """``s`` as UTF-8 bytes for field ``path``; anything but an encodable str raises a BuildError located at
    the stream's position."""
    if not isinstance(s, str):
        raise fail(path, tell(stream), "expected a str", BuildError, found=type(s).__name__)
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise fail(path, tell(stream), f"cannot encode as UTF-8: {e.reason}", BuildError) from None


class CheckedString(Checked):
    """A string stored as a little-endian length (``u8``/``u16``/``u32``/``u64``) and UTF-8 bytes."""

    def __init__(self, length: str = "u32") -> None:
        super().__init__()
        self.length = length
        self._fmt = struct.Struct(LEN_FORMATS[length])

    def _parse(self, stream: Any, context: Any, path: str) -> str:
        pos = stream.tell()
        check_length(stream, self._fmt.size, path, "string length")
        (n,) = self._fmt.unpack(stream.read(self._fmt.size))
        check_length(stream, n, path, "string bytes")
        return decode_utf8(stream.read(n), "strict", path, pos + self._fmt.size)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> str:
        raw = encode_utf8(obj, path, stream)
        if len(raw) >= 1 << (8 * self._fmt.size):
            raise fail(path, tell(stream), "string too long for its length field", BuildError)
        stream.write(self._fmt.pack(len(raw)) + raw)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)



class CheckedBytes(Checked):
    """``length`` raw bytes, checked against what remains (compiled ``Bytes`` would read short silently)."""

    def __init__(self, length: Any) -> None:
        super().__init__()
        self.length = length

    def _parse(self, stream: Any, context: Any, path: str) -> bytes:
        n = int(evaluate(self.length, context))
        check_length(stream, n, path, "bytes")
        return stream.read(n)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> bytes:
        if not isinstance(obj, (bytes, bytearray, memoryview)):  # (a str or an int: the stream's own TypeError)
            raise fail(path, tell(stream), f"expected bytes, not {type(obj).__name__}", BuildError,
                       found=type(obj).__name__)
        n = evaluate(self.length, context)  # None: a length field back-patched after the build
        if n is not None and len(obj) != n:
            raise fail(path, tell(stream), "byte string length does not match its header", BuildError,
                       expected=n, found=len(obj))
        stream.write(obj)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        return int(evaluate(self.length, context))



# the names before the framework's API was declared (issue 28), for code written against them; modules outside
# the framework import the public names (tests/framework/test_api.py enforces it)
_Checked, _evaluate, _decode, _encode = Checked, evaluate, decode_utf8, encode_utf8
