"""The .npz zip container as a schema (schemas/npz.py): numpy.savez / savez_compressed output parsed and built
back byte for byte (hypothesis over arrays, names and both methods), arrays written as numpy writes them,
an archive numpy wrote to a pipe (data descriptors), the zip64 records zipfile writes past 4 GiB (zipfile
itself as the oracle), dump and validate, the deflate-bomb refusal, and the fuzz: every damaged or cut
archive fails with the npz format's error naming a field and a byte offset."""

import io
import os
import struct
import threading
import zipfile
from pathlib import Path

import construct as cs
import hypothesis
import hypothesis.strategies as st
import numpy as np
import pytest
from wvformats.schemas import npz as schema
from wvformats.schemas.constructs.npz import Facts

import wvformats as wv
from wvformats import cli, framework
from wvformats.errors import FormatError
from wvformats.families.numpy.codec import (
    NpzArrays,
    _fresh_directory_entry,
    build_npz,
    npz_from_model,
    npz_to_model,
    parse_npz,
)
from wvformats.testing import assert_truncations_fail, bytes_roundtrip, fuzz


def saved(save, **arrays):
    buf = io.BytesIO()
    save(buf, **arrays)
    return buf.getvalue()


def written(arrays, compressed):
    out = io.BytesIO()
    build_npz(npz_from_model(NpzArrays(arrays, compressed=compressed)), out)
    return out.getvalue()


DTYPES = st.sampled_from(["<f4", "<f8", "<i2", "|u1", "|b1", ">i4", "<U3", "|S2", "<c8"])
ARRAYS = st.dictionaries(
    st.text(st.characters(codec="utf-8", exclude_characters="/\\\x00"), min_size=1, max_size=6),
    st.tuples(DTYPES, st.lists(st.integers(0, 4), max_size=3), st.booleans()).flatmap(
        lambda t: st.binary(min_size=int(np.prod(t[1], dtype=np.int64)) * np.dtype(t[0]).itemsize,
                            max_size=int(np.prod(t[1], dtype=np.int64)) * np.dtype(t[0]).itemsize).map(
            lambda b, t=t: (lambda a: np.asfortranarray(a) if t[2] else a)(
                np.frombuffer(b, t[0]).reshape(t[1]).copy()))),
    max_size=4)


@hypothesis.settings(max_examples=60, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow, hypothesis.HealthCheck.data_too_large])
@hypothesis.given(arrays=ARRAYS, compressed=st.booleans())
def test_numpys_archives_round_trip_and_arrays_write_as_numpy_writes_them(arrays, compressed):
    data = saved(np.savez_compressed if compressed else np.savez, **arrays)
    for compiled in (False, True):
        parsed = bytes_roundtrip(schema.npz, data, format="npz", compiled=compiled)
    model = npz_to_model(parsed)
    assert list(model) == list(arrays)
    for name, array in arrays.items():
        assert model[name].dtype == array.dtype and model[name].shape == array.shape
        assert model[name].tobytes("A") == array.tobytes("A")
    assert written(arrays, compressed) == data  # (names outside ASCII: UTF-8 with flag bit 11, as zipfile)


def test_an_archive_numpy_wrote_to_a_pipe_has_data_descriptors_and_round_trips():
    read, write = os.pipe()
    got = []
    reader = threading.Thread(target=lambda: got.append(os.fdopen(read, "rb").read()))
    reader.start()
    with os.fdopen(write, "wb") as f:  # (unseekable: zipfile writes flag bit 3 and a descriptor per member)
        np.savez(f, a=np.arange(5.0), b=np.array(["x", "yz"]))
    reader.join()
    data = got[0]
    parsed = bytes_roundtrip(schema.npz, data, format="npz")
    assert [m.flags & schema.FLAG_DESCRIPTOR for m in parsed.members] == [8, 8]
    assert parsed.members[0].descriptor.compressed_size == 128 + 40
    model = npz_to_model(parsed)
    assert np.array_equal(model["a"], np.arange(5.0)) and model["b"].tolist() == ["x", "yz"]
    with np.load(io.BytesIO(data)) as z:
        assert z.files == list(model)


class _Tail:
    """A file that starts at ``at`` and keeps what is written: zipfile's end records for an archive whose
    members would take gigabytes, without writing them."""

    def __init__(self, at):
        self.at, self.parts = at, []

    def write(self, b):
        self.parts.append(bytes(b))
        self.at += len(b)
        return len(b)

    def tell(self):
        return self.at

    def flush(self):
        pass


