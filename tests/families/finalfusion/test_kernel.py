"""finalfusion's compiled kernel (``_kernel.c``) against its pure-Python twins in lookups.py: the same n-gram
rows, the same bits of a composed vector (numpy's pairwise norm included), and errors instead of crashes."""

import importlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wvformats.families.finalfusion import lookups

K = importlib.import_module("wvformats.families.finalfusion._kernel")  # not built: every test here fails

# text() drops the surrogates of an alphabet that mixes them with other characters: words are built from lists
words = st.lists(st.characters() | st.integers(0xD800, 0xDFFF).map(chr), max_size=12).map("".join)
max_ns = st.integers(0, 7) | st.sampled_from([2**24, 2**32 - 1])


def indexer(kernel, vocab_type, vocab, n_words):
    """lookups.indexer with the kernel or without it (None), whatever WVFORMATS_PURE_PYTHON says."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(lookups, "_K", kernel)
        return lookups.indexer(vocab_type, vocab, n_words)


@given(batch=st.lists(words, max_size=6), min_n=st.integers(0, 4), max_n=max_ns, exp=st.integers(0, 62),
       n_words=st.integers(0, 1000))
def test_bucket_rows_equal_the_python_indexer(batch, min_n, max_n, exp, n_words):
    """finalfusion's FNV-1a-64 of each code point (lone surrogates too), masked; a max_n of 2^24 or 2^32 - 1
    is the longest n-gram the word has (no loop up to it); a min_n of 0 adds the empty n-gram at each start."""
    vocab = {"bucket_exp": exp, "min_n": min_n, "max_n": max_n}
    ours = indexer(K, "bucket_subword_vocab", vocab, n_words)
    assert ours.func is K.ngram_rows  # the kernel serves (rows fit int64)
    theirs = indexer(None, "bucket_subword_vocab", vocab, n_words)
    for w in batch:
        assert ours(w) == theirs(w), w


@given(batch=st.lists(words, max_size=6), min_n=st.integers(0, 4), max_n=max_ns,
       buckets=st.integers(1, 2**32 - 1), n_words=st.integers(0, 1000))
def test_fasttext_rows_equal_the_python_indexer(batch, min_n, max_n, buckets, n_words):
    """fastText's FNV-1a-32 over the UTF-8 bytes (a lone surrogate's 3-byte form), sign-extended, mod buckets."""
    vocab = {"buckets": buckets, "min_n": min_n, "max_n": max_n}
    ours = indexer(K, "fasttext_subword_vocab", vocab, n_words)
    assert ours.func is K.ngram_rows
    theirs = indexer(None, "fasttext_subword_vocab", vocab, n_words)
    for w in batch:
        assert ours(w) == theirs(w), w


def test_rows_past_int64_leave_the_python_indexer_in_charge():
    """A mask of 2^63 - 1 plus the words' rows overflows the kernel's int64 rows: the Python hash serves."""
    rows_of = indexer(K, "bucket_subword_vocab", {"bucket_exp": 63, "min_n": 3, "max_n": 6}, 5)
    assert getattr(rows_of, "func", None) is not K.ngram_rows
    assert max(rows_of("hallo")) >= 2**62 and len(rows_of("hallo")) == 14
    with pytest.raises(ValueError, match="63 bits"):
        K.ngram_rows(0, 3, 6, 2**63 - 1, 5, "hallo")


def python_composed(m):
    """The pure-Python twin's vector of all rows of ``m`` in order: _dense_composed's four numpy calls where
    it serves (two columns or more), composed()'s sum_rows and _finished otherwise."""
    rows = list(range(len(m)))
    with np.errstate(all="ignore"):
        if m.shape[1] > 1 and m.flags.c_contiguous and m.flags.aligned:
            return lookups._dense_composed(lambda _: rows, m)("w")
        return lookups._finished(lookups.sum_rows(m), len(rows))


