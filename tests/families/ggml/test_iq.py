"""GGUF's IQ2/IQ3/IQ1 types: ggml's lattice grids (iq_grids.py) and the dequantizers in quants.py, against
gguf-py (gguf.quants), which carries its own copy of the grids and its own numpy port of ggml's C."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wvformats.schemas.ggml import LAYOUTS

import wvformats as wv
from wvformats.families.ggml.iq_grids import grid
from wvformats.families.ggml.quants import _KSIGNS, dequantize

gguf = pytest.importorskip("gguf")  # the 'peers' extra, installed by CI
from gguf import quants as gq  # noqa: E402

GRIDS = {"iq2xxs_grid": gq.IQ2_XXS, "iq2xs_grid": gq.IQ2_XS, "iq2s_grid": gq.IQ2_S, "iq3xxs_grid": gq.IQ3_XXS,
         "iq3s_grid": gq.IQ3_S, "iq1s_grid": gq.IQ1_S}


@pytest.mark.parametrize("name", GRIDS)
def test_grids_equal_gguf_py_s(name):
    cls = GRIDS[name]
    cls.init_grid()
    want = cls.grid.reshape(cls.grid_shape)  # float32 values of the bytes (iq1s: -1, 0, 1)
    got = grid(name)
    assert got.shape == want.shape and got.dtype == (np.int8 if name == "iq1s_grid" else np.uint8)
    assert np.array_equal(got.astype(np.float32), want)
    assert not got.flags.writeable


# ---------------------------------------------------------------------------------------------------------
# dequantizing, bit-exact with gguf.quants

IQ = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"]


def test_ksigns_derived_as_gguf_py_stores_them():
    """ksigns_iq2xs: 7 sign bits and an eighth that makes the count of minus signs even."""

    assert _KSIGNS.tobytes() == gq.IQ2_XXS.ksigns


def finite_scales(blocks, name, scales):
    """``blocks`` with their fp16 scale set to ``scales`` (IQ1_M keeps its scale in the top nibbles of its
    four u16 sub-block scales)."""
    blocks = blocks.copy()
    if name == "IQ1_M":
        sc = blocks["scales"].view("<u2").reshape(len(blocks), 4)
        bits = scales.astype("<f2").view("<u2")
        for k in range(4):
            sc[:, k] = (sc[:, k] & 0x0FFF) | (((bits >> (4 * k)) & 0xF) << 12)
    else:
        blocks["d"] = scales.astype("<f2")
    return blocks


def random_blocks(rng, name, n):

    dtype = LAYOUTS[name][1]
    return rng.integers(0, 256, size=dtype.itemsize * n, dtype=np.uint8).view(dtype)


def oracle(blocks, name):
    return gq.dequantize(blocks.view(np.uint8).reshape(len(blocks), -1), gguf.GGMLQuantizationType[name]).reshape(-1)


@pytest.mark.parametrize("name", IQ)
def test_dequantize_bit_exact_with_gguf_on_a_large_random_batch(name):
    """5000 blocks: more than one CHUNK of 4096; finite scales of every magnitude, subnormals and zeros too."""

    rng = np.random.default_rng(23)
    n = 5000
    scales = (rng.normal(size=n) * 2.0 ** rng.integers(-24, 15, size=n)).astype(np.float32)
    scales[:3] = [0, -0.0, 65504]
    blocks = finite_scales(random_blocks(rng, name, n), name, scales)
    got = dequantize(blocks, name)
    assert got.dtype == np.float32 and got.shape == (n * 256,)
    assert got.tobytes() == oracle(blocks, name).astype(np.float32).tobytes()


@pytest.mark.parametrize("name", IQ)
@settings(max_examples=50)
@given(data=st.data())
def test_dequantize_bit_exact_with_gguf_on_any_block_bytes(name, data):

    dtype = LAYOUTS[name][1]
    n = data.draw(st.integers(1, 6))
    raw = data.draw(st.binary(min_size=n * dtype.itemsize, max_size=n * dtype.itemsize))
    blocks = np.frombuffer(raw, dtype).copy()
    scales = np.array(data.draw(st.lists(st.floats(width=16, allow_nan=False, allow_infinity=False),
                                         min_size=n, max_size=n)), np.float32)
    blocks = finite_scales(blocks, name, scales)
    assert dequantize(blocks, name).tobytes() == oracle(blocks, name).astype(np.float32).tobytes()


@pytest.mark.parametrize("name", IQ)
def test_dequantize_nan_and_infinite_scales_do_not_crash(name):
    """Scales a real file does not hold (NaN, +-inf): no exception or warning; a NaN where gguf.quants has one,
    its values elsewhere."""

    rng = np.random.default_rng(5)
    blocks = finite_scales(random_blocks(rng, name, 6), name,
                           np.array([np.nan, np.inf, -np.inf, 1, -np.nan, 0], np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = dequantize(blocks, name)
    with np.errstate(all="ignore"):
        want = oracle(blocks, name).astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isnan(got[:256]).all()
    assert np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
    assert np.isinf(got[256:768]).all()


def gguf_py_file(path, rng):
    """A GGUFWriter file with a tensor of each IQ type, written as raw blocks (gguf-py quantizes none of them)."""
    w = gguf.GGUFWriter(str(path), "llama")
    for i, name in enumerate(IQ):
        n = 4 * (i + 1)
        scales = (rng.normal(size=n) * 0.01).astype(np.float32)
        blocks = finite_scales(random_blocks(rng, name, n), name, scales)
        raw = blocks.view(np.uint8).reshape(i + 1, -1)  # rows of 4 blocks: 1024 values a row
        w.add_tensor(name.lower(), raw, raw_shape=raw.shape, raw_dtype=gguf.GGMLQuantizationType[name])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_gguf_py_file_with_iq_tensors_reads_as_gguf_py_dequantizes(tmp_path):
    path = gguf_py_file(tmp_path / "iq.gguf", np.random.default_rng(9))
    model = wv.read(path)
    reader = gguf.GGUFReader(path)
    assert [t.type for t in model.tensors.values()] == IQ
    for t in reader.tensors:
        ours = model.tensors[t.name]
        assert ours.shape == (IQ.index(ours.type) + 1, 1024)
        want = gq.dequantize(np.asarray(t.data), t.tensor_type)
        assert ours.to_numpy().tobytes() == want.astype(np.float32).tobytes(), t.name
    assert model.check() == [] and wv.validate(path).problems == []
    assert [t["type"] for t in wv.inspect(path)["tensor_table"]] == IQ


@pytest.mark.parametrize("name", IQ)
def test_dequantize_of_no_blocks_is_no_values(name):
    """A tensor of no blocks dequantizes to no values, as every other type does (IQ2_XS, IQ2_S and IQ3_S raised a
    bare ValueError from a reshape)."""
    got = dequantize(np.zeros(0, LAYOUTS[name][1]), name)
    assert got.dtype == np.float32 and got.shape == (0,)
