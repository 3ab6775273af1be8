"""Codecs of NumPy's ``.npy`` (the schema's parse as an array and back, written as ``numpy.save`` writes)
and ``.npz`` (a zip archive of ``.npy`` members, stored or deflated, whose schema is ``schemas/npz.py``: a
stored member's arrays are zero-copy views of the archive; an archive read is written back as it was, and
arrays are written as ``numpy.savez`` / ``savez_compressed`` lay them out)."""

from __future__ import annotations

import sys
import zlib
from collections.abc import Mapping
from typing import Any

import construct as cs
import numpy as np

from ... import framework
from ...embeddings import Embeddings
from ...errors import BuildError, FormatError, TruncatedError
from ...registry import Format, register, schema_io
from ...schemas import npy as schema
from ...schemas import npz as npz_schema
from ...schemas.constructs.npy import MAX_HEADER_OPTION, NpyDict, data_offset, numpy_spelling
from ...schemas.constructs.npz import Digest, Member, compress
from .sniff import EMBEDDINGS_NPZ, NPY, NPZ

READ_OPTIONS = (MAX_HEADER_OPTION,)  # numpy.load's max_header_size: the longest header read (10,000 characters)
parse, build = schema_io(NPY.name, schema.npy, READ_OPTIONS)
header_only = framework.PackedStruct(*schema.npy.subcons[:6])  # magic, version, header: no byte of the array read


def header_of(array: np.ndarray, version: tuple[int, int] | None = None) -> tuple[tuple[int, int], dict[str, Any]]:
    """The version and header dict ``numpy.save`` writes for ``array``: the oldest version whose length field
    and text encoding hold the header (1.0; 2.0 past 64 KiB; 3.0 for names outside latin-1)."""
    if array.dtype.hasobject:
        raise BuildError("an object array would be written as pickles: refused", format=NPY.name, path="data")
    fortran = bool(array.flags.f_contiguous and not array.flags.c_contiguous)
    header = {"descr": np.lib.format.dtype_to_descr(array.dtype), "fortran_order": fortran,
              "shape": tuple(array.shape)}
    if version is not None:
        return version, header
    for guess in ((1, 0), (2, 0), (3, 0)):
        try:
            raw = numpy_spelling(header, guess, 8)
        except UnicodeEncodeError:
            continue
        if guess[0] > 1 or len(raw) < 1 << 16:
            return guess, header
    raise AssertionError  # (3.0 encodes every name)


def to_model(parsed: Any, **_: Any) -> np.ndarray:
    return parsed["data"]


def from_model(array: Any, *, version: tuple[int, int] | None = None) -> cs.Container:
    array = np.asanyarray(array)
    (major, minor), header = header_of(array, version)
    return cs.Container(magic=schema.MAGIC, major=major, minor=minor, header=header, data=array, trailing=b"")


def _summary(parsed: Any) -> dict[str, Any]:
    header = parsed["header"]
    dtype = np.lib.format.descr_to_dtype(header["descr"])
    return {"version": f"{parsed['major']}.{parsed['minor']}", "dtype": str(dtype), "descr": header["descr"],
            "shape": list(header["shape"]), "fortran_order": header["fortran_order"],
            "data_bytes": int(np.prod(header["shape"], dtype=object)) * dtype.itemsize}


def inspect(parsed: Any) -> dict[str, Any]:
    return _summary(parsed)


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """The read options the schema takes (as construct ``_params``), of those given."""
    return {k: options[k] for k in READ_OPTIONS if options.get(k) is not None}


def inspect_head(buf: Any, **options: Any) -> dict[str, Any]:
    """The header, and the array's size held to the bytes after it (an array past the end of the file is a
    TruncatedError, as in the full parse): the array's bytes are not read."""
    npy = framework.parse(header_only, buf, format=NPY.name, **_options(options))
    out = _summary(npy)
    start = data_offset(npy["major"], npy["header"].raw)
    _check_room(npy, out, len(buf) - start, NPY.name, "data", start)
    return out


