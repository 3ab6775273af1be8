"""NumPy ``.npz``: a zip archive (PKWARE's APPNOTE.TXT, version 6.3) of ``.npy`` members, as numpy writes it.

``numpy.savez`` stores each array as ``NAME.npy`` (method 0, stored); ``numpy.savez_compressed`` deflates it
(method 8). numpy opens each member with Python's ``zipfile`` and ``force_zip64=True``: every local header
carries a zip64 extra field with both sizes (its 32-bit size fields hold 0xFFFFFFFF) and says version 4.5.
The members' time stamps are zipfile's default, 1980-01-01 00:00:00. A seekable output gets its sizes and
CRC-32 in the local header (zipfile seeks back to write them); an unseekable one (a pipe) gets flag bit 3 and
a data descriptor after each member's data instead. The central directory follows the members, one entry
each (a zip64 extra field only where a size or offset passes 4 GiB), then, when the archive needs them
(more than 65535 members, or a central directory past 4 GiB), the zip64 end of central directory record and
its locator, then the end of central directory record.

All numbers little-endian. This schema reads the archive front to back, the way numpy wrote it: members
first (each local header, its data, its descriptor), then the directory; ``check()`` holds the directory
to the members (names, offsets, sizes, CRC-32s).
"""

import enum

from construct import (
    Const,
    GreedyBytes,
    If,
    IfThenElse,
    Int8ul,
    Int16ul,
    Int32ul,
    Int64ul,
    Struct,
    len_,
    this,
)
from wvformats.schemas.constructs.npz import DEFLATE_RATIO, DEFLATED, STORED, MemberData  # noqa: F401
from wvformats.schemas.identity import NPZ_MEMBER_SUFFIX as NPY_SUFFIX
from wvformats.schemas.identity import ZIP_LOCAL_MAGIC as LOCAL_MAGIC
from wvformats.schemas.npy import npy, npy_array

from wvformats.framework import CheckedBytes, Derived, EnumField, PackedStruct, Table, Valid, size_of

CENTRAL_MAGIC = b"PK\x01\x02"
DESCRIPTOR_MAGIC = b"PK\x07\x08"
ZIP64_END_MAGIC = b"PK\x06\x06"
ZIP64_LOCATOR_MAGIC = b"PK\x06\x07"
END_MAGIC = b"PK\x05\x06"

ZIP64_EXTRA = 0x0001  # the extra field's header id of the zip64 extended information
FULL = 0xFFFFFFFF  # a 32-bit size or offset that holds this has its value in the zip64 extra field
ZIP64_VERSION = 45  # version 4.5: zip64
ZIP64_END_SIZE = 44  # the zip64 end record's size field counts the bytes after itself: 44 without extensions
FLAG_ENCRYPTED = 0x0001
FLAG_DESCRIPTOR = 0x0008  # bit 3: CRC-32 and sizes follow the data, in a data descriptor
FLAG_UTF8 = 0x0800  # bit 11: the name is UTF-8 (else code page 437)

class Compression(enum.IntEnum):
    """APPNOTE 4.4.5, the compression methods of an .npz member."""

    stored = STORED
    deflated = DEFLATED


# APPNOTE 4.5.3: the zip64 extended information holds, in this order, the 64-bit value of each of these
# fields whose 32-bit header field is 0xFFFFFFFF (0xFFFF for the disk number)
ZIP64_ORDER = (("uncompressed_size", FULL), ("compressed_size", FULL), ("local_header_offset", FULL),
               ("disk_start", 0xFFFF))


def wide(field):
    """A size or offset as it is: the header's 32-bit field, or, where that holds 0xFFFFFFFF, its 64-bit value
    from the zip64 extra field (None where that has none)."""

    order = [name for name, _ in ZIP64_ORDER]
    before, full = ZIP64_ORDER[: order.index(field)], dict(ZIP64_ORDER)[field]

    def value(ctx):
        if ctx[field] != full:
            return ctx[field]
        at = sum(ctx.get(name) == mark for name, mark in before)  # (the zip64 values of marked fields before it)
        values = next((e["data"] for e in ctx["extra"] if e["id"] == ZIP64_EXTRA), ())
        return values[at] if at < len(values) else None

    return value


