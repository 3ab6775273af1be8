"""GGUF <-> safetensors through ``wv.convert`` and the command, gguf-py (its writer, reader and quantizers)
and the safetensors library as the oracles."""

import json
import struct
import warnings

import numpy as np
import pytest

import wvformats as wv
from wvformats import cli
from wvformats.errors import BuildError, FormatError, OptionError
from wvformats.families.safetensors.model import SafeTensors

gguf = pytest.importorskip("gguf")  # the 'peers' extra, installed by CI
from gguf import GGMLQuantizationType as T  # noqa: E402
from gguf import quants as gq  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402

RNG = np.random.default_rng(7)
F32 = RNG.standard_normal((4, 64)).astype(np.float32)
F16 = RNG.standard_normal((3, 32)).astype(np.float16)
Q8 = RNG.standard_normal((2, 64)).astype(np.float32)


@pytest.fixture
def gguf_file(tmp_path):
    """A GGUF written by gguf-py: F32, F16 and Q8_0 tensors, string, integer and array metadata."""
    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_string("general.name", "tiny")
    w.add_uint32("llama.block_count", 2)
    w.add_array("tokenizer.ggml.tokens", ["<s>", "é"])
    w.add_tensor("tok.weight", F32)
    w.add_tensor("h.weight", F16)
    w.add_tensor("q.weight", gq.quantize(Q8, T.Q8_0), raw_dtype=T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_gguf_to_safetensors_dequantizes_and_keeps_f16(tmp_path, gguf_file):
    out = tmp_path / "m.safetensors"
    assert wv.convert(gguf_file, out) == "safetensors"
    got = load_file(out)  # the safetensors library reads what we wrote
    assert got["tok.weight"].dtype == np.float32 and np.array_equal(got["tok.weight"], F32)
    assert got["h.weight"].dtype == np.float16 and np.array_equal(got["h.weight"], F16)
    want_q = gq.dequantize(gq.quantize(Q8, T.Q8_0), T.Q8_0)  # gguf-py's own dequantization
    assert got["q.weight"].dtype == np.float32 and np.array_equal(got["q.weight"], want_q)
    meta = wv.read(out).metadata
    assert meta["general.name"] == "tiny" and meta["llama.block_count"] == "2"
    assert json.loads(meta["tokenizer.ggml.tokens"]) == ["<s>", "é"]
    assert wv.validate(out).ok


@pytest.mark.parametrize("kind", ["Q8_0", "Q4_0", "F16"])
def test_safetensors_to_gguf_quantizes_bit_exactly_as_gguf_py(tmp_path, kind):
    src = tmp_path / "s.safetensors"
    norm = np.ones(64, np.float32)
    save_file({"w": F32, "norm": norm, "ids": np.arange(3, dtype=np.int32)}, src, metadata={"k": "v"})
    out = tmp_path / "s.gguf"
    assert cli.main(["convert", str(src), str(out), "--type", kind]) == 0
    reader = gguf.GGUFReader(out)
    tensors = {t.name: t for t in reader.tensors}
    assert tensors["w"].tensor_type == T[kind]
    assert bytes(tensors["w"].data.tobytes()) == gq.quantize(F32, T[kind]).tobytes()
    assert tensors["norm"].tensor_type == T.F32 and np.array_equal(tensors["norm"].data, norm)  # 1-D kept
    assert tensors["ids"].tensor_type == T.I32
    assert reader.fields["k"].contents() == "v"
    assert wv.validate(out).ok


def test_bf16_stays_bf16_both_ways(tmp_path):
    bits = (F32.view(np.uint32) >> 16).astype(np.uint16)
    st = SafeTensors({"b": bits}, dtypes={"b": "BF16"})
    out = tmp_path / "b.gguf"
    wv.write(st, out)
    t = gguf.GGUFReader(out).tensors[0]
    assert t.tensor_type == T.BF16 and t.data.tobytes() == bits.tobytes()
    back = tmp_path / "b.safetensors"
    wv.convert(out, back)
    again = wv.read(back)
    assert again.dtypes["b"] == "BF16" and again["b"].tobytes() == bits.tobytes()


def test_a_type_gguf_lacks_is_refused(tmp_path):
    with pytest.raises(BuildError, match="U8"):
        wv.write(SafeTensors({"u": np.zeros(4, np.uint8)}), tmp_path / "u.gguf")
    assert not (tmp_path / "u.gguf").exists()


def _tensors(path, **shapes):
    save_file({name: RNG.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}, path)
    return path


def test_type_kept_by_some_tensors_says_which_and_why(tmp_path, capsys):
    """``--type`` that a float matrix cannot take (its rows do not fill the type's blocks) was silent: the tensor
    stayed F32 and the command said only ``wrote``. One warning line now says how many took the type, which
    kept theirs and why; the tensors that fit are quantized as before."""
    src = _tensors(tmp_path / "s.safetensors", **{"tok.weight": (8, 100), "w1": (4, 64), "w2": (2, 32),
                                                   "norm": (100,)})
    with pytest.warns(wv.gguf.TypeNotAppliedWarning) as caught:
        model = wv.read(src)
        wv.write(model, tmp_path / "a.gguf", type="Q8_0")
    assert [str(w.message) for w in caught] == [
        "type Q8_0 (--type) applied to 2 of 4 tensors; 2 kept F32: rows of 100 values do not fill Q8_0's "
        "32-value blocks (tok.weight); of one dimension (norm)"]
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(tmp_path / "a.gguf").tensors}
    assert types == {"tok.weight": T.F32, "w1": T.Q8_0, "w2": T.Q8_0, "norm": T.F32}
    assert cli.main(["convert", str(src), str(tmp_path / "b.gguf"), "--type", "Q8_0"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"wvformats: warning: {caught[0].message}"]
    assert (tmp_path / "b.gguf").read_bytes() == (tmp_path / "a.gguf").read_bytes()
    with warnings.catch_warnings():  # every matrix fits: vectors and integers keep their types without a word
        warnings.simplefilter("error")
        wv.write(SafeTensors({"w": F32, "b": np.ones(64, np.float32)}), tmp_path / "c.gguf", type="Q8_0")


def test_type_no_tensor_can_take_is_refused(tmp_path, capsys):
    """When no tensor can take ``--type`` the file was written all F32; now nothing is written (exit 2), the
    input untouched."""
    src = _tensors(tmp_path / "s.safetensors", **{"tok.weight": (8, 100), "out.weight": (4, 100), "norm": (100,)})
    before = src.read_bytes()
    with pytest.raises(BuildError, match=r"applied to 0 of 3 tensors; 3 kept F32: rows of 100 values do not fill "
                                         r"Q8_0's 32-value blocks \(out.weight, tok.weight\); of one dimension"):
        wv.convert(src, tmp_path / "a.gguf", type="Q8_0")
    assert cli.main(["convert", str(src), str(tmp_path / "a.gguf"), "--type", "Q8_0"]) == 2
    assert "applied to 0 of 3 tensors" in capsys.readouterr().err
    assert not (tmp_path / "a.gguf").exists() and src.read_bytes() == before
    assert cli.main(["convert", str(src), str(tmp_path / "a.gguf"), "--type", "Q4_K"]) == 2  # (no quantizer)
    assert "quantizing Q4_K is not implemented" in capsys.readouterr().err
    assert not (tmp_path / "a.gguf").exists()


def test_written_lists_the_types_quantize_writes():
    """``quants.WRITTEN``, which ``--type`` is checked against (Q4_K rows that fit crashed with a bare
    NotImplementedError), is every type ``quantize`` writes."""
    from wvformats.schemas.ggml import LAYOUTS

    from wvformats.families.ggml import quants

    written = []
    for kind, (block, _) in LAYOUTS.items():
        try:
            quants.quantize(np.zeros(2 * block, np.float32), kind)
            written.append(kind)
        except NotImplementedError:
            pass
    assert sorted(written) == sorted(quants.WRITTEN)


def test_gguf_writer_refuses_options_it_would_ignore(tmp_path, gguf_file):
    """``--type`` to GGUF from a GGUF model, and options of other writers (``--newline``), were taken and
    ignored (exit 0); they are refused before anything is written."""
    with pytest.raises(OptionError, match=r"type='Q8_0' \(--type\) quantizes the tensors of safetensors input"):
        wv.convert(gguf_file, tmp_path / "a.gguf", type="Q8_0")
    src = _tensors(tmp_path / "s.safetensors", w=(2, 32))
    with pytest.raises(OptionError, match="gguf files take no write option 'newline'"):
        wv.convert(src, tmp_path / "a.gguf", newline=True)
    assert not (tmp_path / "a.gguf").exists()


def test_metadata_that_is_not_strings_is_refused_naming_the_key(tmp_path):
    """A __metadata__ value that is not a string (read as it is; safetensors refuses the file) converted to GGUF:
    a FormatError naming the key, where GGUF's typed metadata raised TypeError (found by the mutation fuzz)."""
    header = json.dumps({"__metadata__": {"format": None}, "w": {"dtype": "F32", "shape": [2],
                                                                   "data_offsets": [0, 8]}}).encode()
    src = tmp_path / "meta.safetensors"
    src.write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    with pytest.raises(FormatError) as e:
        wv.convert(src, tmp_path / "out.gguf")
    assert (e.value.format, e.value.path) == ("gguf", "header.__metadata__.format") and "null" in str(e.value)
    assert not (tmp_path / "out.gguf").exists()