def _check_room(npy: Any, summary: dict[str, Any], room: int, format: str, path: str, at: int,
                where: str = "") -> None:
    """A TruncatedError, as the array's parse raises it, where the array needs more than ``room`` bytes
    (``where``: said first, as a deflated member's errors say the byte of the inflated member)."""
    if summary["data_bytes"] > room:
        raise TruncatedError(f"{where}array {tuple(summary['shape'])} of {npy['header']['descr']} needs "
                             f"{summary['data_bytes']} bytes but only {room} remain", format=format, path=path,
                             offset=at)


def check(parsed: Any) -> list[str]:
    extra = len(parsed.get("trailing") or b"")
    if extra:
        at = data_offset(parsed["major"], parsed["header"].raw) + parsed["data"].nbytes  # (after the array)
        return [f"trailing: {extra} bytes after the array (numpy.load ignores them; numpy.save writes none), "
                f"from byte {at}"]
    return []


register(Format(
    **NPY._asdict(), description="NumPy .npy: magic, version 1.0/2.0/3.0, a header dict (descr, "
    "fortran_order, shape), then the array's bytes", schema=schema.npy, parse=parse, build=build,
    to_model=to_model, from_model=from_model, model=np.ndarray, inspect=inspect, inspect_head=inspect_head,
    check=check, array_views=True, read_options=READ_OPTIONS,
))


# ---------------------------------------------------------------------------------------------------------
# .npz: the zip container is the schema (schemas/npz.py); here the members become arrays by name, and arrays
# become members laid out as numpy.savez / savez_compressed lay them out (zipfile with force_zip64=True)

SUFFIX = ".npy"
parse_npz, build_npz = schema_io(NPZ.name, npz_schema.npz, READ_OPTIONS)
ZIP64_LIMIT = (1 << 31) - 1  # zipfile's: a size or offset past it goes to a zip64 field
COUNT_LIMIT = 0xFFFF  # entries an end record counts; more need the zip64 end record
UNIX, DOS = 3, 0  # zipfile's host system: what the writer ran on
# the records' fixed parts and where a local header's CRC-32 lies, from the schema
LOCAL_FIXED = framework.fixed_size(npz_schema.local_entry, stop="name")
CENTRAL_FIXED = framework.fixed_size(npz_schema.central_entry, stop="name")
END_FIXED = framework.fixed_size(npz_schema.end, stop="comment")
LOCATOR_SIZE = framework.fixed_size(npz_schema.zip64_locator)
CRC_AT = framework.fixed_size(npz_schema.local_entry, stop="crc32")
EPOCH = 0x21  # MS-DOS date 1980-01-01: zipfile's default time stamp, which numpy's members get
MODE = 0o600 << 16  # the Unix mode zipfile gives a member it opens for writing (rw-------)


class NpzArrays(dict):
    """The arrays of an ``.npz`` archive by name (the member's name without ``.npy``), in archive order.
    ``compressed``: new members are deflated (``numpy.savez_compressed``) rather than stored
    (``numpy.savez``). An archive read keeps its members' zip records, so that what is written back while an
    array is the one read (the same object) is the same bytes; a stored member's array is a view of the
    archive (zero-copy with ``mmap=True``, which ``numpy.load(mmap_mode=...)`` cannot do for an .npz)."""

    def __init__(self, arrays: Any = (), *, compressed: bool = False) -> None:
        super().__init__(arrays)
        self.compressed = compressed
        self.kept: dict[str, tuple[Any, Any]] = {}  # name -> (local entry, directory entry) as read
        self.end: Any = None  # the end records as read: (zip64_end, zip64_locator, end)
        self.spans: dict[str, tuple[int, int]] = {}  # name -> bytes its (local entry, directory entry) took


def member_name(entry: Any) -> str:
    """A zip entry's name as text: UTF-8 with flag bit 11, else code page 437 (as zipfile decodes it)."""
    return bytes(entry["name"]).decode("utf-8" if entry["flags"] & npz_schema.FLAG_UTF8 else "cp437")


def _encode_name(name: str) -> tuple[bytes, int]:
    try:
        return name.encode("ascii"), 0
    except UnicodeEncodeError:
        return name.encode("utf-8"), npz_schema.FLAG_UTF8


_DATA = [s.name for s in npz_schema.local_entry.subcons].index("data")
_local_header = framework.PackedStruct(*npz_schema.local_entry.subcons[:_DATA])  # a member's local header
_local_tail = framework.PackedStruct(*npz_schema.local_entry.subcons[_DATA + 1 :])  # its data descriptor


