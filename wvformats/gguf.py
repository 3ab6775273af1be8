"""GGUF (llama.cpp, ggml) model files: the public names of the GGUF part of the ``ggml`` family.

    import wvformats as wv
    from wvformats import gguf
    m = wv.read("model.gguf")                        # a gguf.GGUFModel
    m.metadata["general.name"], m.tensors["token_embd.weight"].to_numpy(), m.check()
    m2 = gguf.GGUFModel.from_arrays({"w": array}, {"general.architecture": "llama"})
    blocks = gguf.quantize(values, "Q8_0")           # bit-exact with ggml's quantizers
    values = gguf.dequantize(blocks, "Q8_0")
    sp = gguf.to_sentencepiece(m)                    # the tokenizer.model a llama (SPM) vocabulary holds
    v = gguf.from_sentencepiece(sp)                  # a vocabulary-only GGUF, as llama.cpp's converter writes it

``LAYOUTS`` gives each ggml block type's values per block and numpy block dtype, ``GGUF_TYPES`` GGUF's type
ids.
"""

from .families.ggml.gguf import GGUFModel, GGUFTensor, Metadata
from .families.ggml.quants import dequantize, quantize
from .families.safetensors.convert import TypeNotAppliedWarning
from .families.sentencepiece.gguf import from_gguf as to_sentencepiece
from .families.sentencepiece.gguf import to_gguf as from_sentencepiece
from .schemas.ggml import GGUF_TYPES, LAYOUTS

__all__ = ["GGUF_TYPES", "LAYOUTS", "GGUFModel", "GGUFTensor", "Metadata", "dequantize", "from_sentencepiece",
           "TypeNotAppliedWarning", "quantize", "to_sentencepiece"]
