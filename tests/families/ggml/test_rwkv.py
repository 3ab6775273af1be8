"""rwkv.cpp model files: schema round trips, bit-exact ggml quantization against gguf, checks, bad input."""

import functools
import lzma
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from roundtrip import MODES
from wvformats.schemas import ggml as schema

import wvformats as wv
from wvformats import framework
from wvformats.errors import FormatError, TruncatedError, ValueMismatchError
from wvformats.families.ggml import codec
from wvformats.families.ggml.quants import dequantize, quantize
from wvformats.families.ggml.rwkv import build_model

gguf = pytest.importorskip("gguf")  # the 'peers' extra, installed by CI
from gguf import quants as gq  # noqa: E402

TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"]


def tiny_params(rng, n_vocab=8, n_embed=64, n_layer=2):
    """A complete RWKV v4 parameter set (random values, the shapes rwkv.cpp expects)."""
    C, F = n_embed, 4 * n_embed
    p = {"emb.weight": rng.normal(size=(n_vocab, C)), "blocks.0.ln0.weight": rng.normal(size=C),
         "blocks.0.ln0.bias": rng.normal(size=C)}
    for i in range(n_layer):
        b = f"blocks.{i}."
        for k in ("ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias", "att.time_mix_k", "att.time_mix_v",
                  "att.time_mix_r", "att.time_first", "att.time_decay", "ffn.time_mix_k", "ffn.time_mix_r"):
            p[b + k] = rng.normal(size=C)
        for k in ("att.key.weight", "att.value.weight", "att.receptance.weight", "att.output.weight",
                  "ffn.receptance.weight"):
            p[b + k] = rng.normal(size=(C, C))
        p[b + "ffn.key.weight"] = rng.normal(size=(F, C))
        p[b + "ffn.value.weight"] = rng.normal(size=(C, F))
    p["ln_out.weight"], p["ln_out.bias"] = rng.normal(size=C), rng.normal(size=C)
    p["head.weight"] = rng.normal(size=(n_vocab, C))
    return p


def write_model(path, model):
    with open(path, "wb") as f:
        codec.build(codec.from_model(model), f)


@pytest.mark.parametrize("dtype", ["FP32", "FP16", *TYPES])
def test_tiny_model_written_read_back_byte_exact(tmp_path, dtype):
    model = build_model(tiny_params(np.random.default_rng(1)), n_vocab=8, n_embed=64, n_layer=2, dtype=dtype)
    p = tmp_path / "m.bin"
    write_model(p, model)
    assert p.read_bytes()[:4] == b"fmgg" and wv.sniff(p) == "rwkv"
    assert wv.validate(p).ok
    back = wv.read(p)
    assert back.architecture == "v4" and list(back.tensors) == list(model.tensors)
    for name, t in model.tensors.items():
        got = back.tensors[name]
        assert got.dtype == t.dtype and got.shape == t.shape
        assert got.to_numpy().tobytes() == t.to_numpy().tobytes()
    assert back.tensors["blocks.0.ln0.weight"].dtype == "FP32"  # 1-D stays FP32
    info = wv.inspect(p)
    assert info["tensors"] == len(model.tensors) and info["tensor_table"][0]["offset"] > 24


def _edge_blocks(rng):
    x = rng.normal(size=(16, 32)).astype(np.float32)
    x[0] = 0
    x[1] = 1.25  # constant block
    x[2, ::2] = -0.0
    x[3] = np.linspace(-1, 1, 32)  # ties at .5 after scaling
    x[4] *= 1e-30  # subnormal scales
    x[5] *= 1e5  # scales near the fp16 limit
    x[6, 0] = 70000.0  # overflowing fp16 scale
    x[7] = np.round(rng.normal(size=32) * 8) / 8
    return x


@pytest.mark.parametrize("name", TYPES)
def test_quantize_and_dequantize_bit_exact_with_gguf(name):
    rng = np.random.default_rng(42)
    # the last input spans several of the quantizer's chunks (4096 blocks each), the last one partial
    for x in (_edge_blocks(rng), rng.normal(size=(64, 256)).astype(np.float32) * 3,
              rng.normal(size=(600, 512)).astype(np.float32)):
        qtype = getattr(gguf.GGMLQuantizationType, name)
        with np.errstate(all="ignore"):
            ref = gq.quantize(x, qtype)
            ours = quantize(x, name)
            assert ours.tobytes() == ref.tobytes()
            deq_ref = gq.dequantize(ref, qtype).astype(np.float32)
        deq = dequantize(ours, name).reshape(deq_ref.shape)
        assert deq.tobytes() == deq_ref.tobytes()


