"""The protobuf wire format (proto2 and proto3 alike), lossless.

A message is a sequence of fields, each a varint tag ``field_number << 3 | wire_type`` and a value:

| wire type | value |
|---|---|
| 0 VARINT | base-128 varint, up to 10 bytes (negative int32/enum values take 10) |
| 1 I64 | 8 raw bytes (fixed64, sfixed64, double) |
| 2 LEN | varint length, then that many bytes (string, bytes, sub-message, packed repeated) |
| 3 SGROUP | fields until the matching 4 EGROUP tag (deprecated groups) |
| 5 I32 | 4 raw bytes (fixed32, sfixed32, float) |

Fields keep their order, duplicates and unknown numbers; non-minimal varints keep their bytes.
"""

from wvformats.framework.protowire import Message

message = Message() * "fields to the end of the data: tag varint, then the value its wire type says"
