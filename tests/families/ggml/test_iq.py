"""GGUF's IQ2/IQ3/IQ1 types: ggml's lattice grids (iq_grids.py) and the dequantizers in quants.py, against
gguf-py (gguf.quants), which carries its own copy of the grids and its own numpy port of ggml's C."""

import numpy as np
import pytest

from wvformats.families.ggml.iq_grids import grid

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
