"""NumPy .npy and .npz: numpy itself as the oracle (numpy.save/savez/savez_compressed output read as
numpy.load reads it and written back byte for byte), numpy's own old test files, gensim's KeyedVectors.save,
object arrays refused, zero-copy reads, hostile headers, and the property tests."""

import ast
import io
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sparse import inspect_of_sparse
from wvformats.schemas.constructs.npy import canonical_header

import wvformats as wv
from wvformats import cli
from wvformats.errors import FormatError, OptionError
from wvformats.families.numpy.codec import NpzArrays, parse, parse_npz
from wvformats.testing import property_tests

NUMPY_DATA = Path(np.__file__).parent / "lib" / "tests" / "data"  # files older numpys and Python 2 wrote

ARRAYS = {
    "f4": np.arange(12, dtype=np.float32).reshape(3, 4), "f8_big_endian": np.arange(3, dtype=">f8"),
    "f2": np.array([1.5, np.inf], np.float16), "longdouble": np.array([1 / 3], np.longdouble),
    "c8": np.array([1 + 2j], np.complex64), "c16": np.array([3j], np.complex128),
    "bool": np.array([True, False]), "i1": np.array([-1], np.int8), "u8": np.array([2**64 - 1], np.uint64),
    "unicode": np.array(["a", "héllo"]), "bytes": np.array([b"ab", b"c"]), "void": np.zeros(2, "V3"),
    "datetime": np.array(["2024-01-02"], "M8[D]"), "timedelta": np.array([5], "m8[ms]"),
    "structured": np.zeros(2, [("x", "<i4"), ("y", "|S3"), ("z", "<f8", (2,))]),
    "nested": np.zeros(1, [("p", [("a", "u1"), ("b", ">i2")])]),
    "scalar": np.array(2.5), "empty": np.zeros((0, 3), np.int32),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)),
    "strided": np.arange(10, dtype=np.float32)[::2],
}


def saved(array, **kw):
    buf = io.BytesIO()
    np.save(buf, array, **kw)
    return buf.getvalue()


def put(tmp_path, data, name):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_every_dtype_numpy_writes_reads_as_numpy_loads_it_and_writes_back_identical(tmp_path, name):
    data = saved(ARRAYS[name])
    path = put(tmp_path, data, f"{name}.npy")
    assert wv.sniff(path) == "npy"
    got = wv.read(path)
    want = np.load(path)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    assert wv.validate(path).ok
    out = tmp_path / f"again-{name}.npy"
    wv.write(np.array(ARRAYS[name], order="K"), out)
    assert out.read_bytes() == data


@pytest.mark.parametrize("dtype", ["V0", []])
def test_elements_of_no_bytes_read_as_numpy_loads_them(tmp_path, dtype):
    # numpy.save writes them (a 'V0' array, a structured dtype of no fields) and numpy.load reads them;
    # 'V0' was an unchecked ValueError ("itemsize cannot be zero") here, found by the .npz fuzz
    data = saved(np.zeros((2, 3), dtype))
    path = put(tmp_path, data, "v0.npy")
    got, want = wv.read(path), np.load(path)
    assert got.dtype == want.dtype and got.shape == want.shape == (2, 3)
    assert wv.validate(path).ok
    out = tmp_path / "again.npy"
    wv.write(got, out)
    assert out.read_bytes() == data


def _bare_header(descr, shape, fortran=False):
    """A whole .npy of an array of no bytes: the header numpy writes, nothing after it."""
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": descr, "fortran_order": fortran, "shape": shape})
    return out.getvalue()


