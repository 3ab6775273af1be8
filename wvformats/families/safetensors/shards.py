"""Sharded safetensors checkpoints: ``model.safetensors.index.json`` (``{"metadata": {"total_size": N},
"weight_map": {tensor: shard file}}``) read as one lazy mapping over its shards, and a model written as
shards of at most a given size, as huggingface_hub's ``save_torch_state_dict`` splits and names them.

The format ``safetensors-sharded`` (the folder, or its index file): ``wv.read`` gives a
:class:`ShardedSafeTensors`, ``validate`` checks each shard byte-exact and the index against the shards,
``dump`` shows the index, and ``write`` / ``convert`` write shards of ``shard_size`` bytes."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ... import framework, registry
from ...errors import BuildError, FormatError, OptionError
from ...registry import Format
from ...schemas import safetensors as schema
from .model import SafeTensors
from .sniff import INDEX_SUFFIX, SAFETENSORS, SHARDED_NAME, index_of

DEFAULT_SHARD_SIZE = 5 * 10**9  # huggingface_hub's default max_shard_size, "5GB" (transformers 5 passes "50GB")
# huggingface_hub's parse_size_to_int: decimal units, as "5GB"; binary ones spelt out ("5GiB")
UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def shard_bytes(size: int | str) -> int:
    """A shard size as bytes: an int, or ``"5GB"`` (10^9) / ``"5GiB"`` (2^30) as huggingface_hub reads it."""
    if isinstance(size, int) and not isinstance(size, bool):
        n = size
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(size))
        if m is None or m.group(2).upper() not in UNITS:
            raise OptionError(f"shard size {size!r}: a number of bytes, or one with a unit (5GB, 500MB, 2GiB)")
        n = int(float(m.group(1)) * UNITS[m.group(2).upper()])
    if n <= 0:
        raise OptionError(f"shard size {size!r}: more than 0 bytes")
    return n


class _ByShard(Mapping):
    """A per-tensor property (its array, code or shape) looked up in the shard that holds the tensor."""

    def __init__(self, owner: ShardedSafeTensors, get: Callable[[SafeTensors, str], Any]) -> None:
        self._owner, self._get = owner, get

    def __getitem__(self, name: str) -> Any:
        owner = self._owner
        return self._get(owner.shard(owner.weight_map[name]), name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._owner.weight_map)

    def __len__(self) -> int:
        return len(self._owner.weight_map)


def read_index(path: Path, data: Any) -> Any:
    """The index file's bytes ``data`` parsed by its schema (UTF-8 JSON, no key twice), its weight_map
    checked."""
    index = framework.parse(schema.index, data, format=SHARDED_NAME)["index"]
    weights = index.get("weight_map")
    if not isinstance(weights, dict) or not all(isinstance(v, str) for v in weights.values()):
        raise FormatError(f"{path.name} has no weight_map of tensor -> shard file", format=SHARDED_NAME,
                          path="index.weight_map", offset=0)
    bad = [f for f in dict.fromkeys(weights.values()) if Path(f).name != f or f in ("", ".", "..") or "\0" in f]
    if bad:
        raise FormatError(f"shard file {bad[0]!r} is not a file beside the index", format=SHARDED_NAME,
                          path="index.weight_map", offset=0)
    if not isinstance(index.get("metadata", {}), dict):
        raise FormatError("metadata is not an object", format=SHARDED_NAME, path="index.metadata", offset=0)
    return index


class ShardedSafeTensors(SafeTensors):
    """The tensors of a sharded checkpoint by name, in the index's order; a shard is opened (memory-mapped) the
    first time one of its tensors (or its dtype or shape) is asked for. A :class:`SafeTensors` like any other:
    written as one file, converted to GGUF, or written as shards again. ``index``: the index as read (its
    ``metadata`` and ``weight_map``); ``weight_map``: tensor -> shard file; ``shard(file)``: one shard;
    ``metadata``: the first shard's ``__metadata__`` (huggingface_hub writes ``{"format": "pt"}`` in each)."""

    def __init__(self, index_path: str | os.PathLike[str]) -> None:
        self.path = index_of(Path(index_path))
        from ...fileio import open_buffer

        self.index_bytes = bytes(open_buffer(self.path))  # (written back as they are when the layout is kept)
        self.index = read_index(self.path, self.index_bytes)
        self.weight_map: dict[str, str] = dict(self.index["weight_map"])
        self.index_metadata: dict[str, Any] = dict(self.index.get("metadata") or {})
        self.files = list(dict.fromkeys(self.weight_map.values()))
        self._shards: dict[str, SafeTensors] = {}
        self.arrays = _ByShard(self, lambda st, n: st[n])  # type: ignore[assignment]
        self.dtypes = _ByShard(self, lambda st, n: st.dtypes[n])  # type: ignore[assignment]
        self.shapes = _ByShard(self, lambda st, n: st.shapes[n])  # type: ignore[assignment]
        self.header = None
        self.problems = []

    @property  # type: ignore[override]
    def metadata(self) -> dict[str, str] | None:
        return self.shard(self.files[0]).metadata if self.files else None

    def shard(self, file: str) -> SafeTensors:
        if file not in self._shards:
            from ...fileio import open_buffer

            one = _one_file()
            try:
                st = one.to_model(one.parse(open_buffer(self.path.parent / file)))
            except FormatError as e:  # (the checkpoint's error, naming the shard)
                e.format = SHARDED_NAME
                raise e.located(prefix=f"[{file}]") from None
            missing = [n for n, f in self.weight_map.items() if f == file and n not in st]
            if missing:
                raise FormatError(f"the index puts {missing[0]!r} in {file}, which lacks it", format=SHARDED_NAME,
                                  path=f"index.weight_map.{missing[0]}", offset=0)
            self._shards[file] = st
        return self._shards[file]

    def __repr__(self) -> str:
        return f"ShardedSafeTensors({len(self)} tensors in {len(self.files)} shards, {self.path.name})"


