"""GGUF: real llama.cpp files and gguf-py's writer as oracles, byte-exact write-back, checks, hostile headers."""

import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from roundtrip import MODES
from wvformats.schemas import gguf as schema
from wvformats.schemas.constructs.gguf import StringArray

import wvformats as wv
from wvformats import framework
from wvformats.errors import FormatError, TruncatedError, ValueMismatchError
from wvformats.families.ggml import codec
from wvformats.families.ggml.gguf import GGUFModel

gguf = pytest.importorskip("gguf")  # the 'peers' extra, installed by CI
from gguf import GGMLQuantizationType as T  # noqa: E402
from gguf import GGUFValueType as V  # noqa: E402
from gguf import quants as gq  # noqa: E402

DATA = Path(__file__).parents[2] / "data" / "gguf"
REAL = sorted(DATA.glob("*.gguf"))


def oracle_metadata(path):
    """gguf-py's reading of every key (the GGUF.* pseudo-keys left out), as plain Python values."""
    out = {}
    for key, field in gguf.GGUFReader(path).fields.items():
        if not key.startswith("GGUF."):
            out[key] = (field.contents(), [t.name for t in field.types])
    return out


def plain(value):
    if isinstance(value, StringArray):
        return value.tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value


def assert_metadata_matches(model, path):
    want = oracle_metadata(path)
    assert list(model.metadata) == list(want)
    for key, (value, types) in want.items():
        got = plain(model.metadata[key])
        if types[:2] == ["ARRAY", "ARRAY"]:  # gguf-py's contents() flattens nested arrays
            got = [x for sub in got for x in sub]
        assert got == value or np.allclose(got, value, equal_nan=True), key
        assert model.metadata.type(key).replace("[", " ").replace("]", "").split() == types[:2], key


@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_vocab_files_read_as_gguf_py_reads_them_and_write_back_byte_exact(path, tmp_path):
    assert wv.sniff(path) == "gguf"
    model = wv.read(path)
    assert model.version == 3 and model.architecture in ("llama", "bert") and not model.tensors
    assert_metadata_matches(model, path)
    assert model.check() == []
    report = wv.validate(path)
    assert report.ok, str(report)
    out = tmp_path / "back.gguf"
    wv.write(model, out)
    assert out.read_bytes() == path.read_bytes()