@pytest.mark.parametrize("descr, shape", [("<U0", (32768, 32768)), ("|S0", (2**31, 2**31)), ("|V0", (2**40, 3))])
def test_huge_arrays_of_elements_of_no_bytes_read_as_numpy_loads_them_in_no_memory(tmp_path, descr, shape):
    # a 128-byte '<U0' file of shape (32768, 32768) was read as a 4 GiB '<U1' array (np.zeros widens U0 and
    # S0 to a character); '|S0' of (2**31, 2**31) asked for 4 EiB
    import tracemalloc

    path = put(tmp_path, _bare_header(descr, shape), "zero.npy")
    tracemalloc.start()
    try:
        got = wv.read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    want = np.load(path)
    assert (got.dtype, got.shape, got.nbytes) == (want.dtype, want.shape, 0) == (np.dtype(descr), shape, 0)
    assert peak < 1 << 20, peak


def test_elements_of_no_bytes_count_as_one_against_the_largest_array(tmp_path):
    data = _bare_header("|S0", (2**62, 2))  # 2**63 elements: numpy.load's int64 count overflows, and it refuses
    with pytest.raises(ValueError):
        np.load(io.BytesIO(data))
    with pytest.raises(FormatError) as e:
        parse(data)
    assert (e.value.path, e.value.offset) == ("data", 128) and "larger than any array" in str(e.value)


def test_bytes_after_an_array_of_no_bytes_are_found_where_they_start(tmp_path):
    # issue 37's npy-u0-huge-shape.npy: '|S0', Fortran order, (2**31, 2**31), then 48 bytes; the check said
    # they start at byte 118, the header's length without the 10 bytes before it
    data = _bare_header("|S0", (2**31, 2**31), fortran=True) + np.arange(12, dtype=">u4").tobytes()
    path = put(tmp_path, data, "s0.npy")
    got, want = wv.read(path), np.load(path)
    assert (got.dtype, got.shape, got.strides) == (want.dtype, want.shape, want.strides)
    assert wv.validate(path).problems == ["trailing: 48 bytes after the array (numpy.load ignores them; numpy.save "
                                          "writes none), from byte 128"]


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_each_version_is_read_and_kept(tmp_path, version):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, ARRAYS["structured"], version=version)
    path = put(tmp_path, buf.getvalue(), "v.npy")
    assert wv.inspect(path)["version"] == f"{version[0]}.{version[1]}"
    assert wv.read(path).tobytes() == ARRAYS["structured"].tobytes()
    assert wv.validate(path).ok


def test_a_field_name_outside_latin1_is_written_as_numpy_does_in_version_3(tmp_path):
    array = np.zeros(2, [("ä€", "<i4")])
    with pytest.warns(UserWarning, match="3.0"):  # numpy says the file needs numpy 1.17 or later
        data = saved(array)
    assert data[6:8] == b"\x03\x00"
    out = tmp_path / "u.npy"
    wv.write(array, out)
    assert out.read_bytes() == data


def _fields(n, name="f"):
    return np.zeros(2, [(f"{name}{i}", "<i2") for i in range(n)])


@pytest.mark.filterwarnings("ignore:Stored array in format:UserWarning")  # (numpy's note that 2.0 and 3.0 are new)
@pytest.mark.parametrize("fields, name, version", [(5000, "f", b"\x02\x00"), (5000, "€", b"\x03\x00"),
                                                   (300, "f", b"\x01\x00")])
def test_headers_of_any_size_are_written_as_numpy_save_writes_them(tmp_path, fields, name, version):
    # a header past 65,535 bytes (numpy.save: version 2.0, or 3.0 for names outside latin-1) was refused:
    # "a header of 89024 bytes does not fit version 2"
    array = _fields(fields, name)
    data = saved(array)
    assert data[6:8] == version
    out = tmp_path / "x.npy"
    wv.write(array, out)
    assert out.read_bytes() == data


