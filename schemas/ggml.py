"""rwkv.cpp model files (legacy ggml "ggmf" container, versions 100 and 101) and the ggml block types.

A 24-byte header, then parameter records until the end of the file, all integers u32 little-endian:
``dim_count, key_length, data_type, shape[dim_count] (ggml order: ne0 = PyTorch's last dim), key, data``.
Data sizes follow from the type and shape; nothing is padded. The block layouts of Q4_0, Q4_1 and Q8_0
differ between versions 100 and 101, and Q5_0/Q5_1 differ only in nibble order, so a block dtype is always
looked up with the header version. (rwkv.cpp's docs call the magic "ggml"; the bytes are ``66 6d 67 67``.)
"""

import numpy as np
from construct import Const, Int32ul, Struct, this
from wvformats.schemas.constructs.rwkv import ParameterRecords
from wvformats.schemas.identity import RWKV_MAGIC as MAGIC
from wvformats.schemas.identity import RWKV_VERSIONS

from wvformats.framework import Valid

# One home for the ggml block types: the layout of one block of each type (values per block, numpy structured
# dtype), by ggml's name; GGUF and rwkv.cpp number the types differently (GGUF_TYPES, BLOCKS_V101), with the
# same bytes where they share a type. Field names are ggml-common.h's.
_F16 = "<f2"
LAYOUTS = {
    "F32": (1, np.dtype("<f4")),
    "F16": (1, np.dtype(_F16)),
    "Q4_0": (32, np.dtype([("d", _F16), ("qs", "u1", 16)])),
    "Q4_1": (32, np.dtype([("d", _F16), ("m", _F16), ("qs", "u1", 16)])),
    "Q5_0": (32, np.dtype([("d", _F16), ("qh", "<u4"), ("qs", "u1", 16)])),
    "Q5_1": (32, np.dtype([("d", _F16), ("m", _F16), ("qh", "<u4"), ("qs", "u1", 16)])),
    "Q8_0": (32, np.dtype([("d", _F16), ("qs", "i1", 32)])),
    "Q8_1": (32, np.dtype([("d", _F16), ("s", _F16), ("qs", "i1", 32)])),
    "Q2_K": (256, np.dtype([("scales", "u1", 16), ("qs", "u1", 64), ("d", _F16), ("dmin", _F16)])),
    "Q3_K": (256, np.dtype([("hmask", "u1", 32), ("qs", "u1", 64), ("scales", "u1", 12), ("d", _F16)])),
    "Q4_K": (256, np.dtype([("d", _F16), ("dmin", _F16), ("scales", "u1", 12), ("qs", "u1", 128)])),
    "Q5_K": (256, np.dtype([("d", _F16), ("dmin", _F16), ("scales", "u1", 12), ("qh", "u1", 32),
                            ("qs", "u1", 128)])),
    "Q6_K": (256, np.dtype([("ql", "u1", 128), ("qh", "u1", 64), ("scales", "i1", 16), ("d", _F16)])),
    "Q8_K": (256, np.dtype([("d", "<f4"), ("qs", "i1", 256), ("bsums", "<i2", 16)])),
    "IQ2_XXS": (256, np.dtype([("d", _F16), ("qs", "<u2", 32)])),
    "IQ2_XS": (256, np.dtype([("d", _F16), ("qs", "<u2", 32), ("scales", "u1", 8)])),
    "IQ3_XXS": (256, np.dtype([("d", _F16), ("qs", "u1", 96)])),
    "IQ1_S": (256, np.dtype([("d", _F16), ("qs", "u1", 32), ("qh", "<u2", 8)])),
    "IQ4_NL": (32, np.dtype([("d", _F16), ("qs", "u1", 16)])),
    "IQ3_S": (256, np.dtype([("d", _F16), ("qs", "u1", 64), ("qh", "u1", 8), ("signs", "u1", 32),
                             ("scales", "u1", 4)])),
    "IQ2_S": (256, np.dtype([("d", _F16), ("qs", "u1", 64), ("qh", "u1", 8), ("scales", "u1", 8)])),
    "IQ4_XS": (256, np.dtype([("d", _F16), ("scales_h", "<u2"), ("scales_l", "u1", 4), ("qs", "u1", 128)])),
    "I8": (1, np.dtype("i1")),
    "I16": (1, np.dtype("<i2")),
    "I32": (1, np.dtype("<i4")),
    "I64": (1, np.dtype("<i8")),
    "F64": (1, np.dtype("<f8")),
    "IQ1_M": (256, np.dtype([("qs", "u1", 32), ("qh", "u1", 16), ("scales", "u1", 8)])),
    "BF16": (1, np.dtype([("bf16", "<u2")])),  # numpy has no bfloat16: the raw 16 bits
    "TQ1_0": (256, np.dtype([("qs", "u1", 48), ("qh", "u1", 4), ("d", _F16)])),
    "TQ2_0": (256, np.dtype([("qs", "u1", 64), ("d", _F16)])),
    "MXFP4": (32, np.dtype([("e", "u1"), ("qs", "u1", 16)])),
    "NVFP4": (64, np.dtype([("d", "u1", 4), ("qs", "u1", 32)])),
    "Q1_0": (128, np.dtype([("d", _F16), ("qs", "u1", 16)])),
    "Q2_0": (64, np.dtype([("d", _F16), ("qs", "u1", 16)])),
}

