"""The compiled kernels on hostile arguments: every entry point of both kernels called with huge and negative
counts and sizes, short and odd buffers, wrong dtypes, shapes and strides, non-ints, and sequences whose
elements' ``__index__`` empties or shortens the sequence while it is read. Each call returns a sane result or
raises one of the kernels' own errors, never crashes. ``.ci/sanitize`` runs this module on kernels built with
AddressSanitizer and UBSan, which turn any out-of-bounds access or undefined arithmetic into a failure; the
ordinary suite runs it on the installed kernels (it needs them built: every test here fails without)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wvformats import compiled
from wvformats.families.fasttext import subwords
from wvformats.families.finalfusion import lookups

FT = compiled.kernel("wvformats.families.fasttext._kernel")
FF = compiled.kernel("wvformats.families.finalfusion._kernel")
ERRORS = (TypeError, ValueError, IndexError, OverflowError, MemoryError, BufferError)

EDGES = [0, 1, 2, 3, -1, -2, 255, 256, 2**31 - 1, 2**31, -(2**31), 2**32 - 1, 2**32, 2**61, 2**62, 2**63 - 1,
         -(2**63), 2**63, 2**64 - 1, 2**64, -(2**64)]
hostile_ints = st.sampled_from(EDGES) | st.integers(-(2**65), 2**65) | st.integers(-3, 40)
small = st.integers(-2, 12)


class Shrinking:
    """An int whose ``__index__`` (run by the kernel as it reads the sequence) empties or shortens the list
    holding it, or grows it."""

    def __init__(self, value, victim, how):
        self.value, self.victim, self.how = value, victim, how

    def __index__(self):
        if self.how == "clear":
            self.victim.clear()
        elif self.how == "shorten":
            del self.victim[1:]
        else:
            self.victim.extend([0] * 100)
        return self.value

    __int__ = __index__


def shrinking(values, how="clear"):
    """A list of ``values`` (ints), each element one that changes the list when read; long enough that a kernel
    keeping its length would read far past a shortened list's storage."""
    victim = []
    victim.extend(Shrinking(v, victim, how) for v in values)
    return victim


@st.composite
def int_sequences(draw, values=hostile_ints):
    """Sequences of ints as a caller may pass them: lists, tuples, ranges, generators, numpy ints, floats and
    other non-ints, and lists that change while they are read."""
    kind = draw(st.sampled_from(["list", "tuple", "range", "gen", "numpy", "bad", "clear", "shorten", "grow",
                                 "not"]))
    items = draw(st.lists(values, max_size=20))
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    if kind == "range":
        return range(draw(small), draw(small))
    if kind == "gen":
        return (i for i in items)
    if kind == "numpy":
        return [np.int64(i) for i in items if -(2**63) <= i < 2**63]
    if kind == "bad":
        return [*items, draw(st.sampled_from([1.5, "3", None, b"x", [1]]))]
    if kind == "not":
        return draw(st.sampled_from([None, 5, 1.5, object()]))
    return shrinking(items * 15, kind)  # (long: a kernel keeping the length would read far past a shortened list)


@st.composite
def arrays(draw, ndim=None, dtypes=(np.float32,)):
    """Small arrays of hostile dtypes, dimensions and layouts: C or Fortran order, strided, reversed, at an odd
    byte, read-only, broadcast (stride 0)."""
    ndim = draw(st.sampled_from([0, 1, 2, 3])) if ndim is None else ndim
    dtype = draw(st.sampled_from([*dtypes, np.float64, np.int32, np.int64, np.uint8, np.float16, ">f4", ">i4"]))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim)))
    size = int(np.prod(shape))
    a = np.arange(size * 2, dtype=np.float64)[:size].reshape(shape)
    a = np.array(np.sin(a) * 4 if np.dtype(dtype).kind == "f" else a % 7 - 1, dtype)
    layout = draw(st.sampled_from(["c", "f", "strided", "reversed", "odd", "readonly", "broadcast"]))
    if layout == "f":
        a = np.asfortranarray(a)
    elif layout == "strided" and ndim:
        a = np.repeat(a, 2, axis=0)[::2]
    elif layout == "reversed" and ndim:
        a = a[::-1]
    elif layout == "odd":
        buf = np.zeros(a.nbytes + 1, np.uint8)
        buf[1:] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
        a = buf[1:].view(a.dtype).reshape(shape)
    elif layout == "readonly":
        a.flags.writeable = False
    elif layout == "broadcast" and ndim and shape[0]:
        a = np.broadcast_to(a[:1], (draw(st.integers(0, 6)), *shape[1:]))
    return a