@pytest.mark.filterwarnings("ignore:Stored array in format:UserWarning")
def test_max_header_size_reads_what_numpy_load_reads_with_it(tmp_path, capsys):
    path = put(tmp_path, saved(_fields(5000)), "big.npy")  # a header of 89,012 characters
    with pytest.raises(ValueError, match="max_header_size"):
        np.load(path)
    with pytest.raises(FormatError) as e:
        wv.read(path)
    assert (e.value.path, e.value.offset) == ("header", 8) and "max_header_size" in str(e.value)
    for limit in (89_011, 89_012):
        if limit < 89_012:
            with pytest.raises(ValueError):
                np.load(path, max_header_size=limit)
            with pytest.raises(FormatError):
                wv.read(path, max_header_size=limit)
            continue
        got, want = wv.read(path, max_header_size=limit), np.load(path, max_header_size=limit)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    assert wv.validate(path, max_header_size=10**6).ok
    for full in (False, True):
        assert wv.inspect(path, full=full, max_header_size=10**6)["version"] == "2.0"
    assert cli.main(["inspect", str(path)]) == 2 and cli.main(["validate", str(path)]) == 1
    assert "--max-header-size" in capsys.readouterr().err
    assert cli.main(["inspect", str(path), "--max-header-size", "89012"]) == 0
    assert cli.main(["validate", str(path), "--max-header-size", "89012"]) == 0
    with pytest.raises(OptionError, match="take no read option .max_header_size."):
        wv.read(put(tmp_path, saved(np.ones(2)), "x.safetensors"), format="safetensors", max_header_size=1)


@pytest.mark.filterwarnings("ignore:Stored array in format:UserWarning")
def test_the_header_limit_counts_characters_as_numpy_does(tmp_path):
    # version 3.0 is UTF-8: 450 names of four '€' make a header of fewer than 10,000 characters (numpy.load
    # reads it) but more than 10,000 bytes (was refused)
    path = put(tmp_path, saved(_fields(450, "€€€€")), "utf8.npy")
    header = path.read_bytes()[12:12 + struct.unpack_from("<I", path.read_bytes(), 8)[0]]
    assert len(header.decode()) <= 10_000 < len(header)
    got, want = wv.read(path), np.load(path)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.filterwarnings("ignore:Stored array in format:UserWarning")
@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_max_header_size_reads_npz_members_as_numpy_load_does(tmp_path, save):
    path = tmp_path / "big.npz"
    save(path, big=_fields(5000), small=np.arange(3))
    with np.load(path) as z, pytest.raises(ValueError):
        z["big"]
    with pytest.raises(FormatError) as e:
        wv.read(path)
    assert e.value.path.startswith("members[0].data.npy.header")
    got = wv.read(path, max_header_size=10**5)
    with np.load(path, max_header_size=10**5) as z:
        assert all(got[k].dtype == z[k].dtype and got[k].tobytes() == z[k].tobytes() for k in ("big", "small"))
    for full in (False, True):
        info = wv.inspect(path, full=full, max_header_size=10**5)
        assert [m["version"] for m in info["members"]] == ["2.0", "1.0"]
    assert wv.validate(path, max_header_size=10**5).ok


@pytest.mark.filterwarnings("ignore:Reading `.npy` or `.npz` file required additional header parsing:UserWarning")
def test_old_numpy_and_python2_files(tmp_path):
    for name in ("python3.npy", "win64python2.npy"):  # the latter's header says (2L,): Python 2's longs
        path = NUMPY_DATA / name
        assert np.array_equal(wv.read(path), np.load(path))
        assert wv.validate(path).ok


def test_a_header_padded_to_16_as_numpy_before_1_9_did_is_kept(tmp_path):
    text = b"{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }"
    pad = 16 - (10 + len(text) + 1) % 16
    header = text + b" " * pad + b"\n"
    data = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + np.arange(3, dtype="<i2").tobytes()
    path = put(tmp_path, data, "old.npy")
    assert np.array_equal(wv.read(path), np.load(path))
    assert wv.validate(path).ok


@pytest.mark.parametrize("name", ["py3-objarr.npy", "py2-objarr.npy", "py2-np0-objarr.npy"])
def test_object_arrays_are_refused_never_unpickled(name):
    with pytest.raises(FormatError) as e:
        wv.read(NUMPY_DATA / name)
    assert (e.value.format, e.value.path, e.value.offset) == ("npy", "header.descr", 10)
    assert "pickle" in str(e.value)