def _zipfile_end(infos, start_dir):
    """What zipfile writes after the members for entries of these sizes and offsets: the oracle."""
    archive = zipfile.ZipFile(io.BytesIO(), "w")
    archive.filelist.extend(infos)
    archive.start_dir = start_dir
    archive.fp = tail = _Tail(start_dir)
    archive._write_end_record()
    archive.fp = None  # (closed by hand: nothing more is written)
    return b"".join(tail.parts)


TAIL = cs.Struct(*schema.npz.subcons[3:])  # (the archive's end records, built for a directory given as noted)


def _schema_end(count, directory_size, start, zip64_end=None):
    """What the schema builds after a directory of ``count`` entries, ``directory_size`` bytes from byte
    ``start`` (the builder's notes of where it put them given as it notes them)."""
    return TAIL.build(cs.Container(members=[None] * count, directory=[None] * count, zip64_end=zip64_end,
                                   zip64_locator=None, end=cs.Container(disk=0, directory_disk=0, comment=b""),
                                   trailing=b"", _members_at=[0], _directory_at=[start, start + directory_size]))


@pytest.mark.parametrize("size, offset", [(3 << 30, 0), (1000, 5 << 30), (3 << 30, 5 << 30)])
def test_members_past_zipfiles_limits_get_the_zip64_records_zipfile_writes(size, offset):
    # a 3 GiB member or one 5 GiB into the archive: too big to write in a test, so the directory and end
    # records are built for those numbers (a member's facts, where the builder noted it) and compared with
    # what zipfile writes for them
    local = npz_to_model(parse_npz(saved(np.savez, w=np.zeros(2)))).kept["w"][0]
    local._facts = Facts(local.crc32, size, size, None)
    info = zipfile.ZipInfo("w.npy", (1980, 1, 1, 0, 0, 0))
    info.file_size = info.compress_size = size
    info.header_offset, info.CRC = offset, local.crc32
    info.create_version = info.extract_version = 45
    info.external_attr = 0o600 << 16
    directory = schema.central_entry.build(_fresh_directory_entry(), _members_built=[None, local],
                                           _members_at=[0, offset], _index=1)
    start = offset + 30 + 5 + 20 + size
    tail = _schema_end(1, len(directory), start)
    assert directory + tail == _zipfile_end([info], start)
    assert (tail[:4] == schema.ZIP64_END_MAGIC) == (start > schema.ZIP64_LIMIT)


def test_more_members_than_an_end_record_counts_get_the_zip64_end_record_zipfile_writes():
    # 70000 members (more than the 65535 an end record counts): the end records compared with zipfile's for
    # the same directory (writing and parsing such an archive takes a minute: the records are what differ)
    infos = []
    for i in range(70000):
        info = zipfile.ZipInfo(f"a{i}.npy", (1980, 1, 1, 0, 0, 0))
        info.create_version = info.extract_version = 45
        info.external_attr = 0o600 << 16
        info.header_offset = info.CRC = info.file_size = info.compress_size = 0
        infos.append(info)
    start = 123456
    directory_size = sum(46 + len(i.filename) for i in infos)
    assert _zipfile_end(infos, start)[directory_size:] == _schema_end(70000, directory_size, start)


def _zip64_ended(data, marked=False):
    """The archive with zip64 end records it does not need (kept where read); ``marked``: its end record
    deferring its count to them (0xFFFF), as a reader finds them."""
    parsed = parse_npz(data)
    parsed.zip64_end = [schema.ZIP64_END]
    out = io.BytesIO()
    build_npz(parsed, out)
    again = bytearray(out.getvalue())
    if marked:
        again[len(again) - 14 : len(again) - 10] = b"\xff" * 4  # (the end record's entries_on_disk, entries)
    return bytes(again)


def test_an_archive_with_zip64_end_records_parses_and_round_trips():
    # zipfile and numpy read zip64 end records wherever they are; this archive has them for one member
    data = saved(np.savez, w=np.arange(3.0))
    again = _zip64_ended(data)
    assert again[len(data) - 22:len(data) - 18] == b"PK\x06\x06"
    again_parsed = bytes_roundtrip(schema.npz, again, format="npz")
    assert again_parsed.zip64_end[0].entries == 1 and not wv.registry.get("npz").check(again_parsed)
    assert again_parsed.zip64_locator[0].end_offset == len(data) - 22
    for archive in (again, _zip64_ended(data, marked=True)):
        with np.load(io.BytesIO(archive)) as z:
            assert np.array_equal(z["w"], np.arange(3.0))