def _fresh_npy(value: Any) -> cs.Container:
    """An array as the .npy numpy.save writes, its header spelt for a member (padded from the member's start,
    not the archive's)."""
    npy = from_model(np.asanyarray(value))
    header = NpyDict(npy["header"])
    header.raw = numpy_spelling(header, (npy["major"], npy["minor"]), len(schema.MAGIC) + 2)
    npy["header"] = header
    return npy


def _fresh_local(name: str, npy: Any, deflate: bool) -> cs.Container:
    """A member's local entry as numpy writes it: zip64 extra with both sizes, 1980-01-01, CRC and sizes in
    the header (zipfile seeks back to write them)."""
    def write(sink: Any) -> None:
        framework.build(schema.npy, npy, sink, format=NPY.name)

    if deflate:
        raw, crc, n = compress(write)
        size = len(raw)
    else:
        digest = Digest()
        write(digest)
        raw, crc, n, size = None, digest.crc, digest.n, digest.n
    encoded, flags = _encode_name(name + SUFFIX)
    extra = [cs.Container(id=npz_schema.ZIP64_EXTRA, data=[n, size])]
    return cs.Container(
        signature=None, version_needed=npz_schema.ZIP64_VERSION, flags=flags,
        compression=npz_schema.Compression.deflated if deflate else npz_schema.Compression.stored,
        mod_time=0, mod_date=EPOCH, crc32=crc, compressed_size=npz_schema.FULL,
        uncompressed_size=npz_schema.FULL, name=encoded, extra=extra,
        data=Member(npy=npy, raw=raw, crc32=crc if deflate else None), descriptor=None)


def _sizes(local: Any) -> tuple[int, int, int]:
    """(CRC-32, compressed size, uncompressed size) of a local entry, from its descriptor where it has one."""
    if local["descriptor"] is not None:
        d = local["descriptor"]
        return d["crc32"], d["compressed_size"], d["uncompressed_size"]
    return (local["crc32"], npz_schema.wide("compressed_size")(local),
            npz_schema.wide("uncompressed_size")(local))


def _entry_size(local: Any) -> int:
    """The bytes a local entry takes: its header and descriptor as the schema builds them, and the data's size
    that the header (or descriptor) gives."""
    header, tail = framework.size_of(_local_header, local)(), framework.size_of(_local_tail, local)()
    return header + _sizes(local)[1] + tail


def _fresh_directory_entry(local: Any, offset: int) -> cs.Container:
    """The central directory entry zipfile writes for a member: a zip64 field only past its limits."""
    crc, size, n = _sizes(local)
    big, far = n > ZIP64_LIMIT or size > ZIP64_LIMIT, offset > ZIP64_LIMIT
    values = [n, size] * big + [offset] * far
    extra = [cs.Container(id=npz_schema.ZIP64_EXTRA, data=values)] if values else []
    version = max(local["version_needed"], npz_schema.ZIP64_VERSION if values else 0)
    return cs.Container(
        signature=None, version_made_by=version, host_system=DOS if sys.platform == "win32" else UNIX,
        version_needed=version, flags=local["flags"], compression=local["compression"],
        mod_time=local["mod_time"], mod_date=local["mod_date"], crc32=crc,
        compressed_size=npz_schema.FULL if big else size, uncompressed_size=npz_schema.FULL if big else n,
        disk_start=0, internal_attributes=0, external_attributes=MODE,
        local_header_offset=npz_schema.FULL if far else offset, name=local["name"],
        extra=extra, comment=b"")


