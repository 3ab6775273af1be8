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
to the members (names, offsets, sizes, CRC-32s). Building, every number the records hold of the data is
derived: a member's CRC-32 and sizes from its ``.npy`` (in the local header, its zip64 field or its
descriptor), a directory entry's copy of its member's header, the member's offset and the zip64 field
where zipfile's limits need it, the end records' counts, sizes and offsets (the zip64 pair where needed);
a writer gives names, arrays and the records' own choices (method, flags, versions, attributes, comments).
``head`` reads what ``inspect`` needs from the end: the end records, the directory, each member's header.
"""

import enum
from typing import Any, NamedTuple

from construct import (
    Computed,
    Const,
    Container,
    GreedyBytes,
    If,
    IfThenElse,
    Int8ul,
    Int16ul,
    Int32ul,
    Int64ul,
    Pointer,
    Struct,
    len_,
    this,
)
from wvformats.schemas.constructs.npy import MAX_HEADER_OPTION
from wvformats.schemas.constructs.npz import (  # noqa: F401
    DEFLATE_RATIO,
    DEFLATED,
    STORED,
    AtEach,
    MemberData,
    MemberHead,
    MemberName,
    ZipRecords,
)
from wvformats.schemas.identity import NPZ_MEMBER_SUFFIX as NPY_SUFFIX
from wvformats.schemas.identity import ZIP_LOCAL_MAGIC as LOCAL_MAGIC
from wvformats.schemas.npy import npy, npy_array, npy_head

from wvformats.errors import FormatError
from wvformats.framework import CheckedBytes, Derived, EnumField, PackedStruct, Table, Valid, fixed_size

CENTRAL_MAGIC = b"PK\x01\x02"
DESCRIPTOR_MAGIC = b"PK\x07\x08"
ZIP64_END_MAGIC = b"PK\x06\x06"
ZIP64_LOCATOR_MAGIC = b"PK\x06\x07"
END_MAGIC = b"PK\x05\x06"

ZIP64_EXTRA = 0x0001  # the extra field's header id of the zip64 extended information
FULL = 0xFFFFFFFF  # a 32-bit size or offset that holds this has its value in the zip64 extra field
COUNT_FULL = 0xFFFF  # an end record's count that holds this has its value in the zip64 end record
ZIP64_LIMIT = (1 << 31) - 1  # zipfile's: a directory entry's size or offset past it goes to a zip64 field
ZIP64_VERSION = 45  # version 4.5: zip64
ZIP64_END_SIZE = 44  # the zip64 end record's size field counts the bytes after itself: 44 without extensions
FLAG_ENCRYPTED = 0x0001
FLAG_DESCRIPTOR = 0x0008  # bit 3: CRC-32 and sizes follow the data, in a data descriptor
FLAG_UTF8 = 0x0800  # bit 11: the name is UTF-8 (else code page 437)
COMMENT_MAX = 0xFFFF  # the longest archive comment: the end record lies in the last 22 + 65535 bytes


class Compression(enum.IntEnum):
    """APPNOTE 4.4.5, the compression methods of an .npz member."""

    stored = STORED
    deflated = DEFLATED


# APPNOTE 4.5.3: the zip64 extended information holds, in this order, the 64-bit value of each of these
# fields whose 32-bit header field is 0xFFFFFFFF (0xFFFF for the disk number)
ZIP64_ORDER = (("uncompressed_size", FULL), ("compressed_size", FULL), ("local_header_offset", FULL),
               ("disk_start", 0xFFFF))


def _zip64_values(ctx):
    """The values of a record's zip64 extra field (None: it has none)."""
    return next((e["data"] for e in ctx["extra"] if e["id"] == ZIP64_EXTRA), None)


def wide(field):
    """A size or offset as it is: the header's 32-bit field, or, where that holds 0xFFFFFFFF, its 64-bit value
    from the zip64 extra field (None where that has none)."""

    order = [name for name, _ in ZIP64_ORDER]
    before, full = ZIP64_ORDER[: order.index(field)], dict(ZIP64_ORDER)[field]

    def value(ctx):
        if ctx[field] != full:
            return ctx[field]
        at = sum(ctx.get(name) == mark for name, mark in before)  # (the zip64 values of marked fields before it)
        values = _zip64_values(ctx) or ()
        return values[at] if at < len(values) else None

    return value