def test_stored_members_are_zero_copy_views_of_the_mapped_archive(tmp_path):
    # numpy.load(path, mmap_mode="r") reads an .npz's members into memory; a stored member here is the file
    path = tmp_path / "m.npz"
    np.savez(path, big=np.arange(1 << 16, dtype=np.float32), small=np.ones(3))
    model = wv.read(path, mmap=True)
    big = model["big"]
    assert not big.flags.owndata and not big.flags.writeable
    base = big
    while getattr(base, "base", None) is not None:
        base = base.base
    assert isinstance(base, memoryview) and base.obj.__class__.__name__ == "mmap"
    assert np.array_equal(big, np.arange(1 << 16, dtype=np.float32))


def test_dump_shows_every_member_and_the_directory(tmp_path, capsys):
    path = tmp_path / "d.npz"
    np.savez_compressed(path, w=np.ones((2, 3), np.float32), v=np.arange(3))
    assert cli.main(["dump", str(path)]) == 0
    out = capsys.readouterr().out
    for field in ("members[0].extra[0].data = [", "members[1].data.deflated", "directory[1].local_header_offset",
                  "end.entries = 2"):
        assert field in out, field
    np.savez(path, w=np.ones((2, 3), np.float32))
    assert cli.main(["dump", str(path)]) == 0
    assert "members[0].data.npy.header = {'descr': '<f4'" in capsys.readouterr().out


def test_validate_reports_a_crc_that_does_not_match_and_a_directory_that_disagrees(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, w=np.arange(4.0))
    data = bytearray(path.read_bytes())
    at = data.rindex(b"\x00@", 0, data.index(b"PK\x01\x02"))  # a byte of the array (3.0 = 00 .. 08 40)
    data[at] ^= 1
    path.write_bytes(bytes(data))
    report = wv.validate(path)
    assert not report.ok and report.problems[0].startswith("members[0].crc32 at byte 14: w.npy: the data's CRC")
    with pytest.raises(zipfile.BadZipFile):  # (what numpy.load meets)
        np.load(path)["w"]
    np.savez(path, w=np.arange(4.0))
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02") + 42
    data[at:at + 4] = struct.pack("<I", 7)  # the directory puts the member elsewhere
    path.write_bytes(bytes(data))
    report = wv.validate(path)
    assert any(p.startswith("directory[0].local_header_offset") for p in report.problems)
    assert cli.main(["validate", str(path)]) == 1


def test_a_member_claiming_more_than_deflate_can_give_is_refused_before_inflating():
    data = bytearray(saved(np.savez_compressed, w=np.zeros(1000)))
    # the zip64 extra's uncompressed size (bytes 39..46): 2^40 from 30-odd deflated bytes
    data[39:47] = struct.pack("<Q", 1 << 40)
    with pytest.raises(FormatError) as e:
        parse_npz(bytes(data))
    assert (e.value.format, e.value.path, e.value.offset) == ("npz", "members[0].data", 55)
    assert "more than deflate can give" in str(e.value)


def test_damage_inside_a_deflated_member_is_located():
    data = bytearray(saved(np.savez_compressed, w=np.arange(50.0)))
    data[60] ^= 0xFF
    with pytest.raises(FormatError) as e:
        parse_npz(bytes(data))
    assert e.value.format == "npz" and e.value.path.startswith("members[0].data") and e.value.offset == 55


SAMPLES = [saved(np.savez, a=np.arange(4.0), b=np.array(["x"])), saved(np.savez_compressed, a=np.arange(4.0)),
           written({"é": np.ones(2, np.int8)}, True)]


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "compiled"])
def test_every_cut_of_an_archive_fails_with_the_npz_error(compiled):
    for sample in SAMPLES:
        assert_truncations_fail(schema.npz, sample, format="npz", compiled=compiled)


