"""safetensors: the safetensors library as the oracle (its numpy API and its raw serializer), byte-exact
writes in its layout, header bytes kept, the files it refuses, zero-copy reads, and the property tests."""

import json
import struct

import numpy as np
import pytest
from sparse import inspect_of_sparse
from wheels import member_of_wheel

import wvformats as wv
from wvformats import cli
from wvformats.errors import BuildError, FormatError, TruncatedError
from wvformats.families.safetensors.codec import check, parse
from wvformats.families.safetensors.model import SafeTensors
from wvformats.families.safetensors.sniff import sniff_safetensors
from wvformats.testing import property_tests

st_lib = pytest.importorskip("safetensors")  # the 'peers' extra, installed by CI
from safetensors import SafetensorError, TensorSpec, deserialize, serialize  # noqa: E402
from safetensors.numpy import load, save  # noqa: E402

# every dtype safetensors.numpy writes, 0-d and empty tensors among them
NUMPY_TENSORS = {
    "f64": np.linspace(-1, 1, 6).reshape(2, 3), "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
    "f16": np.array([1.5, -2, np.inf], np.float16), "i64": np.array([-(2**62), 7], np.int64),
    "u64": np.array([2**63], np.uint64), "i32": np.array(-5, np.int32), "u32": np.zeros((2, 0), np.uint32),
    "i16": np.array([-3], np.int16), "u16": np.array([65535], np.uint16), "i8": np.array([-128, 127], np.int8),
    "u8": np.arange(5, dtype=np.uint8), "b": np.array([True, False, True]), "c": np.array([1 + 2j], np.complex64),
    "scalar": np.array(3.25, np.float32),
}
# the codes numpy lacks, through the library's raw serializer: (torch's name, code, bytes per element)
RAW = [("bfloat16", "BF16", 2), ("float8_e4m3fn", "F8_E4M3", 1), ("float8_e5m2", "F8_E5M2", 1),
       ("float8_e8m0fnu", "F8_E8M0", 1), ("float8_e4m3fnuz", "F8_E4M3FNUZ", 1),
       ("float8_e5m2fnuz", "F8_E5M2FNUZ", 1)]


def raw_file(specs, metadata=None):
    """safetensors' own serializer over raw buffers: {name: (torch dtype name, shape, bytes)}."""
    keep = {n: np.frombuffer(b, np.uint8).copy() for n, (_, _, b) in specs.items()}
    return serialize({n: TensorSpec(dtype=dt, shape=list(shape), data_ptr=keep[n].ctypes.data,
                                    data_len=keep[n].nbytes) for n, (dt, shape, _) in specs.items()}, metadata)


def exotic_file():
    rng = np.random.default_rng(0)
    specs = {f"t_{code.lower()}": (dt, (2, 3), rng.integers(0, 256, 6 * size, np.uint8).tobytes())
             for dt, code, size in RAW}
    specs["t_f4"] = ("float4_e2m1fn_x2", (2, 2), bytes([0x21, 0xF8, 0x7A, 0x03]))  # storage shape: 2 x 2 bytes
    return raw_file(specs, {"format": "pt"})


def write(tmp_path, data, name="t.safetensors"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_numpy_dtypes_read_as_the_library_does_and_write_back_identical(tmp_path):
    data = save(NUMPY_TENSORS, metadata={"format": "np"})
    path = write(tmp_path, data)
    assert wv.sniff(path) == "safetensors"
    model = wv.read(path)
    want = load(data)
    assert list(model) == list(json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]]))[1:]
    for name, array in want.items():
        assert model[name].dtype == array.dtype and model[name].shape == array.shape
        assert np.array_equal(model[name], array, equal_nan=False) or np.array_equal(model[name], array)
    assert model.metadata == {"format": "np"}
    assert wv.validate(path).ok
    out = tmp_path / "again.safetensors"
    wv.write(SafeTensors.from_arrays(NUMPY_TENSORS, {"format": "np"}), out)
    assert out.read_bytes() == data  # safetensors.save's layout: by dtype (enum order, last first), then name


