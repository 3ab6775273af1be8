"""GGUF checks against what llama.cpp's gguf_init refuses, typed metadata edits, and reports of damaged files
(issue 27: items 6, 9 and 12), with gguf-py and llama.cpp's own vocabulary files as oracles."""

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_gguf import problems, tensor_file, v1_file
from wvformats.schemas import gguf as schema

import wvformats as wv
from wvformats import framework
from wvformats.errors import ValueMismatchError
from wvformats.families.ggml import codec

gguf = pytest.importorskip("gguf")  # the 'peers' extra, installed by CI

DATA = Path(__file__).parents[2] / "data" / "gguf"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "wvformats.cli", *map(str, args)], capture_output=True, text=True)


# ---------------------------------------------------------------------------------------------------------
# 12: validate of a file that fails to parse reports its real size


def test_validate_json_of_a_truncated_gguf_reports_its_size(tmp_path):
    """`validate --json` of a llama.cpp vocabulary cut short said "size": 0; the size is the file's."""
    cut = tmp_path / "cut.gguf"
    cut.write_bytes((DATA / "ggml-vocab-llama-spm.gguf").read_bytes()[:5000])
    r = _cli("validate", "--json", cut)
    assert r.returncode == 1, r.stderr
    (report,) = json.loads(r.stdout)
    assert report["size"] == 5000 and report["ok"] is False
    assert report["error"].startswith("gguf metadata[14].value.data at byte 641")
    assert wv.validate(cut).size == 5000


# ---------------------------------------------------------------------------------------------------------
# 6: check() reports what llama.cpp's gguf_init refuses (ggml's gguf.cpp), to_numpy refuses what numpy cannot hold


def test_version_1_is_reported_as_llama_cpp_and_gguf_py_refuse_it(tmp_path):
    """llama.cpp: "GGUFv1 is no longer supported"; gguf-py's reader refuses it too. check() passed it. The fix
    it names (model.version = 3) writes a file gguf-py reads, its strings' u32 lengths widened to u64 (they
    were copied as read)."""
    path = tmp_path / "v1.gguf"
    path.write_bytes(v1_file())
    with pytest.raises(ValueError, match="version 1"):
        gguf.GGUFReader(path)
    model = wv.read(path)
    assert model.check() == ["header.version at byte 4: GGUFv1 is no longer supported (llama.cpp and gguf-py "
                             "read versions 2 and 3); set model.version = 3 and write the model again"]
    assert not wv.validate(path).ok and _cli("validate", path).returncode == 1
    model.version = 3
    wv.write(model, tmp_path / "v3.gguf")
    reader = gguf.GGUFReader(tmp_path / "v3.gguf")
    assert reader.fields["tokenizer.ggml.tokens"].contents() == ["a", "bc"]
    assert reader.tensors[0].data.tolist() == list(range(32))
    assert wv.read(tmp_path / "v3.gguf").check() == []


def test_tensor_names_of_64_bytes_and_more_are_reported():
    """GGML_MAX_NAME is 64: llama.cpp refuses a name of 64 bytes or more (UTF-8 bytes, not characters)."""
    name63, name64 = "x" * 63, "é" * 32
    assert problems(tensor_file([(name63, [32], 0, 0)], 128)) == []
    found = problems(tensor_file([(name63, [32], 0, 0), (name64, [32], 0, 128)], 256))
    assert found == [f"tensor_infos[1].name (the info at byte {24 + 8 + 63 + 4 + 8 + 12}): {name64!r} is 64 "
                     "bytes, llama.cpp refuses names of 64 bytes and more (GGML_MAX_NAME)"]


