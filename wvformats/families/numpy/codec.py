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
from ...schemas.constructs.npz import Member
from .sniff import EMBEDDINGS_NPZ, NPY, NPZ

READ_OPTIONS = (MAX_HEADER_OPTION,)  # numpy.load's max_header_size: the longest header read (10,000 characters)
parse, build = schema_io(NPY.name, schema.npy, READ_OPTIONS)
header_only = schema.npy_head  # magic, version, header: no byte of the array read


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
UNIX, DOS = 3, 0  # zipfile's host system: what the writer ran on
# a local header's fixed part and where its CRC-32 lies, from the schema
LOCAL_FIXED = framework.fixed_size(npz_schema.local_entry, stop="name")
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


def member_name(entry: Any) -> str:
    """A zip entry's name as text: UTF-8 with flag bit 11, else code page 437 (as zipfile decodes it)."""
    return bytes(entry["name"]).decode("utf-8" if entry["flags"] & npz_schema.FLAG_UTF8 else "cp437")


def _encode_name(name: str) -> tuple[bytes, int]:
    try:
        return name.encode("ascii"), 0
    except UnicodeEncodeError:
        return name.encode("utf-8"), npz_schema.FLAG_UTF8


def _fresh_npy(value: Any) -> cs.Container:
    """An array as the .npy numpy.save writes, its header spelt for a member (padded from the member's start,
    not the archive's)."""
    npy = from_model(np.asanyarray(value))
    header = NpyDict(npy["header"])
    header.raw = numpy_spelling(header, (npy["major"], npy["minor"]), len(schema.MAGIC) + 2)
    npy["header"] = header
    return npy


def _fresh_local(name: str, npy: Any, deflate: bool) -> cs.Container:
    """A member's local entry as numpy writes it (zipfile with force_zip64: a zip64 field, version 4.5,
    1980-01-01): its content; the schema derives the CRC-32, the sizes and the zip64 values."""
    encoded, flags = _encode_name(name + SUFFIX)
    return cs.Container(
        version_needed=npz_schema.ZIP64_VERSION, flags=flags,
        compression=npz_schema.Compression.deflated if deflate else npz_schema.Compression.stored,
        mod_time=0, mod_date=EPOCH, name=encoded, extra=[cs.Container(id=npz_schema.ZIP64_EXTRA, data=None)],
        data=Member(npy=npy, raw=None, crc32=None))


def _fresh_directory_entry() -> cs.Container:
    """A directory entry's own content as zipfile writes it (the rest is its member's, derived)."""
    return cs.Container(version_made_by=npz_schema.ZIP64_VERSION, host_system=DOS if sys.platform == "win32" else UNIX,
                        disk_start=0, internal_attributes=0, external_attributes=MODE, comment=b"")


def _sizes(local: Any) -> tuple[int, int, int]:
    """(CRC-32, compressed size, uncompressed size) of a local entry, from its descriptor where it has one."""
    if local["descriptor"] is not None:
        d = local["descriptor"]
        return d["crc32"], d["compressed_size"], d["uncompressed_size"]
    return (local["crc32"], npz_schema.wide("compressed_size")(local),
            npz_schema.wide("uncompressed_size")(local))


def npz_to_model(parsed: Any, **_: Any) -> NpzArrays:
    out = NpzArrays()
    for local, entry in zip(parsed["members"], parsed["directory"], strict=True):
        name = member_name(local)[: -len(SUFFIX)]
        out[name] = local["data"]["npy"]["data"]
        out.kept[name] = (local, entry)
        out.compressed = local["compression"] == npz_schema.Compression.deflated
    out.end = (parsed["zip64_end"], parsed["zip64_locator"], parsed["end"])
    return out


def npz_from_model(arrays: Any, *, compressed: bool | None = None) -> cs.Container:
    if not isinstance(arrays, Mapping):
        raise BuildError(f"an .npz holds arrays by name; got {type(arrays).__name__}", format=NPZ.name)
    kept = getattr(arrays, "kept", {})
    deflate = compressed if compressed is not None else bool(getattr(arrays, "compressed", False))
    wanted = npz_schema.Compression.deflated if deflate else npz_schema.Compression.stored
    members, directory = [], []
    for name, value in arrays.items():
        local, entry = kept.get(name, (None, None))
        if local is None or local["data"]["npy"]["data"] is not value or (
                compressed is not None and local["compression"] != wanted):  # (new or changed: as numpy writes it)
            local, entry = _fresh_local(str(name), _fresh_npy(value), deflate), _fresh_directory_entry()
        members.append(local)
        directory.append(entry)
    zip64_end, locator, end = getattr(arrays, "end", None) or (None, None, cs.Container(disk=0, directory_disk=0,
                                                                                        comment=b""))
    return cs.Container(members=members, directory=directory, zip64_end=zip64_end, zip64_locator=locator,
                        end=end, trailing=b"")


def npz_inspect(parsed: Any) -> dict[str, Any]:
    return {"arrays": len(parsed["members"]),
            "members": [{"name": member_name(m), "compression": m["compression"].name,
                         **_summary(m["data"]["npy"])} for m in parsed["members"]]}


def npz_inspect_head(buf: Any, complete: bool = True, **options: Any) -> dict[str, Any] | None:
    """:func:`npz_inspect` from the archive's end, as ``zipfile`` opens it: the schema's ``head`` (the end
    records, the directory, each member's local header and ``.npy`` header, a deflated member inflated as far
    as its header): no array read, in time linear in the member count. None for the first bytes of a
    compressed file (the end is what it needs), or where the end records disagree with where they lie (the
    full parse says how)."""
    if not complete:
        return None
    head = framework.parse(npz_schema.head, buf, format=NPZ.name, **_options(options))
    if head["members"] is None:
        return None
    members = []
    for i, (entry, local) in enumerate(zip(head["directory"], head["members"], strict=True)):
        npy, start = local["data"]["npy"], local["data"]["start"]
        summary = _summary(npy)
        inner = data_offset(npy["major"], npy["header"].raw)  # (the array, in the member's .npy)
        in_place = local["compression"] == npz_schema.Compression.stored
        _check_room(npy, summary, (npz_schema.wide("uncompressed_size")(entry) or 0) - inner, NPZ.name,
                    f"members[{i}].data.npy.data", start + inner if in_place else start,
                    "" if in_place else f"at byte {inner} of the inflated member: ")
        members.append({"name": member_name(entry), "compression": local["compression"].name, **summary})
    return {"arrays": len(members), "members": members}


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