def test_writing_an_object_array_is_refused(tmp_path):
    with pytest.raises(FormatError):
        wv.write(np.array([1, "a"], dtype=object), tmp_path / "o.npy")


def _header(text, version=b"\x01\x00"):
    raw = text.encode("latin-1")
    return b"\x93NUMPY" + version + struct.pack("<H", len(raw)) + raw


HOSTILE = {
    "not_a_dict": (_header("[1, 2]\n"), "header"),
    "missing_key": (_header("{'descr': '<f4', 'shape': (1,)}\n"), "header"),
    "extra_key": (_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}\n"), "header"),
    "key_not_a_string": (_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), None: 0}\n"), "header"),
    "negative_shape": (_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}\n"), "header.shape"),
    "call": (_header("{'descr': __import__('os').system('x'), 'fortran_order': False, 'shape': ()}\n"), "header"),
    "bad_descr": (_header("{'descr': '<q9', 'fortran_order': False, 'shape': ()}\n"), "header.descr"),
    "fortran_not_bool": (_header("{'descr': '<f4', 'fortran_order': 1, 'shape': ()}\n"), "header.fortran_order"),
    "array_past_end": (_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000,)}\n") + bytes(8),
                       "data"),
    "huge_shape": (_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2**62, 2**62)}\n"), "header"),
    "too_long_header": (b"\x93NUMPY\x02\x00" + struct.pack("<I", 10**9), "header"),
    "version_4": (b"\x93NUMPY\x04\x00" + bytes(8), "major"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_headers_fail_at_a_field(case):
    data, field = HOSTILE[case]
    with pytest.raises((ValueError, SyntaxError, EOFError, OverflowError, TypeError)):  # numpy refuses each too
        np.load(io.BytesIO(data), allow_pickle=False)
    with pytest.raises(FormatError) as e:
        parse(data)
    assert e.value.path == field and e.value.offset is not None


def test_read_is_a_zero_copy_view_of_the_map(tmp_path):
    path = put(tmp_path, saved(np.arange(4096, dtype=np.float32)), "m.npy")
    a = wv.read(path, mmap=True)
    assert not a.flags.owndata and not a.flags.writeable
    assert np.array_equal(a, np.load(path, mmap_mode="r"))


def test_inspect_reads_the_header_only(tmp_path):

    info = wv.inspect(put(tmp_path, saved(np.ones((1000, 4), np.float32)), "a.npy"))
    assert (info["shape"], info["dtype"], info["data_bytes"]) == ([1000, 4], "float32", 16000)
    # 4 GiB of array that inspect never reads
    assert inspect_of_sparse(tmp_path / "big.npy", _bare_header("<f4", (2**30,)), 2**32)["data_bytes"] == 2**32


def test_inspect_of_a_file_cut_inside_its_array_says_so_and_fails(tmp_path, capsys):
    # inspect read the header alone and said nothing of an array running past the end of the file (exit 0)
    path = put(tmp_path, saved(np.ones((1000, 4), np.float32))[:-1], "cut.npy")
    with pytest.raises(ValueError):
        np.load(path)
    for full in (False, True):
        with pytest.raises(FormatError) as e:
            wv.inspect(path, full=full)
        assert (e.value.format, e.value.path, e.value.offset) == ("npy", "data", 128)
        assert "needs 16000 bytes but only 15999 remain" in str(e.value)
    assert cli.main(["inspect", str(path)]) == 2  # (the exit of every file inspect cannot read)
    assert "needs 16000 bytes" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------
# .npz

NPZ_ARRAYS = {"w": np.arange(6.0).reshape(2, 3), "words": np.array(["a", "b"]), "f": ARRAYS["fortran"],
              "s": ARRAYS["structured"], "z": np.array(1)}


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_reads_as_numpy_loads_it_and_writes_back_identical(tmp_path, save):
    path = tmp_path / "a.npz"
    save(path, **NPZ_ARRAYS)
    assert wv.sniff(path) == "npz"
    model = wv.read(path)
    with np.load(path) as want:
        assert list(model) == list(want.files)
        for name in want.files:
            assert model[name].dtype == want[name].dtype and model[name].tobytes() == want[name].tobytes()
    assert wv.validate(path).ok
    out = tmp_path / "again.npz"
    wv.write(model, out)
    assert out.read_bytes() == path.read_bytes()
    assert np.array_equal(wv.read(f"{path}::w.npy"), NPZ_ARRAYS["w"])  # one member, as a .npy


def test_stored_members_are_views_of_the_archive(tmp_path):
    path = tmp_path / "v.npz"
    np.savez(path, big=np.arange(10000, dtype=np.float32))
    big = wv.read(path, mmap=True)["big"]
    assert not big.flags.owndata and np.array_equal(big, np.arange(10000, dtype=np.float32))


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_written_from_arrays_loads_in_numpy(tmp_path, compressed):
    out = tmp_path / "n.npz"
    wv.write(NpzArrays(NPZ_ARRAYS, compressed=compressed), out)
    with zipfile.ZipFile(out) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED}
    with np.load(out) as back:
        for name, array in NPZ_ARRAYS.items():
            assert np.array_equal(back[name], array)
    assert wv.validate(out).ok


