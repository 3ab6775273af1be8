"""finalfusion's per-word lookups: the running sum, the n-gram hash's shortcut and the per-word vector cache
(bounded, handing out copies) give what the uncached, bytewise computations give."""

import numpy as np
import pytest

import wvformats as wv
from wvformats.families.finalfusion import lookups

ff = pytest.importorskip("finalfusion")  # finalfusion-python writes the model (the 'peers' extra)


@pytest.mark.parametrize("shape", [(1, 5), (3, 2), (34, 100), (257, 3), (1000, 16), (5, 1), (40, 1)])
def test_sum_rows_adds_row_after_row_onto_zero(shape):
    rows = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32) * 1e3
    rows[0, 0] = -0.0
    expected = np.zeros(shape[1], np.float32)
    for r in rows:
        expected = expected + r  # float32 additions, one row at a time
    got = lookups.sum_rows(rows)
    assert got.tobytes() == expected.tobytes()
    assert lookups.sum_rows(np.asfortranarray(rows)).tobytes() == expected.tobytes()  # (the running sum)


def test_finalfusion_hash_equals_the_bytewise_fnv():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        cps = [int(rng.choice([rng.integers(0, 128), rng.integers(128, 256), rng.integers(256, 0x10000),
                               rng.integers(0x10000, 0x110000)])) for _ in range(int(rng.integers(0, 8)))]
        s = "".join(map(chr, cps))
        h = lookups._length_state(len(s))
        for b in s.encode("utf-32-le", "surrogatepass"):
            h = ((h ^ b) * lookups._FNV64_PRIME) & lookups._MASK64
        assert lookups.finalfusion_hash(s) == h, repr(s)


@pytest.fixture(scope="module")
def bucket_model(tmp_path_factory):
    rng = np.random.default_rng(0)
    words = [f"w{i}x" for i in range(300)]
    vocab = ff.vocab.FinalfusionBucketVocab(words, ff.subword.FinalfusionHashIndexer(bucket_exp=10))
    path = tmp_path_factory.mktemp("ff") / "bucket.fifu"
    ff.Embeddings(ff.storage.NdArray(rng.normal(size=(300 + 1024, 12)).astype(np.float32)), vocab).write(str(path))
    return path


def test_oov_vectors_are_cached_bounded_and_handed_out_as_copies(bucket_model, monkeypatch, kernels):
    monkeypatch.setattr(lookups, "_MEMO_VECTORS_BYTES", 5 * 4 * 12)  # five vectors of 12 dims
    m = wv.read(bucket_model)
    unknown = [f"zz{i}q" for i in range(40)] * 2
    batch, found = m.embedding_batch(unknown)
    assert found.all()
    for i, word in enumerate(unknown):
        v = m.embedding(word)
        assert v.tobytes() == batch[i].tobytes()  # the same bits as the batch, cached or not
        v[:] = 7  # the caller's copy: the next lookup is unchanged
        assert m.embedding(word).tobytes() == batch[i].tobytes()
    assert 0 < len(m.subwords.lookup.cache) <= 5
