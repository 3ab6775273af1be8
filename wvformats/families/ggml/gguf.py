"""GGUF models: metadata as a mapping (arrays as numpy views, string arrays decoded lazily), tensors as zero-copy
views of the file's blocks, the checks llama.cpp's loader makes, editing and building."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import construct as cs
import numpy as np

from ...errors import TruncatedError, ValueMismatchError
from ...schemas import gguf as gguf_schema
from ...schemas.constructs.gguf import StringArray
from ...schemas.ggml import GGUF_TYPES, LAYOUTS
from ...schemas.gguf import (
    INT64_MAX,
    MAX_ARRAY_ELEMENTS,
    MAX_DIMS,
    MAX_NAME,
    SUPPORTED_VERSIONS,
    VALUE_TYPES,
)
from . import quants

TYPE_IDS = {name: i for i, name in GGUF_TYPES.items()}
VALUE_IDS = {name: i for i, (name, _) in VALUE_TYPES.items()}


@dataclass
class GGUFTensor:
    """One tensor: ``shape`` in PyTorch order (``ggml_shape``: ne[0] first), ``blocks`` its raw blocks (a view of
    the file when read), ``offset`` from the start of the data section."""

    name: str
    type: str
    ggml_shape: tuple[int, ...]
    blocks: np.ndarray
    offset: int = 0
    _where: tuple[str, int] | None = None  # read from a file: the tensor info's path and offset, for check()
    _read: np.ndarray | None = None  # read from a file: the blocks as read (unchanged: copied in bulk)

    @property
    def dtype(self) -> str:
        """The ggml type's name (``Q4_K``), as ``type``."""
        return self.type

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(reversed(self.ggml_shape))

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.ggml_shape:
            n *= int(d)
        return n

    def to_numpy(self) -> np.ndarray:
        """The values dequantized to float32 (integer types keep their dtype), in PyTorch shape; a tensor read
        from a file whose data section does not hold its blocks is a TruncatedError at its tensor info, one whose
        dimensions llama.cpp refuses or numpy cannot describe a ValueMismatchError there."""
        return quants.dequantize(self.checked_blocks(), self.type).reshape(self.shape)

    def checked_blocks(self) -> np.ndarray:
        """``blocks``, refused as ``to_numpy`` refuses them (dimensions, blocks the file does not hold)."""
        if (problem := dims_problem(self.ggml_shape)) is not None:
            path, offset = self._where or (f"tensor {self.name}", None)
            raise ValueMismatchError(f"{self.name}: {problem}", format="gguf", path=f"{path}.dims", offset=offset,
                                     found=self.ggml_shape)
        block = LAYOUTS[self.type][0]
        if len(self.blocks) * block != self.n_elements:
            path, offset = self._where or (f"tensor {self.name}", None)
            raise TruncatedError(f"{self.name}: {self.n_elements} values of {self.type} need "
                                 f"{-(-self.n_elements // block)} blocks at data offset {self.offset}; the file holds "
                                 f"{len(self.blocks)} there (check() says why)", format="gguf", path=path,
                                 offset=offset)
        return self.blocks


def dims_problem(ggml_shape: tuple[int, ...]) -> str | None:
    """Why llama.cpp's gguf_init refuses (or crashes on) a tensor of these dimensions, or numpy cannot describe
    its array; None when neither. llama.cpp reads the dimensions as int64, then checks that the element count
    is representable by dividing INT64_MAX by each of ne[1], ne[2], ne[3] in turn (a zero there is a division by
    zero); numpy's strides of an array of a zero dimension still multiply the others."""
    if any(d > INT64_MAX for d in ggml_shape):
        return f"a dimension above INT64_MAX in {ggml_shape} (llama.cpp reads it as a negative int64)"
    ne = [*ggml_shape, *[1] * (MAX_DIMS - len(ggml_shape))]
    product = ne[0]
    for k, d in enumerate(ne[1:], 1):
        if d == 0:
            return (f"ne[{k}] = 0 in {ggml_shape}: llama.cpp divides INT64_MAX by it to check the element count "
                    "(a division by zero: a crash)")
        if INT64_MAX // d <= product:
            return (f"the element count of {ggml_shape} goes beyond INT64_MAX at ne[{k}] (llama.cpp counts them "
                    "in an int64)")
        product *= d
    wide = 8  # bytes of the widest value (float64, int64): every view and cast of the array must have int64 strides
    for d in ggml_shape:
        wide *= max(int(d), 1)
    if wide > INT64_MAX:
        return f"numpy cannot describe an array of shape {tuple(reversed(ggml_shape))} (its strides overflow int64)"
    return None