def test_mutants_fail_in_our_words_at_a_field():
    assert fuzz("npz", SAMPLES, cases=48) >= 48 * len(SAMPLES)
    assert fuzz("npz-embeddings", [saved(np.savez, words=np.array(["a"]), vectors=np.ones((1, 2)))], cases=24) >= 24


def test_a_zip_that_is_not_an_npz_is_refused_at_a_field(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(FormatError) as e:
        parse_npz(buf.getvalue())
    assert (e.value.path, e.value.offset) == ("members[0].name", 30) and "ends with" not in str(e.value)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_BZIP2) as z:
        z.writestr("a.npy", b"\x93NUMPY")
    with pytest.raises(FormatError) as e:
        parse_npz(buf.getvalue())
    assert e.value.path == "members[0].compression" and e.value.offset == 8 and "Compression" in str(e.value)


def test_a_wrong_crc_of_a_deflated_member_is_reported_by_check():
    data = bytearray(saved(np.savez_compressed, w=np.arange(3.0)))
    data[14] ^= 1  # the local header's CRC-32
    model = npz_to_model(parse_npz(bytes(data)))
    assert np.array_equal(model["w"], np.arange(3.0))
    problems = wv.registry.get("npz").check(parse_npz(bytes(data)))
    assert problems and problems[0].startswith("members[0].crc32 at byte 14")


WHISPER = Path(__file__).parents[2] / "data" / "numpy" / "mel_filters.npz"  # (see tests/data/numpy/README.md)


def test_an_archive_an_older_numpy_wrote_round_trips(tmp_path):
    # OpenAI Whisper's mel filterbanks: savez_compressed of an older numpy and Python, whose zip64 extra fields
    # sit beside sizes kept in the 32-bit fields (version 2.0); numpy.load's values, the same bytes back
    parsed = bytes_roundtrip(schema.npz, WHISPER.read_bytes(), format="npz")
    assert [m.version_needed for m in parsed.members] == [20, 20]
    assert all(m.compressed_size != schema.FULL and m.extra[0].data[0] == m.uncompressed_size
               for m in parsed.members)
    model = wv.read(WHISPER)
    with np.load(WHISPER) as want:
        assert list(model) == want.files == ["mel_80", "mel_128"]
        assert all(np.array_equal(model[n], want[n]) and model[n].dtype == want[n].dtype for n in want.files)
    assert wv.validate(WHISPER).ok
    out = tmp_path / "again.npz"
    wv.write(model, out)
    assert out.read_bytes() == WHISPER.read_bytes()
    model["mel_80"] = model["mel_80"] * 2  # a changed member: written as numpy writes it today, the other kept
    wv.write(model, out)
    with np.load(out) as back:
        assert np.array_equal(back["mel_80"], model["mel_80"]) and np.array_equal(back["mel_128"], model["mel_128"])
    assert wv.validate(out).ok


def _pipe_written(**arrays):
    read, write = os.pipe()
    got = []
    reader = threading.Thread(target=lambda: got.append(os.fdopen(read, "rb").read()))
    reader.start()
    with os.fdopen(write, "wb") as f:
        np.savez(f, **arrays)
    reader.join()
    return got[0]


INSPECTED = {"a": np.arange(12.0).reshape(3, 4), "b": np.array(["x", "yz"]), "c": np.asfortranarray(np.ones((2, 5))),
             "d": np.zeros((0, 3), ">i2"), "é": np.array(3.5, np.float16)}


@pytest.mark.parametrize("make", [lambda: saved(np.savez, **INSPECTED), lambda: saved(np.savez_compressed, **INSPECTED),
                                  lambda: _pipe_written(**INSPECTED), lambda: _zip64_ended(saved(np.savez, **INSPECTED), marked=True),
                                  lambda: WHISPER.read_bytes()],
                         ids=["stored", "deflated", "pipe", "zip64-end", "whisper"])
def test_inspect_reads_the_directory_and_headers_only_and_says_what_a_full_parse_says(tmp_path, make):
    """inspect of an .npz (the issue's 'header only'): the end records, the directory and each member's .npy
    header, the same members a full parse gives, and numpy's dtypes and shapes; an archive whose array bytes are
    damaged (CRC and all) still inspects, where the full parse refuses it."""
    path = tmp_path / "a.npz"
    path.write_bytes(make())
    quick, full = wv.inspect(path), wv.inspect(path, full=True)
    assert "parts" not in quick and "parts" in full  # (the quick path: no walk of the schema)
    assert quick["members"] == full["members"] and quick["arrays"] == full["arrays"]
    with np.load(path) as z:
        assert [m["name"] for m in quick["members"]] == [f"{n}.npy" for n in z.files]
        assert [(m["dtype"], m["shape"]) for m in quick["members"]] == [(str(z[n].dtype), list(z[n].shape))
                                                                       for n in z.files]


