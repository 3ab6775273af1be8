"""A safetensors file as a mapping name -> numpy array (zero-copy views of the file when read), its
``__metadata__``, its dtype codes, and the conversions of the types numpy lacks to float32."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ... import framework
from ...errors import BuildError
from ...schemas.identity import SAFETENSORS_METADATA as METADATA

NAME = "safetensors"
SCHEMA = "wvformats.schemas.safetensors:safetensors"  # (read through its cached plan: construct not imported)


def _schema() -> Any:
    from ...schemas import safetensors

    return safetensors


@functools.cache
def _codes() -> dict[np.dtype, str]:
    """numpy dtype -> safetensors code, for arrays given without a code."""
    return {np.dtype(dt).newbyteorder("<") if np.dtype(dt).itemsize > 1 else np.dtype(dt): code
            for code, dt in _schema().DTYPES.items() if isinstance(dt, str) and code not in ("BF16",) and
            not code.startswith("F8")}


@functools.cache
def _rank() -> dict[str, int]:
    """The writer's order: by dtype (the enum's order, last first), then by name."""
    return {code: i for i, code in enumerate(_schema().DTYPES)}


def _float8(exp_bits: int, bias: int, kind: str) -> np.ndarray:
    """The 256 float32 values of a float8 type (``kind``: "ieee" with infinities, "fn" with only 0x7f/0xff
    NaN, "fnuz" with 0x80 NaN and no -0)."""
    man_bits = 7 - exp_bits
    b = np.arange(256)
    sign = np.where(b & 0x80, -1.0, 1.0)
    e = (b >> man_bits) & ((1 << exp_bits) - 1)
    m = b & ((1 << man_bits) - 1)
    value = np.where(e == 0, m / (1 << man_bits) * 2.0 ** (1 - bias),
                     (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)) * sign
    top = (1 << exp_bits) - 1
    if kind == "ieee":
        value = np.where(e == top, np.where(m == 0, sign * np.inf, np.nan), value)
    elif kind == "fn":
        value = np.where((e == top) & (m == (1 << man_bits) - 1), np.nan, value)
    else:
        value = np.where(b == 0x80, np.nan, value)
    return value.astype(np.float32)


FLOAT4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)


@functools.cache
def _tables() -> dict[str, np.ndarray]:
    """The float32 values of each float8 type's 256 codes (made when first decoded, not when a file is read)."""
    return {
        "F8_E5M2": _float8(5, 15, "ieee"),
        "F8_E4M3": _float8(4, 7, "fn"),
        "F8_E4M3FNUZ": _float8(4, 8, "fnuz"),
        "F8_E5M2FNUZ": _float8(5, 16, "fnuz"),
        "F8_E8M0": np.where(np.arange(256) == 255, np.nan, np.exp2(np.arange(256.0) - 127)).astype(np.float32),
    }


def to_float32(raw: np.ndarray, code: str, shape: tuple[int, ...]) -> np.ndarray:
    """The values of a tensor stored as ``code`` (its raw array as read) as float32, in ``shape``."""
    if code == "BF16":
        return (np.asarray(raw, "<u2").astype("<u4") << 16).view("<f4").reshape(shape)
    if code in _tables():
        return _tables()[code][raw].reshape(shape)
    if code == "F4":
        nibbles = np.stack([raw & 0x0F, raw >> 4], axis=-1)  # the first value in the low nibble
        return FLOAT4[nibbles].reshape(shape)
    if code.startswith("F6"):
        raise ValueError(f"{code} tensors are read as raw bytes only")
    return np.asarray(raw).astype(np.float32).reshape(shape)