@pytest.mark.parametrize("dims, says", [
    ([1810447050202939648, 0], "ne[1] = 0 in (1810447050202939648, 0): llama.cpp divides INT64_MAX by it"),
    ([32, 1, 0], "ne[2] = 0 in (32, 1, 0): llama.cpp divides INT64_MAX by it"),
    ([0, 2**62, 4], "numpy cannot describe an array of shape (4, 4611686018427387904, 0)"),
    ([2**40, 2**23], "the element count of (1099511627776, 8388608) goes beyond INT64_MAX at ne[1]"),
    ([2**63, 1], "a dimension above INT64_MAX in (9223372036854775808, 1)"),
], ids=["zero beside huge", "zero", "numpy strides", "count", "negative"])
def test_dimensions_llama_cpp_refuses_are_reported_and_to_numpy_refuses_them(dims, says):
    """A zero dimension beside a huge one read, check() said nothing, and to_numpy returned an array of shape
    (0, 1810447050202939648) that numpy cannot even cast (astype: "array is too big"). Now check() names the
    tensor info and to_numpy raises the library's error there."""
    data = tensor_file([("a", dims, 0, 0)], 64)
    (found,) = problems(data)
    assert found.startswith(f"tensor_infos[0].dims (the info at byte 24): {says}"), found
    model = codec.gguf_to_model(framework.parse(schema.gguf, data, format="gguf"))
    with pytest.raises(ValueMismatchError) as info:
        model.tensors["a"].to_numpy()
    e = info.value
    assert e.format == "gguf" and e.path == "tensor_infos[0].dims" and e.offset == 24 and says in str(e)


def test_a_zero_row_tensor_llama_cpp_takes_reads_as_an_empty_array():
    """ne[0] = 0 passes llama.cpp's checks (nothing divides by it): an empty array of its shape, no problem."""
    data = tensor_file([("a", [0, 3], 0, 0)], 64)
    assert problems(data) == []
    model = codec.gguf_to_model(framework.parse(schema.gguf, data, format="gguf"))
    arr = model.tensors["a"].to_numpy()
    assert arr.shape == (3, 0) and arr.astype(np.float64).shape == (3, 0)


def test_arrays_longer_than_llama_cpp_reads_are_reported():
    """GGUF_MAX_ARRAY_ELEMENTS (2^30): a longer array is refused. (A metadata value set in memory: a file
    holding one is a GiB.)"""
    from wvformats.families.ggml.gguf import GGUFModel

    model = GGUFModel({"general.architecture": "llama"})
    model.metadata.set("big", np.broadcast_to(np.uint8(0), (2**30 + 1,)), type="ARRAY", element_type="UINT8")
    model.metadata.set("fine", np.broadcast_to(np.uint8(0), (2**30,)), type="ARRAY", element_type="UINT8")
    assert model.check() == ["metadata[1].value.count: big has 1073741825 elements, llama.cpp reads at most "
                             "1073741824 (GGUF_MAX_ARRAY_ELEMENTS)"]


# ---------------------------------------------------------------------------------------------------------
# 9: a value of the wrong type on a typed key is refused where it is set


@pytest.mark.parametrize("key, value, error, says", [
    ("llama.context_length", "abc", TypeError, "llama.context_length is a GGUF UINT32 key: 'abc' (str) is no UINT32"),
    ("llama.context_length", 1.5, TypeError, "llama.context_length is a GGUF UINT32 key: 1.5 (float) is no UINT32"),
    ("llama.context_length", -1, ValueError, "llama.context_length is a GGUF UINT32 key: -1 does not fit UINT32"),
    ("general.name", 7, TypeError, "general.name is a GGUF STRING key: 7 (int) is no STRING"),
    ("tokenizer.ggml.add_bos_token", "yes", TypeError, "tokenizer.ggml.add_bos_token is a GGUF BOOL key: 'yes'"),
    ("tokenizer.ggml.scores", ["a"], TypeError, "tokenizer.ggml.scores is a GGUF ARRAY[FLOAT32] key: 'a' (str)"),
    ("tokenizer.ggml.scores", [[1.0, 2.0]], TypeError, "[[1.0, 2.0]] (list) is no flat array"),
    ("tokenizer.ggml.token_type", [1, 2**40], ValueError, "ARRAY[INT32] key: 1099511627776 does not fit INT32"),
    ("tokenizer.ggml.tokens", "abc", TypeError, "tokenizer.ggml.tokens is a GGUF ARRAY[STRING] key: 'abc' (str) "
                                                "is no array"),
    ("tokenizer.ggml.tokens", ["a", 1], TypeError, "ARRAY[STRING] key: 1 (int) is no STRING"),
])
def test_a_value_of_the_wrong_type_is_refused_at_the_assignment(key, value, error, says):
    """It was taken, and the write failed later with "unchecked input ... (a check wvformats lacks: please
    report it)". The key keeps its value."""
    model = wv.read(DATA / "ggml-vocab-llama-spm.gguf")
    before = model.metadata[key]
    with pytest.raises(error) as info:
        model.metadata[key] = value
    assert str(info.value).startswith(f"{key} is a GGUF ") and says in str(info.value), str(info.value)
    after = model.metadata[key]
    assert after is before or after == before