def zip64_complete(ctx):
    """Each field that says 0xFFFFFFFF has its value in the zip64 extra field."""
    marked = sum(ctx.get(name) == full for name, full in ZIP64_ORDER)  # (they take its values in order)
    return not marked or marked <= len(next((e.data for e in ctx.extra if e.id == ZIP64_EXTRA), ()))


def has_zip64(ctx):
    return any(e.id == ZIP64_EXTRA for e in ctx.extra)


def name_decodes(ctx):
    """A name flagged UTF-8 (bit 11) is UTF-8, as zipfile decodes it (it raises UnicodeDecodeError otherwise);
    an unflagged name is code page 437, which every byte is."""
    if not ctx.flags & FLAG_UTF8:
        return True
    try:
        bytes(ctx.name).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# APPNOTE 4.5.1: extra fields, each a header id, a size and that many bytes
extra_field = PackedStruct(
    "id" / Int16ul * "header id: 0x0001 zip64 extended information; others kept as bytes",
    "size" / Derived(Int16ul, lambda ctx: 8 * len(ctx.data) if ctx.id == ZIP64_EXTRA else len(ctx.data))
    * "bytes of data that follow",
    "data" / IfThenElse(this.id == ZIP64_EXTRA, Table(Int64ul, length=this.size, min_size=8),
                        CheckedBytes(this.size))
    * "zip64: u64 values of the fields that hold 0xFFFFFFFF (uncompressed size, compressed size, local "
      "header offset, in that order); other ids: their bytes",
)

extras = Table(extra_field, min_size=4)  # (the extra fields' bytes: what extra_length is derived from)

# APPNOTE 4.3.7: local file header, then 4.3.8: file data, then 4.3.9: data descriptor
local_entry = PackedStruct(
    "signature" / Const(LOCAL_MAGIC) * "b'PK\\x03\\x04'",
    "version_needed" / Int16ul * "version needed to extract, x10: 20 (2.0), 45 (4.5: zip64)",
    "flags" / Int16ul * "general purpose bits: 3 a data descriptor follows the data, 11 a UTF-8 name",
    Valid("flags", this.flags & FLAG_ENCRYPTED == 0, "an encrypted member is no .npy") * "bit 0 (encrypted) clear",
    "compression" / EnumField(Int16ul, Compression) * "0 stored (numpy.savez), 8 deflated (savez_compressed)",
    "mod_time" / Int16ul * "MS-DOS time: hour (5 bits), minute (6), second / 2 (5) (numpy: 0)",
    "mod_date" / Int16ul * "MS-DOS date: year - 1980 (7 bits), month (4), day (5) (numpy: 0x21, 1980-01-01)",
    "crc32" / Int32ul * "CRC-32 of the uncompressed bytes (0 when a data descriptor follows)",
    "compressed_size" / Int32ul * "bytes of data; 0xFFFFFFFF: in the zip64 extra field (numpy: always)",
    "uncompressed_size" / Int32ul * "bytes once inflated; 0xFFFFFFFF: in the zip64 extra field",
    "name_length" / Derived(Int16ul, len_(this.name)) * "bytes of the name",
    "extra_length" / Derived(Int16ul, size_of(extras, this.extra)) * "bytes of the extra fields",
    "name" / CheckedBytes(this.name_length) * "the member's name, NAME.npy (code page 437, UTF-8 with bit 11)",
    Valid("name", lambda ctx: ctx.name.endswith(NPY_SUFFIX), "an .npz holds .npy members") * "ends with .npy",
    Valid("name", name_decodes, "flag bit 11 says the name is UTF-8") * "UTF-8 where flag bit 11 is set",
    "extra" / Table(extra_field, length=this.extra_length, min_size=4)
    * "extra fields; numpy's: one zip64 field with both sizes (16 bytes)",
    Valid("extra", zip64_complete, "a field holding 0xFFFFFFFF needs its zip64 value")
    * "a zip64 value for each field holding 0xFFFFFFFF",
    "data" / MemberData(npy, npy_array, this.compression,
                        lambda ctx: None if ctx.flags & FLAG_DESCRIPTOR else wide("compressed_size")(ctx),
                        lambda ctx: None if ctx.flags & FLAG_DESCRIPTOR else wide("uncompressed_size")(ctx))
    * "the .npy: as it is (stored: its arrays are views of the archive) or a raw deflate stream",
    "descriptor" / If(this.flags & FLAG_DESCRIPTOR, PackedStruct(
        "signature" / Const(DESCRIPTOR_MAGIC) * "b'PK\\x07\\x08' (optional in APPNOTE; zipfile writes it)",
        "crc32" / Int32ul * "CRC-32 of the uncompressed bytes",
        "compressed_size" / IfThenElse(lambda ctx: has_zip64(ctx._), Int64ul, Int32ul)
        * "bytes of data (u64 where the local header has a zip64 field)",
        "uncompressed_size" / IfThenElse(lambda ctx: has_zip64(ctx._), Int64ul, Int32ul)
        * "bytes once inflated (u64 where the local header has a zip64 field)",
    )) * "with flag bit 3 (zipfile writing to a pipe): the CRC-32 and sizes, after the data",
)