def every_value_type_file(path, tensors=True):
    """A file made by gguf-py's writer with every value type, arrays of strings and nested arrays, and
    tensors of several ggml types."""
    w = gguf.GGUFWriter(str(path), "llama")
    for vtype, value in [(V.UINT8, 200), (V.INT8, -100), (V.UINT16, 60000), (V.INT16, -30000), (V.UINT32, 4_000_000_000),
                         (V.INT32, -2_000_000_000), (V.FLOAT32, 1.5), (V.BOOL, True), (V.STRING, "héllo"),
                         (V.UINT64, 2**63 + 5), (V.INT64, -(2**62)), (V.FLOAT64, 2.0**-1074)]:
        w.add_key_value(f"test.{vtype.name.lower()}", value, vtype)
    w.add_array("test.strings", ["a", "", "ü" * 300, "x\x00y", "z"])
    w.add_array("test.ints", [1, -2, 3])
    w.add_array("test.floats", [0.5, -1.25])
    w.add_array("test.bools", [True, False, True])
    w.add_array("test.nested", [[1, 2], [3]])
    w.add_key_value("test.u16s", [1, 2, 65535], V.ARRAY, sub_type=V.UINT16)
    rng = np.random.default_rng(0)
    if tensors:
        x = rng.normal(size=(4, 256)).astype(np.float32)
        w.add_tensor("f32", x)
        w.add_tensor("f16", x.astype(np.float16))
        for kind in (T.Q8_0, T.Q4_0, T.Q5_1, T.BF16):
            q = gq.quantize(x, kind)
            w.add_tensor(kind.name.lower(), q, raw_shape=q.shape, raw_dtype=kind)
        raw = rng.integers(0, 256, size=(2, 144), dtype=np.uint8)  # two Q4_K blocks of random bytes
        w.add_tensor("q4_k", raw, raw_shape=raw.shape, raw_dtype=T.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_gguf_py_file_with_every_value_type_and_several_tensor_types(tmp_path):
    path = every_value_type_file(tmp_path / "all.gguf")
    model = wv.read(path)
    assert_metadata_matches(model, path)
    assert model.metadata.type("test.strings") == "ARRAY[STRING]" and model.metadata["test.strings"][3] == "x\x00y"
    assert model.metadata["test.nested"][1].tolist() == [3]
    reader = gguf.GGUFReader(path)
    assert list(model.tensors) == [t.name for t in reader.tensors]
    for t in reader.tensors:
        ours = model.tensors[t.name]
        assert ours.type == t.tensor_type.name and ours.ggml_shape == tuple(int(d) for d in t.shape)
        assert ours.offset + reader.data_offset == t.data_offset
        assert ours.blocks.tobytes() == np.asarray(t.data).tobytes()
        assert not ours.blocks.flags.owndata  # a view of the file
        want = gq.dequantize(np.asarray(t.data), t.tensor_type).reshape(ours.shape)
        assert ours.to_numpy().tobytes() == want.astype(ours.to_numpy().dtype).tobytes(), t.name
    nested = list(model.metadata).index("test.nested")
    assert model.check() == [f"metadata[{nested}].value at byte {model.metadata._kv['test.nested']['_offset']}: "
                             "test.nested holds nested arrays (llama.cpp refuses them)"]
    assert wv.validate(path).problems == model.check()
    # built again from the model's arrays (no parse kept): the same bytes as gguf-py wrote
    fresh = GGUFModel(model.metadata, model.tensors)
    for t in fresh.tensors.values():
        t.blocks = t.blocks.copy()
    wv.write(fresh, tmp_path / "again.gguf")
    assert (tmp_path / "again.gguf").read_bytes() == path.read_bytes()


def test_big_endian_file_is_refused_with_a_clear_message(tmp_path):
    p = tmp_path / "be.gguf"
    w = gguf.GGUFWriter(str(p), "llama", endianess=gguf.GGUFEndian.BIG)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    with pytest.raises(ValueMismatchError) as info:
        wv.read(p, format="gguf")
    e = info.value
    assert e.format == "gguf" and e.path == "header.version" and e.offset == 4 and "big-endian" in str(e)


def v1_file():
    """A version 1 file by hand: u32 counts and lengths."""
    def s(text):
        raw = text.encode()
        return struct.pack("<I", len(raw)) + raw
    kv = s("general.architecture") + struct.pack("<I", 8) + s("llama")
    kv += s("tokenizer.ggml.tokens") + struct.pack("<III", 9, 8, 2) + s("a") + s("bc")
    info = s("t") + struct.pack("<II", 1, 32) + struct.pack("<IQ", 0, 0)
    head = b"GGUF" + struct.pack("<III", 1, 1, 2) + kv + info
    return head + bytes(-len(head) % 32) + np.arange(32, dtype="<f4").tobytes()


@MODES
def test_version_1_u32_counts_and_lengths(compiled):
    data = v1_file()
    parsed = framework.parse(schema.gguf, data, format="gguf", compile=compiled)
    model = codec.gguf_to_model(parsed)
    assert model.version == 1 and model.metadata["tokenizer.ggml.tokens"].tolist() == ["a", "bc"]
    assert model.tensors["t"].to_numpy().tolist() == list(range(32))
    assert framework.build(schema.gguf, parsed, format="gguf", compile=compiled) == data


# ---------------------------------------------------------------------------------------------------------
# hostile headers: refused with the field and offset, never allocating beyond the file, in linear time


def header(n_tensors, n_kv):
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv)


def s8(text):
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


@pytest.mark.parametrize("data, path, offset", [
    (header(0, 2**63), "metadata", 24),
    (header(2**62, 0), "tensor_infos", 24),
    (header(0, 1) + struct.pack("<Q", 2**64 - 1) + bytes(8), "metadata[0].key", 32),
    (header(0, 1) + s8("k") + struct.pack("<IIQ", 9, 8, 2**61), "metadata[0].value.data", 49),
    (header(0, 1) + s8("k") + struct.pack("<IIQ", 9, 0, 2**64 - 1), "metadata[0].value.data", 49),
    (header(0, 1) + s8("k") + struct.pack("<IIQ", 9, 9, 2**60), "metadata[0].value.data", 49),
    (header(0, 1) + s8("k") + struct.pack("<IIQ", 9, 8, 2) + s8("ab") + struct.pack("<Q", 99) + b"x",
     "metadata[0].value.data[1]", 59),
    (header(0, 1) + s8("k") + struct.pack("<I", 13), "metadata[0].value_type", 33),  # (the type itself)
    (header(1, 0) + s8("t") + struct.pack("<I", 2**31) + bytes(12), "tensor_infos[0].dims", 37),
], ids=["n_kv", "n_tensors", "key length", "string count", "u8 count", "array count", "string length",
        "value type", "n_dims"])
