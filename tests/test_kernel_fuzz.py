"""The compiled kernels on hostile arguments: every entry point of every kernel called with arguments that are
valid but for one or two made hostile (huge and negative counts and sizes, 2^31- and 2^63-ish values, short and
odd buffers, wrong dtypes, dimensions and strides, non-ints), and with sequences whose elements' ``__index__``
empties, shortens or grows the sequence while the kernel reads it. Each call returns a sane result or raises one
of the kernels' own errors, never crashes. ``.ci/sanitize`` runs this module on kernels built with
AddressSanitizer and UBSan, which turn any out-of-bounds access or undefined arithmetic into a failure; the
ordinary suite runs it on the installed kernels (it needs them built: every test here fails without)."""

import os
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wvformats import compiled
from wvformats.families.fasttext import subwords
from wvformats.families.finalfusion import lookups

FT = compiled.kernel("wvformats.families.fasttext._kernel")
FF = compiled.kernel("wvformats.families.finalfusion._kernel")
IG = compiled.kernel("wvformats.families.infinigram._kernel")
WT = compiled.kernel("wvformats.framework._wordtables")
TT = compiled.kernel("wvformats.framework._texttable")
ERRORS = (TypeError, ValueError, IndexError, OverflowError, MemoryError, BufferError)
# examples per entry point: the profile's, or WVFORMATS_FUZZ_EXAMPLES (.ci/sanitize asks for more: a heap overrun
# needs a count that wraps and valid arguments around it, which the profile's 100 examples seldom draw)
fuzz = settings(max_examples=int(os.environ.get("WVFORMATS_FUZZ_EXAMPLES") or settings.default.max_examples))

EDGES = [0, 1, 2, 3, -1, -2, 255, 256, 2**31 - 1, 2**31, -(2**31), 2**32 - 1, 2**32, 2**61, 2**61 + 1, 2**62,
         2**63 - 2**31, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, -(2**64)]
hostile_ints = st.sampled_from(EDGES) | st.sampled_from(EDGES) | st.integers(-(2**65), 2**65)  # (edges: 2 in 3)
# a count that sizes an allocation (times 4, 8 or 16 bytes: the product wraps) or is added to a row
counts = st.sampled_from([2**60, 2**61, 2**61 + 1, 2**62, 2**63 - 1, 2**63 - 2**31 + 1]) | hostile_ints
not_ints = st.sampled_from([1.5, "3", None, b"x", [1], float("nan")])


class Shrinking:
    """An int whose ``__index__`` (run by the kernel as it reads the sequence) empties, shortens or grows the
    list holding it."""

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


def shrinking(values, how="clear"):
    """A list of ``values`` (ints), each element one that changes the list when read."""
    victim = []
    victim.extend(Shrinking(v, victim, how) for v in values)
    return victim


@st.composite
def int_sequences(draw, values):
    """Ints drawn from ``values`` in any form a caller may pass them: a list, tuple, range, generator, numpy
    ints, or a list that changes while it is read (made long, so that a kernel keeping its length reads far
    past a shortened list)."""
    items = draw(st.lists(values, max_size=12))
    kind = draw(st.sampled_from(["list", "tuple", "gen", "numpy", "clear", "shorten", "grow"]))
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    if kind == "gen":
        return (i for i in items)
    if kind == "numpy":
        return [np.int64(i) if -(2**63) <= i < 2**63 else i for i in items]
    return shrinking(items * 20, kind)


@st.composite
def bad_sequences(draw):
    """Sequences no kernel takes whole: hostile ints, a non-int among ints, no sequence at all."""
    how = draw(st.sampled_from(["ints", "non-int", "not"]))
    if how == "ints":
        return draw(int_sequences(hostile_ints))
    if how == "non-int":
        return [*draw(st.lists(st.integers(0, 3), max_size=3)), draw(not_ints)]
    return draw(st.sampled_from([None, 5, 1.5, object(), "abc"]))


