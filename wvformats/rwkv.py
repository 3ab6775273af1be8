"""rwkv.cpp model files (ggml ``ggmf`` magic, versions 100 and 101): the public names of the rwkv part of the
``ggml`` family.

    import wvformats as wv
    from wvformats import rwkv
    m = wv.read("rwkv-model.bin")                    # an rwkv.RwkvModel
    m.architecture, m.tensors["emb.weight"].to_numpy(), m.check()
    q = rwkv.quantize_model(m, "Q5_1")               # as rwkv.cpp's quantize.py, bit-exact
    m2 = rwkv.build_model(params, n_vocab=..., n_embed=..., n_layer=...)   # from numpy arrays

``quantize`` and ``dequantize`` work on one tensor's values or blocks (``version`` 100 or 101: the layouts
differ), ``BLOCKS`` gives each version's type ids and block layouts.
"""

from .families.ggml.quants import dequantize, quantize
from .families.ggml.rwkv import RwkvModel, Tensor, build_model, quantize_model
from .schemas.ggml import BLOCKS

__all__ = ["BLOCKS", "RwkvModel", "Tensor", "build_model", "dequantize", "quantize", "quantize_model"]
