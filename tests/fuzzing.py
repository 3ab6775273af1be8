"""The mutation fuzz's format-aware mutators and its bounded runner (``tests/test_fuzz.py`` drives them).

A mutator takes a valid file's bytes and a seeded generator and returns ``(mutant, description)``, or None
where it does not apply. Each knows where its format keeps lengths, counts, types and offsets: the fields a
schema walks (every fixed-width number, float and length prefix, records duplicated, dropped or swapped),
JSON headers (safetensors, the sharded index), ``.npy`` header dicts, zip records (``.npz``), protobuf
(SentencePiece), text headers and lines (word2vec, GloVe), word2vec binary records and infini-gram's
folders. ``run_forked`` runs one input's calls in a forked child bounded in CPU time and address space.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import resource
import select
import shutil
import signal
import struct
import sys
import traceback
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

import wvformats as wv
from wvformats.errors import FormatError
from wvformats.framework.walk import walk
from wvformats.testing.fuzz import DECIMALS, HOSTILE, mutate_some

Mutation = tuple[bytes, str] | None


def _pick(rng: np.random.Generator, items: list[Any] | tuple[Any, ...]) -> Any:
    return items[int(rng.integers(0, len(items)))]


# -- fields a schema walks ------------------------------------------------------------------------------------

class Field(NamedTuple):
    """A number a schema reads at ``start:end``: ``kind`` is ``<``/``>`` (an integer of that byte order),
    ``f`` (a float) or ``prefix`` (the little-endian length in front of a string)."""

    path: str
    start: int
    end: int
    kind: str
    value: Any


def _fixed(data: bytes, start: int, end: int, value: Any) -> tuple[int, str] | None:
    """The (start, kind) of ``value`` as the last 1, 2, 4 or 8 bytes of ``data[start:end]`` (a protobuf tag may
    come before a float), or None."""
    for width in (8, 4, 2, 1):
        at = end - width
        if at < start or end - start - width > 2:
            continue
        raw = bytes(data[at:end])
        if isinstance(value, float) and width in (4, 8):
            got = struct.unpack("<f" if width == 4 else "<d", raw)[0]
            if got == value or (got != got and value != value):
                return at, "f"
        elif isinstance(value, int) and not isinstance(value, bool):
            for order in "<>":
                if int.from_bytes(raw, "little" if order == "<" else "big") == value or \
                        int.from_bytes(raw, "little" if order == "<" else "big", signed=True) == value:
                    return at, order
    return None


def _spans(data: bytes, fmt: str) -> list[Any]:
    """The spans of ``data`` as ``fmt``'s schema walks them (none for a format without a schema, or a file it
    does not walk)."""
    schema = wv.registry.get(fmt).schema
    if schema is None:
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return walk(schema, data, format=fmt)[1]
    except FormatError:
        return []


def walked_fields(data: bytes, fmt: str) -> list[Field]:
    """The numbers and length prefixes of ``data`` as ``fmt``'s schema walks them."""
    found = []
    for s in _spans(data, fmt):
        v = s.value
        if isinstance(v, (bool, np.bool_)) or s.end <= s.start:
            continue
        if isinstance(v, (int, float, np.integer, np.floating)):
            got = _fixed(data, s.start, s.end, v.item() if isinstance(v, np.generic) else v)
            if got is not None:
                found.append(Field(s.path, got[0], s.end, got[1], v))
        elif isinstance(v, (str, bytes)) and v:
            raw = v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v
            for width in (8, 4, 2):  # a length prefix: the string's byte length just before it
                if s.end - s.start == width + len(raw) and \
                        int.from_bytes(data[s.start : s.start + width], "little") == len(raw):
                    found.append(Field(s.path, s.start, s.start + width, "prefix", len(raw)))
                    break
    return found


def walked_records(data: bytes, fmt: str) -> list[tuple[str, int, int]]:
    """Indexed records (``chunks[2]``, ``metadata[0]``, ``members[1]``, ``pieces[7]``) as ``(path, start,
    end)``: the widest span of each."""
    widest: dict[str, tuple[int, int]] = {}
    for s in _spans(data, fmt):
        if re.fullmatch(r"[A-Za-z_.]*\w\[\d+\]", s.path or ""):
            a, b = widest.get(s.path, (s.start, s.end))
            widest[s.path] = (min(a, s.start), max(b, s.end))
    return [(p, a, b) for p, (a, b) in widest.items() if b > a]


def _hostile_int(value: int, width: int, size: int, rng: np.random.Generator) -> int:
    small = value < 64
    choices = [*HOSTILE, value + 1, value - 1, value * 2, value + size, size, size + 1, -1, -2]
    if small:  # a type, version or enum: its neighbours and the values past the last one
        choices += list(range(0, 16)) + [30, 31, 32, 39, 40, 41, 127, 128, 255, 256]
    return int(_pick(rng, choices)) % (1 << 8 * width)


FLOATS = (float("nan"), float("inf"), float("-inf"), -1.0, 0.0, -0.0, 1e-45, 1e38, 3.5e38, 1e308, 2.0**63, 0.5)


def field_mutation(data: bytes, fields: list[Field], rng: np.random.Generator) -> Mutation:
    """One number a schema reads set to a hostile value: a count, length, offset, type or flag to the edges of
    its width, past the data, to its neighbours (a type's unknown values); a float to NaN, infinities, huge."""
    if not fields:
        return None
    head = [f for f in fields if f.start < 256]  # (the header's counts and sizes, half the time)
    f = _pick(rng, head if head and rng.random() < 0.5 else fields)
    d = bytearray(data)
    width = f.end - f.start
    if f.kind == "f":
        new = float(_pick(rng, FLOATS))
        d[f.start : f.end] = np.array(new, "<f4" if width == 4 else "<f8").tobytes()
        return bytes(d), f"{f.path} = {new} (float at {f.start})"
    value = _hostile_int(f.value, width, len(data), rng)
    order = "big" if f.kind == ">" else "little"
    d[f.start : f.end] = value.to_bytes(width, order)
    what = "length prefix of " if f.kind == "prefix" else ""
    return bytes(d), f"{what}{f.path} = {value} (u{8 * width} at {f.start})"