def zip64_complete(ctx):
    """Each field that says 0xFFFFFFFF has its value in the zip64 extra field. Building, the sizes' and the
    offset's are derived: a disk number said to be there (0xFFFF) has none."""
    if ctx.get("_building"):
        return ctx.get("disk_start") != dict(ZIP64_ORDER)["disk_start"]
    marked = sum(ctx.get(name) == full for name, full in ZIP64_ORDER)  # (they take its values in order)
    return not marked or marked <= len(_zip64_values(ctx) or ())


def has_zip64(ctx):
    return any(e["id"] == ZIP64_EXTRA for e in ctx["extra"] or ())


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


def extra_field(zip64):
    """APPNOTE 4.5.1: an extra field, a header id, a size and that many bytes; ``zip64(record)``: the values
    the builder gives a zip64 field of that record (its context)."""
    return PackedStruct(
        "id" / Int16ul * "header id: 0x0001 zip64 extended information; others kept as bytes",
        "size" / Derived(Int16ul, lambda ctx: _extra_size(ctx, zip64(ctx["_"]))) * "bytes of data that follow",
        "data" / IfThenElse(this.id == ZIP64_EXTRA,
                            Derived(Table(Int64ul, length=this.size, min_size=8), lambda ctx: zip64(ctx["_"])),
                            CheckedBytes(this.size))
        * "zip64: u64 values of the fields that hold 0xFFFFFFFF (uncompressed size, compressed size, local "
          "header offset, in that order); other ids: their bytes",
    )


def _extra_size(field, zip64):
    """The bytes of an extra field's data: a u64 a zip64 value (``zip64``: the values the record gives it)."""
    return Int64ul.sizeof() * len(zip64) if field["id"] == ZIP64_EXTRA else len(field["data"])


def _extras_size(extras, zip64):
    """The bytes of a record's extra fields: each its id, its size and the data its size counts."""
    return sum(EXTRA_HEAD + _extra_size(e, zip64) for e in extras)


# ---------------------------------------------------------------------------------------------------------
# a member: what its records derive from its data

def _local(ctx):
    """What a local header derives, learnt once (kept in its context): its CRC-32, 32-bit sizes and zip64
    values. A member's own (all 0 where they come after the data, in a descriptor, as zipfile writes them);
    a size 0xFFFFFFFF where the zip64 field holds it (numpy's zipfile: a header of version 4.5 with a zip64
    field; an older zipfile kept the size there below 2 GiB, at version 2.0)."""
    known = ctx.get("_local")
    if known is None:
        crc = size = length = 0
        if not ctx["flags"] & FLAG_DESCRIPTOR:
            crc, size, length, _ = member_data.facts(ctx)
        marked = ctx["version_needed"] >= ZIP64_VERSION and has_zip64(ctx)
        known = ctx["_local"] = (crc, FULL if marked or size >= FULL else size,
                                 FULL if marked or length >= FULL else length, [length, size])
    return known


member_data = MemberData(npy, npy_array, this.compression,
                         lambda ctx: None if ctx.flags & FLAG_DESCRIPTOR else wide("compressed_size")(ctx),
                         lambda ctx: None if ctx.flags & FLAG_DESCRIPTOR else wide("uncompressed_size")(ctx),
                         lambda ctx: ctx["flags"] & FLAG_DESCRIPTOR)

local_extra = extra_field(lambda entry: _local(entry)[3])
EXTRA_HEAD = fixed_size(local_extra, stop="data")  # (an extra field's id and size)

