"""The building blocks every schema uses, and the machinery that runs schemas safely and fast.

One module per concern:

* :mod:`.streams` -- :class:`BufferStream` (zero-copy views of bytes and memory maps), :class:`CompareStream`
  (the sink ``validate`` rebuilds into), the worker pool, letting go of mapped pages; :mod:`.mapped` -- the file
  each map shows, opened again for ``pread`` (standard library only).
* :mod:`.located` -- errors located at a field path and byte offset; length checks before allocation.
* :mod:`.fields` -- field constructs: :class:`NumpyArray`, :class:`AlignTo`, :class:`Valid`,
  :class:`CheckedString`, :class:`CheckedBytes`, :class:`ShapeOf`, :class:`Derived` and :func:`size_of` (a
  count, length, size or offset that the builder computes), :func:`fixed_size` (of a record's fixed part).
* :mod:`.packed` -- :class:`PackedStruct`, a Struct whose runs of fixed-size fields take one unpack.
* :mod:`.strings` -- :class:`StringTable` and the vectorised decoding of many strings.
* :mod:`.records` -- record tables walked and packed with numpy (length-prefixed and word-and-space records).
* :mod:`.wordtables` and :mod:`.texttable` -- word tables (a word and a row of numbers per record): binary
  (:class:`LeaderRecords`, :class:`Word2VecRecords`) and text (:class:`TextRecords`, :class:`HeaderLine`,
  :class:`Trailer`, the number styles of text writers).
* :mod:`.chunks` -- :class:`Chunks`, chunked files with a user-extensible table of chunk types.
* :mod:`.run` -- :func:`parse` / :func:`build` (every failure a FormatError), :func:`compiled`.
* :mod:`.plain` -- the readers that need no construct (arrays, JSON texts, tensor tables), which the field
  constructs parse with; :mod:`.scalars` -- a number at a byte (standard library only: the sniffers use it).
* :mod:`.plans` and :mod:`.cache` -- a schema's fields as a cached plan, read without importing construct (what
  ``read`` of a safetensors or .npy file runs), and the cache folder.
* :mod:`.lazy` -- :class:`At`, a member at an offset another field gives, parsed when asked for, and the
  values of a lazy parse (``parse(..., lazy=True)``): fields parsed as far as they are asked for.
* :mod:`.protowire` and :mod:`.protobuf` -- protobuf's wire format as constructs, and typed message views.
* :mod:`.walk` and :mod:`.docs` -- the annotated walk of a parse (dump, field at an offset) and the Markdown
  page of each format, both generated from the schemas.

Every custom construct emits compiled code that calls back into its checked ``_parse``/``_build``, so a
compiled schema keeps every check.
"""

import importlib
import sys
import types
from typing import Any