def _end_records(count: int, directory_size: int, directory_offset: int, comment: bytes) -> tuple[list, list, Any]:
    """The end records zipfile writes: the zip64 pair only where the counts or offsets need it."""
    zip64 = count > COUNT_LIMIT or directory_offset > ZIP64_LIMIT or directory_size > ZIP64_LIMIT
    records: list[Any] = []
    locator: list[Any] = []
    if zip64:
        records.append(cs.Container(
            signature=None, version_made_by=npz_schema.ZIP64_VERSION,
            version_needed=npz_schema.ZIP64_VERSION, disk=0, directory_disk=0, entries_on_disk=count,
            entries=count, directory_size=directory_size, directory_offset=directory_offset, extensible=b""))
        locator.append(cs.Container(signature=None, end_disk=0, end_offset=directory_offset + directory_size,
                                    disks=1))
    end = cs.Container(
        signature=None, disk=0, directory_disk=0, entries_on_disk=min(count, COUNT_LIMIT),
        entries=min(count, COUNT_LIMIT), directory_size=min(directory_size, npz_schema.FULL),
        directory_offset=min(directory_offset, npz_schema.FULL), comment=comment)
    return records, locator, end


def _directory_entry_size(entry: Any) -> int:
    """The bytes a directory entry takes, as the schema builds it."""
    return framework.size_of(npz_schema.central_entry, entry)()


def npz_to_model(parsed: Any, **_: Any) -> NpzArrays:
    out = NpzArrays()
    members, directory = parsed["members"], parsed["directory"]
    for i, (local, entry) in enumerate(zip(members, directory, strict=True)):
        name = member_name(local)[: -len(SUFFIX)]
        out[name] = local["data"]["npy"]["data"]
        out.kept[name] = (local, entry)
        at, where = members.offsets, directory.offsets
        out.spans[name] = (at[i + 1] - at[i], where[i + 1] - where[i])
        out.compressed = local["compression"] == npz_schema.Compression.deflated
    out.end = (parsed["zip64_end"], parsed["zip64_locator"], parsed["end"])
    return out


def npz_from_model(arrays: Any, *, compressed: bool | None = None) -> cs.Container:
    if not isinstance(arrays, Mapping):
        raise BuildError(f"an .npz holds arrays by name; got {type(arrays).__name__}", format=NPZ.name)
    kept, spans = getattr(arrays, "kept", {}), getattr(arrays, "spans", {})
    deflate = compressed if compressed is not None else bool(getattr(arrays, "compressed", False))
    members, directory = [], []
    offset = size = 0
    for name, value in arrays.items():
        local, entry = kept.get(name, (None, None))
        wanted = npz_schema.Compression.deflated if deflate else npz_schema.Compression.stored
        # (the bytes each entry takes: as read where it is the one read, else as the schema builds it)
        local_size, entry_size = spans.get(name, (None, None))
        if local is None or local["data"]["npy"]["data"] is not value or (
                compressed is not None and local["compression"] != wanted):
            local, entry = _fresh_local(str(name), _fresh_npy(value), deflate), None
            local_size = None
        if entry is None or npz_schema.wide("local_header_offset")(entry) != offset:
            entry, entry_size = _fresh_directory_entry(local, offset), None
        members.append(local)
        directory.append(entry)
        offset += local_size if local_size is not None else _entry_size(local)
        size += entry_size if entry_size is not None else _directory_entry_size(entry)
    old = getattr(arrays, "end", None)
    records = _end_records(len(members), size, offset, b"" if old is None else bytes(old[2]["comment"]))
    if old is not None and _same_end(old, records):
        records = old
    zip64_end, locator, end = records
    return cs.Container(members=members, directory=directory, zip64_end=zip64_end, zip64_locator=locator,
                        end=end, trailing=b"")


def _same_end(old: Any, new: Any) -> bool:
    """The end records read still say what the new layout needs (counts, directory size and offset)."""
    keys = ("entries_on_disk", "entries", "directory_size", "directory_offset")
    if len(old[0]) != len(new[0]) or any(old[2][k] != new[2][k] for k in keys):
        return False
    return all(a[k] == b[k] for a, b in zip(old[0], new[0], strict=True) for k in keys) and all(
        a["end_offset"] == b["end_offset"] for a, b in zip(old[1], new[1], strict=True))


def npz_inspect(parsed: Any) -> dict[str, Any]:
    return {"arrays": len(parsed["members"]),
            "members": [{"name": member_name(m), "compression": m["compression"].name,
                         **_summary(m["data"]["npy"])} for m in parsed["members"]]}


_HEAD = 1 << 16  # bytes of a member taken for its .npy header (numpy.load refuses headers past 10,000 characters
# unless max_header_size says otherwise)


