"""Sharded safetensors checkpoints: ``model.safetensors.index.json`` (``{"metadata": {"total_size": N},
"weight_map": {tensor: shard file}}``) read as one lazy mapping over its shards, and a model written as
shards of at most a given size, as huggingface_hub's ``save_torch_state_dict`` splits and names them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import FormatError
from .model import NAME, SafeTensors

INDEX_SUFFIX = ".safetensors.index.json"


class ShardedSafeTensors(Mapping):
    """The tensors of a sharded checkpoint by name, in the index's order; a shard is opened (memory-mapped) the
    first time one of its tensors is asked for. ``metadata``: the index's ``metadata``; ``weight_map``: tensor
    -> shard file; ``shard(file)``: one shard as a :class:`SafeTensors`."""

    def __init__(self, index_path: str | os.PathLike[str]) -> None:
        self.path = Path(index_path)
        try:
            index = json.loads(self.path.read_bytes())
        except (OSError, ValueError) as e:
            raise FormatError(f"cannot read the shard index {self.path}: {e}", format=NAME, path="index") from None
        weights = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weights, dict) or not all(isinstance(v, str) for v in weights.values()):
            raise FormatError(f"{self.path} has no weight_map of tensor -> shard file", format=NAME,
                              path="index.weight_map")
        bad = [f for f in set(weights.values()) if Path(f).name != f]
        if bad:
            raise FormatError(f"shard file {bad[0]!r} is not a file beside the index", format=NAME,
                              path="index.weight_map")
        self.weight_map: dict[str, str] = weights
        self.metadata: dict[str, Any] = index.get("metadata") or {}
        self._shards: dict[str, SafeTensors] = {}

    def shard(self, file: str) -> SafeTensors:
        if file not in self._shards:
            from ...fileio import open_buffer
            from .codec import parse, to_model

            st = to_model(parse(open_buffer(self.path.parent / file)))
            missing = [n for n, f in self.weight_map.items() if f == file and n not in st]
            if missing:
                raise FormatError(f"the index puts {missing[0]!r} in {file}, which lacks it", format=NAME,
                                  path=f"index.weight_map.{missing[0]}")
            self._shards[file] = st
        return self._shards[file]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.shard(self.weight_map[name])[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.weight_map)

    def __len__(self) -> int:
        return len(self.weight_map)

    def to_numpy(self, name: str, dtype: Any = np.float32) -> np.ndarray:
        return self.shard(self.weight_map[name]).to_numpy(name, dtype)


def split(st: SafeTensors, max_shard_bytes: int) -> list[list[str]]:
    """The tensors of each shard, in order: a tensor larger than the limit alone in a shard of its own, the
    others filling shards up to the limit (huggingface_hub's ``split_state_dict_into_shards_factory``)."""
    shards: list[list[str]] = []
    current: list[str] = []
    size = 0
    for name in st:
        n = np.asarray(st[name]).nbytes
        if n > max_shard_bytes:
            shards.append([name])
            continue
        if size + n > max_shard_bytes:
            shards.append(current)
            current, size = [], 0
        current.append(name)
        size += n
    if current:
        shards.append(current)
    return shards


def write_sharded(st: SafeTensors, folder: str | os.PathLike[str], max_shard_bytes: int = 5 * 10**9, *,
                  prefix: str = "model", overwrite: bool = False) -> list[Path]:
    """Write ``st`` as shards ``{prefix}-00001-of-0000N.safetensors`` of at most ``max_shard_bytes`` of tensor
    data each and ``{prefix}.safetensors.index.json`` (one shard: ``{prefix}.safetensors`` and no index), as
    huggingface_hub names and indexes them. Returns the files written, the index last."""
    from ...fileio import atomic_output
    from .codec import build, from_model

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    groups = split(st, max_shard_bytes)
    names = [f"{prefix}.safetensors"] if len(groups) == 1 else \
        [f"{prefix}-{i + 1:05d}-of-{len(groups):05d}.safetensors" for i in range(len(groups))]
    written = []
    for file, group in zip(names, groups, strict=True):
        shard = SafeTensors({n: st[n] for n in group}, st.metadata, {n: st.dtypes[n] for n in group},
                            {n: st.shapes[n] for n in group})
        with atomic_output(folder / file, overwrite=overwrite) as f:
            build(from_model(shard), f)
        written.append(folder / file)
    if len(groups) > 1:
        total = sum(np.asarray(st[n]).nbytes for n in st)
        index = {"metadata": {"total_size": total, **(st.metadata or {})},
                 "weight_map": {n: file for file, group in zip(names, groups, strict=True) for n in group}}
        path = folder / f"{prefix}{INDEX_SUFFIX}"
        with atomic_output(path, overwrite=overwrite) as f:
            f.write(json.dumps(index, indent=2).encode())
        written.append(path)
    return written
