"""Sharded checkpoints: written split and named as huggingface_hub splits and names them (its splitter as the
oracle), each shard and the index read back by the safetensors library, and read as one lazy mapping."""

import json
from pathlib import Path

import gguf
import numpy as np
import pytest

import wvformats as wv
from wvformats import cli
from wvformats.errors import FormatError, OptionError
from wvformats.families.safetensors.shards import shard_bytes
from wvformats.safetensors import SafeTensors, ShardedSafeTensors, write_sharded

hub = pytest.importorskip("huggingface_hub.serialization._base")
from safetensors.numpy import load_file, save_file  # noqa: E402

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
    for outside in ("../elsewhere.safetensors", "a\0b.safetensors"):  # (a NUL: open()'s ValueError, found by the fuzz)
        index["weight_map"]["ghost"] = outside
        path.write_text(json.dumps(index))
        with pytest.raises(FormatError, match="beside the index"):
            ShardedSafeTensors(path)
        assert cli.main(["validate", str(path)]) == 1


# ---------------------------------------------------------------------------------------------------------
# the format safetensors-sharded: the folder or its index, through the API and the command


@pytest.fixture
def sharded(tmp_path):
    write_sharded(SafeTensors(ARRAYS, {"format": "np"}), tmp_path, max_shard_bytes=300)
    return tmp_path


def test_a_folder_or_its_index_reads_as_one_model(sharded):

    for path in (sharded, sharded / "model.safetensors.index.json"):
        assert wv.sniff(path) == "safetensors-sharded"
        model = wv.read(path)
        assert isinstance(model, ShardedSafeTensors) and isinstance(model, SafeTensors)
        assert np.array_equal(model["layer.4.w"], ARRAYS["layer.4.w"])
        assert len(model._shards) == 1  # the shard holding it, no other
        assert model.dtypes["big"] == "F64" and model.shapes["layer.2.w"] == (3, 8)
        assert model.metadata == {"format": "np"}  # the shards' __metadata__
        shards = {f: load_file(sharded / f) for f in model.files}
        assert all(np.array_equal(model[n], shards[model.weight_map[n]][n]) for n in model)


def test_validate_checks_every_shard_and_the_weight_map(sharded):

    assert wv.validate(sharded).ok
    assert cli.main(["validate", str(sharded / "model.safetensors.index.json")]) == 0
    path = sharded / "model.safetensors.index.json"
    index = json.loads(path.read_text())
    good = dict(index["weight_map"])
    files = sorted(set(good.values()))

    def problems(weight_map, total=None):
        path.write_text(json.dumps({"metadata": {"total_size": total or index["metadata"]["total_size"]},
                                    "weight_map": weight_map}))
        report = wv.validate(sharded)
        assert not report.ok
        return report.problems

    # a tensor the index leaves out: loaders never find it
    assert any("big: not in the index's weight_map" in p for p in problems({k: v for k, v in good.items()
                                                                           if k != "big"}))
    # the index puts a tensor in a shard that lacks it
    moved = {**good, "layer.0.w": files[-1]} if good["layer.0.w"] != files[-1] else {**good, "layer.0.w": files[0]}
    found = problems(moved)
    assert any("layer.0.w: the index puts it in" in p for p in found)
    assert any(p.startswith("index.weight_map.layer.0.w") for p in found)
    assert any("total_size" in p for p in problems(good, total=1))
    path.write_text(json.dumps(index))
    shard = sharded / files[0]
    data = bytearray(shard.read_bytes())
    data[8:9] = b"["  # the header's JSON spoilt
    shard.write_bytes(bytes(data))
    report = wv.validate(sharded)
    assert not report.ok and any(p.startswith(f"[{files[0]}]: safetensors header") for p in report.problems)
    assert cli.main(["validate", str(sharded)]) == 1


