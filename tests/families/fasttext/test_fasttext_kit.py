"""The property-test kit on fastText's models: files drawn from the schema (current releases' and older
releases' layouts, any args, dictionaries with labels and prune indexes) round-trip in both construct modes and
through the codec, every cut fails, and mutants of models fastText wrote (a current and an older release's
.bin, a quantized supervised .ftz) fail cleanly."""

from pathlib import Path

from wvformats.testing import property_tests

DATA = Path(__file__).parents[2] / "data" / "fasttext"
SAMPLES = [(DATA / name).read_bytes() for name in ("toy-model.bin", "cp852_fasttext.bin", "trained/sup-dsub3.ftz")]

globals().update(property_tests("fasttext", samples=SAMPLES, cases=8))
