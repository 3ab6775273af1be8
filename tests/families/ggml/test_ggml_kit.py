"""The property-test kit on GGUF and rwkv.cpp: files drawn from the schemas (GGUF versions 1 to 3, every value
type, arrays of arrays, tensor infos and data; rwkv versions 100 and 101, every tensor type of each) round-trip
in both construct modes and through the codec, every cut fails, and mutants of real files written by other
tools (llama.cpp's vocabulary files, an rwkv.cpp model) fail cleanly."""

import lzma
from pathlib import Path

from wvformats.testing import property_tests

DATA = Path(__file__).parents[2] / "data"

# llama.cpp's vocabulary files (its convert script, gguf-py) and rwkv.cpp's converter's output
GGUF = [(DATA / "gguf" / "ggml-vocab-bert-bge.gguf").read_bytes(),
        lzma.decompress((DATA / "gguf" / "ggml-vocab-phi-3.gguf.xz").read_bytes())]
RWKV = [(DATA / "rwkv" / "rwkv-v100-q4_2-mutated.bin").read_bytes()]

globals().update({f"{name}_gguf": test for name, test in property_tests("gguf", samples=GGUF, cases=6).items()})
globals().update({f"{name}_rwkv": test for name, test in property_tests("rwkv", samples=RWKV, cases=8).items()})