def npz_inspect_head(buf: Any, complete: bool = True, **options: Any) -> dict[str, Any] | None:
    """:func:`npz_inspect` from the end records, the central directory and each member's ``.npy`` header
    (a deflated member's first kilobytes inflated): no array read, in time linear in the member count, as
    ``zipfile`` opens an archive. None for the first bytes of a compressed file (the end is what it needs)."""
    if not complete:
        return None
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf.cast("B")
    size = len(view)
    tail = max(0, size - (END_FIXED + 0xFFFF))  # the end record and an archive comment of at most 65535 bytes
    at = bytes(view[tail:]).rfind(npz_schema.END_MAGIC)
    if at < 0:
        raise FormatError("no end of central directory record (PK\\x05\\x06) in the last 65557 bytes",
                          format=NPZ.name, path="end", offset=size)
    end_at = tail + at
    end = _parse_at(npz_schema.end, view, end_at, "end")
    count, offset, length, ends = end["entries"], end["directory_offset"], end["directory_size"], end_at
    if COUNT_LIMIT in (count, end["entries_on_disk"]) or npz_schema.FULL in (offset, length):
        locator = _parse_at(npz_schema.zip64_locator, view, end_at - LOCATOR_SIZE, "zip64_locator[0]")
        ends = locator["end_offset"]
        record = _parse_at(npz_schema.zip64_end, view, ends, "zip64_end[0]")
        count, offset, length = record["entries"], record["directory_offset"], record["directory_size"]
    if offset + length != ends:  # (the end records disagree with where they are: the full parse says how)
        return None
    if count * CENTRAL_FIXED > size - offset:  # (each entry takes at least that: checked before any is read)
        raise FormatError(f"{count} directory entries cannot fit in the {max(0, size - offset)} bytes from byte "
                          f"{offset}", format=NPZ.name, path="directory", offset=offset)
    head = _HEAD + 4 * (options.get(MAX_HEADER_OPTION) or 0)  # (a header as long as the option lets it be)
    members = []
    for i in range(count):
        entry = _parse_at(npz_schema.central_entry, view, offset, f"directory[{i}]")
        local_at = npz_schema.wide("local_header_offset")(entry)
        if local_at is None or local_at + LOCAL_FIXED > size:
            raise FormatError("the local header is past the end of the archive", format=NPZ.name,
                              path=f"directory[{i}].local_header_offset", offset=offset)
        offset += _directory_entry_size(entry)
        local = _parse_at(_local_header, view, local_at, f"members[{i}]")
        start = local_at + LOCAL_FIXED + local["name_length"] + local["extra_length"]  # (its data)
        stored = npz_schema.wide("compressed_size")(entry) or 0
        data = view[start : start + min(stored, head)]
        if entry["compression"] == npz_schema.Compression.deflated:
            try:
                data = zlib.decompressobj(-15).decompress(data, head)
            except zlib.error as e:
                raise FormatError(f"the deflated member does not inflate: {e}", format=NPZ.name,
                                  path=f"members[{i}].data", offset=start) from None
        try:
            npy = framework.parse(header_only, data, format=NPZ.name, **_options(options))
        except FormatError as e:
            if len(data) == head:  # (a header longer than the bytes taken: the full parse tells)
                return None
            e.format, e.offset = NPZ.name, start if e.offset is None else start + e.offset
            raise e.located(prefix=f"members[{i}].data.npy") from None
        summary = _summary(npy)
        inner = data_offset(npy["major"], npy["header"].raw)  # (the array, in the member's .npy)
        in_place = entry["compression"] == npz_schema.Compression.stored
        _check_room(npy, summary, (npz_schema.wide("uncompressed_size")(entry) or 0) - inner, NPZ.name,
                    f"members[{i}].data.npy.data", start + inner if in_place else start,
                    "" if in_place else f"at byte {inner} of the inflated member: ")
        members.append({"name": member_name(entry), "compression": entry["compression"].name, **summary})
    if offset != ends:  # (entries miscounted: the full parse says how)
        return None
    return {"arrays": len(members), "members": members}


