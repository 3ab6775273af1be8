"""rwkv.cpp models: tensors as numpy views, architecture detection, checks, dequantization."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ...schemas.ggml import BLOCKS, REMOVED_TYPES, TYPE_COUNT
from . import quants
from .sniff import QUANTIZE_TYPES

TYPE_IDS = {name: i for i, (name, _, _) in BLOCKS[101].items()}


@dataclass
class Tensor:
    """One parameter: ``shape`` in PyTorch order, ``blocks`` the raw numpy blocks (a view of the file)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    blocks: np.ndarray
    offset: int | None = None
    version: int = 101

    def __repr__(self) -> str:  # (the blocks are the data: printing them is never what a REPL wants)
        at = f" at byte {self.offset}" if self.offset is not None else ""
        return f"<Tensor {self.name!r} {self.dtype} {self.shape}{at}>"

    def to_numpy(self) -> np.ndarray:
        """Dequantized float32, in PyTorch shape."""
        return quants.dequantize(self.blocks, self.dtype, self.version).reshape(self.shape)


def architecture(keys: set[str]) -> str:
    """RWKV v4, v5, v5.2, v6 or v7, from the parameter names as rwkv.cpp tells them apart."""
    if any(k.endswith("att.r_k") for k in keys):
        return "v7"
    if any(k.endswith("att.time_maa_x") for k in keys):
        return "v6"
    if any(k.endswith("att.ln_x.weight") for k in keys):
        return "v5.2" if any(k.endswith("att.gate.weight") for k in keys) else "v5"
    return "v4"


_COMMON = ["ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias", "ffn.key.weight", "ffn.value.weight"]
_ATT = ["att.key.weight", "att.value.weight", "att.receptance.weight", "att.output.weight"]
_PER_BLOCK = {
    "v4": _COMMON + _ATT + ["ffn.receptance.weight", "att.time_mix_k", "att.time_mix_v", "att.time_mix_r",
                            "att.time_first", "att.time_decay", "ffn.time_mix_k", "ffn.time_mix_r"],
}
_PER_BLOCK["v5"] = _PER_BLOCK["v4"] + ["att.ln_x.weight", "att.ln_x.bias"]
_PER_BLOCK["v5.2"] = [k for k in _PER_BLOCK["v5"] if k != "att.time_first"] + [
    "att.time_faaaa", "att.time_mix_g", "att.gate.weight"]
_PER_BLOCK["v6"] = _COMMON + _ATT + ["ffn.receptance.weight", "att.gate.weight", "att.ln_x.weight",
                                     "att.ln_x.bias", "att.time_faaaa", "att.time_decay", "att.time_decay_w1",
                                     "att.time_decay_w2", "att.time_maa_w1", "att.time_maa_w2", "ffn.time_maa_k",
                                     "ffn.time_maa_r"] + [f"att.time_maa_{x}" for x in "xwkvrg"]
_PER_BLOCK["v7"] = _COMMON + _ATT + ["att.x_rwkvag", "att.w0", "att.w1", "att.w2", "att.a0", "att.a1",
                                     "att.a2", "att.g1", "att.g2", "att.r_k", "att.k_k", "att.k_a",
                                     "att.ln_x.weight", "att.ln_x.bias", "ffn.x_k"]


def required_keys(arch: str, n_layer: int) -> set[str]:
    """Exactly the keys rwkv.cpp's loader needs for ``arch`` with ``n_layer`` blocks."""
    keys = {"emb.weight", "blocks.0.ln0.weight", "blocks.0.ln0.bias", "ln_out.weight", "ln_out.bias",
            "head.weight"}
    for i in range(n_layer):
        keys |= {f"blocks.{i}.{k}" for k in _PER_BLOCK[arch]}
        if arch == "v7" and i:
            keys |= {f"blocks.{i}.att.{k}" for k in ("v0", "v1", "v2")}
    return keys


def _block_index(key: str) -> str | None:
    """The ``i`` of a ``blocks.i.`` key when it is ASCII digits, as rwkv.cpp writes it (``'²'.isdigit()`` holds,
    and int() refuses it)."""
    head, _, rest = key.partition(".")
    index = rest.partition(".")[0]
    return index if head == "blocks" and index.isascii() and index.isdigit() else None