@pytest.mark.parametrize("metadata", [None, {}, {"k": "v"}, {"é \"q\"\n": "\u2028\x01"}])
def test_written_bytes_are_the_librarys(tmp_path, metadata):
    arrays = {"z": np.ones(3, np.float16), "a": np.zeros((2, 2), np.int16), "m": np.array(1, np.uint16),
              "w": np.arange(4, dtype=">f4")}  # big-endian input: stored little-endian, as the library does
    out = tmp_path / "w.safetensors"
    wv.write(SafeTensors.from_arrays(arrays, metadata), out)
    assert out.read_bytes() == save(arrays, metadata=metadata)


def test_dtypes_numpy_lacks_read_as_raw_views_and_write_back_identical(tmp_path):
    data = exotic_file()
    path = write(tmp_path, data)
    model = wv.read(path)
    lib = dict(deserialize(data))
    for name, info in lib.items():
        assert model.dtypes[name] == info["dtype"]
        assert model.shapes[name] == tuple(info["shape"])
        assert model[name].tobytes() == bytes(info["data"])
    assert model.shapes["t_f4"] == (2, 4) and model["t_f4"].shape == (2, 2)  # float4: the packed bytes
    assert wv.validate(path).ok
    out = tmp_path / "again.safetensors"
    # the arrays as read given back with their codes alone: float4's (2, 2) bytes are a (2, 4) tensor (was
    # refused: "shape [2, 1] of F4 needs 2")
    again = SafeTensors.from_arrays({n: np.array(model[n]) for n in model}, model.metadata, model.dtypes)
    assert again.shapes == model.shapes
    wv.write(again, out)
    assert out.read_bytes() == data


@pytest.mark.parametrize("code, stored, shape", [("F4", (16, 16), (16, 32)), ("F6_E2M3", (16, 6), (16, 8)),
                                                  ("F6_E3M2", (3,), (4,))])
def test_sub_byte_tensors_round_trip_through_from_arrays(tmp_path, code, stored, shape):
    # issue 37: a tensor as read (its raw bytes, (16, 16) for F4's (16, 32)) given back to from_arrays was
    # refused ("shape [16, 8] of F4 needs 128")
    raw = np.random.default_rng(0).integers(0, 256, stored, np.uint8)
    first = tmp_path / "first.safetensors"
    wv.write(SafeTensors({"t": raw}, None, {"t": code}, {"t": shape}), first)
    lib = dict(deserialize(first.read_bytes()))["t"]  # (the library reads F6 too, though it writes no F6)
    assert (lib["dtype"], tuple(lib["shape"]), bytes(lib["data"])) == (code, shape, raw.tobytes())
    model = wv.read(first)
    again = SafeTensors.from_arrays({"t": model["t"]}, dtypes={"t": code})
    assert again.shapes["t"] == shape
    out = tmp_path / "again.safetensors"
    wv.write(again, out)
    assert out.read_bytes() == first.read_bytes()


def test_sub_byte_bytes_that_hold_no_whole_number_of_values_are_refused():
    with pytest.raises(BuildError) as e:
        SafeTensors.from_arrays({"t": np.zeros((2, 5), np.uint8)}, dtypes={"t": "F6_E2M3"})
    assert e.value.path == "data.t" and "[2, 5]" in str(e.value)
    with pytest.raises(BuildError):
        SafeTensors.from_arrays({"t": np.zeros((), np.uint8)}, dtypes={"t": "F4"})