# APPNOTE 4.3.12: central directory file header, one per member, in member order
central_entry = PackedStruct(
    "signature" / Const(CENTRAL_MAGIC) * "b'PK\\x01\\x02'",
    "version_made_by" / Int8ul * "zip version of the writer, x10 (45 after zip64)",
    "host_system" / Int8ul * "the writer's system: 0 MS-DOS, 3 Unix (what external_attributes mean)",
    "version_needed" / Int16ul * "version needed to extract, x10",
    "flags" / Int16ul * "general purpose bits, as in the local header",
    "compression" / EnumField(Int16ul, Compression) * "0 stored, 8 deflated",
    "mod_time" / Int16ul * "MS-DOS time, as in the local header",
    "mod_date" / Int16ul * "MS-DOS date, as in the local header",
    "crc32" / Int32ul * "CRC-32 of the uncompressed bytes",
    "compressed_size" / Int32ul * "bytes of data; 0xFFFFFFFF: in the zip64 extra field",
    "uncompressed_size" / Int32ul * "bytes once inflated; 0xFFFFFFFF: in the zip64 extra field",
    "name_length" / Derived(Int16ul, len_(this.name)) * "bytes of the name",
    "extra_length" / Derived(Int16ul, size_of(extras, this.extra)) * "bytes of the extra fields",
    "comment_length" / Derived(Int16ul, len_(this.comment)) * "bytes of the member's comment",
    "disk_start" / Int16ul * "disk of the local header: 0",
    "internal_attributes" / Int16ul * "bit 0: text data (zipfile: 0)",
    "external_attributes" / Int32ul * "Unix mode << 16 (zipfile: 0o600, rw-------)",
    "local_header_offset" / Int32ul * "where the member's local header starts; 0xFFFFFFFF: in the zip64 extra",
    "name" / CheckedBytes(this.name_length) * "the member's name, as in its local header",
    Valid("name", name_decodes, "flag bit 11 says the name is UTF-8") * "UTF-8 where flag bit 11 is set",
    "extra" / Table(extra_field, length=this.extra_length, min_size=4)
    * "extra fields: zip64 where a size or offset passes 4 GiB (sizes both, then the offset)",
    Valid("extra", zip64_complete, "a field holding 0xFFFFFFFF needs its zip64 value")
    * "a zip64 value for each field holding 0xFFFFFFFF",
    "comment" / CheckedBytes(this.comment_length) * "the member's comment (numpy: none)",
)

