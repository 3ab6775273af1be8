"""NumPy ``.npy``: one array, its dtype, order and shape in a header numpy writes as a Python dict literal.

The magic ``\\x93NUMPY``, the format version as two bytes (major, minor: 1.0, 2.0 or 3.0), the header's byte
length (u16 in 1.0, u32 in 2.0 and 3.0), the header: ``{'descr': '<f4', 'fortran_order': False, 'shape':
(3, 4), }`` (latin-1; UTF-8 in 3.0, for field names outside it), padded with spaces and ended by a newline
so that the array starts at a multiple of 64 bytes (16 in files of numpy before 1.9). Then the array's
bytes, C order or, where ``fortran_order`` is True, Fortran order. numpy.save writes 1.0 unless the header
needs more; ``descr`` is ``numpy.lib.format.dtype_to_descr`` of the dtype (a list of fields for a
structured one). An object array (``'|O'``) is a pickle: refused here.
"""

from construct import Const, GreedyBytes, Int8ul, this
from wvformats.schemas.constructs.npy import NpyData, NpyHeader
from wvformats.schemas.identity import NPY_MAGIC as MAGIC

from wvformats.framework import PackedStruct, Valid

array_fields = (
    "magic" / Const(MAGIC) * "b'\\x93NUMPY'",
    "major" / Int8ul * "format version, major: 1, 2 or 3",
    Valid("major", (this.major >= 1) & (this.major <= 3)) * "versions 1.0, 2.0 and 3.0 exist",
    "minor" / Int8ul * "format version, minor: 0",
    Valid("minor", this.minor == 0) * "versions 1.0, 2.0 and 3.0 exist",
    "header" / NpyHeader(this.major)
    * "u16 (1.0) or u32 (2.0, 3.0) length, then a dict literal of descr, fortran_order and shape, "
      "padded with spaces to a newline at a multiple of 64",
    "data" / NpyData(this.header) * "the array's bytes: shape x itemsize, C order (Fortran order if "
    "fortran_order)",
)

npy = PackedStruct(
    *array_fields,
    "trailing" / GreedyBytes * "bytes after the array: numpy.load ignores them, numpy.save writes none",
)

npy_array = PackedStruct(*array_fields)
"""The file without what may follow the array: an .npy that ends where its array does (in an .npz member
whose size is known only after it)."""

npy_head = PackedStruct(*array_fields[: [f.name for f in array_fields].index("data")])
"""The file as far as its header (magic, version, header dict): what a look at it reads, no byte of the array."""
