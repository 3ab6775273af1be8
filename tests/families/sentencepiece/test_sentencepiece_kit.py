"""The property-test kit on SentencePiece models: models drawn from the schema (the messages of
sentencepiece_model.proto, wire values of each field's type) round-trip in both construct modes and through the
codec, every cut fails, and mutants of models sentencepiece's trainer wrote fail cleanly."""

from pathlib import Path

from wvformats.testing import property_tests

DATA = Path(__file__).parents[2] / "data" / "sentencepiece"
SAMPLES = [(DATA / name).read_bytes() for name in ("botchan_en_bpe_1000.model", "botchan_en_unigram_1000.model")]

globals().update(property_tests("sentencepiece", samples=SAMPLES, cases=6))