def _one_file() -> Format:
    """The format of one safetensors file, as its codec registered it: a shard is read, checked and written
    through it (this module is the sharded format's half of the family's codec)."""
    return registry.get(SAFETENSORS.name)


def parse(path: Path, **_: Any) -> ShardedSafeTensors:
    return ShardedSafeTensors(path)


def check(model: ShardedSafeTensors, *, full: bool = False, progress: Any = None) -> list[str]:
    """Each shard parsed and rebuilt byte-exact, with safetensors' own checks; the index against the shards:
    every tensor of the weight_map in the shard it names, every tensor of a shard in the weight_map (so in
    exactly one shard), ``total_size`` the bytes of tensor data in all, ``total_parameters`` (transformers 5)
    their elements."""
    from ...fileio import open_buffer

    one = _one_file()

    problems: list[str] = []
    total = parameters = 0
    seen: dict[str, str] = {}
    prefix = re.escape(model.path.name[: -len(INDEX_SUFFIX)])
    unlisted = sorted(p.name for p in model.path.parent.iterdir() if p.name not in model.files and
                      re.fullmatch(prefix + r"-\d{5}-of-\d{5}\.safetensors", p.name))
    problems += [f"[{file}]: a shard beside the index that the weight_map names no tensor of" for file in unlisted]
    for file in model.files + unlisted:
        path = model.path.parent / file
        try:
            data = open_buffer(path)
            parsed = one.parse(data)
            out = framework.CompareStream(data)
            one.build(parsed, out)
        except (FormatError, OSError) as e:
            problems.append(f"[{file}]: {e}")
            continue
        if (first := out.first_difference()) is not None:
            problems.append(f"[{file}] at byte {first}: the shard does not rebuild byte-exact")
        problems += [f"[{file}] {p}" for p in one.check(parsed)]
        header = parsed["header"]
        for name in header:
            if name == schema.METADATA:
                continue
            begin, end = header[name]["data_offsets"]
            total += end - begin
            parameters += int(np.prod(header[name]["shape"], dtype=np.int64))
            if name in seen:
                problems.append(f"[{file}] {name}: also in {seen[name]}: a tensor is in one shard")
            seen.setdefault(name, file)
            listed = model.weight_map.get(name)
            if listed is None:
                problems.append(f"[{file}] {name}: not in the index's weight_map (loaders never find it)")
            elif listed != file:
                problems.append(f"[{file}] {name}: the index puts it in {listed}")
        problems += [f"index.weight_map.{n}: the index puts it in {file}, which lacks it"
                     for n, f in model.weight_map.items() if f == file and n not in header]
        if progress is not None:
            progress(1)
    if not any(p.startswith(f"[{f}]:") for f in model.files for p in problems):  # (every shard read)
        for key, held, what in (("total_size", total, "bytes of tensors"),
                                ("total_parameters", parameters, "parameters")):  # (transformers 5 writes both)
            told = model.index_metadata.get(key)
            if told is not None and told != held:
                problems.append(f"index.metadata.{key}: {told}, but the shards hold {held} {what}")
    return problems


def inspect(model: ShardedSafeTensors) -> dict[str, Any]:
    """The index and each shard's header: no tensor read."""
    return {"index": model.path.name, "shards": len(model.files), "tensors": len(model.weight_map),
            "metadata": model.index_metadata, "files": model.files,
            "tensor_table": [{"name": n, "shard": f, "dtype": model.dtypes[n], "shape": list(model.shapes[n])}
                             for n, f in model.weight_map.items()]}


