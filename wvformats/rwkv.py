"""rwkv.cpp models: tensors as numpy views, architecture detection, checks, dequantization."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from . import quants
from .schemas.ggml import BLOCKS

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

    def to_numpy(self) -> np.ndarray:
        """Dequantized float32, in PyTorch shape."""
        return quants.dequantize(self.blocks, self.dtype, self.version).reshape(self.shape)


def architecture(keys: set[str]) -> str:
    """RWKV v4, v5, v5.2, v6 or v7, from the parameter names as rwkv.cpp tells them apart."""
    if any(k.endswith("att.w0") or k.endswith("att.a0") for k in keys):
        return "v7"
    if any(k.endswith("att.time_maa_x") for k in keys):
        return "v6"
    if any(k.endswith("att.ln_x.weight") for k in keys):
        return "v5.2" if any(k.endswith("att.gate.weight") for k in keys) else "v5"
    return "v4"


class RwkvModel:
    """An rwkv.cpp model file: header fields and an ordered mapping of tensors."""

    def __init__(self, header: dict[str, int], tensors: OrderedDict[str, Tensor]) -> None:
        self.version = int(header["version"])
        self.n_vocab = int(header["n_vocab"])
        self.n_embed = int(header["n_embed"])
        self.n_layer = int(header["n_layer"])
        self.data_type = int(header["data_type"])
        self.tensors = tensors

    @property
    def architecture(self) -> str:
        return architecture(set(self.tensors))

    def check(self) -> list[str]:
        """What would make rwkv.cpp refuse or abort, as a list of problems (empty when none)."""
        problems = []
        seen: set[str] = set()
        for t in self.tensors.values():
            if t.name in seen:
                problems.append(f"duplicate key {t.name}")
            seen.add(t.name)
            if len(t.shape) == 1 and t.dtype != "FP32":
                problems.append(f"{t.name}: 1-D tensors must be FP32, not {t.dtype}")
        emb = self.tensors.get("emb.weight")
        if emb is None:
            problems.append("missing emb.weight")
        elif emb.shape != (self.n_vocab, self.n_embed):
            problems.append(f"emb.weight is {emb.shape}, the header says ({self.n_vocab}, {self.n_embed})")
        layers = {int(k.split(".")[1]) for k in self.tensors if k.startswith("blocks.") and k.split(".")[1].isdigit()}
        if layers and max(layers) + 1 != self.n_layer:
            problems.append(f"the header says {self.n_layer} layers, the tensors have {max(layers) + 1}")
        return problems


def build_model(params: dict[str, np.ndarray], *, n_vocab: int, n_embed: int, n_layer: int,
                dtype: str = "FP32", version: int = 101) -> RwkvModel:
    """A model from a mapping of PyTorch-order numpy arrays, with rwkv.cpp's dtype rule.

    1-D tensors, ``emb.weight`` and ``head.weight``-sized vocab matrices stay as rwkv.cpp keeps them:
    1-D always FP32; the rest take ``dtype`` (quantized types need rows that fill whole blocks).
    """
    tensors: OrderedDict[str, Tensor] = OrderedDict()
    for name, value in params.items():
        arr = np.asarray(value, np.float32)
        kind = "FP32" if arr.ndim == 1 else dtype
        if kind not in ("FP32", "FP16") and (name in ("emb.weight",) or arr.shape[-1] % 32):
            kind = "FP16"
        tensors[name] = Tensor(name, kind, tuple(arr.shape), quants.quantize(arr.reshape(-1), kind, version),
                               version=version)
    ids = {name: i for i, (name, _, _) in BLOCKS[version].items()}
    header = {"version": version, "n_vocab": n_vocab, "n_embed": n_embed, "n_layer": n_layer,
              "data_type": ids[dtype]}
    return RwkvModel(header, tensors)