def _listing(keys: Iterable[str], most: int = 8) -> str:
    keys = sorted(keys)
    return ", ".join(keys[:most]) + (" ..." if len(keys) > most else "")


class RwkvModel:
    """An rwkv.cpp model file: header fields and an ordered mapping of tensors."""

    def __init__(self, header: dict[str, int], tensors: OrderedDict[str, Tensor]) -> None:
        self.version = int(header["version"])
        self.n_vocab = int(header["n_vocab"])
        self.n_embed = int(header["n_embed"])
        self.n_layer = int(header["n_layer"])
        self.data_type = int(header["data_type"])
        self.tensors = tensors
        self.duplicate_keys: list[str] = []  # keys the file holds more than once (the mapping keeps the first)

    @property
    def architecture(self) -> str:
        return architecture(set(self.tensors))

    def __repr__(self) -> str:
        return (f"<RwkvModel {self.architecture} version {self.version}: n_vocab={self.n_vocab} "
                f"n_embed={self.n_embed} n_layer={self.n_layer} data_type={self.data_type} "
                f"({ {i: n for i, (n, _, _) in BLOCKS[101].items()}.get(self.data_type, '?')}), "
                f"{len(self.tensors)} tensors>")

    def check(self) -> list[str]:
        """What would make rwkv.cpp refuse or abort, as a list of problems (empty when none)."""
        problems = [f"duplicate key {k}" for k in self.duplicate_keys]
        problems += self._type_problems()
        for t in self.tensors.values():
            if len(t.shape) == 1 and t.dtype != "FP32":
                problems.append(f"{t.name}: 1-D tensors must be FP32, not {t.dtype}")
        emb = self.tensors.get("emb.weight")
        if emb is None:
            problems.append("missing emb.weight")
        elif len(emb.shape) != 2:
            problems.append(f"emb.weight is {emb.shape}: rwkv.cpp refuses it: Unexpected dimension count of "
                            "embedding matrix; it must be (n_vocab, n_embed)")
        elif emb.shape != (self.n_vocab, self.n_embed):
            problems.append(f"emb.weight is {emb.shape}, the header says ({self.n_vocab}, {self.n_embed}): rwkv.cpp "
                            "refuses it: Unexpected dimension of embedding matrix; set model.n_vocab, "
                            f"model.n_embed = {emb.shape[0]}, {emb.shape[1]} and write the model again")
        # every layer has tensors of its own, so a layer count or index past the number of tensors names no
        # layer: it is reported, never enumerated (the keys of 2^32 layers), nor given to int() (5,000 digits)
        n_tensors = len(self.tensors)
        layers, stray = set(), []
        for key in self.tensors:
            index = _block_index(key)
            if index is not None and len(index.lstrip("0")) <= len(str(n_tensors)) and int(index) < n_tensors:
                layers.add(int(index))
            elif index is not None:
                stray.append(key)
        if stray:
            problems.append(f"layer indices past the file's {n_tensors} tensors: {_listing(stray)}")
        n_layer = self.n_layer
        if n_layer > n_tensors:
            problems.append(f"the header says {n_layer} layers, the file holds {n_tensors} tensors")
            n_layer = max(layers) + 1 if layers else 0
        need = required_keys(self.architecture, n_layer)
        missing, unknown = need - set(self.tensors), set(self.tensors) - need - set(stray)  # (strays: above)
        if missing:
            problems.append(f"missing keys for RWKV {self.architecture}: {_listing(missing)}")
        if unknown:
            problems.append(f"keys RWKV {self.architecture} does not use: {_listing(unknown)}")
        for t in self.tensors.values():
            block = {b[0]: b[1] for b in BLOCKS[self.version].values()}.get(t.dtype, 1)
            if block > 1 and t.shape[-1] % block:
                problems.append(f"{t.name}: rows of {t.shape[-1]} do not fill {t.dtype} blocks of {block}")
        if layers and max(layers) + 1 != self.n_layer and n_layer == self.n_layer:
            have = max(layers) + 1
            does = (f"refuses it: Model parameter blocks.{have}.ln1.weight not found" if self.n_layer > have
                    else "aborts on the tensors of the layers past it")
            problems.append(f"the header says {self.n_layer} layers, the tensors have {have}: rwkv.cpp {does}; "
                            f"set model.n_layer = {have} and write the model again")
        return problems


    def _fix(self, fallback: str) -> str:
        """The command that writes this model as a version 101 file of one quantized type: the tensors' own
        type when they hold one quantizable type (re-laid out, not rounded again), else ``fallback``."""
        held = sorted({t.dtype for t in self.tensors.values()} - {"FP32", "FP16"})
        target = held[0] if len(held) == 1 and held[0] in QUANTIZE_TYPES[101] else fallback
        return f"`wvformats rwkv quantize IN OUT --type {target} --version 101`"

    def _type_problems(self) -> list[str]:
        """rwkv.cpp's checks of the header data_type (rwkv_fread_file_header) and of the tensor types against
        the version, each with rwkv.cpp's message and how to get a file it loads."""
        problems, data_type = [], self.data_type
        names = {**{i: n for i, (n, _, _) in BLOCKS[101].items()}, **REMOVED_TYPES}
        name = names.get(data_type)
        if data_type >= TYPE_COUNT:
            held = [t.dtype for t in self.tensors.values() if t.dtype not in ("FP32", "FP16")]
            usual = max(set(held), key=held.count) if held else "FP16" if any(
                t.dtype == "FP16" for t in self.tensors.values()) else "FP32"
            # the tensors' type is a fix only where rwkv.cpp takes it as a header type: not a removed layout
            # (Q4_2), nor a quantized type in version 100
            if usual in ("FP32", "FP16") or self.version == 101 and usual in TYPE_IDS:
                fix = f"set it to the tensors' type: model.data_type = {TYPE_IDS[usual]} ({usual}), then write " \
                      "the model again"
            elif usual in REMOVED_TYPES.values():
                fix = f"the tensors are {usual}, a layout rwkv.cpp removed: quantize the FP32/FP16 model again: " \
                      f"{self._fix('Q5_1')}"
            else:
                fix = f"the tensors are {usual} of version 100: convert it with {self._fix('Q5_1')}"
            problems.append(f"header data_type {data_type}: rwkv.cpp refuses it: Model data type out of range "
                            f"({data_type} > {TYPE_COUNT - 1}); {fix}")
        elif data_type in REMOVED_TYPES:
            problems.append(f"header data_type {data_type} ({name}): rwkv.cpp refuses it: Models in {name} format "
                            "cannot be loaded anymore because the format was removed; quantize the FP32/FP16 "
                            f"model again: {self._fix('Q5_1')}")
        elif self.version == 100 and name not in ("FP32", "FP16"):
            problems.append(f"header data_type {data_type} ({name}) in a version 100 file: rwkv.cpp refuses it: "
                            f"The quantized model file in {name} format was created with an old version of "
                            "rwkv.cpp and can not be loaded anymore; convert it with "
                            f"{self._fix(name if name in QUANTIZE_TYPES[101] else 'Q5_1')} (or quantize the "
                            "FP32/FP16 model again)")
        counts: dict[str, int] = {}
        for t in self.tensors.values():
            counts[t.dtype] = counts.get(t.dtype, 0) + 1
        for kind, n in counts.items():
            if kind in REMOVED_TYPES.values():
                problems.append(f"{n} {kind} tensors: rwkv.cpp refuses them: Tensor data type ({kind}) is no "
                                f"longer supported; quantize the FP32/FP16 model again: {self._fix('Q5_1')}")
            elif self.version == 100 and kind not in ("FP32", "FP16") and name in ("FP32", "FP16"):
                # rwkv.cpp checks the version against the header type only, then reads every block as v101
                problems.append(f"{n} {kind} tensors in a version 100 file under an {name} header: rwkv.cpp "
                                "loads them with the version 101 block layout (wrong values); convert it with "
                                f"{self._fix(kind)}")
        return problems


