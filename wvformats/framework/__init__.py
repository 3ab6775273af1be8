"""The building blocks every schema uses, and the machinery that runs schemas safely and fast.

One module per concern:

* :mod:`.streams` -- :class:`BufferStream` (zero-copy views of bytes and memory maps), :class:`CompareStream`
  (the sink ``validate`` rebuilds into), the worker pool, letting go of mapped pages.
* :mod:`.located` -- errors located at a field path and byte offset; length checks before allocation.
* :mod:`.fields` -- field constructs: :class:`NumpyArray`, :class:`AlignTo`, :class:`Valid`,
  :class:`CheckedString`, :class:`CheckedBytes`, :class:`ShapeOf`.
* :mod:`.strings` -- :class:`StringTable` and the vectorised decoding of many strings.
* :mod:`.records` -- record tables walked and packed with numpy (length-prefixed and word-and-space records).
* :mod:`.chunks` -- :class:`Chunks`, chunked files with a user-extensible table of chunk types.
* :mod:`.run` -- :func:`parse` / :func:`build` (every failure a FormatError), :func:`compiled`.
* :mod:`.protowire` and :mod:`.protobuf` -- protobuf's wire format as constructs, and typed message views.
* :mod:`.walk` and :mod:`.docs` -- the annotated walk of a parse (dump, field at an offset) and the Markdown
  page of each format, both generated from the schemas.

Every custom construct emits compiled code that calls back into its checked ``_parse``/``_build``, so a
compiled schema keeps every check.
"""

from .chunks import Chunks
from .fields import AlignTo, CheckedBytes, CheckedString, NumpyArray, ShapeOf, Valid, expression
from .located import check_length, dotted, fail, warn
from .records import follow_chain, lockstep_chain, pack_records, prefixed_starts
from .run import INTERPRETED_ONLY, UNCHECKED, build, compiled, field_docs, parse
from .streams import BufferStream, CompareStream, background, byte_view, release, remaining
from .strings import StringTable, decode_all, decode_spans

__all__ = [
    "INTERPRETED_ONLY",
    "UNCHECKED",
    "AlignTo",
    "BufferStream",
    "CheckedBytes",
    "CheckedString",
    "Chunks",
    "CompareStream",
    "NumpyArray",
    "ShapeOf",
    "StringTable",
    "Valid",
    "background",
    "build",
    "byte_view",
    "check_length",
    "compiled",
    "decode_all",
    "decode_spans",
    "dotted",
    "expression",
    "fail",
    "field_docs",
    "follow_chain",
    "lockstep_chain",
    "pack_records",
    "parse",
    "prefixed_starts",
    "release",
    "remaining",
    "warn",
]