# APPNOTE 4.3.7: local file header, then 4.3.8: file data, then 4.3.9: data descriptor
local_entry = PackedStruct(
    "signature" / Const(LOCAL_MAGIC) * "b'PK\\x03\\x04'",
    "version_needed" / Int16ul * "version needed to extract, x10: 20 (2.0), 45 (4.5: zip64)",
    "flags" / Int16ul * "general purpose bits: 3 a data descriptor follows the data, 11 a UTF-8 name",
    Valid("flags", this.flags & FLAG_ENCRYPTED == 0, "an encrypted member is no .npy") * "bit 0 (encrypted) clear",
    "compression" / EnumField(Int16ul, Compression) * "0 stored (numpy.savez), 8 deflated (savez_compressed)",
    "mod_time" / Int16ul * "MS-DOS time: hour (5 bits), minute (6), second / 2 (5) (numpy: 0)",
    "mod_date" / Int16ul * "MS-DOS date: year - 1980 (7 bits), month (4), day (5) (numpy: 0x21, 1980-01-01)",
    "crc32" / Derived(Int32ul, lambda ctx: _local(ctx)[0])
    * "CRC-32 of the uncompressed bytes (0 when a data descriptor follows)",
    "compressed_size" / Derived(Int32ul, lambda ctx: _local(ctx)[1])
    * "bytes of data; 0xFFFFFFFF: in the zip64 extra field (numpy: always)",
    "uncompressed_size" / Derived(Int32ul, lambda ctx: _local(ctx)[2])
    * "bytes once inflated; 0xFFFFFFFF: in the zip64 extra field",
    "name_length" / Derived(Int16ul, len_(this.name)) * "bytes of the name",
    "extra_length" / Derived(Int16ul, lambda ctx: _extras_size(ctx["extra"], _local(ctx)[3]))
    * "bytes of the extra fields",
    "name" / MemberName(this.name_length, NPY_SUFFIX)
    * "the member's name, NAME.npy (code page 437, UTF-8 with bit 11)",
    Valid("name", lambda ctx: ctx.name.endswith(NPY_SUFFIX), "an .npz holds .npy members") * "ends with .npy",
    Valid("name", name_decodes, "flag bit 11 says the name is UTF-8") * "UTF-8 where flag bit 11 is set",
    "extra" / Table(local_extra, length=this.extra_length, min_size=EXTRA_HEAD)
    * "extra fields; numpy's: one zip64 field with both sizes (16 bytes)",
    Valid("extra", zip64_complete, "a field holding 0xFFFFFFFF needs its zip64 value")
    * "a zip64 value for each field holding 0xFFFFFFFF",
    "data" / member_data
    * "the .npy: as it is (stored: its arrays are views of the archive) or a raw deflate stream",
    "descriptor" / If(this.flags & FLAG_DESCRIPTOR, PackedStruct(
        "signature" / Const(DESCRIPTOR_MAGIC) * "b'PK\\x07\\x08' (optional in APPNOTE; zipfile writes it)",
        "crc32" / Derived(Int32ul, lambda ctx: member_data.facts(ctx._).crc32) * "CRC-32 of the uncompressed bytes",
        "compressed_size" / Derived(IfThenElse(lambda ctx: has_zip64(ctx._), Int64ul, Int32ul),
                                    lambda ctx: member_data.facts(ctx._).size)
        * "bytes of data (u64 where the local header has a zip64 field)",
        "uncompressed_size" / Derived(IfThenElse(lambda ctx: has_zip64(ctx._), Int64ul, Int32ul),
                                      lambda ctx: member_data.facts(ctx._).length)
        * "bytes once inflated (u64 where the local header has a zip64 field)",
    )) * "with flag bit 3 (zipfile writing to a pipe): the CRC-32 and sizes, after the data",
)


# ---------------------------------------------------------------------------------------------------------
# a directory entry: its member's header again, where the member starts, zip64 where zipfile needs it

class _Listed(NamedTuple):
    member: Any  # the local entry, as built
    facts: Any  # its data's CRC-32 and sizes
    offset: int  # where it starts, from the archive's start
    zip64: list  # the entry's zip64 values (none: no zip64 field)


def _listed(ctx):
    """What a directory entry derives from the member it lists (the one of its index, as the builder built
    it), learnt once: its zip64 values as zipfile gives them, both sizes where either passes zipfile's limit,
    the offset where it does."""
    known = ctx.get("_listed")
    if known is None:
        archive, i = ctx["_"], ctx["_index"]
        member, at = archive["_members_built"][i], archive["_members_at"]
        facts, offset = member_data.facts(member), at[i] - at[0]
        big = facts.length > ZIP64_LIMIT or facts.size > ZIP64_LIMIT
        zip64 = [facts.length, facts.size] * big + [offset] * (offset > ZIP64_LIMIT)
        known = ctx["_listed"] = _Listed(member, facts, offset, zip64)
    return known