def test_hostile_headers_fail_fast_naming_field_and_offset(data, path, offset):
    t = time.perf_counter()
    with pytest.raises(FormatError) as info:
        framework.parse(schema.gguf, data, format="gguf")
    assert time.perf_counter() - t < 1
    e = info.value
    assert e.format == "gguf" and e.path == path and e.offset == offset, str(e)
    assert isinstance(e, (TruncatedError, ValueMismatchError))


def test_hostile_file_in_a_subprocess_stays_small(tmp_path):
    """A 2^60-element string array in a 60-byte file: refused before anything the size of the count exists."""
    p = tmp_path / "h.gguf"
    p.write_bytes(header(0, 1) + s8("k") + struct.pack("<IIQ", 9, 8, 2**40) + b"\x00" * 16)
    code = ("import resource, wvformats as wv\nresource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))\n"
            f"try:\n    wv.read({str(p)!r})\nexcept wv.FormatError as e:\n    print(type(e).__name__, e.path)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["TruncatedError", "metadata[0].value.data"], out.stderr


def test_alignment_not_a_power_of_two_names_the_entry():
    data = header(0, 1) + s8("general.alignment") + struct.pack("<II", 4, 24)
    with pytest.raises(ValueMismatchError) as info:
        framework.parse(schema.gguf, data, format="gguf")
    assert info.value.path == "metadata[0].value" and info.value.offset == 24 and "power of two" in str(info.value)


@MODES
def test_alignment_of_another_type_is_read_and_checked_by_one_rule(tmp_path, compiled):
    """A general.alignment stored as UINT64 (64) was read with alignment 64 while check() and validate refused
    it; llama.cpp (gguf_get_val_u32) and gguf-py refuse any type but UINT32: so do reading and writing now, by
    the schema's one rule, which check() names too (failed before: the file read, its alignment 64)."""
    import gguf

    body = header(1, 1) + s8("general.alignment") + struct.pack("<IQ", 10, 64)
    body += s8("t") + struct.pack("<IQIQ", 1, 32, 0, 0)
    data = body + bytes(-len(body) % 64) + bytes(128)
    path = tmp_path / "u64.gguf"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="alignment"):  # the oracle refuses it
        gguf.GGUFReader(path)
    with pytest.raises(ValueMismatchError) as info:
        framework.parse(schema.gguf, data, format="gguf", compile=compiled)
    assert (info.value.path, info.value.offset) == ("metadata[0].value_type", 24)
    assert "UINT32" in str(info.value)
    assert not wv.validate(path).ok
    model = GGUFModel.from_arrays({"t": np.zeros(32, np.float32)})
    model.metadata.set("general.alignment", 64, type="UINT64")
    assert model.alignment == 32 and [p.split(": ", 1)[1] for p in model.check()] == [
        "general.alignment must be a UINT32 (llama.cpp and gguf-py refuse any other type), not type 10"]
    with pytest.raises(FormatError, match="must be a UINT32"):
        wv.write(model, tmp_path / "out.gguf")
    model.metadata.set("general.alignment", 64, type="UINT32")
    wv.write(model, tmp_path / "out.gguf")
    assert gguf.GGUFReader(tmp_path / "out.gguf").alignment == 64 and model.check() == []


# ---------------------------------------------------------------------------------------------------------
# check(): what llama.cpp would refuse, with paths and offsets


