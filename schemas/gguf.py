"""GGUF (``.gguf``), the file format of ggml and llama.cpp: header, metadata key/values, tensor infos, data.

Little-endian. Counts and string lengths are u32 in version 1 and u64 from version 2. A string is its length
and UTF-8 bytes (no terminator). The data section starts at the next multiple of the alignment
(``general.alignment``, a u32, default 32) after the tensor infos, from the start of the file; each tensor's
offset is relative to it and llama.cpp wants them in order, each tensor padded to the alignment. A file
without tensors may end right after the tensor infos (llama.cpp's vocabulary files do). Tensor data are
blocks of the ggml types (``schemas/ggml.py``: ``LAYOUTS``, ids in ``GGUF_TYPES``). A big-endian file (its
version reads byte-swapped, 0x03000000) is refused.
"""

from construct import Const, If, IfThenElse, Int32ul, Int64ul, Struct, len_, this
from wvformats.schemas.constructs.gguf import (
                                                  BytesLeft,
                                                  Entries,
                                                  GGUFString,
                                                  GGUFValue,
                                                  MetadataAlignment,
                                                  TensorData,
)
from wvformats.schemas.identity import GGUF_MAGIC as MAGIC

from wvformats.framework import AlignTo, Derived, NumpyArray, Valid

DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
# What llama.cpp's gguf_init refuses beyond the layout (ggml's gguf.cpp): version 1 ("GGUFv1 is no longer
# supported"), tensor names of GGML_MAX_NAME bytes or more (the name is kept NUL-terminated in 64 bytes),
# arrays of more elements than GGUF_MAX_ARRAY_ELEMENTS, dimensions and element counts that are not int64
# (and strings over GGUF_MAX_STRING_LENGTH, 1 GiB, which check() does not look for)
SUPPORTED_VERSIONS = (2, 3)
MAX_NAME = 64  # GGML_MAX_NAME
MAX_ARRAY_ELEMENTS = 1 << 30  # GGUF_MAX_ARRAY_ELEMENTS
INT64_MAX = (1 << 63) - 1

# value_type -> (gguf-py's name, numpy dtype of a scalar; None for strings and arrays)
VALUE_TYPES = {
    0: ("UINT8", "u1"),
    1: ("INT8", "i1"),
    2: ("UINT16", "<u2"),
    3: ("INT16", "<i2"),
    4: ("UINT32", "<u4"),
    5: ("INT32", "<i4"),
    6: ("FLOAT32", "<f4"),
    7: ("BOOL", "u1"),
    8: ("STRING", None),
    9: ("ARRAY", None),
    10: ("UINT64", "<u8"),
    11: ("INT64", "<i8"),
    12: ("FLOAT64", "<f8"),
}

# the alignment of the data section: the one rule of reading, writing and checking (llama.cpp and gguf-py read
# general.alignment as a UINT32 and refuse any other type)
ALIGNMENT_KEY, ALIGNMENT_TYPE = "general.alignment", "UINT32"
alignment = MetadataAlignment(this.metadata, ALIGNMENT_KEY, DEFAULT_ALIGNMENT, ALIGNMENT_TYPE,
                              next(i for i, (name, _) in VALUE_TYPES.items() if name == ALIGNMENT_TYPE))



def tensor_end(offset, nbytes, alignment):
    """Where the next tensor starts after one of ``nbytes`` at ``offset``: llama.cpp and gguf-py place the
    tensors in order, each padded to the alignment (the last one too)."""
    return -(-(offset + nbytes) // alignment) * alignment


_VERSION = this._root.header.version
_count = IfThenElse(this.version == 1, Int32ul, Int64ul)

header = Struct(
    "magic" / Const(MAGIC) * 'b"GGUF"',
    "version" / Int32ul * "1, 2 or 3",
    Valid("version", this.version < 0x10000, why="a version that reads byte-swapped is a big-endian file")
    * "a version that reads byte-swapped (0x03000000) is a big-endian file: refused",
    Valid("version", (this.version >= 1) & (this.version <= 3)) * "versions 1, 2 and 3 exist",
    "n_tensors" / Derived(_count, len_(this._.tensor_infos)) * "number of tensor infos (u32 in v1, then u64)",
    "n_kv" / Derived(_count, len_(this._.metadata)) * "number of metadata key/values (u32 in v1, u64 after)",
)

metadata_kv = Struct(
    "key" / GGUFString(_VERSION) * "the key, e.g. general.architecture",
    "value_type" / Int32ul * "VALUE_TYPES: 0 u8, 1 i8, ..., 8 string, 9 array, 10 u64, 11 i64, 12 f64",
    Valid("value_type", this.value_type <= max(VALUE_TYPES), "GGUF's value types are 0 to 12")
    * "a type GGUF defines: 0 to 12",
    "value" / GGUFValue(this.value_type, _VERSION, VALUE_TYPES)
    * "the value; an array is u32 element_type, count, elements (strings and arrays included)",
)

tensor_info = Struct(
    "name" / GGUFString(_VERSION) * "the tensor's name",
    "n_dims" / Derived(Int32ul, len_(this.dims)) * "number of dimensions (llama.cpp: at most 4)",
    "dims" / IfThenElse(_VERSION == 1, NumpyArray("<u4", this.n_dims), NumpyArray("<u8", this.n_dims))
    * "ggml order: ne[0] (contiguous, PyTorch's last dimension) first; u32 in version 1, u64 later",
    "type" / Int32ul * "ggml type id (GGUF_TYPES: 0 F32, 1 F16, 2 Q4_0, ...)",
    "offset" / Int64ul * "where the data start, from the start of the data section; a multiple of the alignment",
)

gguf = Struct(
    "header" / header * "magic, version, counts",
    "metadata" / Entries(this.header.n_kv, metadata_kv, min_size=9) * "n_kv key/value pairs",
    "tensor_infos" / Entries(this.header.n_tensors, tensor_info, min_size=20) * "n_tensors tensor infos",
    "alignment" / alignment * "no bytes: general.alignment (a UINT32, a power of two) or 32",
    "has_data" / BytesLeft() * "no bytes: whether a data section follows (a file without tensors may end here)",
    "padding" / If(this.has_data, AlignTo(this.alignment))
    * "zero bytes up to a multiple of the alignment",
    "data" / If(this.has_data, TensorData()) * "the tensor data, to the end of the file",
)