def call(f, *args):
    """f(*args), or None when it raised one of the kernels' errors."""
    try:
        return f(*args)
    except ERRORS:
        return None


# -- fastText --------------------------------------------------------------------------------------------------

@given(st.binary(max_size=40), hostile_ints, hostile_ints, hostile_ints, hostile_ints,
       st.none() | arrays(ndim=1, dtypes=(np.int32,)))
def test_fasttext_ngram_rows(word, minn, maxn, bucket, nwords, table):
    got = call(FT.ngram_rows, word, minn, maxn, bucket, nwords, table)
    if got is not None:
        assert all(nwords - 1 <= r < nwords + 2**31 for r in got)


@given(int_sequences(), hostile_ints, hostile_ints, hostile_ints, st.none() | arrays(ndim=1, dtypes=(np.int32,)))
def test_fasttext_word_ngram_rows(hashes, n, bucket, nwords, table):
    out = [-5]
    if call(FT.word_ngram_rows, out, hashes, n, bucket, nwords, table) is not None:
        assert out[0] == -5 and all(nwords - 1 <= r < nwords + 2**31 for r in out[1:])


@given(st.binary(max_size=64) | st.sampled_from([bytearray(b"\xff" * 9), memoryview(b"abc")[::2], "str", 5]))
def test_fasttext_fnv1a(data):
    got = call(FT.fnv1a, data)
    if got is not None:
        assert 0 <= got < 2**32