def _parse_at(construct: Any, view: memoryview, at: int, path: str) -> Any:
    """One record of the archive's schema parsed at byte ``at``; an error located in the whole archive."""
    if not 0 <= at <= len(view):
        raise FormatError(f"an offset past the end of the archive ({at} of {len(view)} bytes)", format=NPZ.name,
                          path=path, offset=min(max(at, 0), len(view)))
    try:
        return framework.parse(construct, view[at:], format=NPZ.name)
    except FormatError as e:
        e.offset = at if e.offset is None else at + e.offset
        raise e.located(prefix=path) from None


def npz_check(parsed: Any) -> list[str]:
    """What zipfile (and so numpy.load) would find wrong: a CRC-32 that does not match the data, a directory
    entry that disagrees with its member (name, offset, sizes, CRC), end records that miscount."""
    problems = []
    members, directory = parsed["members"], parsed["directory"]
    for i, (local, entry) in enumerate(zip(members, directory, strict=True)):
        at = members.offsets[i]
        crc, size, n = _sizes(local)
        data = local["data"]
        actual = data["crc32"] if data["crc32"] is not None else zlib.crc32(data["raw"])
        name = member_name(local)
        if actual != crc:
            problems.append(f"members[{i}].crc32 at byte {at + CRC_AT}: {name}: the data's CRC-32 is "
                            f"{actual:#010x}, the header says {crc:#010x} (zipfile refuses the member)")
        where = directory.offsets[i]
        told = {"name": bytes(entry["name"]), "local_header_offset": npz_schema.wide("local_header_offset")(entry),
                "crc32": entry["crc32"], "compressed_size": npz_schema.wide("compressed_size")(entry),
                "uncompressed_size": npz_schema.wide("uncompressed_size")(entry),
                "compression": entry["compression"]}
        have = {"name": bytes(local["name"]), "local_header_offset": at, "crc32": crc, "compressed_size": size,
                "uncompressed_size": n, "compression": local["compression"]}
        problems += [f"directory[{i}].{k} at byte {where}: {name}: the directory says {told[k]!r}, the member "
                     f"{have[k]!r}" for k in told if told[k] != have[k]]
        problems += [f"{name}: {p}" for p in check(data["npy"])]
    start = directory.offsets[0] if len(directory) else directory.offsets[-1]
    count, size, offset = _end_numbers(parsed)
    end_at = directory.offsets[-1]
    for k, told, have in (("directory_offset", offset, start), ("directory_size", size, end_at - start)):
        if told != have:
            problems.append(f"end.{k}: the end record says {told}, the directory has {have}")
    return problems


def _end_numbers(parsed: Any) -> tuple[int, int, int]:
    record = parsed["zip64_end"][0] if len(parsed["zip64_end"]) else parsed["end"]
    return record["entries"], record["directory_size"], record["directory_offset"]


register(Format(
    **NPZ._asdict(), description="NumPy .npz: a zip archive of .npy members (numpy.savez: stored; "
    "numpy.savez_compressed: deflated), local headers with zip64 extra fields, the central directory and "
    "the end records", schema=npz_schema.npz, parse=parse_npz, build=build_npz, to_model=npz_to_model,
    from_model=npz_from_model, model=NpzArrays, inspect=npz_inspect, inspect_head=npz_inspect_head, check=npz_check,
    array_views=True, read_options=READ_OPTIONS,
))


# ---------------------------------------------------------------------------------------------------------
# word embeddings as an .npz: ``words.npy`` (a unicode array), then ``vectors.npy`` (the matrix)

EMBEDDING_MEMBERS = ("words", "vectors")
parse_embeddings, build_embeddings = schema_io(EMBEDDINGS_NPZ.name, npz_schema.npz, READ_OPTIONS)