def layouts(draw, a):
    """``a`` (float32 or int32) as a caller may hand it over: C or Fortran order, strided, reversed, at an odd
    byte, read-only, broadcast (stride 0)."""
    layout = draw(st.sampled_from(["c", "f", "strided", "reversed", "odd", "readonly", "broadcast"]))
    if layout == "f":
        return np.asfortranarray(a)
    if layout == "strided" and a.ndim:
        return np.repeat(a, 2, axis=0)[::2]
    if layout == "reversed" and a.ndim:
        return a[::-1]
    if layout == "odd":
        buf = np.zeros(a.nbytes + 1, np.uint8)
        buf[1:] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
        return buf[1:].view(a.dtype).reshape(a.shape)
    if layout == "readonly":
        a = a.copy()
        a.flags.writeable = False
        return a
    if layout == "broadcast" and a.ndim and len(a):
        return np.broadcast_to(a[:1], a.shape)
    return a


@st.composite
def floats(draw, shape):
    """A float32 array of ``shape`` in any layout."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return layouts(draw, rng.standard_normal(shape).astype(np.float32))


@st.composite
def bad_arrays(draw):
    """Arrays a kernel refuses or must read with care: any dtype, 0 to 3 dimensions, any layout."""
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from([np.float32, np.int32, np.float64, np.int64, np.uint8, np.float16, ">f4", ">i4"]))
    a = np.array(np.sin(np.arange(int(np.prod(shape)), dtype=np.float64)) * 4, dtype).reshape(shape)
    return draw(st.sampled_from([a, bytearray(7), memoryview(b"abcdefgh")[::3], "str", 5, None])) \
        if draw(st.integers(0, 5)) == 0 else layouts(draw, a)


def hostile(draw, valid, bad):
    """``valid`` (the arguments of a call) with none, one or two replaced by a draw from ``bad`` (a strategy for
    each position)."""
    count = draw(st.sampled_from([0, 1, 1, 1, 2]))
    at = set(draw(st.lists(st.sampled_from(range(len(valid))), min_size=count, max_size=count)))
    return [draw(bad[i]) if i in at else v for i, v in enumerate(valid)]


def call(f, args):
    """f(*args), or None when it raised one of the kernels' errors."""
    try:
        return f(*args)
    except ERRORS:
        return None


def row_table(draw, bucket):
    """A pruned model's bucket -> row table (int32, -1: pruned), or None."""
    if bucket > 64 or draw(st.booleans()):
        return None
    return layouts(draw, np.array(draw(st.lists(st.integers(-1, 1000), min_size=bucket, max_size=bucket)), np.int32))


# -- fastText --------------------------------------------------------------------------------------------------

@fuzz
@given(st.data())
def test_fasttext_ngram_rows(data):
    draw = data.draw
    bucket = draw(st.integers(1, 64) | st.integers(1, 2**31 - 1))
    valid = [b"<" + draw(st.binary(max_size=24)) + b">", draw(st.integers(0, 6)), draw(st.integers(-1, 8)), bucket,
             draw(st.integers(0, 1000)), row_table(draw, bucket)]
    bad = [st.sampled_from(["<abc>", 5, None, memoryview(b"<abcd>")[::2]]), hostile_ints, hostile_ints, hostile_ints,
           counts, bad_arrays()]
    args = hostile(draw, valid, bad)
    got = call(FT.ngram_rows, args)
    if got is not None:
        assert all(args[4] <= r < args[4] + 2**31 for r in got)


@fuzz
@given(st.data())
def test_fasttext_word_ngram_rows(data):
    draw = data.draw
    bucket = draw(st.integers(1, 64) | st.integers(1, 2**31 - 1))
    out = [-5]
    valid = [out, draw(int_sequences(st.integers(0, 2**32 - 1))), draw(st.integers(1, 6)), bucket,
             draw(st.integers(0, 1000)), row_table(draw, bucket)]
    bad = [st.sampled_from([(), None]), bad_sequences(), counts, hostile_ints, counts, bad_arrays()]
    args = hostile(draw, valid, bad)
    if call(FT.word_ngram_rows, args) is not None:
        assert out[0] == -5 and all(args[4] <= r < args[4] + 2**31 for r in out[1:])