def test_check_finds_defects(tmp_path):
    rng = np.random.default_rng(3)
    model = build_model(tiny_params(rng), n_vocab=8, n_embed=64, n_layer=2)
    assert model.check() == []
    model.n_layer = 3
    model.tensors["blocks.0.ln1.bias"].dtype = "FP16"
    model.tensors["blocks.0.ln1.bias"].blocks = quantize(rng.normal(size=64), "FP16")
    model.n_vocab = 9
    del model.tensors["ln_out.bias"]
    from wvformats.families.ggml.rwkv import Tensor

    head = model.tensors["head.weight"]
    model.tensors["blocks.0.extra.weight"] = Tensor("blocks.0.extra.weight", head.dtype, head.shape, head.blocks)
    problems = model.check()
    for needle in ("layers", "1-D", "emb.weight", "missing keys", "does not use"):
        assert any(needle in p for p in problems), needle
    p = tmp_path / "bad.bin"
    write_model(p, model)
    report = wv.validate(p)
    assert report.first_difference is None and not report.ok and len(report.problems) == len(problems)
    # a key written twice: the mapping keeps the first, check() names the duplicate
    parsed = wv.parse_file(p)
    parsed.records.append(parsed.records[0])
    dup = tmp_path / "dup.bin"  # never open a mapped input for writing: wv.write would go through a rename
    with open(dup, "wb") as f:
        codec.build(parsed, f)
    assert any("duplicate key emb.weight" in x for x in wv.validate(dup).problems)


def test_hostile_records_fail_cleanly():
    header = struct.pack("<6I", schema.MAGIC, 101, 1, 1, 1, 0)
    cases = {
        "key_length 0": struct.pack("<3I", 1, 0, 0) + struct.pack("<I", 1),
        "key_length 2^31": struct.pack("<3I", 1, 2**31, 0) + struct.pack("<I", 1) + b"k",
        "dim_count 0": struct.pack("<3I", 0, 1, 0) + b"k",
        "dim_count 4": struct.pack("<3I", 4, 1, 0) + struct.pack("<4I", 1, 1, 1, 1) + b"k",
        "overflowing shape": struct.pack("<3I", 3, 1, 0) + struct.pack("<3I", 2**32 - 1, 2**32 - 1, 2**32 - 1)
        + b"k",
        "row not a block multiple": struct.pack("<3I", 1, 1, 2) + struct.pack("<I", 33) + b"k" + bytes(64),
        "unknown type": struct.pack("<3I", 1, 1, 99) + struct.pack("<I", 1) + b"k",
    }
    for what, rec in cases.items():
        with pytest.raises(FormatError) as e:
            framework.parse(schema.rwkv, header + rec, format="rwkv")
        assert e.value.format == "rwkv" and e.value.path.startswith("records[0]"), what
        assert isinstance(e.value, (TruncatedError, ValueMismatchError)), what
    with pytest.raises(ValueMismatchError):
        framework.parse(schema.rwkv, struct.pack("<6I", schema.MAGIC, 102, 1, 1, 1, 0), format="rwkv")