_KEEP_FP32 = (".time_", ".k_k", ".k_a", ".r_k", ".x_rwkvag", ".x_k", ".w0", ".a0", ".v0")
_NOT_QUANTIZED = ("att.v1", "att.v2", "att.g1", "att.g2", "att.a1", "att.a2", "att.w1", "att.w2", "att.r_k")


def converter_dtype(name: str, ndim: int, float_type: str) -> str:
    """rwkv.cpp converter's rule: ``float_type`` (FP16/FP32) for matrices, FP32 for the rest."""
    if ndim >= 2 and not any(part in name for part in _KEEP_FP32):
        return float_type
    return "FP32"


def quantizable(name: str, shape: tuple[int, ...]) -> bool:
    """rwkv.cpp quantizer's rule: 2-D tensors except emb, head and the small v7 matrices."""
    return len(shape) == 2 and name not in ("emb.weight", "head.weight") and not any(p in name for p in _NOT_QUANTIZED)


def build_model(params: dict[str, np.ndarray], *, n_vocab: int, n_embed: int, n_layer: int,
                dtype: str = "FP16", version: int = 101) -> RwkvModel:
    """A model from a mapping of PyTorch-order numpy arrays, with rwkv.cpp's converter and quantizer rules.

    FP16/FP32: the converter's rule (matrices in that type, the rest FP32). A quantized ``dtype``:
    converted to FP16 first, then quantized as rwkv.cpp's quantizer does (:func:`quantize_model`).
    """
    float_type = dtype if dtype in ("FP16", "FP32") else "FP16"
    tensors: OrderedDict[str, Tensor] = OrderedDict()
    for name, value in params.items():
        arr = np.asarray(value, np.float32)
        kind = converter_dtype(name, arr.ndim, float_type)
        tensors[name] = Tensor(name, kind, tuple(arr.shape), quants.quantize(arr.reshape(-1), kind, version),
                               version=version)
    ids = {n: i for i, (n, _, _) in BLOCKS[version].items()}
    header = {"version": version, "n_vocab": n_vocab, "n_embed": n_embed, "n_layer": n_layer,
              "data_type": ids[float_type]}
    model = RwkvModel(header, tensors)
    return model if dtype == float_type else quantize_model(model, dtype, version)