def test_inspect_does_not_inflate_the_arrays():
    """A deflated member cut short after its header's first kilobytes: the full parse fails in the member's
    data, inspect still tells every member from the headers alone."""
    data = bytearray(saved(np.savez_compressed, m=np.random.default_rng(0).normal(size=(400, 300)), w=np.arange(3)))
    parsed = parse_npz(bytes(data))
    first = parsed.members[0]
    start = parsed.members.offsets[0] + 30 + first.name_length + first.extra_length  # (its data)
    data[start + 2000 : start + 4000] = bytes(2000)  # the deflate stream wrecked past the header
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"wv-inflate-{os.getpid()}.npz"
    try:
        path.write_bytes(bytes(data))
        with pytest.raises(FormatError):
            wv.inspect(path, full=True)
        quick = wv.inspect(path)
        assert [(m["name"], m["shape"]) for m in quick["members"]] == [("m.npy", [400, 300]), ("w.npy", [3])]
    finally:
        path.unlink(missing_ok=True)


def test_every_cut_of_an_archive_fails_its_inspect_with_the_npz_error(tmp_path):
    """inspect reads from the end: every cut gives the npz's own error, and every 8-byte window zeroed gives it or
    an inspect of the two members (a name zeroed in the directory is the directory's, as zipfile lists it),
    never another exception."""
    data = saved(np.savez_compressed, a=np.arange(40.0), b=np.array(["x"]))
    path = tmp_path / "cut.npz"
    for n in range(0, len(data), 7):
        path.write_bytes(data[:n])
        with pytest.raises(FormatError) as e:
            wv.inspect(path, format="npz")
        assert e.value.format == "npz", e.value
    for at in range(0, len(data), 5):
        path.write_bytes(data[:at] + bytes(8) + data[at + 8 :])
        try:
            got = wv.inspect(path, format="npz")
        except FormatError as e:
            assert e.format == "npz", e
        else:
            assert got["arrays"] == 2 and [(m["dtype"], m["shape"]) for m in got["members"]] == [
                ("float64", [40]), ("<U1", [1])]


@pytest.mark.parametrize("fields", [2, 4], ids=["local header", "directory entry"])
@pytest.mark.parametrize("values", range(5))
def test_zip64_complete_is_every_marked_field_having_its_zip64_value(fields, values):
    """The count the schema's check makes holds to its definition: each field holding 0xFFFFFFFF (0xFFFF for the
    disk) has its value in the zip64 extra field (``wide``), in every combination of marked fields."""
    import itertools

    import construct as cs

    for marked in itertools.product([False, True], repeat=fields):
        ctx = cs.Container({name: full if m else 7 for (name, full), m in zip(schema.ZIP64_ORDER[:fields], marked, strict=True)})
        ctx.extra = [cs.Container(id=9, data=b"x"), cs.Container(id=schema.ZIP64_EXTRA, data=list(range(values)))]
        defined = all(schema.wide(name)(ctx) is not None for name, _ in schema.ZIP64_ORDER if name in ctx)
        assert schema.zip64_complete(ctx) == defined == (sum(marked) <= values)


@pytest.mark.parametrize("where", ["directory", "members", "both"])
def test_a_name_flagged_utf8_that_is_not_is_refused_at_the_name(tmp_path, where):
    # issue 37's npz-bad-member-name.npz: a name flagged UTF-8 (bit 11) cut inside a sequence made
    # `wvformats inspect` fail with a bare UnicodeDecodeError (zipfile raises the same, unlocated)
    data = bytearray(saved(np.savez, **{"名前": np.arange(3, dtype="<u2"), "plain": np.ones(2, np.float32)}))
    name = "名前.npy".encode()
    local, central = data.index(name), data.index(name, data.index(schema.CENTRAL_MAGIC))
    broken = {"directory": [central], "members": [local], "both": [local, central]}[where]
    for at in broken:
        data[at + 2] = 0x41  # (the first character's third byte: a sequence cut short)
    path = tmp_path / "bad.npz"
    path.write_bytes(bytes(data))
    if where != "members":  # (zipfile reads the names of the directory)
        with pytest.raises(UnicodeDecodeError):
            zipfile.ZipFile(path)
    # read goes front to back (the member first), inspect from the end (the directory first), as zipfile
    at = {"read": min(broken), "inspect": max(broken)}
    for call in (wv.read, wv.inspect):
        with pytest.raises(FormatError) as e:
            call(path)
        field = "members[0].name" if at[call.__name__] == local else "directory[0].name"
        assert (e.value.format, e.value.path, e.value.offset) == ("npz", field, at[call.__name__]), call
        assert "UTF-8" in str(e.value) and "<function" not in str(e.value)