def record_mutation(data: bytes, records: list[tuple[str, int, int]], rng: np.random.Generator) -> Mutation:
    """A record (a chunk, metadata pair, tensor, zip member, piece) duplicated, dropped, swapped with the next
    of its table or moved to the end: the counts and offsets no longer agree with the records, or a name or
    chunk comes twice."""
    if not records:
        return None
    path, a, b = _pick(rng, records)
    op = _pick(rng, ["duplicate", "drop", "swap", "to end"])
    rec = data[a:b]
    if op == "duplicate":
        return data[:b] + rec + data[b:], f"{path} ({a}:{b}) duplicated"
    if op == "drop":
        return data[:a] + data[b:], f"{path} ({a}:{b}) dropped"
    if op == "to end":
        return data[:a] + data[b:] + rec, f"{path} ({a}:{b}) moved to the end"
    table = path.rsplit("[", 1)[0]
    nxt = [(p, c, e) for p, c, e in records if p.rsplit("[", 1)[0] == table and c >= b]
    if not nxt:
        return data[:a] + data[b:] + rec, f"{path} ({a}:{b}) moved to the end"
    p2, c, e = min(nxt, key=lambda r: r[1])
    return data[:a] + data[c:e] + data[b:c] + rec + data[e:], f"{path} swapped with {p2}"


# -- JSON (safetensors headers, the sharded index) -------------------------------------------------------------

class Raw(str):
    """JSON text written as it is (what ``json.dumps`` cannot make: NaN spelt otherwise, 5,000 digits)."""


class Pairs(list):
    """A JSON object as a list of (key, value): the same key may come twice."""


def dumps(v: Any) -> str:
    """JSON text of ``v``, with :class:`Raw` text and :class:`Pairs` objects as they are."""
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, (Pairs, dict)):
        items = v if isinstance(v, Pairs) else v.items()
        return "{" + ",".join(f"{json.dumps(str(k))}:{dumps(x)}" for k, x in items) + "}"
    if isinstance(v, list):
        return "[" + ",".join(dumps(x) for x in v) + "]"
    return json.dumps(v)


_BIG = 2**64
HOSTILE_JSON = [None, True, -1, 0, 1.5, "", "x", [], {}, [-1], [0, 0], Raw("1e999"), Raw("-1e999"), Raw("NaN"),
                Raw("Infinity"), _BIG, 2**63, -(2**63) - 1, Raw("9" * 5000), Raw('"\\ud800"'), Raw("-0"),
                Raw("1" + "0" * 400), [[[[[]]]]]]