@fuzz
@given(st.binary(max_size=64) | st.sampled_from([bytearray(b"\xff" * 9), memoryview(b"abc")[::2], "str", 5]))
def test_fasttext_fnv1a(data):
    got = call(FT.fnv1a, [data])
    if got is not None:
        assert 0 <= got < 2**32


@fuzz
@given(st.data())
def test_fasttext_pq_rows(data):
    draw = data.draw
    dsub, lastdsub, nsubq, count = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 3)), \
        draw(st.integers(1, 5))
    lastdsub = min(lastdsub, dsub)
    dim = (nsubq - 1) * dsub + lastdsub
    codes = bytes(draw(st.lists(st.integers(0, 255), min_size=count * nsubq, max_size=count * nsubq)))
    centroids = np.linspace(-1, 1, 256 * dim, dtype=np.float32).tobytes()
    scaled = draw(st.booleans())
    rows = draw(int_sequences(st.integers(0, count - 1)))
    n = len(rows) if isinstance(rows, (list, tuple)) else 0
    valid = [codes, centroids, dim, dsub, lastdsub, bytes(range(count)) if scaled else None,
             np.linspace(0.5, 2, 256, dtype=np.float32) if scaled else None, rows,
             draw(st.sampled_from([bytearray, lambda size: memoryview(bytearray(size + 1))[1:]]))(4 * n * dim)]
    bad = [st.binary(max_size=20), st.binary(max_size=64).map(lambda b: centroids[: len(b)]), counts, counts, counts, st.binary(max_size=3) | st.sampled_from([None, 5]), bad_arrays(),
           bad_sequences(), st.sampled_from([bytearray(4 * n * dim + 4), bytes(4 * n * dim), bytearray(1), "x"])]
    call(FT.pq_rows, hostile(draw, valid, bad))


@fuzz
@given(st.data())
def test_fasttext_mean_rows(data):
    draw = data.draw
    nrows, dim = draw(st.integers(1, 6)), draw(st.integers(0, 6))
    out = np.empty(dim, np.float32)
    valid = [draw(floats((nrows, dim))), draw(int_sequences(st.integers(0, nrows - 1))), out]
    args = hostile(draw, valid, [bad_arrays(), bad_sequences(), bad_arrays()])
    got = call(FT.mean_rows, args)
    if got is not None:
        assert got is args[2]


@pytest.fixture(scope="module")
def row_file(tmp_path_factory):
    """A file of 2 MB and a bit (three regions of mean_file_rows) of random bytes, to read rows from."""
    path = tmp_path_factory.mktemp("rows") / "rows"
    path.write_bytes(np.random.default_rng(5).bytes((2 << 20) + 4096))
    return path


@fuzz
@given(st.data())
def test_fasttext_mean_file_rows(row_file, data):
    draw = data.draw
    nrows, dim = draw(st.integers(1, 6)), draw(st.integers(0, 6))
    first = draw(st.sampled_from([0, 5, (2 << 20) - 40, (2 << 20) + 4000, 3 << 20]))
    fd = os.open(row_file, os.O_RDONLY)
    try:
        valid = [draw(floats((nrows, dim))), draw(int_sequences(st.integers(0, nrows - 1))), np.empty(dim, np.float32),
                 fd, first, bytearray(((first + 4 * nrows * dim) >> 21) + 1)]
        bad = [bad_arrays(), bad_sequences(), bad_arrays(), hostile_ints, counts,
               st.sampled_from([lambda: bytearray(0), lambda: bytearray(1), lambda: bytes(4),
                                lambda: memoryview(bytearray(8))[::2], lambda: None, lambda: "x"]).map(lambda f: f())]
        args = hostile(draw, valid, bad)
        got = call(FT.mean_file_rows, args)
    finally:
        os.close(fd)
    if got is not None:
        assert got is args[2]