def same_bits(got, want):
    """The same bits, but for the sign of a NaN: which of two NaNs an addition keeps (one of the row's, or the
    default NaN of inf - inf) is the operand order the compiler or numpy's SIMD loop picked, which neither C
    nor numpy fixes; a NaN stands where the twin has one."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    return got[~nan].tobytes() == want[~nan].tobytes()


def kernel_composed(m, rows=None):
    out = np.empty(m.shape[1], np.float32)
    assert K.compose(m, rows, out) is None
    return out


VALUES = ["normal", "wide", "subnormal", "zeros", "specials"]


def matrix(rng, k, dim, values):
    m = rng.standard_normal((k, dim)).astype(np.float32)
    if values == "wide":  # from the smallest subnormals to overflowing sums
        with np.errstate(over="ignore"):
            m = (m * 10.0 ** rng.integers(-45, 39, (k, dim))).astype(np.float32)
    elif values == "subnormal":  # squares that underflow to zero, sums of squares that are subnormal or zero
        m *= np.float32(1e-39)
    elif values == "zeros":  # -0.0 everywhere (the sum onto +0.0 is +0.0) or here and there
        m[rng.random(m.shape) < (1.0 if rng.random() < 0.3 else 0.4)] = -0.0
    elif values == "specials":
        m[rng.random(m.shape) < 0.05] = np.inf
        m[rng.random(m.shape) < 0.05] = -np.inf
        m[rng.random(m.shape) < 0.03] = np.nan
    return m


def test_every_width_up_to_1100_gives_the_python_bits():
    """numpy's pairwise sum of the squares splits at 8, 128 and halves (multiples of 8) above: each width in
    turn, each kind of values."""
    rng = np.random.default_rng(0)
    for dim in range(1, 1101):
        m = matrix(rng, int(rng.integers(1, 25)), dim, VALUES[dim % len(VALUES)])
        assert same_bits(kernel_composed(m), python_composed(m)), dim


@given(k=st.integers(1, 60), dim=st.integers(1, 1100) | st.sampled_from([2, 8, 128, 129, 300, 4096, 8193]),
       values=st.sampled_from(VALUES), seed=st.integers(0, 2**32 - 1), layout=st.sampled_from(["c", "f", "odd"]))
def test_composed_bits_equal_the_python_twin(k, dim, values, seed, layout):
    """Rows added in order onto +0.0 in float32, the norm numpy's pairwise sum of the squares (rounded to float32
    through a double square root), the division in float32; read from a matrix of any layout (Fortran order,
    a start at an odd byte: memcpy loads), from a list of rows too."""
    rng = np.random.default_rng(seed)
    m = matrix(rng, k, dim, values)
    want = python_composed(m)
    if layout == "f":
        m = np.asfortranarray(m)
    elif layout == "odd":
        buf = np.zeros(m.nbytes + 1, np.uint8)
        buf[1:] = m.view(np.uint8).reshape(-1)
        m = buf[1:].view(np.float32).reshape(k, dim)
    assert same_bits(kernel_composed(m), want)
    picks = rng.integers(0, k, int(rng.integers(1, 40))).tolist()
    assert same_bits(kernel_composed(m, picks), python_composed(np.ascontiguousarray(m[picks])))


@given(word=words, min_n=st.integers(1, 4), max_n=max_ns, kind=st.sampled_from([0, 1]), dim=st.integers(1, 40))
def test_embedding_is_the_sum_of_the_rows_of_ngram_rows(word, min_n, max_n, kind, dim):
    """One call (hash, gather, sum, normalise) gives compose() of ngram_rows' rows; no n-gram: 0, out unwritten."""
    rng = np.random.default_rng(dim)
    m = rng.standard_normal((7 + 64, dim)).astype(np.float32)
    args = (kind, min_n, max_n, 63 if kind == 0 else 64, 7)
    rows = K.ngram_rows(*args, word)
    out = np.full(dim, 5, np.float32)
    assert K.embedding(*args, m, word, out) == len(rows)
    want = kernel_composed(m, rows) if rows else np.full(dim, 5, np.float32)
    assert out.tobytes() == want.tobytes()


def test_bad_arguments_raise_and_never_crash():
    m = np.zeros((10, 4), np.float32)
    out = np.empty(4, np.float32)
    with pytest.raises(IndexError, match="row 10 is outside the 10 rows"):
        K.compose(m, [1, 10], out)
    with pytest.raises(IndexError, match="row -1 is outside"):
        K.compose(m, [-1], out)
    with pytest.raises(IndexError, match="outside the 10 rows"):  # a row a hash gives past the matrix
        K.embedding(0, 3, 6, 1023, 0, m, "hallo", out)
    with pytest.raises(TypeError, match="float32"):
        K.compose(m.astype(np.float64), None, out)
    with pytest.raises(TypeError, match="float32"):
        K.compose(m[0], None, out)
    with pytest.raises(ValueError, match="expected 4 floats"):
        K.compose(m, None, np.empty(5, np.float32))
    with pytest.raises((TypeError, ValueError, BufferError)):  # a read-only out
        K.compose(m, None, np.frombuffer(bytes(16), np.float32))
    with pytest.raises(ValueError, match="no rows"):
        K.compose(m, [], out)
    with pytest.raises(TypeError, match="expected a str"):
        K.ngram_rows(0, 3, 6, 7, 0, b"hallo")
    with pytest.raises(ValueError, match="kind 2"):
        K.ngram_rows(2, 3, 6, 7, 0, "hallo")
    with pytest.raises(ValueError, match="buckets > 0"):
        K.ngram_rows(1, 3, 6, 0, 0, "hallo")
    with pytest.raises(ValueError):
        K.ngram_rows(0, -1, 6, 7, 0, "hallo")
    with pytest.raises(OverflowError):
        K.ngram_rows(0, 3, 2**64, 7, 0, "hallo")
    with pytest.raises(TypeError):
        K.ngram_rows(0, 3, 6, 7, 0)


def test_the_fasttext_hash_of_a_surrogate_escape_is_the_byte_it_came_from():
    """The public fasttext_hash, finalfusion's fastText indexer (kernel and twin) and the fastText model's
    hash (of the bytes a word was read from) agree on a word with surrogate escapes: 'caf\\udce9' was hashed
    as the 3-byte form of U+DCE9 (surrogatepass, 723987888) here, as the byte 0xE9 by the fastText model
    (4109757820). A lone surrogate no byte gave keeps its 3-byte form."""
    from wvformats.families.fasttext import hashing, subwords
    from wvformats.finalfusion import fasttext_hash

    ft_kernel = importlib.import_module("wvformats.families.fasttext._kernel")
    assert fasttext_hash("caf\udce9") == ft_kernel.fnv1a(b"caf\xe9") == 4109757820
    blob, lengths = subwords.encode(["caf\udce9", "\udcff\udc80x"])
    assert hashing.fasttext_hash_many(blob, np.array([0, 4]), lengths).tolist() == \
        [4109757820, ft_kernel.fnv1a(b"\xff\x80x")] == [fasttext_hash("caf\udce9"), fasttext_hash("\udcff\udc80x")]
    assert fasttext_hash("\ud800") == ft_kernel.fnv1a("\ud800".encode("utf-8", "surrogatepass"))
    vocab = {"buckets": 1000, "min_n": 3, "max_n": 6}
    word = "caf\udce9\udc80\ud800"
    want = [7 + fasttext_hash(g) % 1000 for g in lookups.ngrams(word, 3, 6)]
    assert indexer(K, "fasttext_subword_vocab", vocab, 7)(word) == want
    assert indexer(None, "fasttext_subword_vocab", vocab, 7)(word) == want