def test_to_numpy_decodes_bf16_and_float8(tmp_path):
    model = wv.read(write(tmp_path, exotic_file()))
    bf16 = model["t_bf16"]
    want = (bf16.astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(model.to_numpy("t_bf16"), want, equal_nan=True)
    # e5m2 is float16's high byte
    e5m2 = model["t_f8_e5m2"]
    assert np.array_equal(model.to_numpy("t_f8_e5m2"), (e5m2.astype(np.uint16) << 8).view(np.float16)
                          .astype(np.float32), equal_nan=True)
    m = SafeTensors({"a": np.array([0x38, 0x7E, 0x01, 0xB8, 0x7F, 0x80], np.uint8),
                     "b": np.array([0x40, 0x80, 0x01], np.uint8), "c": np.array([127, 128, 255], np.uint8),
                     "d": np.array([0x21, 0xF8], np.uint8)},
                    dtypes={"a": "F8_E4M3", "b": "F8_E4M3FNUZ", "c": "F8_E8M0", "d": "F4"}, shapes={"d": (4,)})
    # e4m3fn: bias 7, 448 its largest, 2^-9 its smallest subnormal, 0x7f NaN; fnuz: bias 8, 0x80 NaN
    assert np.array_equal(m.to_numpy("a"), [1, 448, 2.0**-9, -1, np.nan, -0.0], equal_nan=True)
    assert np.array_equal(m.to_numpy("b"), [1, np.nan, 2.0**-10], equal_nan=True)
    assert np.array_equal(m.to_numpy("c"), [1, 2, np.nan], equal_nan=True)
    assert m.to_numpy("d").tolist() == [0.5, 1, -0.0, -6]  # low nibble first


def test_read_is_a_zero_copy_view_of_the_map(tmp_path):
    path = write(tmp_path, save({"w": np.arange(1024, dtype=np.float32)}))
    model = wv.read(path, mmap=True)
    w = model["w"]
    assert not w.flags.owndata and not w.flags.writeable
    assert np.array_equal(w, np.arange(1024, dtype=np.float32))


def test_unchanged_header_bytes_are_kept_and_a_changed_one_is_the_librarys(tmp_path):
    # a header as another writer might lay it out: spaces, keys in another order, tensors not sorted
    header = (b'{ "b": {"shape": [2], "dtype": "F32", "data_offsets": [0, 8]},\n  "a": {"dtype": "I8", '
              b'"shape": [1], "data_offsets": [8, 9]}, "__metadata__": {"x": "1"} }')
    data = struct.pack("<Q", len(header)) + header + np.array([1, 2], "<f4").tobytes() + b"\x05"
    path = write(tmp_path, data)
    assert wv.validate(path).ok
    model = wv.read(path)
    out = tmp_path / "same.safetensors"
    wv.write(model, out)
    assert out.read_bytes() == data
    model.metadata = {"x": "2"}
    wv.write(model, out, overwrite=True)
    assert out.read_bytes() == save({"a": np.array([5], np.int8), "b": np.array([1, 2], np.float32)},
                                    metadata={"x": "2"})


def _file(header, body=b""):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + body


F32 = {"dtype": "F32", "shape": [1]}
REFUSED = {  # name: (file, the field our error names)
    "gap": (_file({"a": {**F32, "data_offsets": [0, 4]}, "b": {**F32, "data_offsets": [8, 12]}}, bytes(12)),
            "data.b"),
    "overlap": (_file({"a": {**F32, "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [2],
                                                                   "data_offsets": [2, 10]}}, bytes(10)), "data.b"),
    "not_from_zero": (_file({"a": {**F32, "data_offsets": [4, 8]}}, bytes(8)), "data.a"),
    "trailing_bytes": (_file({"a": {**F32, "data_offsets": [0, 4]}}, bytes(5)), "data"),
    "short_buffer": (_file({"a": {**F32, "data_offsets": [0, 4]}}, bytes(3)), "data.a"),
    "shape_times_size": (_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, bytes(4)), "data.a"),
    "duplicate_name": (_file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                             b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"\0\0"), "header"),
    "invalid_json": (_file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}', b"\0"), "header"),
    "invalid_utf8": (_file(b'{"\xff":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\0"), "header"),
    "unknown_dtype": (_file({"a": {"dtype": "F12", "shape": [1], "data_offsets": [0, 1]}}, b"\0"), "data.a"),
    "header_too_large": (struct.pack("<Q", 100_000_001) + b"{}", "header"),
    "header_past_end": (struct.pack("<Q", 50) + b"{}", "header"),
    "not_an_object": (_file(b"[1, 2]"), "header"),
    "float_dimension": (_file({"a": {"dtype": "U8", "shape": [1.0], "data_offsets": [0, 1]}}, b"\0"), "data.a"),
    "float4_half_byte": (_file({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, bytes(2)), "data.a"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_the_library_refuses_is_refused_with_field_and_offset(case):
    data, field = REFUSED[case]
    with pytest.raises(SafetensorError):
        load(data)
    with pytest.raises(FormatError) as e:
        parse(data)
    assert e.value.format == "safetensors" and e.value.path == field and e.value.offset is not None


def test_a_name_given_twice_is_refused_where_the_library_keeps_the_last():
    # safetensors 0.8 reads the header into a map: the second "a" silently replaces the first (an I8 here)
    data = _file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                 b'"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}}', b"\xff")
    assert load(data)["a"].tolist() == [-1]
    with pytest.raises(FormatError) as e:
        parse(data)
    second = 8 + data[8:].rindex(b'"a"')  # (where the second "a" starts)
    assert (e.value.path, e.value.offset, e.value.found) == ("header", second, "a") and "twice" in str(e.value)


def _many_tensors(n, repeat_first_at_end=False):
    """A header of ``n`` one-float tensors (1.2 MB for 14,000), the last one named as the first if asked: the
    files of ``make_repros.py`` (st-dupkey-*)."""
    names = [f"layer.{i}.weight" for i in range(n)]
    if repeat_first_at_end:
        names[-1] = names[0]
    entries = ", ".join(f'"{m}": {{"dtype": "F32", "shape": [1], "data_offsets": [{4 * i}, {4 * i + 4}]}}'
                        for i, m in enumerate(names))
    return _file(("{" + entries + "}").encode(), bytes(4 * n))


def test_a_name_repeated_at_the_end_of_a_long_header_is_found_in_linear_time():
    # the repeated key was looked for by a scan quadratic in the keys: 14,000 tensors took 10x the time of
    # the whole parse of the same header without the repeat (2.3 MB: 16 s); now about the same time
    import time

    def best_of_3(f):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            f()
            times.append(time.perf_counter() - start)
        return min(times)

    def refuse():
        with pytest.raises(FormatError) as e:
            parse(bad)
        return e.value

    good, bad = _many_tensors(14_000), _many_tensors(14_000, repeat_first_at_end=True)
    error = refuse()
    assert (error.path, error.offset, error.found) == ("header", 8 + bad[8:].rindex(b'"layer.0.weight"'),
                                                       "layer.0.weight")
    assert best_of_3(refuse) < 3 * best_of_3(lambda: parse(good))


def test_metadata_that_is_not_strings_is_a_check_failure(tmp_path):
    data = _file({"__metadata__": {"n": 1}, "a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\0")
    with pytest.raises(SafetensorError):
        load(data)
    problems = check(parse(data))
    assert len(problems) == 1 and "__metadata__" in problems[0]
    assert not wv.validate(write(tmp_path, data)).ok


def test_a_key_of_its_own_in_a_tensor_entry_is_taken_as_the_library_takes_it(tmp_path):
    data = _file({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "note": "x"}}, b"\7")
    assert load(data)["a"].tolist() == [7]
    assert check(parse(data)) == []
    assert wv.validate(write(tmp_path, data)).ok


def test_inspect_reads_the_header_only(tmp_path):

    data = save({"w": np.ones((4, 2), np.float32), "b": np.zeros(3, np.int8)}, metadata={"k": "v"})
    info = wv.inspect(write(tmp_path, data))
    assert info["tensors"] == 2 and info["metadata"] == {"k": "v"} and info["dtypes"] == {"F32": 1, "I8": 1}
    assert [(t["name"], t["shape"]) for t in info["tensor_table"]] == [("w", [4, 2]), ("b", [3])]
    assert info["data_bytes"] == 35 == wv.inspect(write(tmp_path, data), full=True)["data_bytes"]
    # 4 GiB of tensor data that inspect never reads
    header = json.dumps({"t": {"dtype": "F32", "shape": [2**30], "data_offsets": [0, 2**32]}}).encode()
    info = inspect_of_sparse(tmp_path / "big.safetensors", struct.pack("<Q", len(header)) + header, 2**32)
    assert info["data_bytes"] == 2**32


def test_inspect_of_a_file_cut_inside_its_tensors_says_which_and_fails(tmp_path, capsys):
    # inspect read the header alone and said nothing of a file whose tensors run past its end (exit 0), where
    # validate and safe_open refuse it
    from safetensors import safe_open

    data = save({"w": np.ones((4, 2), np.float32), "b": np.zeros(3, np.int8)})
    for cut, name in ((data[:-5], "w"), (data[:-2], "b"), (data[: 8 + struct.unpack("<Q", data[:8])[0]], "w")):
        path = write(tmp_path, cut, "cut.safetensors")
        with pytest.raises(SafetensorError), safe_open(path, "np"):
            pass
        with pytest.raises(TruncatedError) as e:
            wv.inspect(path)
        begin = json.loads(cut[8:8 + struct.unpack("<Q", cut[:8])[0]])[name]["data_offsets"][0]
        assert (e.value.format, e.value.path, e.value.offset) == ("safetensors", f"data.{name}",
                                                                   8 + struct.unpack("<Q", cut[:8])[0] + begin)
        assert "run past" in str(e.value)
        assert cli.main(["inspect", str(path)]) == 2  # (the exit of every file inspect cannot read)
        err = capsys.readouterr().err
        assert f"data.{name}" in err and "run past" in err, err


def test_sniff_wants_a_tensor_table(tmp_path):
    assert wv.sniff(write(tmp_path, save({"a": np.ones(1, np.float32)}))) == "safetensors"
    assert sniff_safetensors(save({}))
    assert sniff_safetensors(struct.pack("<Q", 4) + b" {} ")  # the library reads it too
    assert load(struct.pack("<Q", 4) + b" {} ") == {}
    for other in (struct.pack("<Q", 11) + b"[1,2,3,4,5]", struct.pack("<Q", 4) + b"{12}",
                  struct.pack("<Q", 200_000_000) + b'{"a":', b"hello world 1 2 3\n"):
        assert not sniff_safetensors(other)


globals().update(property_tests("safetensors", samples=[save(NUMPY_TENSORS, metadata={"a": "b"}), exotic_file()]))


# a real file written by another tool: WordLlama's embedding table, which its wheel on PyPI ships, written by
# safetensors.torch.save_model (PyTorch's side of the library: no __metadata__, a float16 tensor), MIT license
WORDLLAMA_WHEEL = "wordllama==0.4.0.post1"
WORDLLAMA_MEMBER = "wordllama/weights/l2_supercat_256.safetensors"
WORDLLAMA_SHA256 = "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5"


@pytest.fixture(scope="session")
def wordllama(request):
    """The file, out of the wheel (19 MB, fetched once into pytest's cache)."""
    return member_of_wheel(request.config.cache.mkdir("wordllama"), WORDLLAMA_WHEEL, WORDLLAMA_MEMBER,
                           WORDLLAMA_SHA256)


def test_a_file_pytorch_wrote_reads_as_safetensors_reads_it_and_writes_back_identical(wordllama, tmp_path):
    import gguf
    from safetensors import safe_open
    from safetensors.numpy import load_file

    assert wv.sniff(wordllama) == "safetensors"
    model = wv.read(wordllama, mmap=True)
    want = load_file(wordllama)
    with safe_open(wordllama, "np") as f:
        assert list(model) == list(f.keys()) == ["embedding.weight"] and model.metadata == f.metadata() is None
    table = model["embedding.weight"]
    assert model.dtypes["embedding.weight"] == "F16" and table.shape == (32000, 256)
    assert table.dtype == want["embedding.weight"].dtype and np.array_equal(table, want["embedding.weight"])
    assert not table.flags.owndata and not table.flags.writeable  # a view of the mapped file
    assert wv.validate(wordllama).ok
    out = tmp_path / "again.safetensors"
    wv.write(model, out)
    assert out.read_bytes() == wordllama.read_bytes()
    wv.convert(wordllama, tmp_path / "w.gguf")  # F16 kept as F16
    (t,) = gguf.GGUFReader(tmp_path / "w.gguf").tensors
    assert t.tensor_type == gguf.GGMLQuantizationType.F16
    assert np.array_equal(np.asarray(t.data).reshape(table.shape), table)