def _c_reference(x, name, version=101):
    """ggml's reference quantizers (quantize_row_*_ref; for version 100 ggml ff6e03cb's *_reference) transcribed
    loop by loop, one block at a time, as an independent oracle: Python floats with each operation rounded to
    float32, C's compares (false with a NaN), C's MAX macro, (int8_t) casts. Returns per block the scale fields
    as floats and the quants."""
    import math

    def f32(v):
        return float(np.float32(v))

    def cint(v):
        """(int8_t) of a float: toward zero, the low byte kept (Q8's sum adds the stored bytes); a NaN gives 0
        (x86's conversion gives 0x80000000, ARM's 0)."""
        return 0 if math.isnan(v) else (int(v) + 128) % 256 - 128

    def roundf(v):
        return math.copysign(math.floor(abs(v) + 0.5), v) if math.isfinite(v) else v

    qk = 16 if name == "Q4_2" else 32
    out = []
    with np.errstate(all="ignore"):
        for blk in np.asarray(x, np.float32).reshape(-1, qk):
            vals = [float(v) for v in blk]
            if name in ("Q8_0", "Q8_1"):
                amax = 0.0
                for v in vals:
                    amax = amax if amax > abs(v) else abs(v)  # MAX(amax, fabsf(v))
                d = f32(amax / 127)
                inv = f32(1 / d) if d else 0.0
                q = [cint(roundf(f32(v * inv))) for v in vals]
                scales = {"d": d, "s": f32(sum(q) * d)} if name == "Q8_1" else {"d": d}
            elif name in ("Q4_0", "Q4_2", "Q5_0"):
                amax, mx = 0.0, 0.0
                for v in vals:
                    if amax < abs(v):
                        amax, mx = abs(v), v
                half = 16 if name == "Q5_0" else 8
                d = f32(mx / -half)
                inv = f32(1 / d) if d else 0.0
                if name == "Q4_0" and version == 100:
                    q = [min(15, cint(roundf(f32(v * inv))) + 8) for v in vals]
                else:
                    q = [min(2 * half - 1, cint(f32(f32(v * inv) + half + 0.5))) for v in vals]
                scales = {"d": d}
            else:
                lo, hi = float(np.finfo(np.float32).max), -float(np.finfo(np.float32).max)
                for v in vals:
                    if v < lo:
                        lo = v
                    if v > hi:
                        hi = v
                top = 15 if name == "Q4_1" else 31
                d = f32(f32(hi - lo) / top)
                inv = f32(1 / d) if d else 0.0
                if name == "Q4_1" and version == 100:
                    q = [cint(roundf(f32(f32(v - lo) * inv))) for v in vals]
                else:
                    q = [cint(f32(f32(f32(v - lo) * inv) + 0.5)) for v in vals]
                    q = [min(15, v) for v in q] if name == "Q4_1" else q
                scales = {"d": d, "m": lo}
            out.append((scales, q))
    return out


def _assert_as_c_reference(x, name, version=101):
    """Our blocks against _c_reference: every scale field bit for bit (sign of zero, NaN, inf included), the
    quants in the bits the layout keeps."""
    from wvformats.families.ggml.quants import _high_bits, _nibbles

    with np.errstate(all="ignore"):
        blocks = quantize(x, name, version)
    if name in ("Q8_0", "Q8_1"):
        q = blocks["qs"].astype(np.int32)
    else:
        q = _nibbles(blocks["qs"], version)
        if name in ("Q5_0", "Q5_1"):
            q = q | (_high_bits(blocks["qh"]).astype(np.int32) << 4)
    mask = 0xFF if name in ("Q8_0", "Q8_1") else 0x1F if name in ("Q5_0", "Q5_1") else 0xF
    for i, (scales, qs) in enumerate(_c_reference(x, name, version)):
        for field, value in scales.items():
            with np.errstate(all="ignore"):  # scales past the float16 range are inf on both sides
                expected = np.float32(value).astype(blocks.dtype[field]).tobytes()
            assert blocks[field][i].tobytes() == expected, (i, field, x.reshape(len(blocks), -1)[i])
        assert (q[i] & mask).tolist() == [v & mask for v in qs], (i, x.reshape(len(blocks), -1)[i])
    return blocks


@pytest.mark.parametrize("name", ["Q4_0", "Q4_1", "Q4_2", "Q5_0", "Q5_1", "Q8_0"])
def test_version_100_layouts_against_their_reference_formulas(name):
    rng = np.random.default_rng(7)
    x = np.concatenate([_edge_blocks(rng).reshape(-1)[:256], rng.normal(size=512).astype(np.float32)])
    blocks = _assert_as_c_reference(x, name, 100)
    assert blocks.dtype == schema.BLOCKS[100][[k for k, v in schema.BLOCKS[100].items() if v[0] == name][0]][2]
    # v100 dequantization reads the interleaved layout back to the same grid
    deq = dequantize(blocks, name, 100)
    assert deq.shape == x.shape and np.isfinite(deq[256:]).all()