def test_a_name_not_flagged_utf8_reads_as_code_page_437_as_zipfile_reads_it(tmp_path):
    data = bytearray(saved(np.savez, **{"名前": np.arange(3, dtype="<u2")}))
    for at in (6, data.index(schema.CENTRAL_MAGIC) + 8):  # (the flags of the member and of its entry)
        data[at : at + 2] = struct.pack("<H", struct.unpack_from("<H", data, at)[0] & ~schema.FLAG_UTF8)
    path = tmp_path / "cp437.npz"
    path.write_bytes(bytes(data))
    with zipfile.ZipFile(path) as z:
        want = z.namelist()
    assert want == ["名前.npy".encode().decode("cp437")]
    assert list(wv.read(path)) == [want[0][: -len(".npy")]]
    assert [m["name"] for m in wv.inspect(path)["members"]] == want


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_inspect_of_a_member_whose_array_runs_past_it_says_so_as_read_does(tmp_path, save):
    # inspect read each member's header alone: an array declared longer than its member went unsaid
    buf = io.BytesIO()
    save(buf, a=np.ones(4, np.float32), b=np.arange(3))
    if save is np.savez:
        data = buf.getvalue().replace(b"'shape': (4,)", b"'shape': (8,)")
    else:  # (the member inflated, its header changed, deflated again: sizes and CRC kept as the archive says)
        with zipfile.ZipFile(buf) as z:
            raw = z.read("a.npy").replace(b"'shape': (4,)", b"'shape': (8,)")
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("a.npy", raw)
            z.writestr("b.npy", zipfile.ZipFile(buf).read("b.npy"))
        data = out.getvalue()
    path = tmp_path / "long.npz"
    path.write_bytes(data)
    with pytest.raises(FormatError) as read:
        wv.read(path)
    with pytest.raises(FormatError) as inspected:
        wv.inspect(path)
    assert inspected.value.path == read.value.path == "members[0].data.npy.data"
    assert inspected.value.offset == read.value.offset and "32 bytes but only 16 remain" in str(inspected.value)


def test_the_zip_numbers_outside_the_schema_are_the_schemas():
    """The sniffers' numbers (standard library only, schemas/identity.py) and the codec's record sizes are the
    schema's: its local header's fixed part and where the name's length lies (issue 38: once, not again)."""
    from wvformats.schemas import identity
    from wvformats.schemas import npz as zip_schema

    from wvformats.families.numpy import codec as npz_codec

    local = zip_schema.local_entry
    assert identity.ZIP_LOCAL_FIXED == framework.fixed_size(local, stop="name") == npz_codec.LOCAL_FIXED == 30
    assert identity.ZIP_LOCAL_NAME_LENGTH_AT == framework.fixed_size(local, stop="name_length") == 26
    assert npz_codec.CRC_AT == 14


def test_inspect_of_a_directory_entry_putting_its_member_past_the_end_names_the_entry(tmp_path):
    # inspect reads each member where its directory entry says (the schema's head): an offset past the archive
    # is the npz's error at the member, saying which entry put it there
    data = bytearray(saved(np.savez, a=np.arange(3.0)))
    at = data.index(schema.CENTRAL_MAGIC) + framework.fixed_size(schema.central_entry, stop="local_header_offset")
    data[at : at + 4] = struct.pack("<I", 10**6)
    path = tmp_path / "far.npz"
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError) as e:
        wv.inspect(path)
    assert (e.value.format, e.value.path, e.value.offset) == ("npz", "members[0]", len(data))
    assert "directory[0].local_header_offset puts it past the end" in str(e.value)