def _central_extras(ctx):
    """A directory entry's extra fields: zip64 first where needed, then those it has of other ids."""
    zip64 = [Container(id=ZIP64_EXTRA, size=None, data=None)] if _listed(ctx).zip64 else []
    return zip64 + [e for e in ctx.get("extra") or () if e["id"] != ZIP64_EXTRA]


def _big(ctx):
    """Whether a directory entry's sizes are in its zip64 field (both, where either passes zipfile's limit)."""
    return len(_listed(ctx).zip64) >= 2


central_extra = extra_field(lambda entry: _listed(entry).zip64)

# APPNOTE 4.3.12: central directory file header, one per member, in member order
central_entry = PackedStruct(
    "signature" / Const(CENTRAL_MAGIC) * "b'PK\\x01\\x02'",
    "version_made_by" / Int8ul * "zip version of the writer, x10 (zipfile: its member's version)",
    "host_system" / Int8ul * "the writer's system: 0 MS-DOS, 3 Unix (what external_attributes mean)",
    "version_needed" / Derived(Int16ul, lambda ctx: max(_listed(ctx).member["version_needed"],
                                                        ZIP64_VERSION if _listed(ctx).zip64 else 0))
    * "version needed to extract, x10: the member's (4.5 where this entry has a zip64 field)",
    "flags" / Derived(Int16ul, lambda ctx: _listed(ctx).member["flags"])
    * "general purpose bits, as in the local header",
    "compression" / Derived(EnumField(Int16ul, Compression), lambda ctx: _listed(ctx).member["compression"])
    * "0 stored, 8 deflated (the member's)",
    "mod_time" / Derived(Int16ul, lambda ctx: _listed(ctx).member["mod_time"]) * "MS-DOS time, as in the local header",
    "mod_date" / Derived(Int16ul, lambda ctx: _listed(ctx).member["mod_date"]) * "MS-DOS date, as in the local header",
    "crc32" / Derived(Int32ul, lambda ctx: _listed(ctx).facts.crc32) * "CRC-32 of the uncompressed bytes",
    "compressed_size" / Derived(Int32ul, lambda ctx: FULL if _big(ctx) else _listed(ctx).facts.size)
    * "bytes of data; 0xFFFFFFFF: in the zip64 extra field",
    "uncompressed_size" / Derived(Int32ul, lambda ctx: FULL if _big(ctx) else _listed(ctx).facts.length)
    * "bytes once inflated; 0xFFFFFFFF: in the zip64 extra field",
    "name_length" / Derived(Int16ul, lambda ctx: len(_listed(ctx).member["name"])) * "bytes of the name",
    "extra_length" / Derived(Int16ul, lambda ctx: _extras_size(_central_extras(ctx), _listed(ctx).zip64))
    * "bytes of the extra fields",
    "comment_length" / Derived(Int16ul, len_(this.comment)) * "bytes of the member's comment",
    "disk_start" / Int16ul * "disk of the local header: 0",
    "internal_attributes" / Int16ul * "bit 0: text data (zipfile: 0)",
    "external_attributes" / Int32ul * "Unix mode << 16 (zipfile: 0o600, rw-------)",
    "local_header_offset" / Derived(Int32ul, lambda ctx: FULL if _listed(ctx).offset > ZIP64_LIMIT
                                    else _listed(ctx).offset)
    * "where the member's local header starts; 0xFFFFFFFF: in the zip64 extra",
    "name" / Derived(CheckedBytes(this.name_length), lambda ctx: _listed(ctx).member["name"])
    * "the member's name, as in its local header",
    Valid("name", name_decodes, "flag bit 11 says the name is UTF-8") * "UTF-8 where flag bit 11 is set",
    "extra" / Derived(Table(central_extra, length=this.extra_length, min_size=EXTRA_HEAD), _central_extras)
    * "extra fields: zip64 where a size or offset passes zipfile's limit (sizes both, then the offset), "
      "then any others",
    Valid("extra", zip64_complete, "a field holding 0xFFFFFFFF needs its zip64 value")
    * "a zip64 value for each field holding 0xFFFFFFFF",
    "comment" / CheckedBytes(this.comment_length) * "the member's comment (numpy: none)",
)


# ---------------------------------------------------------------------------------------------------------
# the end records: the directory's count, size and offset as built (the zip64 pair where needed)