def _special_blocks(rng, qk=32):
    """Blocks where ggml's loops meet NaN, infinities and signed zeros (the ordinary values of one row around)."""
    base = rng.normal(size=qk).astype(np.float32)
    rows = []

    def row(values=None, **at):
        r = base.copy() if values is None else np.array(values, np.float32) * np.ones(qk, np.float32)
        for i, v in at.items():
            r[int(i[1:])] = v
        rows.append(r)

    nan, inf = np.float32("nan"), np.float32("inf")
    for i in (0, 5, qk // 2, qk - 1):
        row(**{f"i{i}": nan})  # one NaN: first, inside, first of the high half, last
    row(i3=nan, **{f"i{qk - 2}": nan})
    row(i0=nan, **{f"i{qk - 1}": nan})
    row(nan)
    row(-0.0)
    row(0.0)
    row([-0.0, 0.0] * (qk // 2))
    row([0.0, -0.0] * (qk // 2))
    row(-0.0, i0=nan)
    row(0.0, i4=nan, i7=-0.0)
    row(i7=inf)
    row(i0=-inf)
    row(i3=nan, i9=-inf)
    row(i9=inf, **{f"i{qk - 1}": nan})
    row(inf)
    row(-inf)
    row(nan, i2=inf)
    row(np.abs(base), i3=-0.0, i9=0.0)  # min 0: the first zero's sign
    row(-np.abs(base), i4=0.0, i10=-0.0)  # max 0
    row(-np.abs(base), i2=-0.0, i6=0.0, i8=nan)
    row(np.abs(base), i0=nan, i1=0.0, i5=-0.0)
    return np.stack(rows)


@pytest.mark.parametrize("name", [*TYPES, "Q8_1", "Q4_0@100", "Q4_1@100", "Q4_2@100", "Q8_0@100"])
def test_nan_and_signed_zero_as_the_c_reference(name):
    """NaN, infinities and -0.0 quantize as ggml's C loops do. gguf's numpy port differs from C there: its
    scale is NaN for a block with a NaN (C's compares skip it; Q8_0's MAX counts only the values after the
    last NaN), +0.0 for an all-zero Q4_0/Q5_0 block that starts with -0.0 (C keeps max = +0.0, so d = -0.0),
    and NaN for an all-NaN Q4_1/Q5_1 block (C keeps min = FLT_MAX, max = -FLT_MAX: m = +inf, d = -inf)."""
    name, _, version = name.partition("@")
    _assert_as_c_reference(_special_blocks(np.random.default_rng(10), 16 if name == "Q4_2" else 32), name,
                           int(version or 101))


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
@example(0.5)
@example(-0.5)
@example(1.5)
@example(-2.5)
@example(0.49999997)
@example(8388607.5)
@example(-0.0)
def test_roundf_is_c_roundf(v):
    import math

    from wvformats.families.ggml.quants import _roundf

    x = np.float32(v)
    assert float(_roundf(np.array([x]))[0]) == math.copysign(math.floor(abs(float(x)) + 0.5), float(x))


@pytest.mark.parametrize("target", TYPES)
def test_requantize_with_rwkv_cpp_rules(tmp_path, target):
    from wvformats.families.ggml.rwkv import quantize_model

    model = build_model(tiny_params(np.random.default_rng(2)), n_vocab=8, n_embed=64, n_layer=2)
    q = quantize_model(model, target)
    assert q.check() == []
    assert q.tensors["emb.weight"].dtype == "FP16" and q.tensors["head.weight"].dtype == "FP16"
    assert q.tensors["blocks.0.att.time_decay"].dtype == "FP32"
    assert q.tensors["blocks.1.ffn.key.weight"].dtype == target
    orig = model.tensors["blocks.1.ffn.key.weight"].to_numpy()
    assert np.abs(q.tensors["blocks.1.ffn.key.weight"].to_numpy() - orig).max() < np.abs(orig).max() / 2
    p = tmp_path / "q.bin"
    write_model(p, q)
    assert wv.validate(p).ok and wv.read(p).tensors["blocks.1.ffn.key.weight"].dtype == target


def test_convert_version_100_to_101(tmp_path):
    from wvformats.families.ggml.rwkv import quantize_model

    old = build_model(tiny_params(np.random.default_rng(4), n_layer=1), n_vocab=8, n_embed=64, n_layer=1, dtype="Q4_0",
                      version=100)
    p = tmp_path / "v100.bin"
    write_model(p, old)
    report = wv.validate(p)  # byte-exact, but current rwkv.cpp refuses quantized version 100 files
    assert report.first_difference is None and wv.read(p).version == 100
    assert [x.split(":")[0] for x in report.problems] == ["header data_type 2 (Q4_0) in a version 100 file"]
    new = quantize_model(wv.read(p), "Q4_0", version=101)
    assert new.version == 101 and new.check() == []
    w = "blocks.0.att.key.weight"
    assert new.tensors[w].blocks.dtype.itemsize == 18 and old.tensors[w].blocks.dtype.itemsize == 20
    # v100 Q4_0 values re-quantized into v101 Q4_0 stay on the same grid up to fp16 scale rounding
    assert np.allclose(new.tensors[w].to_numpy(), old.tensors[w].to_numpy(), rtol=0.01, atol=0.05)


def test_cli_rwkv_quantize(tmp_path):
    import subprocess
    import sys

    src = tmp_path / "m.bin"
    write_model(src, build_model(tiny_params(np.random.default_rng(5), n_layer=1), n_vocab=8, n_embed=64, n_layer=1))
    dst = tmp_path / "q.bin"
    r = subprocess.run([sys.executable, "-m", "wvformats.cli", "rwkv", "quantize", str(src), str(dst),
                        "--type", "Q5_1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert wv.read(dst).tensors["blocks.0.att.key.weight"].dtype == "Q5_1"
    again = subprocess.run([sys.executable, "-m", "wvformats.cli", "rwkv", "quantize", str(src), str(dst),
                            "--type", "Q5_1"], capture_output=True, text=True)
    assert again.returncode == 2 and "exists" in again.stderr


def test_quantize_refuses_types_it_cannot_write_and_quantized_models(tmp_path):
    """Only FP16 and the bit-exact quantizers are targets (K-quants raised NotImplementedError), and, as in
    rwkv.cpp, only FP32/FP16 models are inputs: the Q5_1 sample 'quantized' to Q8_0 kept every tensor Q5_1
    under a Q8_0 header and reported success. A model of the target type itself may change version."""
    import subprocess
    import sys

    from wvformats.families.ggml.rwkv import QUANTIZE_TYPES, quantize_model
    from wvformats.samples import sample_files

    fp16 = build_model(tiny_params(np.random.default_rng(6), n_embed=256, n_layer=1), n_vocab=8, n_embed=256,
                       n_layer=1)
    for bad, version in (("Q2_K", 101), ("Q4_K", 101), ("Q8_K", 101), ("Q8_1", 101), ("Q4_2", 101), ("Q4_0", 102)):
        with pytest.raises(ValueError, match=f"{bad}.*version {version}|version.*not {version}") as e:
            quantize_model(fp16, bad, version)
        if version in QUANTIZE_TYPES:
            assert ", ".join(QUANTIZE_TYPES[version]) in str(e.value)
    with pytest.raises(ValueError, match="Q2_K"):
        build_model(tiny_params(np.random.default_rng(6), n_embed=256, n_layer=1), n_vocab=8, n_embed=256,
                    n_layer=1, dtype="Q2_K")
    sample = next(p for p in sample_files() if p.name == "sample-rwkv-q5_1.bin")
    q5_1 = wv.read(sample)
    for target in ("Q8_0", "Q4_0", "FP16"):
        with pytest.raises(ValueError, match="holds Q5_1 tensors: rwkv.cpp quantizes only FP32/FP16 models"):
            quantize_model(q5_1, target)
    same = quantize_model(q5_1, "Q5_1")
    assert same.data_type == q5_1.data_type and all(same.tensors[k] is t for k, t in q5_1.tensors.items())
    v100 = quantize_model(q5_1, "Q5_1", 100)
    assert v100.version == 100 and {t.dtype for t in v100.tensors.values()} == {"FP32", "FP16", "Q5_1"}
    w = "blocks.0.att.key.weight"
    assert v100.tensors[w].to_numpy().tobytes() == q5_1.tensors[w].to_numpy().tobytes()
    dst = tmp_path / "q.bin"
    for target in ("Q2_K", "Q8_0"):
        r = subprocess.run([sys.executable, "-m", "wvformats.cli", "rwkv", "quantize", str(sample), str(dst),
                            "--type", target], capture_output=True, text=True)
        assert r.returncode == 2 and "Traceback" not in r.stderr and not dst.exists(), r.stderr
        assert ("invalid choice: 'Q2_K'" if target == "Q2_K" else "holds Q5_1 tensors") in r.stderr


@pytest.mark.parametrize("name", ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"])
def test_k_quant_dequantize_bit_exact_with_gguf(name):
    """Random super-blocks (every bit pattern of scales and quants, finite fp16 d/dmin), more than one
    dequantization chunk, against gguf.quants."""
    from wvformats.schemas.ggml import BLOCKS

    rng = np.random.default_rng(7)
    dtype = next(dt for n, _, dt in BLOCKS[101].values() if n == name)
    blocks = rng.integers(0, 256, (5000, dtype.itemsize), dtype=np.uint8).view(dtype).reshape(-1).copy()
    for field in ("d", "dmin"):
        if field in dtype.names:
            blocks[field] = (rng.normal(size=len(blocks)) * 4).astype(np.float16)
    ref = gq.dequantize(blocks.view(np.uint8).reshape(len(blocks), -1), getattr(gguf.GGMLQuantizationType, name))
    assert dequantize(blocks, name).tobytes() == ref.astype(np.float32).reshape(-1).tobytes()


@pytest.mark.parametrize("name", ["Q8_1", "Q8_K"])
def test_q8_1_and_q8_k_dequantize_to_d_times_q(name):
    from wvformats.schemas.ggml import BLOCKS

    rng = np.random.default_rng(8)
    dtype = next(dt for n, _, dt in BLOCKS[101].values() if n == name)
    blocks = rng.integers(0, 256, (300, dtype.itemsize), dtype=np.uint8).view(dtype).reshape(-1).copy()
    blocks["d"] = rng.normal(size=len(blocks)).astype(blocks.dtype["d"])
    expected = (blocks["d"].astype(np.float64)[:, None] * blocks["qs"]).astype(np.float32).reshape(-1)
    assert dequantize(blocks, name).tobytes() == expected.tobytes()


def test_q8_1_quantize_follows_the_c_reference():
    rng = np.random.default_rng(9)
    x = np.concatenate([_edge_blocks(rng), rng.normal(size=(20, 32)).astype(np.float32) * 5])
    ours = _assert_as_c_reference(x, "Q8_1")
    assert dequantize(ours, "Q8_1").tobytes() == (ours["qs"] * ours["d"].astype(np.float32)[:, None]).tobytes()


# rwkv.cpp's own test model (tests/data/rwkv/README.md): version 100, header FP16, RWKV v4, 4 layers
# (tests/data is found upwards: this file may sit deeper in tests/ than the data folder)
REAL = next(p for p in Path(__file__).parents if (p / "data" / "rwkv").is_dir()) / "data/rwkv/tiny-rwkv-4v0-660K-FP16.bin.xz"
_HEADER_AT = {"version": 4, "n_vocab": 8, "n_embed": 12, "n_layer": 16, "data_type": 20}


@functools.cache
def _real_bytes():
    return lzma.decompress(REAL.read_bytes())


def _real_file(tmp_path, name="real.bin", **header):
    """rwkv.cpp's test model, with the ``header`` fields given overwritten."""
    data = bytearray(_real_bytes())
    for field, value in header.items():
        struct.pack_into("<I", data, _HEADER_AT[field], value)
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return path


def _cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "wvformats.cli", *map(str, args)], capture_output=True, text=True)


def test_real_rwkv_cpp_file_passes_check(tmp_path):
    """A file current rwkv.cpp loads has no problem: a version 100 FP16 file (only quantized version 100
    files are refused), and any FP or quantized header type over FP16 tensors (the header type is checked
    for itself, never against the tensors')."""
    model = wv.read(_real_file(tmp_path))
    assert (model.version, model.data_type, model.architecture, model.n_layer) == (100, 1, "v4", 4)
    assert {t.dtype for t in model.tensors.values()} == {"FP32", "FP16"}
    assert model.check() == [] and wv.validate(tmp_path / "real.bin").ok
    for version, data_type in ((100, 0), (101, 0), (101, 1), (101, 9), (101, 16)):
        assert wv.validate(_real_file(tmp_path, version=version, data_type=data_type)).ok, (version, data_type)


@pytest.mark.parametrize("version, data_type, says", [
    (100, 4, "header data_type 4 (Q4_1_O): rwkv.cpp refuses it: Models in Q4_1_O format cannot be loaded anymore "
             "because the format was removed"),
    (101, 5, "header data_type 5 (Q4_2): rwkv.cpp refuses it: Models in Q4_2 format cannot be loaded anymore"),
    (100, 6, "header data_type 6 (Q4_3): rwkv.cpp refuses it: Models in Q4_3 format cannot be loaded anymore"),
    (101, 17, "header data_type 17: rwkv.cpp refuses it: Model data type out of range (17 > 16)"),
    (100, 2**32 - 1, "header data_type 4294967295: rwkv.cpp refuses it: Model data type out of range"),
    (100, 2, "header data_type 2 (Q4_0) in a version 100 file: rwkv.cpp refuses it: The quantized model file in "
             "Q4_0 format was created with an old version of rwkv.cpp and can not be loaded anymore"),
    (100, 8, "header data_type 8 (Q5_1) in a version 100 file: rwkv.cpp refuses it: The quantized model file"),
    (100, 13, "header data_type 13 (Q4_K) in a version 100 file: rwkv.cpp refuses it: The quantized model file"),
])
def test_check_refuses_header_data_types_as_rwkv_cpp(tmp_path, version, data_type, says):
    """rwkv.cpp's rwkv_fread_file_header refuses these header types (rwkv_file_format.inc); check() found
    nothing and validate said ok. Each problem quotes rwkv.cpp and says how to get a file it loads."""
    path = _real_file(tmp_path, version=version, data_type=data_type)
    problems = wv.read(path).check()
    assert len(problems) == 1 and problems[0].startswith(says), problems
    fix = "model.data_type = 1" if data_type >= 17 else "`wvformats rwkv quantize IN OUT --type "
    assert fix in problems[0] and (data_type >= 17 or "--version 101`" in problems[0])
    report = wv.validate(path)
    assert not report.ok and report.first_difference is None and report.problems == problems
    r = _cli("validate", path)
    assert r.returncode == 1 and says in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("data_type", [2, 7, 13, 4, 5])
def test_the_fix_check_names_gives_a_file_rwkv_cpp_loads(tmp_path, data_type):
    """Following the command a header data_type problem names (from the FP16 model) gives a clean file."""
    path = _real_file(tmp_path, version=100, data_type=data_type)
    problem = wv.read(path).check()[0]
    command = problem[problem.index("wvformats rwkv quantize"):].split("`")[0].split()
    assert command[3:5] == ["IN", "OUT"]
    out = tmp_path / "fixed.bin"
    r = _cli(*command[1:3], path, out, *command[5:])
    assert r.returncode == 0, r.stderr
    fixed = wv.read(out)
    assert fixed.version == 101 and fixed.check() == []


def test_check_refuses_quantized_tensors_in_version_100_under_a_float_header(tmp_path):
    """Current rwkv.cpp checks the version against the header type only: a version 100 file whose header
    says FP16 but whose tensors are quantized loads, with the blocks read in the version 101 layout (wrong
    values, silently); Q4_2 tensors it refuses. check() said nothing of either."""
    from wvformats.families.ggml.rwkv import quantize_model

    real = wv.read(_real_file(tmp_path))
    for target in ("Q4_0", "Q5_1", "Q4_2"):
        q = quantize_model(real, target, 100)
        q.data_type = 1
        path = tmp_path / f"{target}.bin"
        wv.write(q, path, "rwkv")
        problems = wv.read(path).check()
        n = sum(t.dtype == target for t in q.tensors.values())
        if target == "Q4_2":
            assert problems == [f"{n} Q4_2 tensors: rwkv.cpp refuses them: Tensor data type (Q4_2) is no longer "
                                "supported; quantize the FP32/FP16 model again: "
                                "`wvformats rwkv quantize IN OUT --type Q5_1 --version 101`"]
        else:
            assert len(problems) == 1 and problems[0].startswith(
                f"{n} {target} tensors in a version 100 file under an FP16 header: rwkv.cpp loads them with the "
                "version 101 block layout (wrong values)"), problems
            assert f"`wvformats rwkv quantize IN OUT --type {target} --version 101`" in problems[0]
            fixed = tmp_path / f"fixed-{target}.bin"
            r = _cli("rwkv", "quantize", path, fixed, "--type", target, "--version", "101")
            assert r.returncode == 0 and wv.read(fixed).check() == [], r.stderr


@MODES
def test_unsupported_version_is_named_at_the_header(compiled):
    """rwkv.cpp: "Unsupported file version"; the error named records at byte 24."""
    for version in (99, 102, 0):
        data = struct.pack("<6I", schema.MAGIC, version, 1, 1, 1, 0)
        with pytest.raises(ValueMismatchError) as e:
            framework.parse(schema.rwkv, data, format="rwkv", compile=compiled)
        assert e.value.format == "rwkv" and "version" in e.value.path and e.value.offset == 4, str(e.value)
        assert e.value.found == version


@pytest.mark.parametrize("field, value, says", [
    ("n_vocab", 255, "emb.weight is (256, 128), the header says (255, 128): rwkv.cpp refuses it: Unexpected "
                     "dimension of embedding matrix; set model.n_vocab, model.n_embed = 256, 128"),
    ("n_embed", 64, "emb.weight is (256, 128), the header says (256, 64): rwkv.cpp refuses it: Unexpected "
                    "dimension of embedding matrix; set model.n_vocab, model.n_embed = 256, 128"),
    ("n_layer", 5, "the header says 5 layers, the tensors have 4: rwkv.cpp refuses it: Model parameter "
                   "blocks.4.ln1.weight not found; set model.n_layer = 4"),
    ("n_layer", 3, "the header says 3 layers, the tensors have 4: rwkv.cpp aborts on the tensors of the layers "
                   "past it; set model.n_layer = 4"),
])
def test_header_size_problems_quote_rwkv_cpp_and_the_fix(tmp_path, field, value, says):
    """The header's n_vocab, n_embed and n_layer against the tensors, as rwkv_load_model_from_file checks
    them; the problem said what differs, not what rwkv.cpp does nor how to mend it. The fix it names works."""
    model = wv.read(_real_file(tmp_path, **{field: value}))
    assert any(p.startswith(says) for p in model.check()), model.check()
    setattr(model, field, 4 if field == "n_layer" else {"n_vocab": 256, "n_embed": 128}[field])
    assert model.check() == []


def test_check_reports_an_out_of_range_header_type_over_removed_q4_2_tensors(tmp_path):
    """Issue 27, 9b: a version 100 Q4_2 file whose header data_type a fuzz campaign set to 65536
    (tests/data/rwkv/README.md) made check() raise KeyError: 'Q4_2' (the fix it proposed looked the tensors'
    type up among the version 101 ids). check() reports: the header type, then the tensors rwkv.cpp refuses,
    each with a fix that does not name the removed type as a header type."""
    path = REAL.parent / "rwkv-v100-q4_2-mutated.bin"
    model = wv.read(path)
    assert (model.version, model.data_type) == (100, 65536)
    problems = model.check()
    assert problems == [
        "header data_type 65536: rwkv.cpp refuses it: Model data type out of range (65536 > 16); the tensors are "
        "Q4_2, a layout rwkv.cpp removed: quantize the FP32/FP16 model again: "
        "`wvformats rwkv quantize IN OUT --type Q5_1 --version 101`",
        "14 Q4_2 tensors: rwkv.cpp refuses them: Tensor data type (Q4_2) is no longer supported; quantize the "
        "FP32/FP16 model again: `wvformats rwkv quantize IN OUT --type Q5_1 --version 101`"]
    report = wv.validate(path)
    assert not report.ok and report.first_difference is None and report.problems == problems
    r = _cli("validate", path)
    assert r.returncode == 1 and "Model data type out of range" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("version, target, fix", [
    (101, "Q5_1", "model.data_type = 8 (Q5_1)"),
    (100, "Q5_1", "the tensors are Q5_1 of version 100: convert it with "
                  "`wvformats rwkv quantize IN OUT --type Q5_1 --version 101`"),
])
def test_out_of_range_header_type_fix_is_one_rwkv_cpp_takes(tmp_path, version, target, fix):
    """The fix for an out-of-range header type names the tensors' type only where rwkv.cpp takes it as a
    header type (not a quantized type in version 100, which it refuses too)."""
    from wvformats.families.ggml.rwkv import quantize_model

    q = quantize_model(wv.read(_real_file(tmp_path)), target, version)
    q.data_type = 99
    path = tmp_path / "q.bin"
    wv.write(q, path, "rwkv")
    problems = wv.read(path).check()
    assert problems[0].startswith("header data_type 99: rwkv.cpp refuses it: Model data type out of range")
    assert fix in problems[0], problems