KEYED: dict[str, list[Any]] = {  # hostile values by the key they stand under
    "dtype": ["F4", "F6_E2M3", "F6_E3M2", "F8_E4M3", "F8_E5M2", "F8_E8M0", "BOOL", "U8", "I8", "I64", "U64",
              "F64", "C64", "BF16", "F16", "X", "", " F32", "f32", "F32\u0000", 5, None, ["F32"]],
    "shape": [[], [0], [-1], [2**63], [_BIG], [2**31, 2**31], [2**32] * 4, [1] * 100, "8", [8.0], [True], None,
              [[8]], [0, 2**63], [Raw("1e400")], [2**62, 4]],
    "data_offsets": [[0], [0, 0, 0], [8, 0], [-8, 0], [0, _BIG], [2**63, 2**63 + 8], "0", [0.0, 8.0], [True, 9],
                     [0, 2**32], [0, 1], None, [[0], [8]]],
    "total_size": [-1, 0, _BIG, "144", 1.5, Raw("1e400"), None],
    "__metadata__": [{"a": 1}, [], "x", {"x": {"y": "z"}}, None, {"format": None}, {"": ""}],
    "weight_map": [[], {"a": 5}, {"": ""}, None, "x", {"x": None}],
}
SHARD_NAMES = ["../sample-tiny.safetensors", "/etc/hostname", "", "missing.safetensors",
               "model.safetensors.index.json", ".", "..", "a\u0000b", "x/../model-00001-of-00002.safetensors",
               "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


def _nodes(tree: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _nodes(v, (*path, i))


def _get(tree: Any, path: tuple) -> Any:
    for k in path:
        tree = tree[k]
    return tree


def _set(tree: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(tree, path[:-1])[path[-1]] = value
    return tree


def json_mutation(text: bytes, rng: np.random.Generator) -> Mutation:
    """One change to a JSON document: a value (by its key: dtype, shape, data_offsets, total_size, a shard's
    file name) set to a hostile one, a key dropped or given twice, deep nesting, a 5,000-digit number, bytes
    that are not UTF-8, or the document grown to megabytes with a key given twice at its end."""
    try:
        tree = json.loads(text)
    except ValueError:
        return None
    paths = list(_nodes(tree))[1:] or [()]
    op = _pick(rng, ["value", "value", "value", "drop", "duplicate", "nest", "bytes", "type", "grow"])
    path = _pick(rng, paths)
    where = "/".join(map(str, path))
    if op == "grow" and rng.random() < 0.3 and isinstance(tree, dict) and tree:
        # megabytes of entries, then a key given twice at the end: refused in time linear in the header
        n = 60_000  # (3.5 MB: a scan quadratic in it takes over a minute, a linear one a second)
        obj = tree["weight_map"] if isinstance(tree.get("weight_map"), dict) and tree["weight_map"] else tree
        first = next((k for k in obj if k != "__metadata__"), next(iter(obj)))
        grown = Pairs((f"t{i:07d}", obj[first]) for i in range(n))
        grown += [*obj.items(), (first, obj[first])]
        what = f"grown to {n} entries, then {first!r} again"
        return dumps(_set(tree, ("weight_map",), grown) if obj is not tree else grown).encode(), what
    if op in ("value", "grow"):
        key = next((k for k in reversed(path) if isinstance(k, str)), None)
        if key in KEYED and (path[-1] == key or rng.random() < 0.5):
            new = _pick(rng, KEYED[key])
            path = path[: path.index(key) + 1] if key in path else path
        elif len(path) >= 2 and path[-2] == "weight_map":
            new = _pick(rng, SHARD_NAMES)
        else:
            old = _get(tree, path)
            new = _pick(rng, HOSTILE_JSON if not isinstance(old, int) or isinstance(old, bool) else
                        [*HOSTILE_JSON, old + 1, old - 1, old * 2, old + 2**32])
        tree = _set(tree, path, new)
        return dumps(tree).encode(), f"{'/'.join(map(str, path))} = {dumps(new)[:40]}"
    if op == "type":  # an object where a list was, a list where an object was
        old = _get(tree, path)
        new = list(old.values()) if isinstance(old, dict) else dict(enumerate(old)) if isinstance(old, list) \
            else [old]
        return dumps(_set(tree, path, new)).encode(), f"{where}: {type(old).__name__} -> {type(new).__name__}"
    if op == "drop":
        parent = _get(tree, path[:-1]) if path else None
        if isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.pop(path[-1])
        return dumps(tree).encode(), f"{where} dropped"
    if op == "duplicate":
        dicts = [p for p in [(), *paths] if isinstance(_get(tree, p), dict) and _get(tree, p)]
        if not dicts:
            return None
        p = _pick(rng, dicts)
        obj = _get(tree, p)
        key = _pick(rng, list(obj))
        value = obj[key] if rng.random() < 0.5 else _pick(rng, HOSTILE_JSON)
        pairs = Pairs(obj.items())
        pairs.insert(int(rng.integers(0, len(pairs) + 1)), (key, value))
        return dumps(_set(tree, p, pairs)).encode(), f"{'/'.join(map(str, p))}: key {key!r} twice"
    if op == "nest":
        depth = int(_pick(rng, [64, 1000, 100_000]))
        return dumps(_set(tree, path, Raw("[" * depth + "]" * depth))).encode(), f"{where} nested {depth} deep"
    # bytes that are not UTF-8 (or a cut sequence, an encoded surrogate, a NUL) inside a string
    out = dumps(tree).encode()
    quotes = [m.start() for m in re.finditer(b'"', out)]
    if not quotes:
        return None
    at = _pick(rng, quotes) + 1
    bad = _pick(rng, [b"\xff", b"\xe6\x97", b"\xed\xa0\x80", b"\xc0\x80", b"\x00", b"\\u0000", b"\\ud800"])
    return out[:at] + bad + out[at:], f"{bad!r} at {at}"


def safetensors_mutation(data: bytes, rng: np.random.Generator) -> Mutation:
    """A safetensors file with its JSON header changed (:func:`json_mutation`) and its length field set to the
    new header's length (padded to 8 as writers do), or, one time in five, to a hostile value."""
    if len(data) < 8:
        return None
    n = int.from_bytes(data[:8], "little")
    got = json_mutation(data[8 : 8 + n], rng)
    if got is None:
        return None
    header, what = got
    if rng.random() < 0.8:
        header += b" " * (-len(header) % 8)
    length = len(header)
    if rng.random() < 0.2:
        length = _pick(rng, [length + 1, length - 1, len(data), 0, 100_000_001, 2**63, 2**64 - 1])
        what += f", header length {length}"
    return length.to_bytes(8, "little") + header + data[8 + n :], what


# -- .npy headers ----------------------------------------------------------------------------------------------

DESCRS = ["'<U0'", "'|S0'", "'|V0'", "'V0'", "'<U2147483647'", "'<U1'", "'|S1'", "'|O'", "'O'", "'<M8[ns]'",
          "'<m8[D]'", "'<M8'", "'>c16'", "'<f2'", "'|b1'", "'<i8'", "'>f4'", "'<f16'", "'float32'", "'x'", "''",
          "'<f4'", "'<u8'", "'|u1'", "5", "None", "[]", "[('a', '<f4')]", "[('a', '<f4', (2,))]", "[('a', '<U0')]",
          "[('a', '|O')]", "[('', '<f4')]", "[('a', '<f4'), ('a', '<f4')]", "[('a', [('b', [('c', '<f4')])])]",
          "[('a', '<f4', (2147483648, 2147483648))]", "[('a', '<f4', (-1,))]",
          "{'names': ['a'], 'formats': ['<f4'], 'offsets': [1099511627776], 'itemsize': 4}",
          "{'names': ['a'], 'formats': ['<f4'], 'offsets': [0], 'itemsize': 0}",
          "{'names': ['a', 'b'], 'formats': ['<f4', '<f4'], 'offsets': [0, 0], 'itemsize': 4}",
          "('<f4', (2147483648, 2147483648))", "('<f4', (0,))", "('|V4', '<f4')", "'<U4294967296'", "'|S-1'",
          "[" * 200 + "]" * 200]
SHAPES = ["()", "(0,)", "(-1,)", "(2147483648, 2147483648)", "(9223372036854775808,)", "(18446744073709551616,)",
          "(32768, 32768)", "(" + "1, " * 33 + ")", "(" + "2, " * 64 + ")", "(0, 9223372036854775807)",
          "(4294967296, 0)", "(True,)", "(1.5,)", "[5, 3]", "15", "('5',)", "(5, 3, 1)", "(3, 5)", "(15,)", "(5, 4)",
          "(6, 3)", "(5, -3)", "(None,)", "(" * 200 + ")" * 200, "(1e400,)"]
ORDERS = ["True", "1", "0", "'False'", "None", "[]", "2"]


def npy_mutation(data: bytes, rng: np.random.Generator) -> Mutation:
    """An ``.npy`` with its header dict changed: ``descr`` (zero-itemsize, huge, structured, object, subarray,
    nested), ``shape`` (negative, huge, 33 dimensions, not a tuple), ``fortran_order``, a key dropped, added
    or given twice, the dict not a dict or deeply nested, the version or the header length field hostile;
    the data kept, or resized to what the new header declares (up to 1 MB)."""
    if len(data) < 10 or data[:6] != b"\x93NUMPY":
        return None
    major = data[6]
    wide = major >= 2
    hl = int.from_bytes(data[8:12], "little") if wide else int.from_bytes(data[8:10], "little")
    start = 12 if wide else 10
    try:
        header = ast.literal_eval(data[start : start + hl].decode("latin1"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(header, dict):
        return None
    body = data[start + hl :]
    items = {k: repr(v) for k, v in header.items()}
    op = _pick(rng, ["descr", "descr", "shape", "shape", "order", "drop", "extra", "twice", "not a dict",
                     "version", "length", "both", "nothing"])
    what = op
    if op == "nothing":  # elements of no bytes, as many as a huge shape says
        items["descr"] = _pick(rng, ["'<U0'", "'|S0'", "'|V0'", "[('a', '<U0')]", "('<f4', (0,))"])
        items["shape"] = _pick(rng, ["(32768, 32768)", "(2147483648, 2147483648)", "(4611686018427387904, 2)",
                                     "(9223372036854775807,)", "(" + "65536, " * 8 + ")"])
        what = f"descr {items['descr']}, shape {items['shape']}"
    if op in ("descr", "both"):
        items["descr"] = _pick(rng, DESCRS)
        what = f"descr {items['descr'][:60]}"
    if op in ("shape", "both"):
        items["shape"] = _pick(rng, SHAPES)
        what = (what + ", " if op == "both" else "") + f"shape {items['shape'][:60]}"
    if op == "order":
        items["fortran_order"] = _pick(rng, ORDERS)
        what = f"fortran_order {items['fortran_order']}"
    if op == "drop":
        key = _pick(rng, list(items))
        del items[key]
        what = f"{key!r} dropped"
    if op == "extra":
        items[_pick(rng, ["'x'", "1", "'descr '", "None"])] = "0"
    text = "{" + "".join(f"{k if k[:1] in '0123456789N' else repr(k)}: {v}, " for k, v in items.items()) + "}"
    if op == "twice":
        key = _pick(rng, list(items))
        text = text[:-1] + f"{key!r}: {_pick(rng, [items[key], *SHAPES[:4], *DESCRS[:4]])}, }}"
        what = f"{key!r} twice"
    if op == "not a dict":
        text = _pick(rng, ["[1]", "None", "'x'", "{", "{1: 2}", "{**x}", "__import__('os')", "{" * 300 + "}" * 300,
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 3)} x"])
        what = f"header {text[:40]}"
    raw = text.encode("latin1", "replace")
    pad = -(start + len(raw) + 1) % 64
    raw += b" " * pad + b"\n"
    major_out = major if len(raw) < 65536 or wide else 2
    if op == "version":
        major_out = int(_pick(rng, [0, 1, 2, 3, 4, 255]))
        what = f"version {major_out}"
    wide_out = major_out >= 2
    length = len(raw)
    if op == "length":
        length = int(_pick(rng, [0, 1, length - 1, length + 1, len(data), 65535, 2**31, 2**32 - 1]))
        length %= 1 << (32 if wide_out else 16)
        what = f"header length {length}"
    if rng.random() < 0.5:  # the data resized to what the new header declares
        try:
            got = ast.literal_eval(text)
            nbytes = np.dtype(got["descr"] if not isinstance(got["descr"], list) else
                              [tuple(f) for f in got["descr"]]).itemsize * int(np.prod(got["shape"]))
        except Exception:
            nbytes = -1
        if 0 <= nbytes <= 1 << 20:
            body = (body * (nbytes // max(len(body), 1) + 1))[:nbytes] if body else bytes(nbytes)
            what += f", data {nbytes} bytes"
    out = data[:6] + bytes([major_out % 256, data[7]]) + length.to_bytes(4 if wide_out else 2, "little") + raw
    return out + body, what


# -- zip records (.npz) ----------------------------------------------------------------------------------------

def _members(data: bytes) -> list[tuple[zipfile.ZipInfo, bytes]] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return [(i, z.read(i)) for i in z.infolist()]
    except Exception:
        return None


def _zip(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_STORED, zip64: bool = False,
         stream: bool = False) -> bytes:
    class Unseekable(io.RawIOBase):  # zipfile writes data descriptors to a stream it cannot seek
        def __init__(self) -> None:
            self.buf = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            self.buf += bytes(b)
            return len(b)

    out: Any = Unseekable() if stream else io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, payload in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            with z.open(info, "w", force_zip64=zip64) as f:
                f.write(payload)
    return bytes(out.buf) if stream else out.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=array.dtype.hasobject)
    return buf.getvalue()


def _hostile_arrays(rows: int, dim: int) -> list[tuple[str, np.ndarray]]:
    """Arrays a member of an ``.npz`` may hold that no writer of embeddings would."""
    words = np.array([f"w{i}" for i in range(rows)])
    return [
        ("bytes vectors", np.zeros((rows, dim), "S4")), ("str vectors", np.zeros((rows, dim), "<U3")),
        ("object vectors", np.zeros((rows, dim), object)), ("complex vectors", np.zeros((rows, dim), "c8")),
        ("f16 vectors", np.ones((rows, dim), "f2")), ("int vectors", np.ones((rows, dim), "i8")),
        ("bool vectors", np.ones((rows, dim), bool)), ("1-D vectors", np.ones(rows, "f4")),
        ("3-D vectors", np.ones((rows, dim, 2), "f4")), ("0 x 0 vectors", np.ones((0, 0), "f4")),
        ("structured vectors", np.zeros((rows, dim), [("a", "<f4")])), ("NaN vectors", np.full((rows, dim), np.nan, "f4")),
        ("datetime vectors", np.zeros((rows, dim), "M8[ns]")), ("big-endian vectors", np.ones((rows, dim), ">f4")),
        ("fortran vectors", np.asfortranarray(np.ones((rows, dim), "f4"))),
        ("U0 words", np.zeros(rows, "<U0")), ("S words", np.array([b"\xff\xfe", b"\xe6\x97"] * (rows // 2 + 1))[:rows]),
        ("object words", words.astype(object)), ("2-D words", words.reshape(rows, 1)), ("int words", np.arange(rows)),
        ("short words", words[:-1]), ("long words", np.concatenate([words, words[:1]])),
        ("duplicate words", np.array(["a"] * rows)), ("empty words", np.array([""] * rows)),
        ("words with surrogates", np.array(["\udce9"] * rows)),
        ("wide words", np.array(["x" * 1000] * rows)), ("scalar", np.float32(1.0).reshape(())),
        ("words past U+10FFFF", np.full(rows * 2, 0x110000, "<u4").view("<U2")),
        ("words of U+FFFFFFFF", np.full(rows, 0xFFFFFFFF, "<u4").view("<U1")),
        ("words of lone surrogates", np.full(rows, 0xD800, "<u4").view("<U1")),
    ]


def _surgery(data: bytes, name: bytes, new: bytes, utf8_flag: bool) -> bytes:
    """Every local and central record named ``name`` renamed ``new`` (the same length), the UTF-8 flag set or
    cleared."""
    d = bytearray(data)
    for sig, name_at, flag_at in ((b"PK\x03\x04", 30, 6), (b"PK\x01\x02", 46, 8)):
        for m in re.finditer(re.escape(sig), data):
            at = m.start()
            if d[at + name_at : at + name_at + len(name)] == name:
                d[at + name_at : at + name_at + len(name)] = new
                flags = int.from_bytes(d[at + flag_at : at + flag_at + 2], "little")
                flags = flags | 0x800 if utf8_flag else flags & ~0x800
                d[at + flag_at : at + flag_at + 2] = flags.to_bytes(2, "little")
    return bytes(d)


# the fixed fields of the end of central directory and of a central directory record: (offset, width, name)
EOCD = [(4, 2, "disk"), (6, 2, "cd disk"), (8, 2, "entries on disk"), (10, 2, "entries"), (12, 4, "cd size"),
        (16, 4, "cd offset"), (20, 2, "comment length")]
CENTRAL = [(4, 2, "version made by"), (6, 2, "version needed"), (8, 2, "flags"), (10, 2, "method"),
           (16, 4, "crc32"), (20, 4, "compressed size"), (24, 4, "uncompressed size"), (28, 2, "name length"),
           (30, 2, "extra length"), (32, 2, "comment length"), (34, 2, "disk"), (42, 4, "local header offset")]


def zip_mutation(data: bytes, rng: np.random.Generator, fmt: str = "npz") -> Mutation:
    """An ``.npz`` rebuilt with one change, or one record field of it hostile: a member's ``.npy`` header
    (:func:`npy_mutation`), a member holding an array no writer would make, a member renamed (a UTF-8
    sequence cut, bytes that are not UTF-8 with or without the UTF-8 flag, a path, a name given twice), a
    member added or dropped, a member's bytes changed (its CRC kept true), another compression method, zip64 extras, data descriptors; or a field of the
    end record or of a central record (counts, sizes, offsets, name lengths, CRCs, methods, flags) set
    hostile."""
    members = _members(data)
    if not members:
        return None
    named = [(i.filename, payload) for i, payload in members]
    method = members[0][0].compress_type
    op = _pick(rng, ["npy", "npy", "array", "array", "array", "payload", "name", "add", "drop", "method",
                     "zip64", "descriptor", "eocd", "central", "central"])
    k = int(rng.integers(0, len(named)))
    if op == "npy":
        got = npy_mutation(named[k][1], rng)
        if got is None:
            return None
        named[k] = (named[k][0], got[0])
        return _zip(named, method), f"{named[k][0]}: {got[1]}"
    if op == "payload":  # bytes of a member changed, its CRC and sizes kept true
        payload, what = mutate_some(named[k][1], rng)
        named[k] = (named[k][0], payload)
        return _zip(named, method), f"{named[k][0]}: {what} (CRC kept true)"
    if op == "array":  # (as many rows and columns as the arrays there are, so the shapes agree)
        shapes = [np.load(io.BytesIO(payload), allow_pickle=False).shape for _, payload in named
                  if payload[:6] == b"\x93NUMPY"]
        rows, dim = next((s for s in shapes if len(s) == 2), (20, 8))
        what, array = _pick(rng, _hostile_arrays(rows, dim))
        target = [i for i, (n, _) in enumerate(named) if n.split(".")[0] in ("words", "vectors")]
        want = "words" if "words" in what else "vectors"
        k = next((i for i in target if named[i][0].startswith(want)), k)
        named[k] = (named[k][0], _npy(array))
        return _zip(named, method), f"{named[k][0]}: {what}"
    if op == "name":
        choice = _pick(rng, ["cut", "latin1", "flagged latin1", "path", "twice", "empty", "no .npy", "long",
                             "dot dot"])
        old = named[k][0]
        if choice in ("cut", "latin1", "flagged latin1"):
            bad = {"cut": b"\xe6\x97", "latin1": b"\xe9", "flagged latin1": b"\xe9"}[choice]
            placeholder = "q" * len(bad)
            stem, dot, ext = old.rpartition(".")
            new = (stem or ext) + placeholder + (dot + ext if stem else "")
            named[k] = (new, named[k][1])
            raw = _surgery(_zip(named, method), new.encode(), new.encode().replace(placeholder.encode(), bad),
                           utf8_flag=choice != "latin1")
            return raw, f"{old}: name with {bad!r} ({choice})"
        new = {"path": "a/b/" + old, "twice": named[(k + 1) % len(named)][0], "empty": "", "no .npy": old + ".bin",
               "long": "x" * 60000 + ".npy", "dot dot": "../" + old}[choice]
        named[k] = (new, named[k][1])
        return _zip(named, method), f"{old} renamed {new[:40]!r}"
    if op == "add":
        named.append((_pick(rng, ["extra.npy", named[k][0], "words.npy", "vectors.npy", "x"]), named[k][1]))
        return _zip(named, method), f"member {named[-1][0]!r} added"
    if op == "drop":
        old = named.pop(k)[0]
        return _zip(named, method), f"{old} dropped"
    if op == "method":
        new_method = _pick(rng, [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
        return _zip(named, new_method), f"compression method {new_method}"
    if op == "zip64":
        return _zip(named, method, zip64=True), "zip64 extras"
    if op == "descriptor":
        return _zip(named, method, stream=True), "data descriptors"
    d = bytearray(data)
    if op == "eocd":
        at = data.rfind(b"PK\x05\x06")
        if at < 0:
            return None
        off, width, name = _pick(rng, EOCD)
    else:
        records = [m.start() for m in re.finditer(b"PK\x01\x02", data)]
        if not records:
            return None
        at = _pick(rng, records)
        off, width, name = _pick(rng, CENTRAL)
    old_value = int.from_bytes(d[at + off : at + off + width], "little")
    value = _hostile_int(old_value, width, len(data), rng)
    d[at + off : at + off + width] = value.to_bytes(width, "little")
    return bytes(d), f"{'end record' if op == 'eocd' else 'central record'} at {at}: {name} = {value}"


# -- protobuf (SentencePiece) ----------------------------------------------------------------------------------

class Proto(NamedTuple):
    """A protobuf field: number, wire type and value (an int, bytes, or a list of Proto for a message)."""

    number: int
    wire: int
    value: Any
    encoded_as: int | None = None  # the wire type the value is written as, where the key says another


MESSAGES = {(): {1, 2, 3, 4, 5}, (1,): set(), (4,): {1}}  # ModelProto's messages, and self_test_data's samples


def _varint(b: bytes, at: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        if at >= len(b) or shift > 63:
            raise ValueError("varint")
        c = b[at]
        at += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, at


def proto_parse(b: bytes, where: tuple = ()) -> list[Proto]:
    out = []
    at = 0
    while at < len(b):
        key, at = _varint(b, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            v, at = _varint(b, at)
        elif wire == 1:
            v, at = b[at : at + 8], at + 8
        elif wire == 5:
            v, at = b[at : at + 4], at + 4
        elif wire == 2:
            n, at = _varint(b, at)
            v, at = b[at : at + n], at + n
            if number in MESSAGES.get(where, set()) or (where == () and number == 1):
                v = proto_parse(v, (*where, number))
        else:
            raise ValueError("wire type")
        if at > len(b):
            raise ValueError("cut")
        out.append(Proto(number, wire, v))
    return out


def _enc(v: int) -> bytes:
    v %= 1 << 64
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def proto_build(fields: list[Proto]) -> bytes:
    out = bytearray()
    for f in fields:
        out += _enc(f.number << 3 | f.wire)
        wire = f.wire if f.encoded_as is None else f.encoded_as
        if isinstance(f.value, list):
            body = proto_build(f.value)
            out += _enc(len(body)) + body
        elif wire == 0:
            out += f.value if isinstance(f.value, bytes) else _enc(f.value)
        elif wire == 2:
            out += _enc(len(f.value)) + f.value
        else:
            out += f.value
    return bytes(out)


def proto_mutation(data: bytes, rng: np.random.Generator) -> Mutation:
    """A SentencePiece model with one protobuf field changed, lengths of the messages around it kept true: a
    varint to a hostile value (10 bytes, overlong, unterminated), a string to bytes that are not UTF-8 or a cut
    sequence, a float score to NaN or infinity, the wire type or field number changed, a field given twice or
    dropped; or a length inside a message set past what it holds."""
    try:
        tree = proto_parse(data)
    except (ValueError, IndexError):
        return None
    slots: list[tuple[list[Proto], int, tuple]] = []

    def collect(fields: list[Proto], where: tuple) -> None:
        for i, f in enumerate(fields):
            slots.append((fields, i, (*where, f.number)))
            if isinstance(f.value, list) and len(slots) < 4000:
                collect(f.value, (*where, f.number))

    collect(tree, ())
    fields, i, where = _pick(rng, slots)
    f = fields[i]
    what = ".".join(map(str, where))
    op = _pick(rng, ["value", "value", "value", "wire", "number", "twice", "drop", "length"])
    if op == "value":
        if f.wire == 0:
            new: Any = _pick(rng, [*HOSTILE, 2**31, -1 % 2**64, -(2**31) % 2**64, 5, 6, 7, 100, 2**32,
                                   b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", b"\x80\x00", b"\xff" * 11])
            fields[i] = f._replace(value=new)
        elif f.wire == 5:
            new = np.array(_pick(rng, FLOATS), "<f4").tobytes()
            fields[i] = f._replace(value=new)
        elif f.wire == 2 and not isinstance(f.value, list):
            new = _pick(rng, [b"", b"\xff", f.value + b"\xe6\x97", b"\xed\xa0\x80", b"\x00", f.value * 3,
                              b"\xe2\x96\x81" * 10, b"x" * 70000, b"\xc0\x80"])
            fields[i] = f._replace(value=new)
        else:
            return None
        return proto_build(tree), f"field {what} = {str(new)[:40]}"
    if op == "wire":
        wire = int(_pick(rng, [w for w in range(8) if w != f.wire]))
        fields[i] = f._replace(wire=wire, encoded_as=f.wire)
        return proto_build(tree), f"field {what}: wire type {wire} (was {f.wire})"
    if op == "number":
        n = int(_pick(rng, [0, 6, 7, 99, 2**29 - 1, 19000, 1, 2]))
        fields[i] = f._replace(number=n)
        return proto_build(tree), f"field {what}: number {n}"
    if op == "twice":
        fields.insert(i, f)
        return proto_build(tree), f"field {what} twice"
    if op == "drop":
        del fields[i]
        return proto_build(tree), f"field {what} dropped"
    # a length inside the file past (or short of) what its message holds
    out = bytearray(proto_build(tree))
    body = proto_build([f])
    at = out.find(body)
    if at < 0 or f.wire != 2:
        return None
    key = _enc(f.number << 3 | f.wire)
    n, end = _varint(bytes(body), len(key))
    new_n = _pick(rng, [n + 1, n - 1 if n else 1, n + 1000, 2**31, 2**63, 2**64 - 1, 0])
    out[at : at + end] = key + _enc(new_n)
    return bytes(out), f"field {what}: length {new_n} (holds {n})"


# -- text (word2vec text, GloVe) and word2vec binary records ---------------------------------------------------

NUMBERS = [*DECIMALS, b"1e38", b"1e39", b"-inf", b"inf", b"NaN", b"0x1p3", b"1_000", b"+1", "\u0661".encode(),
           "\uff15".encode(), b"", b"1.0e", b"--1", b".", b"e5", b"1,5", b"0" * 400, b"1e-400"]
WORDS = [b"", b"\xff\xfe", b"\xe6\x97", b"a\x00b", b"a\rb", b"\xc0\x80", b"\xed\xa0\x80", b"x" * 100_000,
         b"a\tb", b"\xef\xbb\xbf", b"\xef\xbb\xbfthe", b"the", b"</s>", b"\x0b", b"\xc2\xa0", b"a\x85b"]
HEADERS = [b"", b"20", b"20 8 3", b"-1 8", b"20 -8", b"20 0", b"0 8", b"0 0", b"20 8.0", b"20\t8", b" 20 8",
           b"2000000000 2000000000", b"20 99999999", b"1e3 8", b"21 8", b"19 8", b"20 9", b"20 7", b"1 1",
           b"18446744073709551616 8", b"20 8 ", b"20  8"]


def text_mutation(data: bytes, rng: np.random.Generator) -> Mutation:
    """A text file of word vectors with one line or token changed: a number to a hostile decimal, a token
    dropped, added or repeated, the word to bytes that are not UTF-8, a NUL, a control character, 100 kB; a
    line repeated, dropped, swapped, emptied or ended with CRLF; the header line hostile."""
    lines = data.split(b"\n")
    if len(lines) < 2:
        return None
    op = _pick(rng, ["number", "number", "token", "word", "word", "line", "header"])
    k = int(rng.integers(0, len(lines) - (1 if not lines[-1] else 0)))
    if op == "header":
        new = _pick(rng, HEADERS)
        if not re.fullmatch(rb"\s*\d+\s+\d+\s*", lines[0]) and rng.random() < 0.5:
            lines.insert(0, new)  # a header added to a file without one (GloVe)
        else:
            lines[0] = new
        return b"\n".join(lines), f"header line {new!r}"
    tokens = lines[k].split(b" ")
    if op == "line":
        kind = _pick(rng, ["repeat", "drop", "swap", "empty", "blank", "crlf", "no final newline", "cr"])
        if kind == "repeat":
            lines.insert(k, lines[k])
        elif kind == "drop":
            del lines[k]
        elif kind == "swap" and k + 1 < len(lines):
            lines[k], lines[k + 1] = lines[k + 1], lines[k]
        elif kind == "empty":
            lines.insert(k, b"")
        elif kind == "blank":
            lines.insert(k, b"   ")
        elif kind == "crlf":
            lines[k] += b"\r"
        elif kind == "cr":
            lines[k] = lines[k].replace(b" ", b"\r", 1)
        else:
            return data.rstrip(b"\n"), "no final newline"
        return b"\n".join(lines), f"line {k}: {kind}"
    if op == "word":
        tokens[0] = _pick(rng, WORDS)
        lines[k] = b" ".join(tokens)
        return b"\n".join(lines), f"line {k}: word {tokens[0][:20]!r}"
    j = int(rng.integers(0, len(tokens)))
    if op == "number":
        tokens[j] = _pick(rng, NUMBERS)
        what = f"line {k} token {j}: {tokens[j][:20]!r}"
    else:
        kind = _pick(rng, ["drop", "add", "repeat", "space"])
        if kind == "drop":
            del tokens[j]
        elif kind == "add":
            tokens.insert(j, _pick(rng, [b"0.5", b"x", b""]))
        elif kind == "repeat":
            tokens.insert(j, tokens[j])
        else:
            tokens[j] = tokens[j] + b" "
        what = f"line {k} token {j}: {kind}"
    lines[k] = b" ".join(tokens)
    return b"\n".join(lines), what


def w2v_binary_mutation(data: bytes, rng: np.random.Generator) -> Mutation:
    """A word2vec binary file with its header line hostile, or one record's word changed (bytes that are not
    UTF-8, a space or newline inside, empty, no separator before the vector) or cut inside its vector."""
    head, nl, rest = data.partition(b"\n")
    m = re.fullmatch(rb"\s*(\d+)\s+(\d+)\s*", head)
    if not nl or not m:
        return None
    if rng.random() < 0.3:
        new = _pick(rng, HEADERS)
        return new + b"\n" + rest, f"header line {new!r}"
    count, dim = int(m.group(1)), int(m.group(2))
    starts, at = [], len(head) + 1
    for _ in range(count):
        while at < len(data) and data[at : at + 1] == b"\n":
            at += 1
        space = data.find(b" ", at)
        if space < 0:
            break
        starts.append((at, space))
        at = space + 1 + 4 * dim
    if not starts:
        return None
    a, space = _pick(rng, starts)
    kind = _pick(rng, ["word", "space", "newline", "empty", "no separator", "cut"])
    if kind == "cut":
        cut = space + 1 + int(rng.integers(0, 4 * dim))
        return data[:cut], f"cut at {cut} inside the vector of the word at {a}"
    new = {"word": _pick(rng, WORDS), "space": b"a b", "newline": b"a\nb", "empty": b"",
           "no separator": data[a:space]}[kind]
    sep = b"" if kind == "no separator" else b" "
    return data[:a] + new + sep + data[space + 1 :], f"word at {a}: {kind} {new[:20]!r}"


# -- folders: infini-gram's index files ------------------------------------------------------------------------

def folder_mutation(folder: Path, rng: np.random.Generator) -> str:
    """One change to a folder of index files, in place: an aligned word of a file (a pointer, an offset, a
    count) set hostile, a file cut to a size no record width divides, emptied, grown, deleted, or given
    another file's bytes."""
    files = sorted(p for p in folder.iterdir() if p.is_file())
    victim = _pick(rng, files)
    data = bytearray(victim.read_bytes())
    op = _pick(rng, ["word", "word", "word", "cut", "empty", "grow", "delete", "copy"])
    if op == "word" and data:
        width = int(_pick(rng, [1, 2, 4, 5, 8]))
        at = int(rng.integers(0, max(1, len(data) // width))) * width
        value = _hostile_int(int.from_bytes(data[at : at + width], "little"), width, len(data), rng)
        data[at : at + width] = value.to_bytes(width, "little")
        victim.write_bytes(bytes(data))
        return f"{victim.name}: u{8 * width} at {at} = {value}"
    if op == "cut" and data:
        n = int(rng.integers(0, len(data)))
        victim.write_bytes(bytes(data[:n]))
        return f"{victim.name}: cut to {n} bytes"
    if op == "empty":
        victim.write_bytes(b"")
        return f"{victim.name}: emptied"
    if op == "delete":
        victim.unlink()
        return f"{victim.name}: deleted"
    if op == "copy":
        other = _pick(rng, files)
        shutil.copyfile(other, victim) if other != victim else None
        return f"{victim.name}: {other.name}'s bytes"
    extra = int(rng.integers(1, 17))
    victim.write_bytes(bytes(data) + rng.integers(0, 256, extra, dtype=np.uint8).tobytes())
    return f"{victim.name}: {extra} bytes added"


# which mutators know which format (the generic byte mutations of wvformats.testing.fuzz apply to all)
def format_mutation(fmt: str, name: str, data: bytes, fields: list[Field], records: list[tuple[str, int, int]],
                    rng: np.random.Generator) -> Mutation:
    """One format-aware mutation of ``data`` (a file named ``name`` of format ``fmt``, or of a folder of that
    format) or None where none applies."""
    mutators: list[Callable[[], Mutation]] = [lambda: field_mutation(data, fields, rng),
                                              lambda: record_mutation(data, records, rng)]
    if fmt == "safetensors" or name.endswith(".safetensors"):
        mutators += [lambda: safetensors_mutation(data, rng)] * 4
    elif name.endswith(".json"):
        mutators = [lambda: json_mutation(data, rng)]
    elif fmt == "npy":
        mutators += [lambda: npy_mutation(data, rng)] * 4
    elif fmt in ("npz", "npz-embeddings"):
        mutators += [lambda: zip_mutation(data, rng, fmt)] * 4
    elif fmt == "sentencepiece":
        mutators += [lambda: proto_mutation(data, rng)] * 4
    elif fmt in ("word2vec-text", "glove"):
        mutators += [lambda: text_mutation(data, rng)] * 4
    elif fmt == "word2vec-binary":
        mutators += [lambda: w2v_binary_mutation(data, rng)] * 3
    for _ in range(4):
        got = _pick(rng, mutators)()
        if got is not None:
            return got
    return None


# -- the bounds: one input's calls in a forked child -----------------------------------------------------------

class Bounds(NamedTuple):
    """What one call may take: CPU seconds (``seconds`` plus ``per_mb`` for each MB of input) and address space
    beyond what the process had when forked (``memory`` plus ``per_byte`` times the input's size)."""

    seconds: float = 5.0
    per_mb: float = 2.0
    memory: int = 64 << 20
    per_byte: int = 64

    def cpu(self, size: int) -> float:
        return self.seconds + self.per_mb * size / (1 << 20)

    def space(self, size: int) -> int:
        return self.memory + self.per_byte * size


DEFAULT_BOUNDS = Bounds()


class Bad(NamedTuple):
    """A bad signature: the call, what went wrong (``time``, ``memory``, ``crash``, ``foreign words``, an
    exception's type), the message and where it was raised (the innermost frame of the library)."""

    call: str
    kind: str
    text: str
    where: str


class _Overtime(BaseException):  # not an Exception: nothing in the library may catch it
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Overtime


def _where(tb: Any) -> str:
    frames = traceback.extract_tb(tb)
    ours = [f for f in frames if "/wvformats/" in f.filename or "/schemas/" in f.filename]
    f = (ours or frames or [None])[-1]
    if f is None:
        return "?"
    tail = f.filename.split("/wvformats/")[-1] if "/wvformats/" in f.filename else Path(f.filename).name
    return f"{tail}:{f.lineno}"


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


Plan = Callable[[dict[str, Any]], Iterator[tuple[str, Callable[[], Any]]]]


def _child(plan: Plan, bounds: Bounds, size: int, out: int) -> None:
    def send(obj: dict[str, Any]) -> None:
        os.write(out, (json.dumps(obj) + "\n").encode())

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + bounds.space(size), hard))
    signal.signal(signal.SIGPROF, _on_alarm)
    cpu = bounds.cpu(size)
    state: dict[str, Any] = {}
    for name, fn in plan(state):
        send({"call": name})
        signal.setitimer(signal.ITIMER_PROF, cpu)
        try:
            fn()
        except _Overtime:
            send({"bad": Bad(name, "time", f"still running after {cpu:.1f} s of CPU", "?")})
            return  # (what follows would only run out of time again)
        except MemoryError as e:
            resource.setrlimit(resource.RLIMIT_AS, (hard, hard))  # (room to say so)
            send({"bad": Bad(name, "memory", f"MemoryError beyond {bounds.space(size)} bytes of address space: "
                             f"{str(e)[:200]}", _where(e.__traceback__))})
            return
        except AssertionError as e:  # a refusal the plan's check found wanting (not our error, not our words)
            refused = e.__context__  # (where the refusal, or what it translated, was raised)
            origin = refused.__cause__ or refused if refused is not None else e
            send({"bad": Bad(name, "refusal", str(e)[:500], _where(origin.__traceback__))})
        except Exception as e:
            send({"bad": Bad(name, type(e).__name__, str(e)[:500], _where(e.__traceback__))})
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)


def run_forked(plan: Plan, size: int, bounds: Bounds = DEFAULT_BOUNDS) -> list[Bad]:
    """Run ``plan``'s calls in a forked child whose address space may grow by ``bounds.space(size)`` and each
    of whose calls may take ``bounds.cpu(size)`` CPU seconds (SIGPROF; the parent kills a child silent for
    four times as long in wall-clock time, as a call stuck in C code would be). Returns the bad signatures:
    those the child reports, a child killed by a signal (``crash``) or for its time."""
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        code = 0
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _child(plan, bounds, size, w)
        except BaseException as e:  # (between calls: the bounds' own handling ran out of memory or time)
            code = 3
            with contextlib.suppress(BaseException):
                hard = resource.getrlimit(resource.RLIMIT_AS)[1]
                resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
                os.write(w, (json.dumps({"bad": Bad("(between calls)", type(e).__name__, repr(e)[:300],
                                                    _where(e.__traceback__))}) + "\n").encode())
        finally:
            os._exit(code)
    os.close(w)
    bad: list[Bad] = []
    call = "(start)"
    buf = b""
    wall = 4 * bounds.cpu(size) + 10
    killed = False
    try:
        while True:
            ready, _, _ = select.select([r], [], [], wall)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                killed = True
                bad.append(Bad(call, "time", f"no word for {wall:.0f} s of wall-clock time: killed", "?"))
                break
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                msg = json.loads(line)
                if "call" in msg:
                    call = msg["call"]
                else:
                    bad.append(Bad(*msg["bad"]))
    finally:
        os.close(r)
        _, status = os.waitpid(pid, 0)
    if not killed and os.WIFSIGNALED(status):
        bad.append(Bad(call, "crash", f"killed by signal {os.WTERMSIG(status)}", "?"))
    elif not killed and os.WEXITSTATUS(status) != 0:
        bad.append(Bad(call, "crash", f"the child exited with status {os.WEXITSTATUS(status)}", "?"))
    return bad


def signature(fmt: str, bad: Bad) -> tuple[str, ...]:
    """What makes two bad results the same defect: the format, the kind and where it was raised (or, for a time,
    memory or crash bound with no place, the call without its argument or target)."""
    if bad.where != "?":
        return fmt, bad.kind, bad.where
    return fmt, bad.kind, re.sub(r"\(.*| to .*", "", bad.call)


def save_repro(folder: Path, fmt: str, path: Path, bad: Bad, label: str, n: int) -> Path:
    """Copy the input ``path`` into ``folder/<fmt>-<n>/`` with a ``repro.txt`` naming the call, what went wrong
    and how the input was made; returns the copy's path."""
    out = folder / f"{fmt}-{n:03d}-{re.sub(r'[^A-Za-z0-9]+', '_', bad.kind)}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    target = out / path.name
    (shutil.copytree if path.is_dir() else shutil.copyfile)(path, target)
    (out / "repro.txt").write_text(
        f"format: {fmt}\ninput: {target}\nmade as: {label}\ncall: {bad.call}\nkind: {bad.kind}\n"
        f"where: {bad.where}\nmessage: {bad.text}\n\n"
        f"python3 -c \"import wvformats as wv; m = wv.read({str(target)!r}, {fmt!r})\"  # then the call above\n")
    return target