def _directory(ctx):
    """(entries, bytes, offset from the archive's start) of the central directory the builder wrote (``ctx``:
    the archive's); before it is built (a value drawn by the testing kit), of no bytes at 0."""
    at, members = ctx.get("_directory_at"), ctx.get("_members_at")
    if at is None or members is None:
        return len(ctx.get("directory") or ()), 0, 0
    return len(ctx.directory), at[-1] - at[0], at[0] - members[0]


def _needs_zip64(ctx):
    entries, size, offset = _directory(ctx)
    return entries > COUNT_FULL or size > ZIP64_LIMIT or offset > ZIP64_LIMIT


# what zipfile writes in the zip64 end record and its locator besides the directory's numbers
ZIP64_END = Container(signature=None, record_size=None, version_made_by=ZIP64_VERSION,
                      version_needed=ZIP64_VERSION, disk=0, directory_disk=0, extensible=b"")
ZIP64_LOCATOR = Container(signature=None, end_disk=0, end_offset=None, disks=1)

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
    "entries_on_disk" / Derived(Int64ul, lambda ctx: _directory(ctx._)[0]) * "central directory entries on this disk",
    "entries" / Derived(Int64ul, lambda ctx: _directory(ctx._)[0]) * "central directory entries in all",
    "directory_size" / Derived(Int64ul, lambda ctx: _directory(ctx._)[1]) * "bytes of the central directory",
    "directory_offset" / Derived(Int64ul, lambda ctx: _directory(ctx._)[2]) * "where the central directory starts",
    "extensible" / CheckedBytes(this.record_size - ZIP64_END_SIZE) * "zip64 extensible data (zipfile: none)",
)

zip64_locator = PackedStruct(
    "signature" / Const(ZIP64_LOCATOR_MAGIC) * "b'PK\\x06\\x07'",
    "end_disk" / Int32ul * "disk of the zip64 end record: 0",
    "end_offset" / Derived(Int64ul, lambda ctx: sum(_directory(ctx._)[1:]))
    * "where the zip64 end record starts (after the directory)",
    "disks" / Int32ul * "disks in all: 1",
)

# APPNOTE 4.3.16: end of central directory record
end = PackedStruct(
    "signature" / Const(END_MAGIC) * "b'PK\\x05\\x06'",
    "disk" / Int16ul * "this disk: 0",
    "directory_disk" / Int16ul * "disk where the central directory starts: 0",
    "entries_on_disk" / Derived(Int16ul, lambda ctx: min(_directory(ctx._)[0], COUNT_FULL))
    * "entries on this disk (0xFFFF: in the zip64 end record)",
    "entries" / Derived(Int16ul, lambda ctx: min(_directory(ctx._)[0], COUNT_FULL))
    * "entries in all (0xFFFF: in the zip64 end record)",
    "directory_size" / Derived(Int32ul, lambda ctx: min(_directory(ctx._)[1], FULL))
    * "bytes of the central directory (0xFFFFFFFF: in the zip64 end record)",
    "directory_offset" / Derived(Int32ul, lambda ctx: min(_directory(ctx._)[2], FULL))
    * "where it starts (0xFFFFFFFF: in the zip64 end record)",
    "comment_length" / Derived(Int16ul, len_(this.comment)) * "bytes of the archive's comment",
    "comment" / CheckedBytes(this.comment_length) * "the archive's comment (numpy: none)",
)


def _entries(ctx):
    """The number of entries the end records give (the zip64 record's where the archive has one)."""
    return ctx.zip64_end[0].entries if len(ctx.zip64_end) else ctx.end.entries


