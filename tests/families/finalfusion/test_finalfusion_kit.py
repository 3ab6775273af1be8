"""The property-test kit on finalfusion: files drawn from the schema (every chunk type, in any order, with its
padding) round-trip in both construct modes and through the codec, every cut fails, and mutants of files
finalfusion-python wrote (a simple vocabulary with norms and metadata, a bucket and a fastText subword
vocabulary) fail cleanly."""

import tempfile
from pathlib import Path

import numpy as np
import pytest

from wvformats.testing import property_tests

ff = pytest.importorskip("finalfusion")  # the 'peers' extra, installed by CI


def written_by_finalfusion_python() -> list[bytes]:
    rng = np.random.default_rng(5)
    words = ["Daniël", "überspringen", "hallo", "日本", "a"]
    m = rng.normal(size=(len(words), 4)).astype(np.float32)
    embeddings = [
        ff.Embeddings(ff.storage.NdArray(m), ff.vocab.SimpleVocab(words),
                      norms=ff.norms.Norms(np.linalg.norm(m, axis=1).astype(np.float32)),
                      metadata=ff.metadata.Metadata({"model": "test", "dims": 4})),
        ff.Embeddings(ff.storage.NdArray(rng.normal(size=(len(words) + 8, 4)).astype(np.float32)),
                      ff.vocab.FinalfusionBucketVocab(words, ff.subword.FinalfusionHashIndexer(bucket_exp=3))),
        ff.Embeddings(ff.storage.NdArray(rng.normal(size=(len(words) + 7, 4)).astype(np.float32)),
                      ff.vocab.FastTextVocab(words, ff.subword.FastTextIndexer(n_buckets=7))),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        out = []
        for i, e in enumerate(embeddings):
            e.write(str(Path(tmp) / f"{i}.fifu"))
            out.append((Path(tmp) / f"{i}.fifu").read_bytes())
    return out


globals().update(property_tests("finalfusion", samples=written_by_finalfusion_python(), cases=8))