# APPNOTE 4.3.14 and 4.3.15: zip64 end of central directory record and locator
zip64_end = PackedStruct(
    "signature" / Const(ZIP64_END_MAGIC) * "b'PK\\x06\\x06'",
    "record_size" / Derived(Int64ul, len_(this.extensible) + ZIP64_END_SIZE)
    * "bytes of the record after this field: 44 (and any extensible data)",
    Valid("record_size", this.record_size >= ZIP64_END_SIZE) * "at least 44",
    "version_made_by" / Int16ul * "45",
    "version_needed" / Int16ul * "45",
    "disk" / Int32ul * "this disk: 0",
    "directory_disk" / Int32ul * "disk where the central directory starts: 0",
    "entries_on_disk" / Int64ul * "central directory entries on this disk",
    "entries" / Int64ul * "central directory entries in all",
    "directory_size" / Int64ul * "bytes of the central directory",
    "directory_offset" / Int64ul * "where the central directory starts",
    "extensible" / CheckedBytes(this.record_size - ZIP64_END_SIZE) * "zip64 extensible data (zipfile: none)",
)

zip64_locator = PackedStruct(
    "signature" / Const(ZIP64_LOCATOR_MAGIC) * "b'PK\\x06\\x07'",
    "end_disk" / Int32ul * "disk of the zip64 end record: 0",
    "end_offset" / Int64ul * "where the zip64 end record starts",
    "disks" / Int32ul * "disks in all: 1",
)

# APPNOTE 4.3.16: end of central directory record
end = PackedStruct(
    "signature" / Const(END_MAGIC) * "b'PK\\x05\\x06'",
    "disk" / Int16ul * "this disk: 0",
    "directory_disk" / Int16ul * "disk where the central directory starts: 0",
    "entries_on_disk" / Int16ul * "entries on this disk (0xFFFF: in the zip64 end record)",
    "entries" / Int16ul * "entries in all (0xFFFF: in the zip64 end record)",
    "directory_size" / Int32ul * "bytes of the central directory (0xFFFFFFFF: in the zip64 end record)",
    "directory_offset" / Int32ul * "where it starts (0xFFFFFFFF: in the zip64 end record)",
    "comment_length" / Derived(Int16ul, len_(this.comment)) * "bytes of the archive's comment",
    "comment" / CheckedBytes(this.comment_length) * "the archive's comment (numpy: none)",
)


def _entries(ctx):
    """The number of entries the end records give (the zip64 record's where the archive has one)."""
    return ctx.zip64_end[0].entries if len(ctx.zip64_end) else ctx.end.entries


npz = Struct(
    "members" / Table(local_entry, lead=LOCAL_MAGIC, min_size=30)
    * "each member: its local header, its data, its data descriptor (with flag bit 3)",
    "directory" / Table(central_entry, lead=CENTRAL_MAGIC, min_size=46) * "the central directory: an entry per member",
    Valid("directory", lambda ctx: len(ctx.directory) == len(ctx.members), "one entry per member")
    * "an entry per member",
    "zip64_end" / Table(zip64_end, lead=ZIP64_END_MAGIC, min_size=56)
    * "the zip64 end of central directory record, where the archive needs it (none or one)",
    Valid("zip64_end", lambda ctx: len(ctx.zip64_end) <= 1) * "one at most",
    "zip64_locator" / Table(zip64_locator, lead=ZIP64_LOCATOR_MAGIC, min_size=20)
    * "its locator (none or one, with the record)",
    Valid("zip64_locator", lambda ctx: len(ctx.zip64_locator) == len(ctx.zip64_end)) * "one with the record",
    "end" / end * "the end of central directory record",
    Valid("end", lambda ctx: _entries(ctx) == len(ctx.members), "the entries it counts are the members")
    * "counts the members (its own count, or the zip64 record's)",
    "trailing" / GreedyBytes * "nothing: the end record is the archive's last",
    Valid("trailing", lambda ctx: len(ctx.trailing) == 0, "bytes after the end record") * "empty",
)