def embeddings_to_model(parsed: Any, **_: Any) -> Embeddings:
    arrays = npz_to_model(parsed)
    if tuple(arrays) != EMBEDDING_MEMBERS:
        raise FormatError(f"an embeddings .npz holds words.npy then vectors.npy; this one holds {list(arrays)}",
                          format=EMBEDDINGS_NPZ.name, path="members", offset=0)
    words, vectors = arrays["words"], arrays["vectors"]
    if words.ndim != 1 or words.dtype.kind != "U" or vectors.ndim != 2 or len(words) != len(vectors):
        raise FormatError(f"words {words.dtype} {words.shape} and vectors {vectors.dtype} {vectors.shape}: one "
                          "word (a string) per row of a matrix", format=EMBEDDINGS_NPZ.name, path="members",
                          offset=0)
    if vectors.dtype.kind not in "fiu":
        npy = parsed["members"][1]["data"]["npy"]
        at, inflated = _in_member(parsed, 1, data_offset(npy["major"], b""))
        raise FormatError(f"vectors.npy holds {vectors.dtype.name} ({vectors.dtype.str}){inflated}: the vectors of an "
                          "embeddings .npz are real numbers (floats or integers)", format=EMBEDDINGS_NPZ.name,
                          path="members[1].data.npy.header.descr", offset=at, found=vectors.dtype.str)
    _check_code_points(parsed, words)
    return Embeddings(words.tolist(), vectors, kept={"npz": arrays})


def _in_member(parsed: Any, i: int, inner: int) -> tuple[int, str]:
    """Byte ``inner`` of member ``i``'s .npy as an offset in the archive, and "": for a deflated member, where
    its data start, and a note naming ``inner`` in the inflated bytes."""
    local = parsed["members"][i]
    start = parsed["members"].offsets[i] + LOCAL_FIXED + local["name_length"] + local["extra_length"]
    if local["compression"] == npz_schema.Compression.stored:
        return start + inner, ""
    return start, f" (byte {inner} of the member once inflated)"


MAX_CODE_POINT = 0x10FFFF


def _check_code_points(parsed: Any, words: np.ndarray) -> None:
    """Refuse a word holding a code point past U+10FFFF, which no str holds (numpy makes a broken str of it, or
    raises SystemError); lone surrogates are kept, as numpy gives them."""
    width = words.dtype.itemsize // 4
    if not width or not len(words):
        return
    codes = np.ascontiguousarray(words).view(np.dtype("u4").newbyteorder(words.dtype.byteorder))
    if codes.max() <= MAX_CODE_POINT:
        return
    first = int(np.flatnonzero(codes > MAX_CODE_POINT)[0])
    row, char = divmod(first, width)
    npy = parsed["members"][0]["data"]["npy"]
    at, inflated = _in_member(parsed, 0, data_offset(npy["major"], npy["header"].raw) + 4 * first)
    raise FormatError(f"words[{row}] holds {int(codes[first]):#x} as character {char}{inflated}: past U+10FFFF, "
                      "no Unicode character", format=EMBEDDINGS_NPZ.name, path=f"members[0].data.npy.data[{row}]",
                      offset=at, found=int(codes[first]))


def embeddings_from_model(emb: Any, *, compressed: bool | None = None) -> cs.Container:
    if not isinstance(emb, Embeddings):
        raise BuildError(f"expected Embeddings, got {type(emb).__name__}", format=EMBEDDINGS_NPZ.name)
    kept = emb.kept.get("npz")
    words = np.array(emb.words, dtype=str) if emb.words else np.zeros(0, "<U1")
    arrays = NpzArrays({"words": words, "vectors": emb.vectors})
    if isinstance(kept, NpzArrays) and kept["words"].tolist() == emb.words and \
            np.array_equal(kept["vectors"], emb.vectors) and kept["vectors"].dtype == emb.vectors.dtype:
        arrays = kept  # (read and unchanged: the archive's entries and bytes as they were)
    return npz_from_model(arrays, compressed=compressed)


def embeddings_inspect(parsed: Any) -> dict[str, Any]:
    emb = embeddings_to_model(parsed)
    return {"words": len(emb.words), "dim": int(emb.vectors.shape[1]), "dtype": str(emb.vectors.dtype),
            "first_words": emb.words[:5], **npz_inspect(parsed)}


register(Format(
    **EMBEDDINGS_NPZ._asdict(), description="word embeddings as a NumPy .npz: words.npy (unicode strings) then "
    "vectors.npy (a row per word), as numpy.savez(words=..., vectors=...) writes them", schema=npz_schema.npz,
    parse=parse_embeddings, build=build_embeddings, to_model=embeddings_to_model, from_model=embeddings_from_model,
    model=Embeddings, inspect=embeddings_inspect, check=npz_check, array_views=True, read_options=READ_OPTIONS,
))
