"""What opening a file costs (issue 39): a read imports only what the format needs, a small file is read with
the one read that sniffs it, and the registry sorts its sniffers once per state. Imports are checked in a
fresh interpreter (this process imported everything long ago); benchmarks/bench_tensors.py (``--only fresh``)
and bench_latency.py (``--parts small``) measure the time."""

import io
import json
import mmap
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

import wvformats as wv
from wvformats import api, registry
from wvformats.errors import FormatError
from wvformats.fileio import HEAD, Source


def _modules_after_read(path):
    """The modules a fresh interpreter imports to read ``path`` (after ``import numpy, wvformats``)."""
    code = ("import json, sys\nimport numpy, wvformats as wv\nbefore = set(sys.modules)\n"
            "m = wv.read(sys.argv[1])\nprint(json.dumps(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-P", "-c", code, str(path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def tensors(tmp_path):
    path = tmp_path / "t.safetensors"
    save_file({"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.arange(5, dtype=np.int64)}, path)
    return path


def test_reading_safetensors_or_npy_imports_no_other_family_nor_unused_machinery(tensors, tmp_path):
    """A safetensors read imported all of the GGUF family (its model, quantization tables, GGML schemas: what
    converting to GGUF needs), the embeddings module and the worker pool's concurrent.futures; failed before."""
    npy = tmp_path / "a.npy"
    np.save(npy, np.ones((3, 4), np.float32))
    unused = ("wvformats.families.ggml.gguf", "wvformats.families.ggml.quants", "wvformats.schemas.ggml",
              "wvformats.schemas.gguf", "concurrent.futures", "wvformats.framework.records",
              "wvformats.framework.strings")
    for path, extra in ((tensors, ("wvformats.embeddings", "wvformats.framework.packed")), (npy, ())):
        modules = _modules_after_read(path)
        assert [m for m in modules if m in unused + extra] == [], path
        families = {m.split(".")[2] for m in modules if m.startswith("wvformats.families.") and m.count(".") >= 3
                    and not m.endswith(".sniff")}
        assert families == {"safetensors" if path == tensors else "numpy"}


def test_a_gguf_model_is_still_written_as_safetensors_by_its_named_type(tmp_path):
    """The safetensors writer names the GGUF model it takes ("module:QualName"): the output's extension still
    chooses it for a GGUF model, and a type it does not take is still refused by name."""
    from wvformats.families.ggml.gguf import GGUFModel, GGUFTensor

    fmt = registry.get("safetensors")
    assert api._fit(fmt, GGUFModel) == (1, 0)
    assert api._fit(fmt, int) is None
    values = np.arange(6, dtype=np.float32)
    model = GGUFModel({}, {"w": GGUFTensor("w", "F32", (3, 2), values)})
    wv.write(model, tmp_path / "out.safetensors")
    assert np.array_equal(wv.read(tmp_path / "out.safetensors")["w"].ravel(), values)


def test_sniffers_are_sorted_again_when_the_registry_changes():
    first = registry.sniffers()
    assert registry.sniffers() == first and registry.sniffers() is not registry.sniffers()  # (a copy each time)
    fmt = registry.Format(name="opencost-test", extensions=(".oct",), description="", schema=None,
                          sniff=lambda head: head[:4] == b"OCT!", priority=-7, parse=None, build=None,
                          to_model=None, from_model=None)
    registry.register(fmt)
    try:
        assert registry.sniffers()[0] is fmt
        again = registry.Format(**{**fmt.__dict__, "priority": 99})
        registry.register(again, replace=True)  # (the same number of formats: a new state all the same)
        assert registry.sniffers()[-1] is again or again in registry.sniffers()
        assert fmt not in registry.sniffers()
    finally:
        registry._FORMATS.pop("opencost-test")
    assert registry.sniffers() == first


@pytest.mark.parametrize("size", [0, 1, 200, HEAD - 1, HEAD, HEAD + 1, 3 * HEAD])
def test_a_small_file_is_its_first_read_and_a_larger_one_a_map(tmp_path, size):
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * (size // 256) + bytes(size % 256))
    with Source(path) as source:
        assert source.head(8) == path.read_bytes()[:8]
        whole = source.whole()
        if size <= HEAD:
            assert whole == path.read_bytes()
        else:
            assert whole is None
            assert isinstance(source.buffer(), mmap.mmap)


def test_a_small_npy_and_safetensors_read_as_numpy_and_safetensors_read_them(tensors, tmp_path):
    """Read from the bytes the sniff read (no map): the values the peers give, read-only as a mapped file's
    arrays are; mmap=True still maps, mmap=False still copies into writable memory."""
    from safetensors.numpy import load_file

    npy = tmp_path / "a.npy"
    np.save(npy, np.arange(20.0).reshape(4, 5))
    for mode in (None, True, False):
        options = {} if mode is None else {"mmap": mode}
        a = wv.read(npy, **options)
        assert np.array_equal(a, np.load(npy)) and a.dtype == np.load(npy).dtype
        assert a.flags.writeable == (mode is False)
        st = wv.read(tensors, **options)
        peer = load_file(tensors)
        assert list(st) == list(peer) and all(np.array_equal(st[k], peer[k]) for k in peer)


def test_a_small_file_cut_is_still_a_located_error(tensors, tmp_path):
    data = tensors.read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[:-3])
    with pytest.raises(FormatError) as e:
        wv.read(cut)
    assert e.value.format == "safetensors" and e.value.path and e.value.offset is not None


# ---------------------------------------------------------------------------------------------------------
# cached plans: a safetensors or .npy file read without construct (framework/plans.py)


def _read_fresh(path, cache):
    """In a fresh interpreter with the cache folder ``cache``: the modules the read imported after ``import
    numpy, wvformats`` and a digest of what it read."""
    code = ("import json, sys\nimport numpy as np, wvformats as wv\nbefore = set(sys.modules)\n"
            "m = wv.read(sys.argv[1])\narrays = m if isinstance(m, np.ndarray) else list(m.values())\n"
            "digest = [float(np.asarray(a, np.float64).sum()) for a in (arrays if isinstance(arrays, list) else [arrays])]"
            "\nprint(json.dumps([sorted(set(sys.modules) - before), digest]))")
    out = subprocess.run([sys.executable, "-P", "-c", code, str(path)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "WVFORMATS_CACHE_DIR": str(cache)})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_once_its_plan_is_cached_a_read_imports_no_construct(tensors, tmp_path):
    """The first read of a format derives its schema's plan (construct imported) and caches it; every later
    process reads through the plan, importing neither construct nor the codec, and reads the same values.
    Failed before: every read imported construct (~9 ms of a fresh process, more than safetensors' whole open)."""
    npy = tmp_path / "a.npy"
    np.save(npy, np.arange(12.0, dtype=np.float32).reshape(3, 4))
    cache = tmp_path / "cache"
    for path in (tensors, npy):
        first_modules, first = _read_fresh(path, cache)
        assert "construct" in first_modules  # (the plan derived from the schema)
        modules, again = _read_fresh(path, cache)
        assert again == first
        assert not [m for m in modules if m.split(".")[0] == "construct" or m.endswith(".codec")], path
    assert sorted(p.name for p in next(cache.iterdir()).iterdir()) == [
        "entry-points.json", "sniffers.json", "wvformats.schemas.npy.npy.json",
        "wvformats.schemas.safetensors.safetensors.json"]


def test_a_read_imports_the_sniff_module_of_its_own_family_only(tensors, tmp_path):
    """Once the index of the declared sniffers is kept (the first process derives it, as it does the plans), a
    read of a safetensors or .npy file imports its own family's sniff module and no other: the head is asked
    only the tests of the formats whose magic it starts with, and of those without magic, the ones before its
    own. Failed before: every read imported the eight families' sniff modules (~1.7 ms of a fresh process)."""
    npy = tmp_path / "a.npy"
    np.save(npy, np.arange(12.0, dtype=np.float32).reshape(3, 4))
    cache = tmp_path / "cache"
    for path, family in ((tensors, "safetensors"), (npy, "numpy")):
        _, first = _read_fresh(path, cache)  # (the index derived and kept, by the first)
        modules, again = _read_fresh(path, cache)
        assert again == first
        families = {m.split(".")[2] for m in modules if m.startswith("wvformats.families.")
                    and m.count(".") >= 3}
        assert families == {family}, path


def test_a_plan_is_derived_again_when_its_schema_changes_and_a_broken_cache_is_ignored(tmp_path, monkeypatch):
    from wvformats import framework as plans

    monkeypatch.setenv("WVFORMATS_CACHE_DIR", str(tmp_path))
    plans.forget_plans()
    ref = "wvformats.schemas.safetensors:safetensors"
    steps = plans.cached_plan(ref)
    assert [s[:2] for s in steps] == [["json", "header"], ["tensors", "data"]]
    file = next(tmp_path.glob("*/wvformats.schemas.safetensors.safetensors.json"))
    kept = json.loads(file.read_text())
    assert any(p.endswith("schemas/safetensors.py") for p in kept["sources"])
    stale = {**kept, "sources": {p: [s[0] - 1, s[1]] for p, s in kept["sources"].items()}, "steps": [["nothing"]]}
    file.write_text(json.dumps(stale))  # (as if the schema had changed since)
    plans.forget_plans()
    assert plans.cached_plan(ref) == steps and json.loads(file.read_text())["steps"] == steps
    for broken in ("", "{", "[]", '{"version": 1}', "\xff"):
        file.write_text(broken, encoding="latin-1")
        plans.forget_plans()
        assert plans.cached_plan(ref) == steps  # (derived again, and kept again)
        assert json.loads(file.read_text())["steps"] == steps
    monkeypatch.setenv("WVFORMATS_CACHE_DIR", "")  # (no cache at all: derived in each process)
    plans.forget_plans()
    assert plans.cached_plan(ref) == steps


def test_a_schema_with_a_field_no_step_reads_has_no_plan():
    import construct as cs
    from wvformats.schemas import fasttext, npy, safetensors

    from wvformats.framework import plan_of

    assert plan_of(cs.Struct("n" / cs.Int32ul, "x" / cs.Array(cs.this.n, cs.Int8ul))) is None
    assert plan_of(fasttext.fasttext) is None
    assert plan_of(npy.npy) is not None and plan_of(safetensors.safetensors) is not None


def _safetensors_bytes(arrays):
    from safetensors.numpy import save

    return save(arrays)


_DTYPES = st.sampled_from(["<f4", "<f8", "<f2", "<i8", "<i4", "<u2", "|u1", "|i1", "|b1", "<c8"])


@st.composite
def _arrays(draw):
    dtype = np.dtype(draw(_DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    n = int(np.prod(shape)) * dtype.itemsize
    raw = draw(st.binary(min_size=n, max_size=n))
    a = np.frombuffer(raw, np.uint8).view(dtype).reshape(shape) if n else np.zeros(shape, dtype)
    return a.astype(bool) if dtype.kind == "b" else a


@st.composite
def _files(draw):
    """An .npy (numpy.save, C or Fortran order) or a safetensors file (safetensors.numpy.save), then cut, or a
    byte of it changed, or left as it is."""
    if draw(st.booleans()):
        a = draw(_arrays())
        buf = io.BytesIO()
        np.save(buf, np.asfortranarray(a) if draw(st.booleans()) else a)
        data, ref = buf.getvalue(), "wvformats.schemas.npy:npy"
    else:
        arrays = draw(st.dictionaries(st.text("abcé.", min_size=1, max_size=4), _arrays(), max_size=3))
        data, ref = _safetensors_bytes(arrays), "wvformats.schemas.safetensors:safetensors"
    how = draw(st.sampled_from(["as is", "cut", "byte"]))
    if how == "cut":
        data = data[: draw(st.integers(0, max(len(data) - 1, 0)))]
    elif how == "byte" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
    return ref, data


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a) and \
            getattr(a, "raw", None) == getattr(b, "raw", None)
    return a == b


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_files())
def test_a_plan_reads_what_its_schema_reads_and_leaves_every_fault_to_it(file):
    """Where the plan reads a file, every field is the schema's parse of it (arrays, the header and its kept
    bytes); where the schema refuses a file, the plan gives None, so that the schema's located error is the
    one the read raises."""
    from wvformats import framework
    from wvformats.families.numpy.fast import READERS

    ref, data = file
    module, attr = ref.split(":")
    schema = getattr(__import__(module, fromlist=[attr]), attr)
    steps, _ = framework.plan_of(schema)
    got = framework.run_plan(steps, data, READERS)
    try:
        parsed = framework.parse(schema, data, format="x")
    except FormatError:
        assert got is None
        return
    assert got is not None
    names = [k for k in parsed if not k.startswith("_")]
    assert list(got) == names and all(_same(got[k], parsed[k]) for k in names)


def test_a_read_of_a_damaged_file_is_still_the_schemas_located_error(tmp_path, monkeypatch):
    """The plan never reports a fault: the file is read again by the codec, whose error names the field and
    the byte (here, for files whose plan is cached)."""
    monkeypatch.setenv("WVFORMATS_CACHE_DIR", str(tmp_path / "cache"))
    good = tmp_path / "good.safetensors"
    good.write_bytes(_safetensors_bytes({"w": np.ones((2, 3), np.float32)}))
    wv.read(good)
    header = json.loads(good.read_bytes()[8:8 + int.from_bytes(good.read_bytes()[:8], "little")])
    header["w"]["data_offsets"] = [0, 20]  # (24 bytes of data)
    text = json.dumps(header).encode()
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(len(text).to_bytes(8, "little") + text + bytes(24))
    with pytest.raises(FormatError) as e:
        wv.read(bad)
    assert e.value.format == "safetensors" and e.value.path == "data.w" and e.value.offset is not None
    npy = tmp_path / "bad.npy"
    buf = io.BytesIO()
    np.save(buf, np.ones(3))
    npy.write_bytes(buf.getvalue().replace(b"'<f8'", b"'|O8'"))
    with pytest.raises(FormatError) as e:
        wv.read(npy)
    assert e.value.format == "npy" and e.value.path == "header.descr" and "pickles" in str(e.value)


def test_a_warm_read_of_a_file_looks_it_up_once(tensors, monkeypatch):
    """A warm read of a file stats it once (the Source's look) and opens it once. Failed before: every file read
    was asked whether it is a sharded checkpoint's folder (a second stat), and the folder's index file still
    reads as the folder format (tests/families/safetensors/test_shards.py)."""
    wv.read(tensors)
    seen = []
    real = {"stat": os.stat, "open": os.open, "builtins.open": io.open}

    def looking(how):
        def look(p, *args, **kw):
            seen.append(os.fspath(p))
            return real[how](p, *args, **kw)
        return look

    monkeypatch.setattr(os, "stat", looking("stat"))
    monkeypatch.setattr(os, "open", looking("open"))
    monkeypatch.setattr("builtins.open", looking("builtins.open"))
    st = wv.read(tensors)
    assert sorted(st) == ["a", "b"]
    assert seen == [str(tensors)] * 2


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_safetensors_is_sniffed_before_fasttext_and_no_file_is_both(data):
    """safetensors' sniffer runs before fastText's (a safetensors file is not asked fastText's two tests first:
    failed before, at priority 10 after fastText's 5), and the order decides nothing: every head whose fields
    lie within the ranges fastText's identity declares has bytes 4-7 (its version, or the old args' ws) of at
    least 1, so as safetensors' u64 header length it is at least 2^32, past the limit, whatever follows."""
    from wvformats.schemas.identity import FASTTEXT_HEAD, FASTTEXT_OLD_HEAD

    from wvformats.families.safetensors.sniff import sniff_safetensors

    order = [name for _, name, _ in registry.sniff_order().tests]
    assert order.index("safetensors") < order.index("fasttext")
    head = data.draw(st.sampled_from([FASTTEXT_HEAD, FASTTEXT_OLD_HEAD]))
    values = []
    for name in head.names:
        bound = head.ranges.get(name, (0, None))
        if isinstance(bound, range):
            values.append(data.draw(st.sampled_from(bound)))
        else:
            values.append(data.draw(st.integers(bound[0], 2**31 - 1 if bound[1] is None else bound[1])))
    raw = head.layout.pack(*values) + data.draw(st.sampled_from([b"", b'{"a":{}}', b' {"w": {"dtype": "F32"}} ']))
    assert not sniff_safetensors(raw)


def _magic_sniffers():
    return [f for f in registry.sniffers() if not f.is_directory and getattr(f, "magic", b"")]


def test_the_sniffers_that_declare_magic_and_the_sample_files_that_start_with_it():
    """finalfusion, GGUF, Leader, npy, npz, npz-embeddings and rwkv.cpp declare the bytes their files start with
    (taken from their identity: a Head's fixed leading fields, or the magic constant), and a head without them
    is not asked their sniff (failed before: no sniffer declared any, and a safetensors read asked all seven).
    Every sample file of these formats starts with its format's magic, and is still sniffed as it."""
    from wvformats.schemas.identity import LEADER_HEAD, LEADER_MAGIC, RWKV_HEAD, RWKV_MAGIC

    from wvformats.samples import sample_files

    assert {f.name for f in _magic_sniffers()} >= {"finalfusion", "gguf", "leader", "npy", "npz", "npz-embeddings",
                                                   "rwkv"}
    assert LEADER_HEAD.prefix == LEADER_MAGIC.to_bytes(8, "little") and RWKV_HEAD.prefix == RWKV_MAGIC.to_bytes(4, "little")
    magic = {f.name: f.magic for f in _magic_sniffers()}
    seen = set()
    for path in sample_files():
        if path.is_file():
            name = wv.sniff(path)
            if name in magic:
                assert path.read_bytes().startswith(magic[name]), path
                seen.add(name)
    assert seen >= {"finalfusion", "gguf", "leader", "npy", "rwkv", "npz-embeddings"}


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_head_without_a_formats_magic_is_one_its_sniff_refuses(data):
    """The magic a sniffer declares is a fact of its sniff, not a new rule: its sniff refuses every head that does
    not start with it (heads drawn as the magic with a byte changed or cut, then any bytes, or any bytes)."""
    f = data.draw(st.sampled_from(_magic_sniffers()))
    magic = f.magic
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(magic) - 1))
        changed = data.draw(st.integers(0, 255).filter(lambda b: b != magic[at]))
        start = magic[:at] + (bytes([changed]) if data.draw(st.booleans()) else b"")
    else:
        start = b""
    head = start + data.draw(st.binary(max_size=600))
    if not head.startswith(magic):
        assert not f.sniff(head)


def test_import_and_read_make_no_dataclass(tensors):
    """``import wvformats`` and a read import no ``dataclasses``: the registry's Format and validate's report
    are made when first asked for (~1.5 ms of a fresh process; failed before: both were made at import), and
    are the same classes whichever way they are reached."""
    code = ("import json, sys\nimport numpy\nbefore = set(sys.modules)\nimport wvformats as wv\nwv.read(sys.argv[1])\n"
            "print(json.dumps(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-P", "-c", code, str(tensors)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "dataclasses" not in json.loads(out.stdout.strip().splitlines()[-1])
    import dataclasses

    from wvformats.formatclass import Format
    from wvformats.validation import ValidationReport

    assert wv.Format is registry.Format is Format and dataclasses.is_dataclass(Format)
    assert wv.ValidationReport is api.ValidationReport is ValidationReport
    assert isinstance(wv.validate(tensors), ValidationReport)


def test_import_and_read_compile_no_source_and_test_no_install(tensors):
    """``import wvformats`` and a read compile no Python source: the registry's Sniffer was a ``typing.NamedTuple``,
    which compiles each field's annotation (13 compiles, ~0.3 ms of a fresh process); and ``import wvformats``
    no longer asks ``find_spec`` whether the package was installed before importing it (a source folder never
    installed is told by the import that fails: test_startup.py). Failed before on both."""
    code = ("import builtins, json, sys\nimport numpy\ncalls = []\nreal = builtins.compile\n"
            "def counting(source, *args, **kwargs):\n"
            "    if isinstance(source, str):  # (not a module's source, which the import system compiles)\n"
            "        calls.append(source[:60])\n"
            "    return real(source, *args, **kwargs)\n"
            "builtins.compile = counting\nbefore = set(sys.modules)\nimport wvformats as wv\nwv.read(sys.argv[1])\n"
            "print(json.dumps([calls, sorted(set(sys.modules) - before)]))")
    out = subprocess.run([sys.executable, "-P", "-c", code, str(tensors)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    calls, modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert calls == [] and "wvformats._installed" not in modules
    assert registry.Sniffer("x", (".x",), bool)._asdict()["priority"] == 50  # (a namedtuple all the same)

