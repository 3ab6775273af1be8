"""What opening a file costs (issue 39): a read imports only what the format needs, a small file is read with
the one read that sniffs it, and the registry sorts its sniffers once per state. Imports are checked in a
fresh interpreter (this process imported everything long ago); benchmarks/bench_tensors.py (``--only fresh``)
and bench_latency.py (``--parts small``) measure the time."""

import json
import mmap
import subprocess
import sys

import numpy as np
import pytest
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