class SafeTensors(Mapping):
    """Tensors by name, in the header's order: ``st["w"]`` is the array as stored (a raw ``uint16`` view for
    BF16, ``uint8`` for float8 and the packed float4/float6 bytes), ``st.to_numpy("w")`` its values as
    float32. ``metadata``: the ``__metadata__`` strings (None when the file has none); ``dtypes`` and
    ``shapes``: each tensor's code and shape as the header gives them.

    ``SafeTensors.from_arrays({"w": array}, metadata, dtypes={"w": "BF16"})`` makes one to write; written,
    its layout is ``safetensors.save``'s (by dtype, then name) and its bytes are that library's. A file read
    and written back unchanged keeps its header's bytes."""

    def __init__(self, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None,
                 dtypes: Mapping[str, str] | None = None, shapes: Mapping[str, tuple[int, ...]] | None = None,
                 header: Any = None) -> None:
        self.arrays = dict(arrays)
        self.metadata = dict(metadata) if metadata is not None else None
        dtypes, shapes = dtypes or {}, shapes or {}
        self.dtypes = {name: dtypes.get(name) or _code(name, a) for name, a in self.arrays.items()}
        self.shapes = {name: tuple(shape) if (shape := shapes.get(name)) is not None
                       else _shape(name, self.dtypes[name], a) for name, a in self.arrays.items()}
        self.header = header  # the parsed header (its bytes kept) while the tensors are the file's
        self.problems: list[str] = []

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any], metadata: Mapping[str, str] | None = None,
                    dtypes: Mapping[str, str] | None = None) -> SafeTensors:
        """Tensors to write: numpy arrays by name (their codes from their dtypes, or ``dtypes[name]`` for raw
        BF16 / float8 bits, and for float4 / float6 packed bytes as read: the tensor's last dimension counts its
        values, two a byte for F4, four in three bytes for F6), and ``__metadata__`` strings."""
        return cls(arrays, metadata, dtypes)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.arrays)

    def __len__(self) -> int:
        return len(self.arrays)

    def __repr__(self) -> str:
        return f"SafeTensors({len(self)} tensors, metadata={self.metadata!r})"

    def to_numpy(self, name: str, dtype: Any = np.float32) -> np.ndarray:
        """The tensor's values as ``dtype`` (BF16, float8 and float4 decoded through float32)."""
        code = self.dtypes[name]
        if isinstance(_schema().DTYPES[code], str) and code != "BF16" and not code.startswith("F8"):
            return np.asarray(self.arrays[name]).astype(dtype)
        return to_float32(self.arrays[name], code, self.shapes[name]).astype(dtype, copy=False)

    def check(self) -> list[str]:
        """What the safetensors library refuses that the parse let through."""
        return list(self.problems)

    def header_dict(self) -> dict[str, Any]:
        """The header this model is written with: ``__metadata__`` first, then the tensors in
        ``safetensors.save``'s layout (dtype as the enum orders it, last first, then name)."""
        header: dict[str, Any] = {}
        if self.metadata is not None:
            bad = [k for k, v in self.metadata.items() if not (isinstance(k, str) and isinstance(v, str))]
            if bad:
                raise BuildError(f"__metadata__ holds strings only; {bad[0]!r} is not", format=NAME,
                                 path=f"header.{METADATA}")
            header[METADATA] = dict(self.metadata)
        for name in sorted(self.arrays, key=lambda n: (-_rank()[self.dtypes[n]], n)):
            if name == METADATA:
                raise BuildError(f"a tensor cannot be named {METADATA}", format=NAME, path="header")
            header[name] = {"dtype": self.dtypes[name], "shape": list(self.shapes[name])}
        return _schema().tensors.laid_out(header)  # (the data_offsets: the schema's)


def _shape(name: str, code: str, array: Any) -> tuple[int, ...]:
    """The header's shape of an array given as stored: its own, but for a packed sub-byte code (float4,
    float6), whose last dimension counts bytes where the header counts values."""
    shape = np.shape(array)
    bits = _schema().DTYPES.get(code)
    if not isinstance(bits, int):
        return shape
    if not shape or shape[-1] * 8 % bits:
        raise BuildError(f"tensor {name!r}: {code} packs {bits}-bit values into bytes; the last dimension of its "
                         f"bytes {list(shape)} must hold a whole number of them", format=NAME, path=f"data.{name}")
    return (*shape[:-1], shape[-1] * 8 // bits)


def _code(name: str, array: Any) -> str:
    dt = np.asarray(array).dtype
    code = _codes().get(dt.newbyteorder("<") if dt.itemsize > 1 else dt)
    if code is None:
        raise BuildError(f"tensor {name!r}: numpy {dt} has no safetensors dtype (give its code in dtypes=)",
                         format=NAME, path=f"data.{name}")
    return code


def problems(header: Any) -> list[str]:
    """What safetensors refuses in a header that parses: ``__metadata__`` that is not an object of strings.
    (It takes keys of its own in a tensor's entry, and so does this.)"""
    meta = header.get(METADATA)
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        return [f"header.{METADATA} at byte 8: safetensors wants an object of strings"]
    return []


def from_parsed(parsed: Any) -> SafeTensors:
    """The model of a parsed file (the schema's fields: ``header``, ``data``)."""
    header, data = parsed["header"], parsed["data"]
    arrays, dtypes, shapes = {}, {}, {}
    for name, entry in header.items():
        if name != METADATA:
            arrays[name], dtypes[name], shapes[name] = data[name], entry["dtype"], entry["shape"]
    meta = header.get(METADATA)
    model = SafeTensors(arrays, meta if isinstance(meta, dict) else None, dtypes, shapes, header)
    if meta is not None:
        model.problems = problems(header)
    return model


def fast_read(buffer: Any) -> SafeTensors | None:
    """The file read through the schema's cached plan (no construct imported); None where the plan does not
    read it (the codec's parse then says why)."""
    plan = framework.cached_plan(SCHEMA)
    parsed = framework.run_plan(plan, buffer) if plan is not None else None
    return from_parsed(parsed) if parsed is not None else None
