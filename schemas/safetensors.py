"""safetensors (``.safetensors``), Hugging Face's tensor file: a header length, a JSON header, a byte buffer.

Little-endian. An unsigned 64-bit length ``N`` (at most 100 MB), then ``N`` bytes of UTF-8 JSON: an object
whose keys are tensor names, each ``{"dtype": CODE, "shape": [...], "data_offsets": [begin, end]}``, and an
optional ``"__metadata__"`` object of string -> string. The offsets are relative to the byte buffer that
follows the header; sorted by begin they tile it: no gap, no overlap, no byte after the last, and each span
is the shape's element count times the dtype's size. ``safetensors`` pads the JSON with spaces so that the
buffer starts at a multiple of 8 and lays the tensors out by dtype (``DTYPES`` order, last first) then
name. A key appears once; NaN is not JSON.
"""

from construct import Struct, this
from wvformats.schemas.identity import SAFETENSORS_HEADER_LENGTH as HEADER_LENGTH
from wvformats.schemas.identity import SAFETENSORS_HEADER_LIMIT as HEADER_LIMIT
from wvformats.schemas.identity import SAFETENSORS_METADATA as METADATA

from wvformats.framework import JSONField, Tensors, remaining

ALIGNMENT = 8  # of the buffer's start: the JSON is padded with spaces to it

# every dtype code safetensors 0.8 reads, in its Dtype enum's order (which the writer sorts by, descending),
# with its numpy dtype; types numpy lacks as their raw bits (bfloat16, float8) or, packed below a byte
# (float4, float6), as a bit width: those tensors read as their raw bytes
DTYPES = {
    "BOOL": "?",
    "F4": 4,  # float4 e2m1, two to a byte, the first in the low nibble
    "F6_E2M3": 6,  # float6, four to three bytes
    "F6_E3M2": 6,
    "U8": "u1",
    "I8": "i1",
    "F8_E5M2": "u1",  # float8 e5m2 (raw bits)
    "F8_E4M3": "u1",  # float8 e4m3fn: no infinity, 0x7f/0xff NaN (raw bits)
    "F8_E8M0": "u1",  # float8 e8m0fnu: a power of two, 0xff NaN (raw bits)
    "F8_E4M3FNUZ": "u1",  # float8 e4m3fnuz: exponent bias 8, 0x80 NaN, no -0 (raw bits)
    "F8_E5M2FNUZ": "u1",  # float8 e5m2fnuz: exponent bias 16, 0x80 NaN, no -0 (raw bits)
    "I16": "<i2",
    "U16": "<u2",
    "F16": "<f2",
    "BF16": "<u2",  # bfloat16 (raw bits: the high half of a float32)
    "I32": "<i4",
    "U32": "<u4",
    "F32": "<f4",
    "C64": "<c8",
    "F64": "<f8",
    "I64": "<i8",
    "U64": "<u8",
}

# the tensors' data, laid out by the header: what a writer's header gets its data_offsets from (laid_out)
tensors = Tensors(this.header, DTYPES, skip=(METADATA,))

safetensors = Struct(
    "header" / JSONField(HEADER_LENGTH, limit=HEADER_LIMIT, align=ALIGNMENT)
    * "u64 byte length N (at most 100 MB), then N bytes of UTF-8 JSON: tensor name -> {dtype, shape, "
      "data_offsets}, and __metadata__ (str -> str); padded with spaces so the buffer starts 8-aligned",
    "data" / tensors
    * "the byte buffer: each tensor at its data_offsets (relative to here), C order, little-endian; the "
      "spans tile the buffer exactly",
)


# a sharded checkpoint: shards named {prefix}-00001-of-0000N.safetensors, each a safetensors file of its own, and
# {prefix}.safetensors.index.json naming the shard of every tensor
INDEX_LIMIT = HEADER_LIMIT  # (an index lists names as a header does: the same cap)

index = Struct(
    "index" / JSONField(lambda ctx: remaining(ctx._io) if ctx._parsing else None, limit=INDEX_LIMIT)
    * 'the whole file, a JSON object: "metadata" ({"total_size": bytes of tensor data in all, ...}) and '
      '"weight_map" (tensor name -> the shard file beside the index that holds it)',
)