def test_a_tensor_in_two_shards_is_reported(tmp_path):
    save_file({"a": np.ones(2, np.float32)}, tmp_path / "m-1.safetensors")
    save_file({"a": np.ones(2, np.float32), "b": np.ones(1, np.float32)}, tmp_path / "m-2.safetensors")
    (tmp_path / "m.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 20}, "weight_map": {"a": "m-1.safetensors", "b": "m-2.safetensors"}}))
    problems = wv.validate(tmp_path).problems
    assert any("a: also in m-1.safetensors" in p for p in problems)


def test_convert_sharded_to_gguf_and_to_one_file(sharded, tmp_path_factory):


    out = tmp_path_factory.mktemp("out")
    assert cli.main(["convert", str(sharded), str(out / "m.gguf")]) == 0
    reader = gguf.GGUFReader(out / "m.gguf")
    got = {t.name: np.asarray(t.data) for t in reader.tensors}
    assert set(got) == set(ARRAYS)
    assert all(np.array_equal(got[n].reshape(a.shape), a) for n, a in ARRAYS.items())
    assert cli.main(["convert", str(sharded / "model.safetensors.index.json"), str(out / "one.safetensors")]) == 0
    one = load_file(out / "one.safetensors")
    assert set(one) == set(ARRAYS) and all(np.array_equal(one[n], a) for n, a in ARRAYS.items())


def test_convert_a_file_into_shards_as_huggingface_hub_splits_it(tmp_path):


    src = tmp_path / "big.safetensors"
    save_file(ARRAYS, src, metadata={"format": "pt"})
    out = tmp_path / "out"
    out.mkdir()
    index = out / "model.safetensors.index.json"
    assert cli.main(["convert", str(src), str(index), "--shard-size", "0.3KB"]) == 0
    want = hub.split_state_dict_into_shards_factory(load_file(src), get_storage_size=lambda a: a.nbytes,
                                                    max_shard_size="0.3KB",  # (hub's parse_size_to_int: 300)
                                                    filename_pattern="model{suffix}.safetensors")
    written = json.loads(index.read_text())
    assert written["weight_map"] == want.tensor_to_filename
    assert sorted(p.name for p in out.glob("model-*")) == sorted(want.filename_to_tensors)
    assert [p.name for p in out.glob("model-*")][0].endswith(f"-of-{len(want.filename_to_tensors):05d}.safetensors")
    back = tmp_path / "back.safetensors"
    assert cli.main(["convert", str(out), str(back)]) == 0
    assert back.read_bytes() == src.read_bytes()  # the shards joined again: safetensors' own bytes


def test_shard_sizes_read_as_huggingface_hub_reads_them():

    for text in ("5GB", "500MB", "0.3KB", " 2TB "):
        assert shard_bytes(text) == hub.parse_size_to_int(text)
    assert shard_bytes("2GiB") == 2 << 30 and shard_bytes(1000) == 1000
    for bad in ("5 parsecs", "-1GB", "0"):
        with pytest.raises(OptionError):
            shard_bytes(bad)


def test_dump_shows_the_index(sharded, capsys):

    assert cli.main(["dump", str(sharded)]) == 0
    out = capsys.readouterr().out
    assert "[safetensors-sharded]" in out and "index = {'metadata'" in out and "weight_map" in out


TRANSFORMERS = Path(__file__).parents[2] / "data" / "safetensors"


def test_a_file_transformers_wrote_reads_and_writes_back_identical(tmp_path):
    """transformers' save_pretrained of a bfloat16 model: the header is the JSON it wrote, each BF16 tensor's
    float32 is its bits shifted up 16, and the file writes back byte for byte."""
    import json
    import struct

    path = TRANSFORMERS / "transformers-bf16" / "model.safetensors"
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    st = wv.read(path)
    assert st.metadata == header["__metadata__"] == {"format": "pt"}
    assert sorted(st) == sorted(k for k in header if k != "__metadata__")
    for name in st:
        begin, end = header[name]["data_offsets"]
        raw = np.frombuffer(data, "<u2", (end - begin) // 2, 8 + n + begin)
        want = (raw.astype(np.uint32) << 16).view(np.float32).reshape(header[name]["shape"])
        assert st.dtypes[name] == header[name]["dtype"] == "BF16"
        assert np.array_equal(st.to_numpy(name, np.float32), want), name
    out = tmp_path / "model.safetensors"
    wv.write(st, out)
    assert out.read_bytes() == data
    assert wv.validate(path).ok


def test_a_checkpoint_transformers_sharded_reads_as_one_and_writes_back_identical(tmp_path):
    """transformers' save_pretrained(max_shard_size=...): the folder reads as one model whose tensors are the
    shards' (safetensors.numpy as the oracle), validates, and a write keeps its shards and its index byte for
    byte (transformers 5's index has sort_keys and total_parameters; a new split is huggingface_hub's)."""
    from safetensors.numpy import load_file

    folder = TRANSFORMERS / "transformers-sharded"
    model = wv.read(folder)
    shards = sorted(folder.glob("model-*.safetensors"))
    assert len(shards) == 2 and len(model.files) == 2
    want = {}
    for shard in shards:
        want.update(load_file(shard))
    assert sorted(model) == sorted(want)
    for name, array in want.items():
        assert np.array_equal(np.asarray(model[name]), array) and np.asarray(model[name]).dtype == array.dtype
    assert wv.validate(folder).ok
    out = tmp_path / "out"
    wv.write(model, out / "model.safetensors.index.json")
    for f in [*shards, folder / "model.safetensors.index.json"]:
        assert (out / f.name).read_bytes() == f.read_bytes(), f.name
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in [*shards, folder /
                                                                          "model.safetensors.index.json"])
    resplit = tmp_path / "resplit"
    wv.write(model, resplit / "model.safetensors.index.json", shard_size="3KB")
    again = wv.read(resplit)
    assert len(again.files) >= 2 and all(np.array_equal(np.asarray(again[n]), a) for n, a in want.items())


def test_the_index_totals_are_checked_against_the_shards(tmp_path):
    """transformers 5's index states total_parameters beside total_size: validate checks both."""
    import shutil

    folder = tmp_path / "ck"
    shutil.copytree(TRANSFORMERS / "transformers-sharded", folder)
    index = folder / "model.safetensors.index.json"
    text = index.read_text()
    told = json.loads(text)["metadata"]
    assert wv.validate(folder).ok
    index.write_text(text.replace(f'"total_parameters": {told["total_parameters"]}',
                                  f'"total_parameters": {told["total_parameters"] + 1}'))
    report = wv.validate(folder)
    assert not report.ok and any("total_parameters" in p and str(told["total_parameters"]) in p
                                 for p in report.problems), report