@st.composite
def lines(draw):
    """A line's arguments to the predicts, valid: (input matrix, its rows, output matrix, norms), and osz."""
    nrows, osz, dim = draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.integers(0, 5))
    norms = draw(st.none() | floats((osz,)))
    return [draw(floats((nrows, dim))), draw(int_sequences(st.integers(0, nrows - 1))), draw(floats((osz, dim))),
            norms], osz


LINE_BAD = [bad_arrays(), bad_sequences(), bad_arrays(), bad_arrays()]


@fuzz
@given(lines(), st.data())
def test_fasttext_flat_predict(line, data):
    draw = data.draw
    (matrix, rows, output, norms), osz = line
    valid = [matrix, rows, output, norms, draw(st.booleans()), np.linspace(0, 1, 513, dtype=np.float32),
             draw(st.integers(1, 10)), draw(st.floats(-1, 1) | st.sampled_from([float("nan"), -1e300, 1e300]))]
    bad = [*LINE_BAD, st.sampled_from([None, "x"]), bad_arrays() | st.just(np.zeros(512, np.float32)), counts,
           st.sampled_from([float("inf"), "x"])]
    args = hostile(draw, valid, bad)
    got = call(FT.flat_predict, args)
    if got is not None:
        ids, probs = got
        assert len(ids) == len(probs) <= min(args[6], osz)
        assert all(0 <= i < osz for i in ids)


@st.composite
def trees(draw, osz):
    """A hierarchical-softmax tree of ``osz`` leaves as predict.Tree holds it ((2 osz - 1) x 2 int32 children,
    -1 for a leaf's), or a broken one."""
    nodes = 2 * osz - 1
    children = np.full((nodes, 2), -1, np.int32)
    free, nxt = list(range(osz)), osz
    while len(free) > 1:  # join the first two into a new inner node
        children[nxt] = free[:2]
        free, nxt = [*free[2:], nxt], nxt + 1
    how = draw(st.sampled_from(["tree", "tree", "random", "cycle"]))
    if how == "random":
        return draw(st.lists(st.integers(-2, nodes + 1), min_size=2 * nodes, max_size=2 * nodes)
                    .map(lambda v: np.array(v, np.int32).reshape(nodes, 2)))
    if how == "cycle" and nodes > 1:
        children[nodes - 1] = [nodes - 1, nodes - 1]
    return layouts(draw, children)


@fuzz
@given(lines(), st.data())
def test_fasttext_hs_predict(line, data):
    draw = data.draw
    (matrix, rows, output, norms), osz = line
    valid = [matrix, rows, output[: osz - 1], None if norms is None else norms[: osz - 1], draw(trees(osz)), osz,
             draw(st.integers(1, 10)), draw(st.floats(-100, 0) | st.sampled_from([-1e30, float("nan")]))]
    bad = [*LINE_BAD, bad_arrays(), counts, counts, st.sampled_from([float("inf"), "x"])]
    args = hostile(draw, valid, bad)
    got = call(FT.hs_predict, args)
    if got is not None:
        ids, probs = got
        assert len(ids) == len(probs) <= min(args[6], osz)
        assert all(0 <= i < osz for i in ids)


# -- finalfusion -----------------------------------------------------------------------------------------------

words = st.lists(st.characters() | st.integers(0xD800, 0xDFFF).map(chr), max_size=30).map("".join)


def vocab(draw):
    """finalfusion's vocabulary arguments (kind, min_n, max_n, mask or buckets, offset), valid."""
    kind = draw(st.sampled_from([0, 1]))
    return [kind, draw(st.integers(0, 4)), draw(st.integers(-1, 7) | st.sampled_from([2**24, 2**63 - 1])),
            draw(st.sampled_from([63, 2**20 - 1, 2**62 - 1]) if kind == 0 else st.integers(1, 2**32)),
            draw(st.integers(0, 1000))]


VOCAB_BAD = [hostile_ints | not_ints, counts, counts, counts, counts]