def split(st: SafeTensors, max_shard_bytes: int) -> list[list[str]]:
    """The tensors of each shard, in order: a tensor larger than the limit alone in a shard of its own, the
    others filling shards up to the limit (huggingface_hub's ``split_state_dict_into_shards_factory``)."""
    shards: list[list[str]] = []
    current: list[str] = []
    size = 0
    for name in st:
        n = _nbytes(st, name)
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


def _nbytes(st: SafeTensors, name: str) -> int:
    return int(np.asarray(st[name]).nbytes)


@dataclass
class Plan:
    """What writing a checkpoint as shards writes: the model and the most bytes of tensor data in a shard
    (None: a sharded checkpoint's own shards, as they are)."""

    model: SafeTensors
    max_shard_bytes: int | None


def from_model(model: Any, *, shard_size: int | str | None = None) -> Plan:
    """Without ``shard_size``, a sharded checkpoint keeps its shards (the same files, each tensor where it was,
    the index's bytes: a read -> write gives the checkpoint back byte for byte, as transformers wrote it) and
    any other model is split at :data:`DEFAULT_SHARD_SIZE`; with it, shards are split anew."""
    from ..ggml import GGUFModel

    if isinstance(model, GGUFModel):
        from .convert import from_gguf

        model = from_gguf(model)
    if not isinstance(model, SafeTensors):
        raise BuildError(f"expected SafeTensors, got {type(model).__name__}", format=SHARDED_NAME)
    if shard_size is None:
        return Plan(model, None if isinstance(model, ShardedSafeTensors) else DEFAULT_SHARD_SIZE)
    return Plan(model, shard_bytes(shard_size))


def build(plan: Plan, path: Path) -> None:
    """Write the shards and the index: ``path`` is the index file (its name gives the prefix) or a folder."""
    path = Path(path)
    folder, prefix = (path, "model") if path.is_dir() or not path.name.endswith(INDEX_SUFFIX) else \
        (path.parent, path.name[: -len(INDEX_SUFFIX)])
    if plan.max_shard_bytes is None:
        _write_as_read(plan.model, folder, prefix)
    else:
        write_sharded(plan.model, folder, plan.max_shard_bytes, prefix=prefix, overwrite=True)


def _write_as_read(model: ShardedSafeTensors, folder: Path, prefix: str) -> None:
    """The checkpoint's own shards (each rebuilt from its parse: an unchanged header keeps its bytes) and its
    index's bytes, under the index name ``prefix``."""
    from ...fileio import atomic_output

    one = _one_file()

    folder.mkdir(parents=True, exist_ok=True)
    for file in model.files:
        with atomic_output(folder / file, overwrite=True) as f:
            one.build(one.from_model(model.shard(file)), f)
    with atomic_output(folder / f"{prefix}{INDEX_SUFFIX}", overwrite=True) as f:
        f.write(model.index_bytes)


def write_sharded(st: SafeTensors, folder: str | os.PathLike[str], max_shard_bytes: int = DEFAULT_SHARD_SIZE, *,
                  prefix: str = "model", overwrite: bool = False) -> list[Path]:
    """Write ``st`` as shards ``{prefix}-00001-of-0000N.safetensors`` of at most ``max_shard_bytes`` of tensor
    data each and ``{prefix}.safetensors.index.json`` (one shard: ``{prefix}.safetensors`` and no index), as
    huggingface_hub names and indexes them. Returns the files written, the index last."""
    from ...fileio import atomic_output

    one = _one_file()

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    groups = split(st, max_shard_bytes)
    names = [f"{prefix}.safetensors"] if len(groups) <= 1 else \
        [f"{prefix}-{i + 1:05d}-of-{len(groups):05d}.safetensors" for i in range(len(groups))]
    groups = groups or [[]]
    written = []
    metadata = st.metadata
    for file, group in zip(names, groups, strict=True):
        shard = SafeTensors({n: st[n] for n in group}, metadata, {n: st.dtypes[n] for n in group},
                            {n: st.shapes[n] for n in group})
        with atomic_output(folder / file, overwrite=overwrite) as f:
            one.build(one.from_model(shard), f)
        written.append(folder / file)
    if len(groups) > 1:
        total = sum(_nbytes(st, n) for n in st)
        index = {"metadata": {"total_size": total, **(metadata or {})},
                 "weight_map": {n: file for file, group in zip(names, groups, strict=True) for n in group}}
        path = folder / f"{prefix}{INDEX_SUFFIX}"
        with atomic_output(path, overwrite=overwrite) as f:
            f.write(json.dumps(index, indent=2).encode())
        written.append(path)
    return written