npz = Struct(
    "members" / ZipRecords(local_entry, "members", lead=LOCAL_MAGIC, min_size=fixed_size(local_entry, stop="name"))
    * "each member: its local header, its data, its data descriptor (with flag bit 3)",
    "directory" / ZipRecords(central_entry, "directory", lead=CENTRAL_MAGIC,
                             min_size=fixed_size(central_entry, stop="name"))
    * "the central directory: an entry per member",
    Valid("directory", len_(this.directory) == len_(this.members), "one entry per member") * "an entry per member",
    "zip64_end" / Derived(ZipRecords(zip64_end, "zip64_end", lead=ZIP64_END_MAGIC,
                                     min_size=fixed_size(zip64_end, stop="extensible")),
                          lambda ctx: ctx.get("zip64_end") or [ZIP64_END] * _needs_zip64(ctx))
    * "the zip64 end of central directory record, where the archive needs it (none or one; kept where read)",
    Valid("zip64_end", len_(this.zip64_end) <= 1) * "one at most",
    "zip64_locator" / Derived(Table(zip64_locator, lead=ZIP64_LOCATOR_MAGIC, min_size=fixed_size(zip64_locator)),
                              lambda ctx: [(ctx.get("zip64_locator") or [ZIP64_LOCATOR])[0]] * len(ctx.zip64_end))
    * "its locator (none or one, with the record)",
    Valid("zip64_locator", len_(this.zip64_locator) == len_(this.zip64_end)) * "one with the record",
    "end" / end * "the end of central directory record",
    Valid("end", lambda ctx: _entries(ctx) == len(ctx.members), "the entries it counts are the members")
    * "counts the members (its own count, or the zip64 record's)",
    "trailing" / GreedyBytes * "nothing: the end record is the archive's last",
    Valid("trailing", len_(this.trailing) == 0, "bytes after the end record") * "empty",
)


# ---------------------------------------------------------------------------------------------------------
# the archive read from its end, as zipfile opens it: what inspect needs and nothing more

def _end_at(ctx):
    """Where the end record starts: the last signature in the archive's last 22 + 65535 bytes (the record and
    the longest comment)."""
    stream = ctx._io
    size = stream.seek(0, 2)
    start = max(0, size - fixed_size(end, stop="comment") - COMMENT_MAX)
    stream.seek(start)
    at = stream.read(size - start).rfind(END_MAGIC)
    if at < 0:
        raise FormatError(f"no end of central directory record ({END_MAGIC!r}) in the last "
                          f"{size - start} bytes", path="end", offset=size)
    return start + at


def _zip64(ctx):
    """Whether the end record defers to the zip64 end record (a count or a number it cannot hold)."""
    return COUNT_FULL in (ctx.end.entries, ctx.end.entries_on_disk) or FULL in (
        ctx.end.directory_offset, ctx.end.directory_size)


def _told(ctx):
    """(entries, directory size, directory offset, where the directory must end) as the end records say."""
    record, ends = (ctx.zip64_end, ctx.zip64_locator.end_offset) if ctx.zip64_locator else (ctx.end, ctx.end_at)
    return record.entries, record.directory_size, record.directory_offset, ends


def _placed(ctx):
    """The end records say where they are: the directory ends where they start (else the full parse says
    what is wrong)."""
    _, size, offset, ends = _told(ctx)
    return offset + size == ends


member_head = PackedStruct(*local_entry.subcons[: [s.name for s in local_entry.subcons].index("data")],
                           "data" / MemberHead(npy_head, this.compression,
                                               lambda ctx: wide("compressed_size")(ctx._.directory[ctx._index]),
                                               MAX_HEADER_OPTION)
                           * "its .npy as far as the header (inflated that far where deflated)")

head = Struct(
    "end_at" / Computed(_end_at) * "where the end record starts (found from the end, as zipfile finds it)",
    "end" / Pointer(this.end_at, end) * "the end of central directory record",
    "zip64_locator" / If(_zip64, Pointer(this.end_at - fixed_size(zip64_locator), zip64_locator))
    * "the zip64 locator, just before it, where the end record defers to the zip64 record",
    "zip64_end" / If(this.zip64_locator, Pointer(this.zip64_locator.end_offset, zip64_end))
    * "the zip64 end record, where its locator says",
    "directory" / If(_placed, Pointer(lambda ctx: _told(ctx)[2], Table(central_entry, lambda ctx: _told(ctx)[0],
                                                                      min_size=fixed_size(central_entry, stop="name"))))
    * "the central directory, where the end records put it",
    "members" / If(lambda ctx: ctx.directory is not None and ctx.directory.offsets[-1] == _told(ctx)[3],
                   AtEach(lambda ctx: [wide("local_header_offset")(e) for e in ctx.directory], member_head,
                          "directory[{i}].local_header_offset"))
    * "each member's local header and .npy header, where its directory entry puts it",
)