@fuzz
@given(st.data())
def test_finalfusion_ngram_rows(data):
    draw = data.draw
    args = hostile(draw, [*vocab(draw), draw(words)], [*VOCAB_BAD, st.sampled_from([b"x", None, 5])])
    got = call(FF.ngram_rows, args)
    if got is not None:
        assert all(args[4] <= r <= args[4] + args[3] for r in got)


@fuzz
@given(st.data())
def test_finalfusion_embedding(data):
    draw = data.draw
    v = vocab(draw)
    v[3] = draw(st.sampled_from([0, 3, 15]) if v[0] == 0 else st.integers(1, 16))  # rows inside the matrix
    dim = draw(st.integers(1, 40))
    valid = [*v, draw(floats((v[4] + 16, dim))), draw(words), np.empty(dim, np.float32)]
    args = hostile(draw, valid, [*VOCAB_BAD, bad_arrays(), st.sampled_from([b"x", None]), bad_arrays()])
    got = call(FF.embedding, args)
    if got is not None:
        assert got >= 0


@fuzz
@given(st.data())
def test_finalfusion_compose(data):
    draw = data.draw
    nrows, dim = draw(st.integers(1, 6)), draw(st.integers(1, 40))
    valid = [draw(floats((nrows, dim))), draw(st.none() | int_sequences(st.integers(0, nrows - 1))),
             np.empty(dim, np.float32)]
    args = hostile(draw, valid, [bad_arrays(), bad_sequences(), bad_arrays()])
    assert call(FF.compose, args) is None


# -- infini-gram ------------------------------------------------------------------------------------------------

@fuzz
@given(st.data())
def test_infinigram_part_records(data):
    draw = data.draw
    win = np.frombuffer(draw(st.binary(min_size=1, max_size=64)), np.uint8)
    pos = np.array(draw(st.permutations(range(len(win)))), np.int32)
    k = draw(st.integers(1, 8))
    m = len(pos)
    valid = [win, pos, draw(st.integers(0, 2**20)), k, draw(st.booleans()), bytearray(m * k), bytearray(m * 14),
             draw(st.integers(-1, len(win) - 1))]
    bad_buffers = st.sampled_from([b"", b"x" * 3, bytearray(7), np.zeros(3, np.int64), np.zeros(4, np.float32),
                                   None, 5, np.zeros(2, ">i4")])
    args = hostile(draw, valid, [bad_buffers, bad_buffers | bad_arrays(), counts, counts, not_ints, bad_buffers,
                                 bad_buffers, counts])
    got = call(IG.part_records, args)
    if got is not None:  # a tie is an index whose predecessor (prev for the first, when given) ran out first
        first = 0 if args[7] >= 0 else 1
        assert all(first <= i < len(args[1]) for i in got)


@fuzz
@given(st.data())
def test_infinigram_merge(data):
    """Sizes, slices and counts made hostile (the files stay real: a fuzzed fd could write anywhere)."""
    import tempfile
    from pathlib import Path

    draw = data.draw
    root = Path(tempfile.mkdtemp(prefix="igfuzz"))
    corpus = draw(st.binary(min_size=1, max_size=40))
    k = 1
    parts = draw(st.lists(st.lists(st.integers(0, 255), max_size=10), min_size=1, max_size=4))
    paths = []
    for i, part in enumerate(parts):  # (pointers and records as they come: not sorted, maybe past the corpus)
        (root / f"p{i}").write_bytes(bytes(part))
        (root / f"a{i}").write_bytes(bytes(draw(st.binary(min_size=14 * len(part), max_size=14 * len(part)))))
        paths.append(i)
    (root / "c").write_bytes(corpus)
    (root / "o").write_bytes(b"")
    fds = [os.open(root / "c", os.O_RDONLY), os.open(root / "o", os.O_WRONLY)]
    pf = [os.open(root / f"p{i}", os.O_RDONLY) for i in paths]
    af = [os.open(root / f"a{i}", os.O_RDONLY) for i in paths]
    try:
        valid = [fds[0], len(corpus), k, pf, af, [0] * len(parts), [len(p) for p in parts], fds[1], 0, 1 << 12, False]
        bad_lists = bad_sequences() | st.sampled_from([[2**70], [-1], [0, 0, 0, 0, 0], []])
        args = hostile(draw, valid, [st.just(fds[0]), counts, counts, st.just(pf), st.just(af), bad_lists, bad_lists,
                                     st.just(fds[1]), counts, counts, not_ints])
        got = call(IG.merge, [*args[:3], pf, af, *args[5:7], fds[1], *args[8:]])
        if got is not None:
            assert got == sum(h - lo for lo, h in zip(args[5], args[6], strict=True))
    except OSError:
        pass  # (a slice past a file's end: a short read)
    finally:
        for fd in fds + pf + af:
            os.close(fd)
        import shutil

        shutil.rmtree(root)