def test_npz_object_member_and_damage_are_located(tmp_path):
    path = tmp_path / "o.npz"
    np.savez(path, ok=np.ones(2), obj=np.array([{}], dtype=object))
    with pytest.raises(FormatError) as e:
        wv.read(path)
    assert e.value.format == "npz" and e.value.path == "members[1].data.npy.header.descr"
    with zipfile.ZipFile(path) as z:  # the offset is the member's header's, in the archive
        info = z.infolist()[1]
    assert e.value.offset == info.header_offset + 30 + len(info.filename) + 20 + 10  # (20: the zip64 extra)
    data = bytearray((tmp_path / "o.npz").read_bytes())
    with pytest.raises(FormatError):
        parse_npz(bytes(data[: len(data) // 2]))


def test_gensim_keyedvectors_save_writes_npy_we_read(tmp_path):
    gensim_models = pytest.importorskip("gensim.models")
    kv = gensim_models.KeyedVectors(vector_size=4)
    kv.add_vectors(["king", "queen", "man"], np.arange(12, dtype=np.float32).reshape(3, 4))
    kv.save(str(tmp_path / "kv.model"), separately=["vectors"])
    npy = tmp_path / "kv.model.vectors.npy"
    assert wv.sniff(npy) == "npy"
    assert np.array_equal(wv.read(npy), kv.vectors)
    assert wv.validate(npy).ok


SAMPLES = [saved(ARRAYS["f4"]), saved(ARRAYS["structured"]), saved(ARRAYS["fortran"])]
globals().update(property_tests("npy", samples=SAMPLES))


# ---------------------------------------------------------------------------------------------------------
# word embeddings as an .npz (words.npy, then vectors.npy)


def test_embeddings_npz_from_gensim_vectors_reads_as_embeddings(tmp_path):
    gensim_models = pytest.importorskip("gensim.models")
    kv = gensim_models.KeyedVectors(vector_size=3)
    kv.add_vectors(["king", "queen", "naïve"], np.arange(9, dtype=np.float32).reshape(3, 3))
    path = tmp_path / "kv.npz"
    np.savez(path, words=np.array(kv.index_to_key), vectors=kv.vectors)  # what a gensim user writes
    assert wv.sniff(path) == "npz-embeddings"
    emb = wv.read(path)
    assert emb.words == kv.index_to_key and np.array_equal(emb.vectors, kv.vectors)
    out = tmp_path / "again.npz"
    wv.write(emb, out)
    assert out.read_bytes() == path.read_bytes()  # read and unchanged: the archive as it was
    assert wv.validate(path).ok


def test_word_vectors_convert_to_npz_and_back_unchanged(tmp_path):
    from wvformats.samples import sample_dir

    src = sample_dir() / "sample.txt"
    npz = tmp_path / "e.npz"
    assert cli.main(["convert", str(src), str(npz)]) == 0
    with np.load(npz) as z:
        emb = wv.read(src)
        assert z.files == ["words", "vectors"] and z["words"].tolist() == emb.words
        assert np.array_equal(z["vectors"], emb.vectors)
    back = tmp_path / "back.txt"
    assert cli.main(["convert", str(npz), str(back)]) == 0
    assert back.read_bytes() == src.read_bytes()


def test_an_npz_of_other_arrays_is_not_embeddings(tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, words=np.array(["a"]), vectors=np.zeros((2, 2)))  # two rows, one word
    with pytest.raises(FormatError) as e:
        wv.read(path)
    assert e.value.format == "npz-embeddings" and "one word" in str(e.value)


# ---------------------------------------------------------------------------------------------------------
# the header's fast path: numpy.save's own spelling read without ast.literal_eval, exactly as it reads it

def _numpy_header(descr, fortran, shape, version):
    out = io.BytesIO()
    write = np.lib.format.write_array_header_1_0 if version == 1 else np.lib.format.write_array_header_2_0
    write(out, {"descr": descr, "fortran_order": fortran, "shape": shape})
    raw = out.getvalue()
    return raw[10 if version == 1 else 12 :].decode("latin-1")


_PLAIN = hnp.scalar_dtypes() | hnp.byte_string_dtypes() | hnp.unicode_string_dtypes()
_STRUCTURED = st.lists(st.tuples(st.text(st.characters(max_codepoint=255), min_size=1), _PLAIN), min_size=1,
                       max_size=2, unique_by=lambda f: f[0]).map(np.dtype)  # (names version 1.0 and 2.0 hold)


@settings(max_examples=300, deadline=None)
@given(dtype=_PLAIN | _STRUCTURED,
       fortran=st.booleans(), shape=st.lists(st.integers(0, 2**63 - 1), max_size=4).map(tuple),
       version=st.sampled_from([1, 2]))
def test_headers_numpy_writes_read_as_literal_eval_reads_them(dtype, fortran, shape, version):
    descr = np.lib.format.dtype_to_descr(dtype)
    text = _numpy_header(descr, fortran, shape, version)
    fast = canonical_header(text)
    assert (fast is None) == (not isinstance(descr, str))  # every plain dtype's header takes the fast path
    if fast is not None:
        assert repr(fast) == repr(ast.literal_eval(text))


@settings(max_examples=500, deadline=None)
@given(shape=st.lists(st.integers(0, 10**20), max_size=3).map(tuple), fortran=st.booleans(),
       edits=st.lists(st.tuples(st.integers(0, 200), st.sampled_from(list("'\"\\ \n\t,()0123456789Ll_+-xe.:{}#TF")
                                                                     + ["", "True", "1", "\x0c", "\u00e9"])),
                      min_size=1, max_size=3))
def test_near_misses_of_the_spelling_read_as_literal_eval_reads_them_or_go_to_it(shape, fortran, edits):
    text = _numpy_header("<f4", fortran, shape, 1)
    for at, piece in edits:  # a character replaced, dropped or added
        at %= len(text) + 1
        text = text[:at] + piece + text[at + (len(piece) != 1 or at % 2) :]
    fast = canonical_header(text)
    if fast is not None:
        assert repr(fast) == repr(ast.literal_eval(text))


@pytest.mark.parametrize("vectors", [np.array([[b"x", b"y"], [b"z", b"w"]]), np.ones((2, 2), np.complex64),
                                     np.zeros((2, 2), [("a", "<f4")]), np.array([["1", "2"], ["3", "4"]])])
@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_vectors_that_are_not_real_numbers_are_refused_naming_the_member_and_dtype(tmp_path, vectors, save):
    # issue 37's npz-bytes-vectors.npz: bytes vectors were read as embeddings, and most_similar failed with
    # numpy's ValueError ("could not convert string to float")
    path = tmp_path / "e.npz"
    save(path, words=np.array(["a", "b"]), vectors=vectors)
    with pytest.raises(FormatError) as e:
        wv.read(path)
    with zipfile.ZipFile(path) as z:
        info = z.infolist()[1]
    data = info.header_offset + 30 + len(info.filename) + 20  # (20: the zip64 extra numpy writes)
    assert (e.value.format, e.value.path, e.value.found) == ("npz-embeddings", "members[1].data.npy.header.descr",
                                                             vectors.dtype.str)
    assert "vectors.npy" in str(e.value) and vectors.dtype.str in str(e.value)
    if save is np.savez:
        assert e.value.offset == data + 10  # (the header's text)
    else:
        assert e.value.offset == data and "byte 10 of the member once inflated" in str(e.value)


@pytest.mark.parametrize("order", ["<", ">"])
def test_a_word_past_u10ffff_is_refused_where_numpy_raises_systemerror(tmp_path, order):
    # issue 37's npz-embeddings-hostile-dtype.npz: 0xfffffffe in a '<U3' words array was a SystemError
    # ("invalid maximum character passed to PyUnicode_New") from words.tolist()
    codes = np.array([116, 104, 101, 111, 102, 0, 117, 110, 100, 0xFFFFFFFE, 0, 0], np.dtype("u4").newbyteorder(order))
    words = codes.view(f"{order}U3")
    path = tmp_path / "e.npz"
    np.savez(path, words=words, vectors=np.zeros((4, 2), np.float32))
    with np.load(path) as z, pytest.raises(SystemError):
        z["words"].tolist()
    with pytest.raises(FormatError) as e:
        wv.read(path)
    with zipfile.ZipFile(path) as z:
        info = z.infolist()[0]
    array = info.header_offset + 30 + len(info.filename) + 20 + 128  # (the array after its 128-byte header)
    assert (e.value.format, e.value.path, e.value.offset, e.value.found) == (
        "npz-embeddings", "members[0].data.npy.data[3]", array + 4 * 9, 0xFFFFFFFE)
    assert path.read_bytes()[e.value.offset : e.value.offset + 4] == codes[9:10].tobytes()


def test_lone_surrogates_in_words_are_kept_as_numpy_gives_them(tmp_path):
    path = tmp_path / "e.npz"
    np.savez(path, words=np.array(["caf\udce9", "\ud800x"]), vectors=np.eye(2, dtype=np.float32))
    with np.load(path) as z:
        want = z["words"].tolist()
    assert wv.read(path).words == want == ["caf\udce9", "\ud800x"]


def test_a_subarray_of_no_bytes_counts_as_numpy_makes_the_array(tmp_path):
    """A ('<f4', (0,)) dtype is an array of float32 whose last dimension is 0: numpy counts its nonzero
    dimensions with the base type's bytes, and refuses (2**31, 2**31) as too big; found by the mutation fuzz
    ('unchecked input: ValueError: array is too big')."""
    descr = ("<f4", (0,))
    big = _bare_header(descr, (2**31, 2**31))
    with pytest.raises(ValueError, match="too big"):
        np.load(io.BytesIO(big))
    with pytest.raises(FormatError) as e:
        parse(big)
    assert (e.value.path, e.value.offset) == ("data", 128) and "larger than any array" in str(e.value)
    # a small one: float32 of the shape the dtype's own shape extends (numpy.load itself fails on it: it reads
    # 0 of its "12 elements")
    got = wv.read(put(tmp_path, _bare_header(descr, (3, 4)), "small.npy"))
    assert (got.dtype, got.shape, got.nbytes) == (np.dtype("<f4"), (3, 4, 0), 0)