@st.composite
def pq_arguments(draw):
    """pq_rows' arguments, most of them consistent (so that the row loop runs), any of them hostile."""
    dsub = draw(st.integers(1, 4) | hostile_ints)
    lastdsub = draw(st.integers(1, 4) | hostile_ints)
    nsubq = draw(st.integers(1, 4))
    dim = draw(st.just((nsubq - 1) * dsub + lastdsub) | hostile_ints)
    count = draw(st.integers(0, 5))
    codes = bytes(draw(st.lists(st.integers(0, 255), min_size=count * nsubq, max_size=count * nsubq)))
    codes = draw(st.just(codes) | st.binary(max_size=20))
    cent_len = 4 * 256 * dim if isinstance(dim, int) and 0 < dim < 40 else 0
    centroids = np.linspace(-1, 1, cent_len // 4, dtype=np.float32).tobytes()
    centroids = draw(st.just(centroids) | st.binary(max_size=64).map(lambda b: centroids[: len(b)]))
    scaled = draw(st.booleans())
    norm_codes = draw(st.binary(min_size=count, max_size=count + 2) | st.binary(max_size=3)) if scaled else None
    norms = draw(st.just(np.linspace(0.5, 2, 256, dtype=np.float32)) | arrays(ndim=1)) if scaled else None
    rows = draw(int_sequences(st.integers(-2, count + 1) | hostile_ints))
    width = dim if isinstance(dim, int) and 0 < dim < 40 else 3
    n = len(rows) if isinstance(rows, (list, tuple)) else 2
    out = draw(st.sampled_from(["right", "short", "odd", "readonly", "bytes"]))
    size = n * width * 4 + (out == "short")
    buf = bytearray(size + 1)
    out = {"right": lambda: bytearray(size), "short": lambda: bytearray(max(size - 2, 0)),
           "odd": lambda: memoryview(buf)[1:], "readonly": lambda: bytes(size), "bytes": lambda: "x"}[out]()
    return codes, centroids, dim, dsub, lastdsub, norm_codes, norms, rows, out


@given(pq_arguments())
def test_fasttext_pq_rows(args):
    call(FT.pq_rows, *args)


@given(arrays(), int_sequences(st.integers(-2, 8) | hostile_ints), arrays(ndim=1))
def test_fasttext_mean_rows(matrix, rows, out):
    got = call(FT.mean_rows, matrix, rows, out)
    if got is not None:
        assert got is out


@st.composite
def line_arguments(draw):
    """The matrices of a predict (input, its rows, output, norms), mostly of agreeing shapes."""
    dim = draw(st.integers(0, 5))
    nrows, osz = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    matrix = draw(st.just(rng.standard_normal((nrows, dim)).astype(np.float32)) | arrays())
    output = draw(st.just(rng.standard_normal((osz, dim)).astype(np.float32)) | arrays())
    norms = draw(st.none() | st.just(rng.random(osz).astype(np.float32)) | arrays(ndim=1))
    rows = draw(int_sequences(st.integers(-1, nrows) | hostile_ints))
    return matrix, rows, output, norms, osz


@given(line_arguments(), hostile_ints, st.floats(allow_nan=True) | st.sampled_from([1e300, -1e300]),
       st.booleans(), st.sampled_from(["table", "short", "2d", "f64"]))
def test_fasttext_flat_predict(line, k, threshold, softmax, table):
    matrix, rows, output, norms, _ = line
    table = {"table": np.linspace(0, 1, 513, dtype=np.float32),
             "short": np.zeros(512, np.float32), "2d": np.zeros((513, 1), np.float32),
             "f64": np.zeros(513)}[table]
    got = call(FT.flat_predict, matrix, rows, output, norms, softmax, table, k, threshold)
    if got is not None:
        ids, probs = got
        assert len(ids) == len(probs) <= min(k, len(output))
        assert all(0 <= i < len(output) for i in ids)


@st.composite
def trees(draw, osz):
    """A hierarchical-softmax tree of ``osz`` leaves as predict.Tree holds it ((2 osz - 1) x 2 int32 children,
    -1 for a leaf's), or a broken one."""
    nodes = 2 * osz - 1
    children = np.full((nodes, 2), -1, np.int32)
    free, nxt = list(range(osz)), osz
    while len(free) > 1:  # Huffman-like: join the first two into a new inner node
        children[nxt] = free[:2]
        free, nxt = [*free[2:], nxt], nxt + 1
    how = draw(st.sampled_from(["tree", "random", "cycle", "other"]))
    if how == "random":
        children = draw(st.lists(st.integers(-2, nodes + 1), min_size=2 * nodes, max_size=2 * nodes)
                        .map(lambda v: np.array(v, np.int32).reshape(nodes, 2)))
    elif how == "cycle" and nodes > 1:
        children[nodes - 1] = [nodes - 1, nodes - 1]
    elif how == "other":
        children = draw(arrays(dtypes=(np.int32,)))
    return children


@given(line_arguments(), st.data(), hostile_ints, st.floats(width=32) | st.sampled_from([float("nan"), 1e300]))
def test_fasttext_hs_predict(line, data, k, log_threshold):
    matrix, rows, output, norms, osz = line
    osz_arg = data.draw(st.just(osz) | hostile_ints)
    children = data.draw(trees(osz))
    inner = output[: max(osz - 1, 0)] if output.ndim == 2 else output
    got = call(FT.hs_predict, matrix, rows, inner, norms, children, osz_arg, k, log_threshold)
    if got is not None:
        ids, probs = got
        assert len(ids) == len(probs) <= min(k, osz_arg)
        assert all(0 <= i < osz_arg for i in ids)


# -- finalfusion -----------------------------------------------------------------------------------------------

words = st.lists(st.characters() | st.integers(0xD800, 0xDFFF).map(chr), max_size=30).map("".join)


@given(hostile_ints, hostile_ints | small, hostile_ints | small, hostile_ints, hostile_ints,
       words | st.sampled_from([b"x", None, 5]))
def test_finalfusion_ngram_rows(kind, min_n, max_n, param, offset, word):
    got = call(FF.ngram_rows, kind, min_n, max_n, param, offset, word)
    if got is not None:
        assert all(offset <= r <= offset + param for r in got)


@given(st.sampled_from([0, 1]) | hostile_ints, st.integers(0, 4) | hostile_ints, small | hostile_ints,
       st.sampled_from([7, 63]) | hostile_ints, st.integers(0, 3) | hostile_ints, arrays(), words,
       arrays(ndim=1))
def test_finalfusion_embedding(kind, min_n, max_n, param, offset, matrix, word, out):
    got = call(FF.embedding, kind, min_n, max_n, param, offset, matrix, word, out)
    if got is not None:
        assert got >= 0


@given(arrays(), st.none() | int_sequences(st.integers(-1, 7) | hostile_ints), arrays(ndim=1))
def test_finalfusion_compose(matrix, rows, out):
    assert call(FF.compose, matrix, rows, out) is None


@pytest.mark.parametrize("kernel", [FT, FF], ids=["fasttext", "finalfusion"])
def test_every_entry_point_is_fuzzed(kernel):
    """A new entry point needs its fuzz test here (the test names list what each kernel exports)."""
    prefix = "fasttext" if kernel is FT else "finalfusion"
    exported = {n for n in dir(kernel) if not n.startswith("_")}
    assert {f"test_{prefix}_{n}" for n in exported} <= set(globals())


# -- the defects the sanitizer build found (issue 37), each with the clean result or error it now gives ---------

def _line():
    rng = np.random.default_rng(3)
    matrix, output = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    return matrix, output, np.linspace(0, 1, 513, dtype=np.float32)


@pytest.mark.parametrize("k", [2**61, 2**62, 2**63 - 1])
def test_flat_predict_clamps_k_before_it_sizes_the_heap(k):
    """(k + 1) * sizeof(Pred) was allocated before k was clamped to the labels: 2^61 wrapped to 8 bytes and the
    heap was overrun (ASan: heap-buffer-overflow in line_offer), 2^63 - 1 overflowed first (UBSan)."""
    matrix, output, table = _line()
    for softmax in (True, False):
        want = FT.flat_predict(matrix, [0, 2, 5], output, None, softmax, table, 5, -1.0)
        assert len(want[0]) == 5
        assert FT.flat_predict(matrix, [0, 2, 5], output, None, softmax, table, k, -1.0) == want


def test_hs_predict_checks_osz_before_it_computes_with_it():
    """2 * osz - 1 nodes and a heap of min(k, osz) + 1: osz is refused outside 1..2^31-1 (label ids are int32)
    before either is computed (before, the matrices' shapes happened to stop an osz that would overflow), and a
    huge k is the whole tree."""
    matrix, output, _ = _line()
    children = np.array([[-1, -1], [-1, -1], [0, 1]], np.int32)
    for osz in (2**62, 2**63 - 1, 0, -1):
        with pytest.raises(ValueError, match="osz"):
            FT.hs_predict(matrix, [0], output, None, children, osz, 2**63 - 1, -1e30)
    assert FT.hs_predict(matrix, [0], output, None, children, 2, 2**63 - 1, -1e30)[0] in ([0, 1], [1, 0])


@pytest.mark.parametrize("how", ["clear", "shorten", "grow"])
def test_a_list_changed_by_its_elements_index_is_read_as_it_was(how):
    """word_ngram_rows, compose (and every kernel reading a list of ints) kept the list's size, then called
    PyLong_As*, which runs an element's __index__: one that emptied the list was a segmentation fault, one that
    shortened it a heap-buffer-overflow. Now the list is read from a copy: the values its elements give."""
    values = [(i * 7919) % 13 for i in range(300)]
    table = None
    out = []
    FT.word_ngram_rows(out, shrinking(values, how), 3, 1000, 7, table)
    want = []
    FT.word_ngram_rows(want, values, 3, 1000, 7, table)
    assert out == want and len(want) == 2 * 300 - 3

    m = np.arange(13 * 4, dtype=np.float32).reshape(13, 4)
    got, ref = np.empty(4, np.float32), np.empty(4, np.float32)
    FF.compose(m, shrinking(values, how), got)
    FF.compose(m, values, ref)
    assert got.tobytes() == ref.tobytes()

    assert FT.mean_rows(m, shrinking(values, how), got).tobytes() == FT.mean_rows(m, values, ref).tobytes()
    matrix, output, table = _line()
    few = [v % 6 for v in values]
    assert FT.flat_predict(matrix, shrinking(few, how), output, None, True, table, 3, -1.0) == \
        FT.flat_predict(matrix, few, output, None, True, table, 3, -1.0)


def test_pq_rows_sizes_that_overflowed_to_zero_are_refused():
    """pq_rows' checks multiplied dim, dsub and KSUB unchecked: huge ones overflowed to 0 and passed, then the
    rows were read past the centroids (UBSan: signed integer overflow)."""
    out = np.empty((1, 4), np.float32)
    for dim, dsub, lastdsub in [(2**62, 2**61, 2**61), (2**63 - 1, 1, 1), (-(2**63), 1, 1), (2**61 + 2, 2**61, 2)]:
        with pytest.raises(ValueError, match="do not agree"):
            FT.pq_rows(b"\0" * 16, b"\0" * 16, dim, dsub, lastdsub, None, None, [0], out)
    with pytest.raises(ValueError, match="out must hold"):
        FT.pq_rows(b"\0", bytes(4 * 256 * 4), 4, 4, 4, None, None, [0] * (2**20), out)


def test_word_ngram_rows_takes_any_n():
    """j < i + n overflowed for an n near 2^63 (UBSan: signed integer overflow); now every n beyond the line is
    the whole line, and n < 2 gives no word n-gram, as the Python twin gives them."""
    hashes = [5, 2**32 - 1, 77, 2**31]
    rows = {}
    for n in (-(2**63), -1, 0, 1, 2, 4, 5, 2**31, 2**63 - 1):
        out = []
        FT.word_ngram_rows(out, hashes, n, 101, 0, None)
        rows[n] = out
        if 1 < n < 2**31:
            b = subwords.Buckets(0, 101, None)
            assert out == subwords.word_ngram_rows(np.array(hashes, np.uint32), np.zeros(4, np.int64), n, b)[0].tolist()
    assert rows[-(2**63)] == rows[0] == rows[1] == []
    assert rows[2**63 - 1] == rows[2**31] == rows[5] == rows[4] and len(rows[4]) == 6


def test_rows_past_int64_are_refused():
    """nwords plus a bucket row overflowed int64 for an nwords near 2^63: refused."""
    with pytest.raises(ValueError, match="nwords"):
        FT.ngram_rows(b"<abc>", 1, 3, 10, 2**63 - 1, None)
    with pytest.raises(ValueError, match="nwords"):
        FT.word_ngram_rows([], [1, 2], 2, 10, 2**63 - 1, None)
    with pytest.raises(ValueError, match="nwords"):
        FT.ngram_rows(b"<abc>", 1, 3, 10, -1, None)


def test_finalfusion_min_n_near_2_63_gives_no_ngram():
    """i + min_n overflowed for a min_n near 2^63 (UBSan): no n-gram is that long."""
    assert FF.ngram_rows(0, 2**63 - 1, 2**63 - 1, 7, 0, "hallo") == []
    assert FF.ngram_rows(1, 2**63 - 1, 2**63 - 1, 7, 0, "hallo") == []
    with pytest.raises(ValueError, match="kind 4294967296"):  # (was truncated to int: kind 0)
        FF.ngram_rows(2**32, 3, 6, 7, 0, "hallo")


def test_finalfusion_fasttext_rows_of_surrogates_are_the_twins():
    """A surrogate escape hashed as the byte it came from, another lone surrogate as its 3-byte form, by the
    kernel and by its twin (lookups' fastText indexer without the kernel), a max_n near 2^63 the whole word."""
    word = "caf\udce9\udc80x\ud800"
    assert FF.ngram_rows(1, 1, 2**63 - 1, 97, 3, word) == lookups._memo_rows(
        lambda g: 3 + lookups.fasttext_hash(g) % 97, 1, 2**63 - 1)(word)