# -- the word tables (framework) ----------------------------------------------------------------------------------

odd_buffers = st.sampled_from([b"", b"x" * 3, bytearray(7), np.zeros(3, np.int64), np.zeros(4, np.float32), None, 5,
                               np.zeros(2, ">i4"), np.zeros(17, np.uint8)[1:], np.zeros(9, np.uint8)[1:]])


@st.composite
def binary_table(draw):
    """A Leader or word2vec binary body (records of a few words and rows of ``rowbytes``, maybe cut)."""
    prefixed = draw(st.booleans())
    rowbytes = draw(st.sampled_from([0, 4, 8]))
    words = draw(st.lists(st.binary(min_size=1, max_size=5).filter(lambda w: b" " not in w), max_size=5))
    body = b"".join((len(w).to_bytes(4, "little") + w if prefixed else b"\n" * draw(st.integers(0, 2)) + w + b" ")
                    + bytes(draw(st.binary(min_size=rowbytes, max_size=rowbytes))) for w in words)
    return body[: draw(st.integers(0, len(body)))], prefixed, rowbytes, len(words)


@fuzz
@given(binary_table(), st.data())
def test_wordtables_walk(table, data):
    draw = data.draw
    body, prefixed, rowbytes, n = table
    lo = draw(st.integers(0, 2))
    valid = [body, 0, len(body), lo, n, rowbytes, prefixed, np.zeros(lo + n, np.int64), np.zeros(lo + n, np.int64),
             np.zeros(lo + n, np.uint32), np.zeros((lo + n) * rowbytes, np.uint8)]
    args = hostile(draw, valid, [odd_buffers, counts, counts, counts, counts, counts, not_ints, odd_buffers | bad_arrays(),
                                 odd_buffers | bad_arrays(), odd_buffers, odd_buffers | bad_arrays()])
    got = call(WT.walk, args)
    if got is not None:
        found, after = got
        assert 0 <= found <= args[4] and args[1] <= after <= args[2]


@fuzz
@given(binary_table(), st.data())
def test_wordtables_fill(table, data):
    draw = data.draw
    body, prefixed, rowbytes, n = table
    head = draw(st.integers(0, 3))
    block = draw(st.integers(1, 40))
    fd, name = tempfile.mkstemp()
    r, w = os.pipe()
    try:
        os.write(fd, bytes(head) + body)
        room = np.zeros(n * rowbytes + block + draw(st.integers(0, 8)), np.uint8)
        valid = [fd, head, head + len(body), block, room, n, rowbytes, prefixed, np.zeros(draw(st.integers(0, 30)), np.uint8),
                 np.zeros(n + 1, np.int64)[:-1], np.zeros(n + 1, np.int64)[1:], np.zeros(n, np.uint32),
                 np.zeros(4, np.int64), draw(st.sampled_from([-1, w]))]
        args = hostile(draw, valid, [hostile_ints | not_ints, counts, counts, counts,
                                     odd_buffers | st.just(b"read-only") | bad_arrays(), counts, counts, not_ints,
                                     odd_buffers | st.just(b"read-only"), odd_buffers | bad_arrays(),
                                     odd_buffers | bad_arrays(), odd_buffers, odd_buffers | bad_arrays(),
                                     st.sampled_from([-1, -2**31]) | not_ints])
        got = call(WT.fill, args)
        if got is not None:
            found, after, wat, err = got
            assert 0 <= found <= args[5] and args[1] <= after <= args[2] and 0 <= wat <= memoryview(args[8]).nbytes
            assert err >= 0
    finally:
        for x in (fd, r, w):
            os.close(x)
        os.unlink(name)