# GGUF's ggml_type ids (ggml.h today; 4, 5 and 31-33, 36-38 were removed and are unknown)
GGUF_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
    11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
    19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32",
    27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4",
    41: "Q1_0", 42: "Q2_0",
}

# rwkv.cpp's ids, (version, rwkv id) -> (rwkv's name, values per block, block dtype); rwkv.cpp calls F32/F16
# FP32/FP16
_RWKV_V101 = {0: "FP32", 1: "FP16", 2: "Q4_0", 3: "Q4_1", 7: "Q5_0", 8: "Q5_1", 9: "Q8_0", 10: "Q8_1", 11: "Q2_K",
              12: "Q3_K", 13: "Q4_K", 14: "Q5_K", 15: "Q6_K", 16: "Q8_K"}
GGML_NAME = {"FP32": "F32", "FP16": "F16"}  # rwkv.cpp's name -> ggml's
BLOCKS_V101 = {i: (name, *LAYOUTS[GGML_NAME.get(name, name)]) for i, name in _RWKV_V101.items()}
BLOCKS_V100 = {
    0: BLOCKS_V101[0],
    1: BLOCKS_V101[1],
    2: ("Q4_0", 32, np.dtype([("d", "<f4"), ("qs", "u1", 16)])),
    3: ("Q4_1", 32, np.dtype([("d", "<f4"), ("m", "<f4"), ("qs", "u1", 16)])),
    5: ("Q4_2", 16, np.dtype([("d", _F16), ("qs", "u1", 8)])),
    7: ("Q5_0", 32, BLOCKS_V101[7][2]),  # same bytes as v101, other nibble order
    8: ("Q5_1", 32, BLOCKS_V101[8][2]),
    9: ("Q8_0", 32, np.dtype([("d", "<f4"), ("qs", "i1", 32)])),
}
BLOCKS = {100: BLOCKS_V100, 101: BLOCKS_V101}
# rwkv ids whose layouts rwkv.cpp removed (it refuses them, in any version), and the count of ids it knows
REMOVED_TYPES = {4: "Q4_1_O", 5: "Q4_2", 6: "Q4_3"}
TYPE_COUNT = 17

header = Struct(
    "magic" / Const(MAGIC, Int32ul) * 'bytes 66 6d 67 67 ("ggmf" as a little-endian u32)',
    "version" / Int32ul * "100 or 101: selects the block layouts",
    Valid("version", (this.version >= RWKV_VERSIONS[0]) & (this.version <= RWKV_VERSIONS[-1]))
    * "100 <= version <= 101: the versions rwkv.cpp reads (RWKV_FILE_VERSION_MIN..MAX)",
    "n_vocab" / Int32ul * "vocabulary size (emb.weight ne1)",
    "n_embed" / Int32ul * "embedding size (emb.weight ne0)",
    "n_layer" / Int32ul * "number of blocks.N layers",
    "data_type" / Int32ul * "the type of most tensors (rwkv id), never compared with theirs; rwkv.cpp refuses "
    "4-6 (removed layouts), 17 and up, and a quantized type in version 100",
)

rwkv = Struct(
    "header" / header * "24 bytes",
    "records" / ParameterRecords(BLOCKS, this.header.version)
    * "to the end of the file: u32 dim_count, u32 key_length, u32 data_type, u32 shape[dim_count], key, data",
)