# what quantize_model writes: FP16, and the types whose reference quantizer wvformats reproduces bit for bit.
# K-quants are read only (ggml's iterative scale search is not ported, and gguf cannot quantize one to check
# it); Q8_1 is left out, as rwkv.cpp's Python wrapper leaves it out (ggml has no dequantizer for it).
def quantize_model(model: RwkvModel, type_name: str, version: int | None = None) -> RwkvModel:
    """Quantize an FP32/FP16 model to ``type_name`` with rwkv.cpp's rules; ``version`` also converts 100 <-> 101.

    Tensors that rwkv.cpp does not quantize keep their type; a matrix whose rows do not fill whole blocks stays
    FP16 (rwkv.cpp would write a file its loader rejects). As rwkv.cpp, it refuses a model with tensors
    quantized to another type (they would keep it under a header naming ``type_name``, or be rounded twice);
    tensors of ``type_name`` itself are kept, re-laid out when the version changes.
    """
    version = model.version if version is None else version
    if version not in QUANTIZE_TYPES:
        raise ValueError(f"version must be one of {', '.join(map(str, QUANTIZE_TYPES))}, not {version}")
    if type_name not in QUANTIZE_TYPES[version]:
        raise ValueError(f"cannot quantize to {type_name} in version {version}: choose from "
                         f"{', '.join(QUANTIZE_TYPES[version])}")
    held = sorted({t.dtype for t in model.tensors.values()} - {"FP32", "FP16", type_name})
    if held:
        raise ValueError(f"the model holds {', '.join(held)} tensors: rwkv.cpp quantizes only FP32/FP16 models, "
                         "quantize the FP32/FP16 model instead")
    ids = {n: i for i, (n, _, _) in BLOCKS[version].items()}
    block = BLOCKS[version][ids[type_name]][1]
    tensors: OrderedDict[str, Tensor] = OrderedDict()
    for t in model.tensors.values():
        target = t.dtype
        if quantizable(t.name, t.shape) and t.dtype in ("FP32", "FP16"):
            target = type_name if t.shape[-1] % block == 0 else "FP16"
        if target == t.dtype and version == t.version:
            tensors[t.name] = t
            continue
        values = t.to_numpy().reshape(-1)
        tensors[t.name] = Tensor(t.name, target, t.shape, quants.quantize(values, target, version),
                                 version=version)
    header = {"version": version, "n_vocab": model.n_vocab, "n_embed": model.n_embed, "n_layer": model.n_layer,
              "data_type": ids[type_name]}
    return RwkvModel(header, tensors)