@fuzz
@given(st.data())
def test_wordtables_populate(data):
    draw = data.draw
    buf = np.arange(draw(st.integers(0, 3 * 4096)), dtype=np.uint8)
    before = buf.copy()
    args = hostile(draw, [buf, draw(st.integers(0, len(buf))), len(buf)],
                   [odd_buffers | st.just(b"read-only") | bad_arrays(), counts, counts])
    if call(WT.populate, args) is not None:
        assert np.array_equal(buf, before)  # (never a byte changed)


@fuzz
@given(st.data())
def test_wordtables_words(data):
    draw = data.draw
    buf = draw(st.binary(max_size=24))
    n = draw(st.integers(0, 4))
    spans = sorted(draw(st.lists(st.integers(0, len(buf)), min_size=2 * n, max_size=2 * n)))
    valid = [buf, np.array(spans[::2], np.int64), np.array(spans[1::2], np.int64), 0, n, draw(st.booleans()),
             np.zeros(n, np.uint64), [None] * n]
    args = hostile(draw, valid, [odd_buffers, odd_buffers | bad_arrays(), odd_buffers | bad_arrays(), counts, counts,
                                 not_ints, odd_buffers | bad_arrays(), st.sampled_from([[], [None], (None,), None])])
    got = call(WT.words, args)
    if got is True:
        assert all(isinstance(w, str) for w in args[7][args[3] : args[4]])


@fuzz
@given(st.data())
def test_texttable_count_lines(data):
    draw = data.draw
    buf = draw(st.binary(max_size=24))
    args = hostile(draw, [buf, 0, len(buf)], [odd_buffers, counts, counts])
    got = call(TT.count_lines, args)
    if got is not None:
        assert got == bytes(args[0])[args[1] : args[2]].count(b"\n")


@fuzz
@given(st.data())
def test_texttable_parse_rows(data):
    draw = data.draw
    rows, dim = draw(st.integers(0, 3)), draw(st.integers(1, 3))
    lines = [b"w" + b"".join(b" " + draw(st.sampled_from([b"1", b"-2.5", b"1e-3", b"nan", b"1e400", b"x", b"9" * 30]))
                             for _ in range(dim)) for _ in range(rows)]
    body = b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b"\r\n"]))
    wide = draw(st.booleans())
    valid = [body, 0, len(body), dim, wide, np.zeros(rows * dim, "<f8" if wide else "<f4"), np.zeros(rows, np.int64),
             np.zeros(rows, np.int64), rows]
    args = hostile(draw, valid, [odd_buffers, counts, counts, counts, not_ints, odd_buffers | bad_arrays(),
                                 odd_buffers | bad_arrays(), odd_buffers | bad_arrays(), counts])
    got = call(TT.parse_rows, args)
    if got is not None:
        assert len(got) == 4


@pytest.mark.parametrize("kernel", [FT, FF, IG, WT, TT],
                         ids=["fasttext", "finalfusion", "infinigram", "wordtables", "texttable"])
def test_every_entry_point_is_fuzzed(kernel):
    """A new entry point needs its fuzz test here (the test names list what each kernel exports)."""
    prefix = {id(FT): "fasttext", id(FF): "finalfusion", id(IG): "infinigram", id(WT): "wordtables",
              id(TT): "texttable"}[id(kernel)]
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


def test_finalfusion_vocabulary_arguments_are_read_whole():
    """kind was read as a C int: 2^32 was kind 0 (bucket). A min_n near 2^63 gives no n-gram (the loop's bound
    is now i + min_n <= size written so that it cannot overflow)."""
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