def _infer_type(value: Any) -> tuple[int, int | None]:
    """(value_type, element_type) of a Python or numpy value, for keys set without a type."""
    if isinstance(value, (bool, np.bool_)):
        return VALUE_IDS["BOOL"], None
    if isinstance(value, str):
        return VALUE_IDS["STRING"], None
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if 0 <= v < 1 << 32:
            return VALUE_IDS["UINT32"], None
        if -(1 << 31) <= v < 1 << 31:
            return VALUE_IDS["INT32"], None
        return VALUE_IDS["INT64" if v < 0 else "UINT64"], None
    if isinstance(value, np.floating):
        return VALUE_IDS["FLOAT64" if value.dtype == np.float64 else "FLOAT32"], None
    if isinstance(value, float):
        return VALUE_IDS["FLOAT32"], None
    if isinstance(value, StringArray) or isinstance(value, (list, tuple)) and value and \
            all(isinstance(x, str) for x in value):
        return VALUE_IDS["ARRAY"], VALUE_IDS["STRING"]
    arr = np.asarray(value)
    by_dtype = {np.dtype(d).str: i for i, (n, d) in VALUE_TYPES.items() if d and n != "BOOL"}
    if arr.dtype == np.bool_:
        return VALUE_IDS["ARRAY"], VALUE_IDS["BOOL"]
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        arr = arr.astype("<f4")
    elif arr.dtype.kind in "iu" and arr.dtype.itemsize < 4:
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    if arr.dtype.newbyteorder("<").str not in by_dtype:
        raise ValueError(f"cannot store {type(value).__name__} of {arr.dtype} in GGUF metadata")
    return VALUE_IDS["ARRAY"], by_dtype[arr.dtype.newbyteorder("<").str]


def _mistyped(key: str, type_name: str, value: Any, what: str) -> TypeError:
    return TypeError(f"{key} is a GGUF {type_name} key: {value!r} ({type(value).__name__}) is no {what} "
                     "(set(key, value, type=...) gives it another type)")


