"""The property-test kit on GGUF and rwkv.cpp: files drawn from the schemas (GGUF versions 1 to 3, every value
type, arrays of arrays, tensor infos and data; rwkv versions 100 and 101, every tensor type of each) round-trip
in both construct modes and through the codec, every cut fails, and mutants of real files written by other
tools (llama.cpp's vocabulary files, an rwkv.cpp model) fail cleanly."""

import lzma
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wvformats import framework, registry
from wvformats.testing import property_tests, strategy

gguf = pytest.importorskip("gguf")  # gguf-py, in the 'peers' extra

DATA = Path(__file__).parents[2] / "data"

# llama.cpp's vocabulary files (its convert script, gguf-py) and rwkv.cpp's converter's output
GGUF = [(DATA / "gguf" / "ggml-vocab-bert-bge.gguf").read_bytes(),
        lzma.decompress((DATA / "gguf" / "ggml-vocab-phi-3.gguf.xz").read_bytes())]
RWKV = [(DATA / "rwkv" / "rwkv-v100-q4_2-mutated.bin").read_bytes()]

globals().update({f"{name}_gguf": test for name, test in property_tests("gguf", samples=GGUF, cases=6).items()})
globals().update({f"{name}_rwkv": test for name, test in property_tests("rwkv", samples=RWKV, cases=8).items()})


@settings(max_examples=40)
@given(value=strategy("gguf", fields={"tensor_infos": st.just([]), "has_data": st.just(False)}))
def test_gguf_py_reads_the_keys_of_drawn_files(value, tmp_path_factory):
    """gguf-py as the oracle of drawn metadata (versions 2 and 3, each key once: what it reads): the same keys
    in order, of the same value types, the same strings and integers."""
    keys = [kv.key for kv in value.metadata]
    assume(value.header.version > 1 and len(set(keys)) == len(keys))
    path = tmp_path_factory.mktemp("kit") / "x.gguf"
    path.write_bytes(framework.build(registry.get("gguf").schema, value, format="gguf"))
    reader = gguf.GGUFReader(path)
    assert [key for key in reader.fields if not key.startswith("GGUF.")] == keys
    for kv in value.metadata:
        field = reader.fields[kv.key]
        assert field.types[0].value == kv.value_type, kv.key
        if kv.value_type in (0, 1, 2, 3, 4, 5, 8, 10, 11):  # (integers and strings: floats compare by bits elsewhere)
            assert field.contents() == kv.value, kv.key
