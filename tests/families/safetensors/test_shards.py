"""Sharded checkpoints: written split and named as huggingface_hub splits and names them (its splitter as the
oracle), each shard and the index read back by the safetensors library, and read as one lazy mapping."""

import json

import numpy as np
import pytest

from wvformats.errors import FormatError
from wvformats.safetensors import SafeTensors, ShardedSafeTensors, write_sharded

hub = pytest.importorskip("huggingface_hub.serialization._base")
from safetensors.numpy import load_file  # noqa: E402

ARRAYS = {f"layer.{i}.w": np.full((i + 1, 8), i, np.float32) for i in range(6)}
ARRAYS["big"] = np.zeros(100, np.float64)  # 800 bytes: more than a shard, alone in its own


def test_shards_split_and_named_as_huggingface_hub_does(tmp_path):
    files = write_sharded(SafeTensors(ARRAYS, {"format": "np"}), tmp_path, max_shard_bytes=300)
    want = hub.split_state_dict_into_shards_factory(ARRAYS, get_storage_size=lambda a: a.nbytes,
                                                    max_shard_size=300, filename_pattern="model{suffix}.safetensors")
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert index["weight_map"] == want.tensor_to_filename
    assert index["metadata"] == {**want.metadata, "format": "np"}
    assert [f.name for f in files[:-1]] == list(want.filename_to_tensors)
    for file, names in want.filename_to_tensors.items():
        got = load_file(tmp_path / file)
        assert set(got) == set(names)
        assert all(np.array_equal(got[n], ARRAYS[n]) for n in names)


def test_an_index_reads_as_one_lazy_mapping(tmp_path):
    write_sharded(SafeTensors(ARRAYS), tmp_path, max_shard_bytes=300)
    model = ShardedSafeTensors(tmp_path / "model.safetensors.index.json")
    assert sorted(model) == sorted(ARRAYS) and list(model) == list(model.weight_map)  # the index's order
    assert np.array_equal(model["layer.3.w"], ARRAYS["layer.3.w"])
    assert len(model._shards) == 1  # only the shard holding it was opened
    assert all(np.array_equal(model[n], a) for n, a in ARRAYS.items())


def test_one_shard_is_a_plain_file_without_index(tmp_path):
    files = write_sharded(SafeTensors(ARRAYS), tmp_path)
    assert [f.name for f in files] == ["model.safetensors"]


def test_an_index_naming_a_tensor_its_shard_lacks_or_a_path_outside(tmp_path):
    write_sharded(SafeTensors(ARRAYS), tmp_path, max_shard_bytes=300)
    path = tmp_path / "model.safetensors.index.json"
    index = json.loads(path.read_text())
    index["weight_map"]["ghost"] = index["weight_map"]["layer.0.w"]
    path.write_text(json.dumps(index))
    with pytest.raises(FormatError, match="ghost"):
        ShardedSafeTensors(path)["ghost"]
    index["weight_map"]["ghost"] = "../elsewhere.safetensors"
    path.write_text(json.dumps(index))
    with pytest.raises(FormatError, match="beside the index"):
        ShardedSafeTensors(path)