def test_values_of_the_key_type_are_taken_and_written_as_gguf_py_reads_them(tmp_path):
    model = wv.read(DATA / "ggml-vocab-llama-spm.gguf")
    model.metadata["llama.context_length"] = np.int64(8192)
    model.metadata["tokenizer.ggml.add_bos_token"] = 0
    model.metadata["llama.attention.layer_norm_rms_epsilon"] = 1
    model.metadata["tokenizer.ggml.scores"] = [0, 1.5] * 16000
    model.metadata.set("llama.context_length", "long", type="STRING")  # another type, asked for
    out = tmp_path / "edited.gguf"
    wv.write(model, out)
    fields = gguf.GGUFReader(out).fields
    assert fields["llama.context_length"].contents() == "long"
    assert fields["tokenizer.ggml.add_bos_token"].contents() is False
    assert fields["llama.attention.layer_norm_rms_epsilon"].contents() == 1.0
    assert fields["tokenizer.ggml.scores"].contents()[:3] == [0.0, 1.5, 0.0]
    assert [t.name for t in fields["tokenizer.ggml.scores"].types] == ["ARRAY", "FLOAT32"]


# ---------------------------------------------------------------------------------------------------------
# found by the fuzz test's new calls (tests/test_fuzz.py: every metadata value touched)


def test_a_bad_string_in_an_array_decoded_late_names_the_format(tmp_path):
    """A token list is decoded when first used, after the read: its invalid UTF-8 was a ValueMismatchError
    without a format."""
    from test_gguf import header, s8

    data = header(0, 1) + s8("k") + struct.pack("<IIQ", 9, 8, 2) + s8("ok") + struct.pack("<Q", 2) + b"\xff\xfe"
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    tokens = wv.read(path).metadata["k"]
    for decode in (tokens.tolist, lambda: tokens.head(2)):
        with pytest.raises(ValueMismatchError) as info:
            decode()
        e = info.value
        assert (e.format, e.path, e.offset) == ("gguf", "metadata[0].value.data[1]", 67), str(e)


# ---------------------------------------------------------------------------------------------------------
# found by the mutation fuzz (issue 37): a tensor whose data the file does not hold, converted


@pytest.mark.parametrize("to", ["safetensors", "safetensors-sharded"])
def test_a_tensor_the_file_does_not_hold_is_refused_by_convert_as_by_to_numpy(to, tmp_path):
    """The bundled GGUF cut inside its F32 tensor's data reads (lazily); to_numpy refuses the tensor with a
    TruncatedError at its tensor info, and so does a conversion to safetensors (it reshaped the blocks and
    failed with numpy's ValueError 'cannot reshape array of size 0')."""
    from wvformats.samples import sample_files

    sample = next(p for p in sample_files() if p.suffix == ".gguf")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(sample.read_bytes()[:-100])
    model = wv.read(cut)
    (name,) = [n for n, t in model.tensors.items() if t.type == "F32"]
    with pytest.raises(wv.FormatError) as to_numpy:
        model.tensors[name].to_numpy()
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / ("model.safetensors" if to == "safetensors" else "model.safetensors.index.json")
    with pytest.raises(wv.FormatError) as converted:
        wv.convert(cut, out, to=to)
    assert type(converted.value) is type(to_numpy.value)
    assert (converted.value.format, converted.value.path, converted.value.offset) == \
        ("gguf", to_numpy.value.path, to_numpy.value.offset)
    assert f"{name}: 32 values of F32 need 32 blocks" in str(converted.value)
    assert not any((tmp_path / "out").iterdir())
