"""Codecs of NumPy's ``.npy`` (the schema's parse as an array and back, written as ``numpy.save`` writes)
and ``.npz`` (a zip archive of ``.npy`` members, stored or deflated: each member through the ``.npy`` schema,
a stored one as zero-copy views of the archive; written back member by member as ``numpy.savez`` wrote it)."""

from __future__ import annotations

import functools
import time
import zipfile
import zlib
from collections.abc import Mapping
from typing import Any

import construct as cs
import numpy as np

from ... import framework
from ...embeddings import Embeddings
from ...errors import BuildError, FormatError
from ...registry import Format, register, schema_io
from ...schemas import npy as schema
from ...schemas.constructs.npy import numpy_spelling
from .sniff import EMBEDDINGS_NPZ, NPY, NPZ

parse, build = schema_io(NPY.name, schema.npy)
header_only = cs.Struct(*schema.npy.subcons[:6])  # magic, version, header: no byte of the array read


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


def inspect_head(buf: Any, **_: Any) -> dict[str, Any]:
    """The header alone: the array's bytes are not read."""
    return _summary(framework.parse(header_only, buf, format=NPY.name))


def check(parsed: Any) -> list[str]:
    extra = len(parsed.get("trailing") or b"")
    if extra:
        at = parsed["data"].nbytes  # (after the array; numpy.load ignores such bytes)
        return [f"trailing: {extra} bytes after the array (numpy.load ignores them; numpy.save writes none), "
                f"from byte {len(parsed['header'].raw or b'') + at}"]
    return []


register(Format(
    **NPY._asdict(), description="NumPy .npy: magic, version 1.0/2.0/3.0, a header dict (descr, "
    "fortran_order, shape), then the array's bytes", schema=schema.npy, parse=parse, build=build,
    to_model=to_model, from_model=from_model, model=np.ndarray, inspect=inspect, inspect_head=inspect_head,
    check=check, array_views=True, read_options=(),
))


# ---------------------------------------------------------------------------------------------------------
# .npz

SUFFIX = ".npy"
DEFLATE_RATIO = 1032  # deflate's largest expansion: a member claiming more is refused before inflating


class NpzArrays(dict):
    """The arrays of an ``.npz`` archive by name (the member's name without ``.npy``), in archive order.
    ``infos`` keeps each member's zip entry as read (its time stamp, compression, attributes), so that an
    archive read and written back is the same bytes; ``compressed``: new members are deflated
    (``numpy.savez_compressed``) rather than stored (``numpy.savez``)."""

    def __init__(self, arrays: Any = (), *, compressed: bool = False) -> None:
        super().__init__(arrays)
        self.compressed = compressed
        self.infos: dict[str, zipfile.ZipInfo] = {}
        self.versions: dict[str, Any] = {}  # member name -> its parsed .npy (header bytes kept)


def _fail(message: str, offset: int | None = None, path: str = "archive", format: str = NPZ.name) -> FormatError:
    return FormatError(message, format=format, path=path, offset=offset)


def _local_extra(buf: Any, info: zipfile.ZipInfo, format: str) -> tuple[int, bytes]:
    """Where a member's data start, and its local header's extra field."""
    at = info.header_offset
    head = bytes(buf[at:at + 30]) if at >= 0 else b""
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        raise _fail(f"member {info.filename!r}: no local header at byte {at}, where the central directory "
                    "puts it", max(at, 0), format=format)
    n, m = int.from_bytes(head[26:28], "little"), int.from_bytes(head[28:30], "little")
    return at + 30 + n + m, bytes(buf[at + 30 + n:at + 30 + n + m])


def parse_npz(buf: Any, *, format: str = NPZ.name, **_: Any) -> cs.Container:
    """The archive's members, each parsed as a .npy; errors carry ``format`` (npz, or npz-embeddings)."""
    stream = framework.BufferStream(buf)
    try:
        archive = zipfile.ZipFile(stream)
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, OSError, EOFError) as e:
        raise _fail(f"not a readable zip archive: {e}", format=format) from None
    members = []
    for i, info in enumerate(infos):
        where = f"members[{i}]"
        if not info.filename.endswith(SUFFIX):
            raise _fail(f"member {info.filename!r} is not a .npy file", info.header_offset, where, format=format)
        start, extra = _local_extra(buf, info, format)
        if info.compress_type == zipfile.ZIP_STORED:
            if start + info.file_size > len(buf) or info.compress_size != info.file_size:
                raise _fail(f"member {info.filename!r} runs past the archive", start, where, format=format)
            data = memoryview(buf)[start:start + info.file_size]
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            if info.file_size > DEFLATE_RATIO * info.compress_size + 1024:
                raise _fail(f"member {info.filename!r} claims {info.file_size} bytes from {info.compress_size} "
                            "deflated ones, more than deflate can give", info.header_offset, where, format=format)
            try:  # (into a bytearray: the arrays of an inflated member are writable)
                data = bytearray(info.file_size)
                with archive.open(info) as member_file:
                    got = member_file.readinto(data)
                    if got != info.file_size or member_file.read(1):
                        raise zipfile.BadZipFile(f"{got} bytes where the archive says {info.file_size}")
            except (zipfile.BadZipFile, zlib.error, NotImplementedError, ValueError, OSError, EOFError) as e:
                raise _fail(f"member {info.filename!r} does not inflate: {e}", start, where, format=format) from None
        else:
            raise _fail(f"member {info.filename!r}: compression {info.compress_type} (npz members are stored "
                        "or deflated)", info.header_offset, where, format=format)
        try:
            member = parse(data)
        except FormatError as e:
            raise _fail(f"member {info.filename!r}: {e}", start + (e.offset or 0), f"{where}.{e.path}",
                        format=format) from None
        members.append(cs.Container(info=info, zip64=_has_zip64(extra),
                                    npy=member))
    return cs.Container(members=members, comment=archive.comment)