# every name is imported on first use (``from wvformats.framework import JSONField``) from its module, so that
# importing the framework costs nothing and a read served by a cached plan (:mod:`.plans`) imports no construct
_LAZY = {name: module for module, names in {
    "chunks": ("Chunks",),
    "fields": ("AlignTo", "Checked", "CheckedBytes", "CheckedString", "Derived", "EnumField", "NumpyArray",
               "SchemaError", "ShapeOf", "Valid", "bound_checks", "encode_utf8", "evaluate", "expression",
               "fixed_size", "size_of", "write_array"),
    "plain": ("decode_utf8", "explicit_dtype", "read_array"),  # (what needs no construct)
    "located": ("UNCHECKED", "check_length", "dotted", "fail", "tell", "warn"),
    "run": ("INTERPRETED_ONLY", "build", "compiled", "field_docs", "parse"),
    "streams": ("BufferStream", "CompareStream", "background", "bounded", "byte_view", "release", "remaining",
                "window", "zero_copy"),
    "mapped": ("mapped_file", "open_mapped", "remember_file"),
    "walk": ("Part", "Span", "covering", "hexdump", "leaves", "short", "walk", "walk_into", "walk_parts"),
    "docs": ("describe", "page", "schema_table"),
    "jsonfield": ("JSONArray", "JSONField", "JSONObject", "compact"),
    "lazy": ("At", "Deferred", "LazyFields", "LazyChunks", "LazyStrings", "LazyValue", "parse_member"),
    "kernels": ("kernel", "sources", "KernelMissingWarning", "KERNEL_DIR_ENV", "PURE_PYTHON_ENV"),
    "packed": ("PackedStruct",),
    "records": ("WalkPolicy", "follow_chain", "lockstep_chain", "pack_records", "prefixed_starts", "selected_rows",
                "walk_region"),
    "strings": ("StringTable", "decode_all", "decode_spans"),
    "tables": ("Arrays", "Records", "Table", "Tensors"),
    "wordtables": ("LeaderRecords", "Word2VecRecords"),
    "texttable": ("TextRecords", "HeaderLine", "Trailer", "TEXT_STYLES", "text_parser"),
    "protobuf": ("F", "MessageType", "ProtoEnum", "ProtoMessage", "View", "decode_scalar", "encode_message",
                 "encode_scalar", "enum_names", "known_field", "message_fields", "occurrences", "wire_field",
                 "wire_type_of"),
    "protowire": ("EGROUP", "I32", "I64", "LEN", "SGROUP", "VARINT", "WIRE_NAMES", "LazyMessage", "Message",
                  "build_fields", "encode_varint", "parse_fields", "read_varint", "run_message", "zigzag_decode",
                  "zigzag_encode"),
    "plans": ("plan_of", "cached_plan", "run_plan", "field_of", "forget_plans"),
    "cache": ("cache_folder", "keep", "loads", "stamp"),
    "scalars": ("scalar", "scalar_size", "reinterpret", "LEN_FORMATS"),
}.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Framework(types.ModuleType):
    """The package, whose name ``walk`` is the function: importing the module ``.walk`` (which sets the
    package's attribute to the module) leaves it so."""

    @property
    def walk(self) -> Any:
        return __getattr__("walk")

    @walk.setter
    def walk(self, value: Any) -> None:
        if not isinstance(value, types.ModuleType):
            globals()["walk"] = value


sys.modules[__name__].__class__ = _Framework


# the public API: what a family, a plugin or a schema imports (tests/framework/test_api.py holds every module
# outside the framework to these names)
__all__ = [
    # running schemas
    "parse", "build", "compiled", "INTERPRETED_ONLY", "UNCHECKED", "SchemaError", "bound_checks",
    # field constructs
    "NumpyArray", "AlignTo", "Valid", "Derived", "size_of", "EnumField", "CheckedString", "CheckedBytes",
    "ShapeOf", "JSONField", "At",
    "JSONObject", "JSONArray", "compact", "PackedStruct", "StringTable", "Table", "Records", "Tensors", "Arrays", "Chunks",
    # writing a custom construct that stays checked when compiled
    "Checked", "evaluate", "tell", "fail", "warn", "check_length", "dotted", "expression", "decode_utf8",
    "encode_utf8", "explicit_dtype", "read_array", "write_array", "fixed_size",
    # lazy parsing: what parse(..., lazy=True) and an At member give
    "Deferred", "LazyFields", "LazyChunks", "LazyStrings", "LazyValue", "parse_member",
    # streams and buffers
    "BufferStream", "CompareStream", "remaining", "bounded", "window", "zero_copy", "byte_view", "release", "background",
    # the files behind memory maps (read in part with pread)
    "remember_file", "mapped_file", "open_mapped",
    # record tables walked with numpy
    "follow_chain", "lockstep_chain", "pack_records", "prefixed_starts", "walk_region", "WalkPolicy", "selected_rows",
    "decode_spans", "decode_all",
    # word tables: a word and a row of numbers per record, binary and text
    "LeaderRecords", "Word2VecRecords", "TextRecords", "HeaderLine", "Trailer", "TEXT_STYLES", "text_parser",
    # protobuf
    "Message", "LazyMessage", "F", "MessageType", "ProtoEnum", "ProtoMessage", "View", "decode_scalar",
    "encode_message", "encode_scalar", "enum_names", "known_field", "message_fields", "occurrences", "wire_field",
    "wire_type_of", "parse_fields",
    "build_fields", "run_message",
    "read_varint", "encode_varint", "zigzag_decode", "zigzag_encode", "VARINT", "I64", "LEN", "SGROUP", "EGROUP",
    "I32", "WIRE_NAMES",
    # cached plans: a schema's file read without construct; a number at a byte (sniffers)
    "plan_of", "cached_plan", "run_plan", "forget_plans", "cache_folder", "keep", "stamp", "field_of", "loads", "scalar", "scalar_size",
    "reinterpret", "LEN_FORMATS",
    # the compiled kernels (the families' and the framework's) and their pure-Python twins
    "kernel", "sources", "KernelMissingWarning", "KERNEL_DIR_ENV", "PURE_PYTHON_ENV",
    # the annotated walk (dump, validate, inspect) and the docs pages
    "walk", "walk_into", "walk_parts", "Part", "Span", "covering", "hexdump", "leaves", "short", "field_docs",
    "describe", "schema_table", "page",
]