def tensor_file(infos, data_len, kvs=b"", n_kv=0):
    body = header(len(infos), n_kv) + kvs
    for name, dims, type_id, offset in infos:
        body += s8(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        body += struct.pack("<IQ", type_id, offset)
    return body + bytes(-len(body) % 32) + bytes(data_len)


def problems(data):
    return codec.gguf_check(framework.parse(schema.gguf, data, format="gguf"))


def test_check_reports_what_llama_cpp_refuses():
    ok = tensor_file([("a", [32], 0, 0), ("b", [32, 2], 8, 128)], 256)
    assert problems(ok) == []
    found = problems(tensor_file([("a", [32], 0, 8)], 256))
    assert any("tensor_infos[0].offset (the info at byte 24): 8 is not a multiple of the alignment 32" in p
               for p in found)
    assert any("outside the data section" in p for p in problems(tensor_file([("a", [64], 0, 0)], 128)))
    assert any("overlap" in p for p in problems(tensor_file([("a", [64], 0, 0), ("b", [32], 0, 128)], 256)))
    assert any("duplicate tensor name a" in p for p in problems(tensor_file([("a", [32], 0, 0), ("a", [32], 0, 128)], 256)))
    assert any("not a multiple of Q8_0's block size 32" in p for p in problems(tensor_file([("a", [33], 8, 0)], 64)))
    assert any("unknown ggml type 4" in p and "tensor_infos[0].type" in p
               for p in problems(tensor_file([("a", [32], 4, 0)], 64)))
    assert any("beyond INT64_MAX" in p for p in problems(tensor_file([("a", [2**32, 2**32], 0, 0)], 64)))
    assert any("5 dimensions" in p for p in problems(tensor_file([("a", [1, 1, 1, 1, 1], 0, 0)], 64)))
    kvs = s8("k") + struct.pack("<IB", 7, 1) + s8("k") + struct.pack("<IB", 7, 0)
    assert any("metadata[1].key at byte" in p and "duplicate key k" in p
               for p in problems(tensor_file([], 0, kvs, 2)))


# ---------------------------------------------------------------------------------------------------------
# quantization bit-exact with gguf.quants


QUANTIZE = ["BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"]
DEQUANTIZE = [*QUANTIZE, "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "NVFP4"]


def values(rng, n=256 * 32):
    x = (rng.normal(size=n) * rng.choice([1e-3, 1, 40], size=n)).astype(np.float32)
    x[:256] = 0  # an all-zero block: the scale is 0
    x[256:512] = rng.choice([-1, 0, 1], size=256)  # ternary values exactly
    x[512] = 1e-40  # a subnormal
    return x


@pytest.mark.parametrize("name", QUANTIZE)
def test_quantize_bit_exact_with_gguf(name):
    from wvformats.families.ggml.quants import quantize

    x = values(np.random.default_rng(3))
    assert quantize(x, name).tobytes() == gq.quantize(x.reshape(4, -1), T[name]).tobytes()


def test_mxfp4_quantize_bit_exact_at_the_code_midpoints_and_odd_blocks():
    """MXFP4 picks the nearest code by the midpoints it passes: a value on a midpoint (a tie: the lower
    code), one float32 step either side, and blocks of a NaN, an infinity, subnormals or zeros, as gguf.quants."""
    from wvformats.families.ggml.quants import quantize

    rng = np.random.default_rng(5)
    scales = np.float32(2.0) ** rng.integers(-126, 120, size=64)
    mids = np.array([0.5, 1.5, 2.5, 3.5, 5, 7, 10], np.float32)
    x = (rng.choice(mids, size=(64, 32)) * scales[:, None]).astype(np.float32)
    x[:, 0] = 12 * scales  # the block maximum: the scale is 2^(floor(log2 12 s) - 3) = s
    step = rng.choice([-1, 0, 1], size=x.shape)
    x = np.where(step > 0, np.nextafter(x, np.inf), np.where(step < 0, np.nextafter(x, -np.inf), x))
    x *= rng.choice(np.array([-1, 1], np.float32), size=x.shape)
    odd = values(rng)[:1024].reshape(32, 32)  # zeros, -1/0/1, a subnormal, normal values
    odd[21, 5], odd[22, 7] = np.inf, -np.inf
    odd[23] = np.float32(1e-45) * rng.integers(0, 9, size=32)  # subnormals: the exponent wraps, as in ggml
    x = np.concatenate([x, odd]).astype(np.float32)
    with np.errstate(all="ignore"):
        want = gq.quantize(x, T.MXFP4)
    assert quantize(x, "MXFP4").tobytes() == want.tobytes()
    # a NaN: ggml's amax loop (``if (amax < fabsf(v))``) skips it and its code is 0, as a 0's; gguf.quants's
    # np.max makes the whole block NaN, so ggml's C is the reference here
    block = x[90].copy()
    block[3] = 0
    with_nan = block.copy()
    with_nan[3] = np.nan
    assert quantize(with_nan, "MXFP4").tobytes() == quantize(block, "MXFP4").tobytes() != bytes(17)


def test_mxfp4_quantize_compares_against_midpoints_not_an_error_per_code():
    """The nearest code by 7 midpoint compares in place: no (values x 8 codes) error tensor (was 8.4 MB of
    temporaries for 2^20 values; now under 1 MB)."""
    import tracemalloc

    from wvformats.families.ggml.quants import quantize

    x = np.random.default_rng(0).normal(size=1 << 20).astype(np.float32)
    quantize(x[:64], "MXFP4")
    tracemalloc.start()
    try:
        out = quantize(x, "MXFP4")
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.tobytes() == gq.quantize(x.reshape(64, -1), T.MXFP4).tobytes()
    assert peak - kept < 2 << 20, (peak, kept)


@pytest.mark.parametrize("name", DEQUANTIZE)
def test_dequantize_bit_exact_with_gguf(name):
    from wvformats.schemas.ggml import LAYOUTS

    from wvformats.families.ggml.quants import dequantize

    rng = np.random.default_rng(4)
    block, dtype = LAYOUTS[name]
    blocks = rng.integers(0, 256, size=dtype.itemsize * 64, dtype=np.uint8).view(dtype).copy()
    for field in ("d", "dmin"):  # finite scales (random bits would make NaNs, which compare unequal)
        if dtype.names and field in dtype.names and dtype[field] == np.float16:
            blocks[field] = rng.normal(size=len(blocks)).astype(np.float16)
    if name == "MXFP4":
        blocks["e"] = rng.integers(0, 250, size=len(blocks))
    if name == "BF16":
        blocks["bf16"] &= 0xBFFF  # no NaN
    want = gq.dequantize(blocks.view(np.uint8).reshape(4, -1), T[name]).reshape(-1).astype(np.float32)
    assert dequantize(blocks, name).tobytes() == want.tobytes()


# ---------------------------------------------------------------------------------------------------------
# editing metadata, building from arrays


def test_edit_metadata_and_write_a_new_file_gguf_py_reads(tmp_path):
    src = every_value_type_file(tmp_path / "all.gguf")
    model = wv.read(src)
    model.metadata["general.name"] = "edited"
    model.metadata.rename("test.uint8", "test.renamed")
    del model.metadata["test.int8"]
    model.metadata.set("test.big", 7, type="UINT64")
    model.metadata["test.words"] = ["x", "yz"]
    out = tmp_path / "edited.gguf"
    wv.write(model, out)
    want = oracle_metadata(src)
    reader = gguf.GGUFReader(out)
    got = {k: f for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    keys = list(want)
    keys[keys.index("test.uint8")] = "test.renamed"
    keys.remove("test.int8")
    assert list(got) == ["general.architecture", *keys[1:], "general.name", "test.big", "test.words"]
    assert got["general.name"].contents() == "edited" and got["test.renamed"].contents() == 200
    assert got["test.big"].types == [V.UINT64] and got["test.words"].contents() == ["x", "yz"]
    old = {t.name: np.asarray(t.data).tobytes() for t in gguf.GGUFReader(src).tensors}
    assert {t.name: np.asarray(t.data).tobytes() for t in reader.tensors} == old
    assert [p.split(": ", 1)[1] for p in wv.validate(out).problems] == [
        "test.nested holds nested arrays (llama.cpp refuses them)"]


def test_changed_alignment_lays_the_tensors_out_again(tmp_path):
    src = every_value_type_file(tmp_path / "all.gguf", tensors=True)
    model = wv.read(src)
    del model.metadata["test.nested"]
    model.metadata["general.alignment"] = 64
    out = tmp_path / "a64.gguf"
    wv.write(model, out)
    reader = gguf.GGUFReader(out)
    assert reader.alignment == 64 and reader.data_offset % 64 == 0
    assert all(t.data_offset % 64 == 0 for t in reader.tensors)
    old = {t.name: np.asarray(t.data).tobytes() for t in gguf.GGUFReader(src).tensors}
    assert {t.name: np.asarray(t.data).tobytes() for t in reader.tensors} == old
    assert wv.read(out).check() == []


def test_from_arrays_quantized_as_gguf_py_quantizes(tmp_path):
    rng = np.random.default_rng(5)
    arrays = {"w": rng.normal(size=(3, 64)).astype(np.float32), "b": rng.normal(size=64).astype(np.float32)}
    model = GGUFModel.from_arrays(arrays, {"general.architecture": "toy", "toy.context_length": 128},
                                  types={"w": "Q8_0"})
    out = tmp_path / "toy.gguf"
    wv.write(model, out)
    reader = gguf.GGUFReader(out)
    assert reader.fields["toy.context_length"].contents() == 128
    tensors = {t.name: t for t in reader.tensors}
    assert tensors["w"].tensor_type == T.Q8_0 and list(tensors["w"].shape) == [64, 3]
    assert np.asarray(tensors["w"].data).tobytes() == gq.quantize(arrays["w"], T.Q8_0).tobytes()
    assert np.asarray(tensors["b"].data).tobytes() == arrays["b"].tobytes()
    back = wv.read(out)
    assert back.check() == [] and back.tensors["w"].shape == (3, 64) and wv.validate(out).ok


# ---------------------------------------------------------------------------------------------------------
# SentencePiece tokenizer.model <-> GGUF tokenizer keys (the sentencepiece peer, in a subprocess, as oracle)

SP_DATA = Path(__file__).parents[2] / "data" / "sentencepiece"


def sentencepiece_says(model_path, code):
    """Run ``code`` with ``sp`` a SentencePieceProcessor of ``model_path``; its printed JSON."""
    import json

    prog = (f"import json, sentencepiece\nsp = sentencepiece.SentencePieceProcessor(model_file={str(model_path)!r})\n"
            f"print(json.dumps({code}))")
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", ["botchan_en_unigram_1000.model", "botchan_en_bpe_1000.model"])
def test_sentencepiece_model_to_gguf_keys_as_the_converter_writes_them(name, tmp_path):
    to_gguf = wv.sentencepiece.to_gguf

    path = SP_DATA / name
    meta = to_gguf(wv.read(path, format="sentencepiece")).metadata
    # convert_hf_to_gguf.py: piece, score, and the type from IsUnknown / IsControl / IsUnused / IsByte
    want = sentencepiece_says(path, "[[sp.IdToPiece(i), sp.GetScore(i), 2 if sp.IsUnknown(i) else 3 if "
                                    "sp.IsControl(i) else 5 if sp.IsUnused(i) else 6 if sp.IsByte(i) else 1] "
                                    "for i in range(sp.GetPieceSize())] + [[sp.unk_id(), sp.bos_id(), sp.eos_id(), "
                                    "sp.pad_id()]]")
    special = want.pop()
    assert meta["tokenizer.ggml.model"] == "llama"
    assert list(meta["tokenizer.ggml.tokens"]) == [w[0] for w in want]
    assert meta["tokenizer.ggml.scores"].tolist() == [w[1] for w in want]
    assert meta["tokenizer.ggml.token_type"].tolist() == [w[2] for w in want]
    ids = [meta.get(f"tokenizer.ggml.{k}", -1) for k in ("unknown_token_id", "bos_token_id", "eos_token_id",
                                                          "padding_token_id")]
    assert ids == special
    out = tmp_path / "vocab.gguf"
    wv.write(GGUFModel({"general.architecture": "llama", **meta}), out)
    assert gguf.GGUFReader(out).fields["tokenizer.ggml.tokens"].contents() == [w[0] for w in want]


def test_real_llama_gguf_vocabulary_back_to_a_tokenizer_model(tmp_path):
    from_gguf = wv.sentencepiece.from_gguf

    model = wv.read(DATA / "ggml-vocab-llama-spm.gguf")
    out = tmp_path / "tokenizer.model"
    wv.write(from_gguf(model, warn=False), out, format="sentencepiece")
    got = sentencepiece_says(out, "[sp.GetPieceSize(), [sp.IdToPiece(i) for i in range(sp.GetPieceSize())], "
                                  "[sp.GetScore(i) for i in range(sp.GetPieceSize())], "
                                  "sp.encode('Hello world'), sp.bos_id(), sp.eos_id(), sp.unk_id(), "
                                  "sp.encode('ü\u4e16')]")
    tokens = model.metadata["tokenizer.ggml.tokens"].tolist()
    assert got[0] == 32000 and got[1] == tokens
    assert got[2] == model.metadata["tokenizer.ggml.scores"].tolist()
    assert got[3] == [15043, 3186]  # LLaMA's ids of ▁Hello ▁world
    assert got[4:7] == [1, 2, 0]
    assert all(tokens[i] for i in got[7])


# ---------------------------------------------------------------------------------------------------------
# laziness, the CLI's inspect and dump


def test_string_arrays_are_not_decoded_until_asked_and_bad_utf8_is_named():
    model = wv.read(DATA / "ggml-vocab-llama-spm.gguf")
    tokens = model.metadata["tokenizer.ggml.tokens"]
    assert isinstance(tokens, StringArray) and tokens._strings is None and len(tokens) == 32000
    assert tokens.head(3) == ["<unk>", "<s>", "</s>"] and tokens._strings is None
    assert tokens[15043] == "▁Hello" and tokens._strings is not None
    data = header(0, 1) + s8("k") + struct.pack("<IIQ", 9, 8, 3) + s8("ok") + struct.pack("<Q", 2) + b"\xff\xfe" + s8("z")
    bad = codec.gguf_to_model(framework.parse(schema.gguf, data, format="gguf")).metadata["k"]
    with pytest.raises(ValueMismatchError) as info:
        bad.tolist()
    assert info.value.path == "metadata[0].value.data[1]" and info.value.offset == 67


def test_cli_inspect_and_dump_annotate_the_header(capsys):
    from wvformats import cli

    path = str(DATA / "ggml-vocab-llama-spm.gguf")
    assert cli.main(["inspect", path]) == 0
    out = capsys.readouterr().out
    assert "architecture: llama" in out and "tokenizer.ggml.tokens, type=ARRAY[STRING]" in out
    assert "'<unk>', '<s>', '</s>'" in out
    assert cli.main(["dump", path]) == 0
    out = capsys.readouterr().out
    assert "header.version = 3    # 1, 2 or 3" in out
    assert "metadata[0].key = 'general.architecture'" in out and "metadata[0].value = 'llama'" in out
    assert "metadata[0].value_type = 8    # VALUE_TYPES: 0 u8" in out


def test_one_block_table_for_gguf_and_rwkv():
    """Every ggml type gguf-py knows has our id and block size; Q8_1 is 36 bytes as ggml-common.h asserts
    (2 fp16 + 32 int8), where gguf-py's GGML_QUANT_SIZES still says 40 (its f32 scales of 2023). rwkv.cpp's
    ids map onto the same layouts."""
    from gguf.constants import GGML_QUANT_SIZES
    from wvformats.schemas.ggml import BLOCKS, GGML_NAME, GGUF_TYPES, LAYOUTS

    for qtype, (block, size) in GGML_QUANT_SIZES.items():
        assert GGUF_TYPES[int(qtype)] == qtype.name
        assert (LAYOUTS[qtype.name][0], LAYOUTS[qtype.name][1].itemsize) == (block, 36 if qtype.name == "Q8_1" else size)
    for name, block, dtype in BLOCKS[101].values():
        assert (block, dtype) == LAYOUTS[GGML_NAME.get(name, name)]


# ---------------------------------------------------------------------------------------------------------
# quick inspect (header, key/values and the tensor table without decoding the string arrays)


def many_tokens_file(path, n=200_000):
    """A GGUFWriter file with a large token list, other arrays and a few tensors of several types."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(4096)
    w.add_token_list([f"tok{i}\u00e9" for i in range(n)])
    w.add_token_scores(np.linspace(-1, 0, n, dtype=np.float32).tolist())
    w.add_array("test.nested", [[1, 2], [3]])
    rng = np.random.default_rng(7)
    w.add_tensor("f32", rng.normal(size=(3, 32)).astype(np.float32))
    q = gq.quantize(rng.normal(size=(4, 64)).astype(np.float32), T.Q8_0)
    w.add_tensor("q8", q, raw_shape=q.shape, raw_dtype=T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def big_vocab(tmp_path_factory):
    """600,000 tokens (13.7 MB), written by gguf-py."""
    return many_tokens_file(tmp_path_factory.mktemp("big") / "big.gguf", n=600_000)


def quick_and_full(path):
    quick, full = wv.inspect(path), wv.inspect(path, full=True)
    assert "parts" in full and "parts" not in quick  # (the quick one does not walk the schema again)
    return quick, {k: v for k, v in full.items() if k != "parts"}


@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_quick_inspect_equals_the_full_one_on_real_vocabularies(path):
    quick, full = quick_and_full(path)
    assert quick == full
    reader = gguf.GGUFReader(path)  # the oracle for the counts and first values
    tokens = reader.fields["tokenizer.ggml.tokens"]
    row = next(r for r in quick["metadata"] if r["key"] == "tokenizer.ggml.tokens")
    assert row["value"] == {"count": len(tokens.data), "head": tokens.contents()[:5]}
    assert quick["tokens"] == len(tokens.data) and quick["n_kv"] == len(reader.fields) - 3  # (GGUF.* pseudo-keys)


def test_quick_inspect_of_a_gguf_py_file_with_tensors(tmp_path):
    path = many_tokens_file(tmp_path / "m.gguf", n=3000)
    quick, full = quick_and_full(path)
    assert quick == full
    reader = gguf.GGUFReader(path)
    assert [(t["name"], t["type"], t["ggml_shape"], t["offset"] + reader.data_offset, t["bytes"])
            for t in quick["tensor_table"]] == [
        (t.name, t.tensor_type.name, [int(d) for d in t.shape], t.data_offset, int(t.n_bytes)) for t in reader.tensors]
    nested = next(r for r in quick["metadata"] if r["key"] == "test.nested")
    assert nested == {"key": "test.nested", "type": "ARRAY[ARRAY]", "value": {"count": 2, "nested": True}}
    head = next(r for r in quick["metadata"] if r["key"] == "tokenizer.ggml.tokens")["value"]
    assert head == {"count": 3000, "head": ["tok0é", "tok1é", "tok2é", "tok3é", "tok4é"]}


def test_quick_inspect_memory_does_not_grow_with_the_token_list(tmp_path, big_vocab):
    """Walking the string arrays keeps one window's temporaries, never an offset per string nor the strings:
    three times the tokens, the same peak (the full parse's grows with them)."""
    import tracemalloc

    def peak(path):
        wv.inspect(path)  # (imports and caches out of the measurement)
        tracemalloc.start()
        try:
            info = wv.inspect(path)
            return info, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, small_peak = peak(many_tokens_file(tmp_path / "small.gguf", n=200_000))
    big, big_peak = peak(big_vocab)
    assert (small["tokens"], big["tokens"]) == (200_000, 600_000)
    assert big_peak < 1.25 * small_peak + (64 << 10), (small_peak, big_peak)
    assert big_peak < 8 << 20, big_peak  # (a few windows of 1 MB: 14 MB of file here)


def test_reading_keeps_one_offset_per_string_and_decoding_copies_no_whole_block(big_vocab):
    """The memory of reading a token list and decoding it: one int32 offset per string kept (the lengths
    follow from the offsets), the walk's and the decoder's temporaries one window or chunk at a time."""
    import tracemalloc

    n = 600_000
    wv.read(big_vocab).metadata["tokenizer.ggml.tokens"].head(1)  # (imports and caches out of the measurement)
    tracemalloc.start()
    try:
        model = wv.read(big_vocab)
        kept, read_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        tokens = model.metadata["tokenizer.ggml.tokens"].tolist()
        decoded, decode_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(tokens) == n and tokens[123_456] == "tok123456é"
    assert kept < 4 * n + (256 << 10), kept  # one int32 per string (was two)
    assert read_peak - kept < 6 << 20, (read_peak, kept)  # a 1 MB window's (was ~17 bytes per string: 10 MB)
    assert decode_peak - decoded < 4 << 20, (decode_peak, decoded)  # one chunk of strings at a time


def test_to_numpy_of_a_tensor_the_file_does_not_hold_is_a_truncated_error(tmp_path):
    """A gguf-py file cut inside its data section reads (check() names the tensor), and to_numpy of the tensor
    whose blocks are missing is the library's TruncatedError at its tensor info, not numpy's reshape error."""
    p = many_tokens_file(tmp_path / "cut.gguf", n=10)  # an F32 tensor (3 x 32), then Q8_0 (4 x 64: 272 bytes)
    p.write_bytes(p.read_bytes()[:-100])
    model = wv.read(p)
    assert model.tensors["f32"].to_numpy().shape == (3, 32)
    assert any("tensor_infos[1]" in problem for problem in model.check())
    with pytest.raises(TruncatedError) as e:
        model.tensors["q8"].to_numpy()
    assert e.value.format == "gguf" and e.value.path == "tensor_infos[1]" and e.value.offset is not None
