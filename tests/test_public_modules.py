"""One public module per format family (``from wvformats import gguf, fasttext, ...``): each gives the family's
model classes and helpers, reads its bundled sample into its own model class, and together they cover every
registered format's model."""

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats import registry
from wvformats.samples import sample_dir

SAMPLES_DIR = sample_dir()

FAMILY_MODULES = ("fasttext", "finalfusion", "gguf", "infinigram", "npy", "rwkv", "safetensors", "sentencepiece",
                  "wordvec")


@pytest.mark.parametrize("name", FAMILY_MODULES)
def test_each_family_module_exports_what_its_all_names(name):
    module = importlib.import_module(f"wvformats.{name}")
    assert getattr(wv, name) is module  # `from wvformats import gguf` and `import wvformats.gguf` agree
    assert module.__doc__ and module.__all__
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"wvformats.{name} lists names it lacks: {missing}"


def test_every_registered_models_class_is_public():
    """A format's model class (what wv.read returns) is exported by some family module."""
    public = {id(getattr(importlib.import_module(f"wvformats.{n}"), a))
              for n in FAMILY_MODULES for a in importlib.import_module(f"wvformats.{n}").__all__}
    for fmt in registry.load().values():
        if isinstance(fmt.model, type):
            assert id(fmt.model) in public, f"{fmt.name}'s model {fmt.model.__name__} is in no family module"


@pytest.mark.parametrize(("module", "sample", "cls"), [
    ("gguf", "sample-tiny.gguf", "GGUFModel"),
    ("rwkv", "sample-rwkv-q5_1.bin", "RwkvModel"),
    ("fasttext", "sample-supervised.ftz", "FastText"),
    ("sentencepiece", "sample-bpe.model", "SentencePieceModel"),
    ("infinigram", "sample-index", "InfiniGramIndex"),
    ("wordvec", "sample.bin", "Embeddings"),
    ("wordvec", "sample-bucket.fifu", "Embeddings"),
    ("safetensors", "sample-tiny.safetensors", "SafeTensors"),
    ("npy", "sample.npy", "ndarray"),
    ("npy", "sample.npz", "NpzArrays"),
    ("wordvec", "sample-embeddings.npz", "Embeddings"),
])
def test_a_sample_reads_into_its_family_modules_class(module, sample, cls):
    assert isinstance(wv.read(SAMPLES_DIR / sample), getattr(importlib.import_module(f"wvformats.{module}"), cls))


def test_gguf_helpers_round_trip_through_the_public_module(tmp_path):
    from wvformats import gguf

    values = np.linspace(-1, 1, 64, dtype=np.float32)
    blocks = gguf.quantize(values, "Q8_0")
    assert blocks.dtype == gguf.LAYOUTS["Q8_0"][1]
    assert np.abs(gguf.dequantize(blocks, "Q8_0").ravel() - values).max() < 0.01
    model = gguf.GGUFModel.from_arrays({"w": values.reshape(2, 32)}, {"general.architecture": "llama"})
    wv.write(model, tmp_path / "m.gguf")
    back = wv.read(tmp_path / "m.gguf")
    assert back.architecture == "llama"
    np.testing.assert_array_equal(back.tensors["w"].to_numpy(), values.reshape(2, 32))


def test_rwkv_quantize_model_from_the_public_module():
    from wvformats import rwkv

    model = wv.read(Path(__file__).parent / "data" / "rwkv" / "tiny-rwkv-4v0-660K-FP16.bin.xz")
    q = rwkv.quantize_model(model, "Q8_0", version=101)
    assert isinstance(q, rwkv.RwkvModel) and not q.check()
    assert q.tensors["blocks.0.att.key.weight"].dtype == "Q8_0"


def test_finalfusion_hashes_and_ngrams_from_the_public_module():
    from wvformats import finalfusion

    assert finalfusion.ngrams("ab", 3, 3) == ["<ab", "ab>"]
    assert finalfusion.CHUNK_TYPES  # the chunk table a register_chunk extends
    ff = wv.read(SAMPLES_DIR / "sample-bucket.fifu")
    assert ff.embedding("zzzunseen") is not None  # found through the n-grams


def test_importing_wvformats_imports_no_family_module():
    """The family modules are imported when first asked for: `import wvformats` stays free of numpy."""
    code = "import sys, wvformats; print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith('wvformats.families')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