def _values(key: str, type_name: str, value: Any) -> Any:
    """The elements of an array value: a list, tuple or numpy array (a string is no array of strings)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray, StringArray)):
        raise _mistyped(key, type_name, value, "array")
    return value


def _check_value(key: str, kind: int, value: Any, type_name: str) -> None:
    """Refuse a value (a scalar, or an array's elements as numpy) that a key of GGUF type ``kind`` cannot hold,
    naming the key, its type and the value: when it is set, not when the file is written."""
    name, dtype = VALUE_TYPES[kind]
    if isinstance(value, np.ndarray):  # an array's elements
        if value.size == 0:
            return
        ok = {"BOOL": "b", "STRING": "U"}.get(name, "iuf" if name.startswith("FLOAT") else "iu")
        if value.dtype.kind not in ok and not (name == "BOOL" and value.dtype.kind in "iu" and
                                              ((value == 0) | (value == 1)).all()):
            raise _mistyped(key, type_name, value.flat[0].item() if value.dtype.kind != "O" else value.flat[0],
                            name)
        if ok == "iu" and value.dtype.kind != "b":
            _fits(key, type_name, name, dtype, int(value.min()), int(value.max()))
        return
    if name == "STRING":
        good = isinstance(value, str)
    elif name == "BOOL":
        good = isinstance(value, (bool, np.bool_)) or isinstance(value, (int, np.integer)) and value in (0, 1)
    elif isinstance(value, (bool, np.bool_)):
        good = False
    elif name.startswith("FLOAT"):
        good = isinstance(value, (int, float, np.integer, np.floating))
    else:
        good = isinstance(value, (int, np.integer))
        if good:
            _fits(key, type_name, name, dtype, int(value), int(value))
    if not good:
        raise _mistyped(key, type_name, value, name)


def _fits(key: str, type_name: str, name: str, dtype: str, low: int, high: int) -> None:
    info = np.iinfo(np.dtype(dtype))
    if low < info.min or high > info.max:
        raise ValueError(f"{key} is a GGUF {type_name} key: {low if low < info.min else high} does not fit "
                         f"{name} ({info.min} to {info.max})")


def _plain(value: Any) -> Any:
    """A parsed metadata value as users see it: arrays as their data (nested: a list of those)."""
    if isinstance(value, Mapping) and "element_type" in value:
        data = value["data"]
        return [_plain(x) for x in data] if isinstance(data, list) else data
    return value


class Metadata(MutableMapping):
    """The key/value pairs in file order; ``meta[key]`` is the value (numeric arrays as numpy views, string
    arrays as a lazily decoded :class:`StringArray`), ``meta.type(key)`` its GGUF value type. Setting a key keeps
    its type (or infers one: ``set(key, value, type="UINT64")`` to choose); ``rename`` keeps the position."""

    def __init__(self, entries: list[Any] | None = None) -> None:
        self._kv: OrderedDict[str, Any] = OrderedDict()
        self.duplicates: list[tuple[int, str, int | None]] = []  # (index, key, offset) of repeated keys
        for i, kv in enumerate(entries or ()):
            if kv["key"] in self._kv:
                self.duplicates.append((i, kv["key"], kv.get("_offset")))
                continue
            self._kv[kv["key"]] = kv

    def __getitem__(self, key: str) -> Any:
        return _plain(self._kv[key]["value"])

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def set(self, key: str, value: Any, type: str | None = None, element_type: str | None = None) -> None:
        """Set ``key`` to ``value``, of GGUF value ``type`` (``"UINT32"``, ``"ARRAY"`` ...; default: the key's
        present type, else inferred)."""
        old = self._kv.get(key)
        if type is not None:
            kind = VALUE_IDS[type]
            element = VALUE_IDS[element_type] if element_type else (_infer_type(value)[1] if kind == 9 else None)
        elif old is not None and (old["value_type"] != 9 or not isinstance(old["value"].get("data"), list)):
            kind = old["value_type"]
            element = old["value"]["element_type"] if kind == 9 else None
        else:
            kind, element = _infer_type(value)
        if kind not in VALUE_TYPES or kind == 9 and element not in VALUE_TYPES:
            raise ValueError(f"{key}: unknown GGUF value type {kind if kind not in VALUE_TYPES else element}")
        if kind == 9:
            if element == VALUE_IDS["STRING"]:
                data = value if isinstance(value, StringArray) else StringArray(_values(key, "ARRAY[STRING]", value))
                if data._strings is not None and (bad := next((x for x in data._strings if not isinstance(x, str)),
                                                              None)) is not None:
                    raise _mistyped(key, "ARRAY[STRING]", bad, "STRING")
            else:
                type_name = f"ARRAY[{VALUE_TYPES[element][0]}]"
                try:
                    data = np.asarray(_values(key, type_name, value))
                except ValueError:  # (ragged: lists of unequal lengths)
                    raise _mistyped(key, type_name, value, "flat array") from None
                if data.ndim != 1:
                    raise _mistyped(key, type_name, value, "flat array")
                _check_value(key, element, data, type_name)
            value = cs.Container(element_type=element, count=len(data), data=data)
        else:
            _check_value(key, kind, value, VALUE_TYPES[kind][0])
        self._kv[key] = cs.Container(key=key, value_type=kind, value=value)

    def __delitem__(self, key: str) -> None:
        del self._kv[key]

    def rename(self, old: str, new: str) -> None:
        """Give ``old``'s value to ``new``, in the same place."""
        if new in self._kv and new != old:
            raise KeyError(f"{new} is already a key")
        self._kv = OrderedDict((new if k == old else k, cs.Container(kv, key=new) if k == old else kv)
                               for k, kv in self._kv.items())

    def type(self, key: str) -> str:
        """The GGUF value type of ``key``: ``UINT32``, ``STRING``, ``ARRAY[STRING]`` ..."""
        kv = self._kv[key]
        name = VALUE_TYPES[kv["value_type"]][0]
        if name == "ARRAY":
            name += f"[{VALUE_TYPES.get(kv['value']['element_type'], ('?',))[0]}]"
        return name

    def entries(self) -> list[Any]:
        """The key/value entries as the schema builds them."""
        return list(self._kv.values())

    def __iter__(self) -> Iterator[str]:
        return iter(self._kv)

    def __len__(self) -> int:
        return len(self._kv)

    def __repr__(self) -> str:
        return f"Metadata({len(self)} keys)"


def _count_problem(kv: Any) -> str | None:
    """Why llama.cpp refuses an array of this many elements, or None."""
    value = kv["value"]
    if kv["value_type"] == VALUE_IDS["ARRAY"] and isinstance(value, Mapping) and \
            int(value.get("count", 0)) > MAX_ARRAY_ELEMENTS:
        return f"{value['count']} elements, llama.cpp reads at most {MAX_ARRAY_ELEMENTS} (GGUF_MAX_ARRAY_ELEMENTS)"
    return None


class GGUFModel:
    """A GGUF file: ``version``, ``metadata`` (a :class:`Metadata`), ``tensors`` (name -> :class:`GGUFTensor`)."""

    def __init__(self, metadata: Metadata | Mapping[str, Any] | None = None,
                 tensors: Mapping[str, GGUFTensor] | None = None, version: int = 3) -> None:
        if not isinstance(metadata, Metadata):
            meta = Metadata()
            for k, v in (metadata or {}).items():
                meta[k] = v
            metadata = meta
        self.version = version
        self.metadata = metadata
        self.tensors: OrderedDict[str, GGUFTensor] = OrderedDict(tensors or {})
        self.parsed: Any = None  # the parse this model was read from (kept for byte-exact writing)
        self.problems: list[tuple[str, int | None, str]] = []  # (path, offset, problem) found while reading

    @property
    def architecture(self) -> str | None:
        return self.metadata.get("general.architecture")

    @property
    def alignment(self) -> int:
        """The data section's alignment, by the schema's rule (``check()`` names an entry that breaks it)."""
        return gguf_schema.alignment.of(self.metadata._kv.values())

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any], metadata: Mapping[str, Any] | None = None, *,
                    types: Mapping[str, str] | str = "F32", version: int = 3) -> GGUFModel:
        """A model from PyTorch-order numpy arrays (each quantized to ``types[name]``, or ``types`` for all) and
        a metadata dict (types inferred; set a :class:`Metadata` for exact types)."""
        tensors: OrderedDict[str, GGUFTensor] = OrderedDict()
        for name, value in arrays.items():
            arr = np.asarray(value)
            kind = types if isinstance(types, str) else types.get(name, "F32")
            blocks = quants.quantize(arr.reshape(-1), kind)
            tensors[name] = GGUFTensor(name, kind, tuple(reversed(arr.shape)) or (1,), blocks)
        return cls(metadata, tensors, version)

    def check(self) -> list[str]:
        """What would make llama.cpp refuse or misread the file, each with its field path and byte offset."""
        out = [f"{path} at byte {offset}: {text}" if offset is not None else f"{path}: {text}"
               for path, offset, text in self.problems]
        if self.version not in SUPPORTED_VERSIONS:
            out.append(f"header.version at byte 4: GGUFv{self.version} is no longer supported (llama.cpp and "
                       "gguf-py read versions 2 and 3); set model.version = 3 and write the model again")
        for i, key, offset in self.metadata.duplicates:
            out.append(f"metadata[{i}].key at byte {offset}: duplicate key {key}")
        for n, (key, kv) in enumerate(self.metadata._kv.items()):
            where = f"metadata[{kv.get('_index', n)}]"
            at = f" at byte {kv['_offset']}" if "_offset" in kv else ""
            value = kv["value"]
            if not key:
                out.append(f"{where}.key{at}: empty key")
            if kv["value_type"] == 9 and isinstance(value.get("data"), list):
                out.append(f"{where}.value{at}: {key} holds nested arrays (llama.cpp refuses them)")
            if kv["value_type"] == 7 and not isinstance(value, bool):
                out.append(f"{where}.value{at}: {key} is a bool of value {value}, not 0 or 1")
            if (problem := _count_problem(kv)) is not None:
                out.append(f"{where}.value.count{at}: {key} has {problem}")
            problem = gguf_schema.alignment.problem(kv) if key == gguf_schema.ALIGNMENT_KEY else None
            if problem is not None:
                out.append(f"{where}.{problem[0]}{at}: {problem[1]}")
        return out + self._check_tensors()

    def _check_tensors(self) -> list[str]:
        out = []
        alignment = self.alignment
        data_size = None if self.parsed is None or self.parsed.get("data") is None else len(self.parsed["data"])
        expected = 0
        spans = []
        for name, t in self.tensors.items():
            path, at = t._where or (f"tensors[{name}]", None)

            def where(field: str, path: str = path, at: int | None = at) -> str:
                return f"{path}.{field}" + (f" (the info at byte {at})" if at is not None else "")
            if t.type not in TYPE_IDS:
                out.append(f"{where('type')}: unknown ggml type {t.type}")
                continue
            size = len(t.name.encode("utf-8", "surrogateescape"))
            if size >= MAX_NAME:
                out.append(f"{where('name')}: {t.name!r} is {size} bytes, llama.cpp refuses names of {MAX_NAME} "
                           "bytes and more (GGML_MAX_NAME)")
            if len(t.ggml_shape) > MAX_DIMS:
                out.append(f"{where('n_dims')}: {len(t.ggml_shape)} dimensions, llama.cpp allows {MAX_DIMS}")
            if (problem := dims_problem(t.ggml_shape)) is not None:
                out.append(f"{where('dims')}: {problem}")
                continue
            block, dtype = LAYOUTS[t.type]
            if not t.ggml_shape or t.ggml_shape[0] % block:
                out.append(f"{where('dims')}: ne[0] = {t.ggml_shape[0] if t.ggml_shape else 0} is not a multiple "
                           f"of {t.type}'s block size {block}")
                continue
            nbytes = t.n_elements // block * dtype.itemsize  # (< 2^64: dims_problem bounds 8 bytes a value)
            if t.offset % alignment:
                out.append(f"{where('offset')}: {t.offset} is not a multiple of the alignment {alignment}")
            if data_size is not None and t.offset + nbytes > data_size:
                out.append(f"{where('offset')}: {t.offset} + {nbytes} bytes is outside the data section "
                           f"({data_size} bytes)")
            elif data_size is None and self.parsed is not None:
                out.append(f"{where('offset')}: the file has no data section")
            if t.offset != expected:
                out.append(f"{where('offset')}: {t.offset}, llama.cpp expects {expected} (the tensors in order, "
                           f"each padded to {alignment})")
            spans.append((t.offset, t.offset + nbytes, name))
            expected = gguf_schema.tensor_end(expected, nbytes, alignment)
        spans.sort()
        reach, last = 0, ""
        for start, stop, name in spans:
            if start < reach:
                out.append(f"tensors[{name}].offset: its bytes {start} to {stop} overlap {last}'s")
            if stop > reach:
                reach, last = stop, name
        return out