def _has_zip64(extra: bytes) -> bool:
    at = 0
    while at + 4 <= len(extra):
        kind, n = int.from_bytes(extra[at:at + 2], "little"), int.from_bytes(extra[at + 2:at + 4], "little")
        if kind == 1:
            return True
        at += 4 + n
    return False


class _Sink:
    """A zip member being written, as the .npy schema's output stream."""

    def __init__(self, f: Any) -> None:
        self.f = f
        self.n = 0

    def write(self, b: Any) -> int:
        self.n += len(b)
        return self.f.write(b)

    def tell(self) -> int:
        return self.n


def build_npz(parsed: Any, stream: Any) -> None:
    with zipfile.ZipFile(stream, "w", allowZip64=True) as archive:
        for member in parsed["members"]:
            info = _fresh(member["info"])
            with archive.open(info, "w", force_zip64=member["zip64"]) as f:
                framework.build(schema.npy, member["npy"], _Sink(f), format=NPY.name)
        archive.comment = parsed.get("comment") or b""


def _fresh(old: zipfile.ZipInfo) -> zipfile.ZipInfo:
    """A zip entry to write with what ``old`` recorded: name, time, compression, attributes."""
    info = zipfile.ZipInfo(old.filename, old.date_time)
    for key in ("compress_type", "external_attr", "internal_attr", "create_system", "create_version",
                "extract_version", "comment", "volume"):
        setattr(info, key, getattr(old, key))
    info.flag_bits = old.flag_bits & ~0x08
    info.extra = old.extra
    return info


def npz_to_model(parsed: Any, **_: Any) -> NpzArrays:
    out = NpzArrays()
    for member in parsed["members"]:
        name = member["info"].filename[: -len(SUFFIX)]
        out[name] = member["npy"]["data"]
        out.infos[name] = member["info"]
        out.versions[name] = member["npy"]
        out.compressed = member["info"].compress_type == zipfile.ZIP_DEFLATED
    return out


def npz_from_model(arrays: Any, *, compressed: bool | None = None) -> cs.Container:
    if not isinstance(arrays, Mapping):
        raise BuildError(f"an .npz holds arrays by name; got {type(arrays).__name__}", format=NPZ.name)
    infos = getattr(arrays, "infos", {})
    kept = getattr(arrays, "versions", {})
    deflate = compressed if compressed is not None else bool(getattr(arrays, "compressed", False))
    now = time.localtime(time.time())[:6]
    members = []
    for name, value in arrays.items():
        old = kept.get(name)
        if old is not None and old["data"] is value:
            npy = old
        else:
            npy = from_model(np.asanyarray(value))
        info = infos.get(name)
        if info is None or (compressed is not None and (info.compress_type == zipfile.ZIP_DEFLATED) != deflate):
            info = zipfile.ZipInfo(str(name) + SUFFIX, now if info is None else info.date_time)
            info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            info.external_attr = 0o600 << 16  # what zipfile gives a member numpy.savez writes
        members.append(cs.Container(info=info, zip64=True, npy=npy))
    return cs.Container(members=members, comment=b"")


def npz_inspect(parsed: Any) -> dict[str, Any]:
    return {"arrays": len(parsed["members"]),
            "members": [{"name": m["info"].filename, "compression": "deflated" if m["info"].compress_type else
                         "stored", **_summary(m["npy"])} for m in parsed["members"]]}


def npz_check(parsed: Any) -> list[str]:
    return [f"{m['info'].filename}: {p}" for m in parsed["members"] for p in check(m["npy"])]


register(Format(
    **NPZ._asdict(), description="NumPy .npz: a zip archive of .npy members (numpy.savez: stored; "
    "numpy.savez_compressed: deflated)", schema=None, parse=parse_npz, build=build_npz, to_model=npz_to_model,
    from_model=npz_from_model, model=NpzArrays, inspect=npz_inspect, check=npz_check,
    read_options=(),
))


# ---------------------------------------------------------------------------------------------------------
# word embeddings as an .npz: ``words.npy`` (a unicode array), then ``vectors.npy`` (the matrix)

EMBEDDING_MEMBERS = ("words", "vectors")


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
    return Embeddings(words.tolist(), vectors, kept={"npz": arrays})


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
    "vectors.npy (a row per word), as numpy.savez(words=..., vectors=...) writes them", schema=None,
    parse=functools.partial(parse_npz, format=EMBEDDINGS_NPZ.name), build=build_npz, to_model=embeddings_to_model, from_model=embeddings_from_model,
    model=Embeddings, inspect=embeddings_inspect, check=npz_check, read_options=(),
))
