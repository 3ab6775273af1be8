import io
import mmap
import os

import construct as cs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from roundtrip import MODES, assert_truncations_fail, roundtrip

from wvformats import framework
from wvformats.errors import BuildError, FormatError, TruncatedError, ValueMismatchError
from wvformats.framework import AlignTo, BufferStream, CheckedString, NumpyArray, StringTable

matrix = cs.Struct(
    "rows" / cs.Int64ul,
    "cols" / cs.Int32ul,
    "padding" / AlignTo(16, never_zero=True),
    "data" / NumpyArray("<f4", (cs.this.rows, cs.this.cols)),
)


@MODES
@given(prefix=st.binary(max_size=40), rows=st.integers(0, 5), cols=st.integers(0, 5))
def test_numpy_array_and_absolute_padding_roundtrip(compiled, prefix, rows, cols):
    schema = cs.Struct("prefix" / cs.PascalString(cs.Int8ul, "latin1"), "m" / matrix)
    data = np.arange(rows * cols, dtype="<f4").reshape(rows, cols)
    obj = cs.Container(prefix=prefix.decode("latin1"),
                       m=cs.Container(rows=rows, cols=cols, padding=None, data=data))
    blob = framework.build(schema, obj, format="t", compile=compiled)
    back = framework.parse(schema, blob, format="t", compile=compiled)
    # padding is 1..16 bytes from the absolute position, never 0
    header_end = 1 + len(prefix) + 12
    pad = back.m.padding
    assert 1 <= pad <= 16 and (header_end + pad) % 16 == 0
    assert np.array_equal(back.m.data, data)
    assert framework.build(schema, back, format="t", compile=compiled) == blob


def test_numpy_array_is_zero_copy_from_buffer_and_mmap(tmp_path):
    data = np.arange(12, dtype="<f4").reshape(3, 4)
    blob = framework.build(matrix, dict(rows=3, cols=4, padding=None, data=data), format="t")
    got = framework.parse(matrix, blob, format="t")
    assert np.shares_memory(got.data, np.frombuffer(blob, np.uint8))
    p = tmp_path / "m.bin"
    p.write_bytes(blob)
    with open(p, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        got = framework.parse(matrix, mm, format="t")
        assert not got.data.flags.owndata and got.data.base is not None
        assert np.array_equal(got.data, data)
    # a plain stream gets a fresh array through readinto
    got = framework.parse(matrix, io.BytesIO(blob), format="t")
    assert got.data.flags.owndata and np.array_equal(got.data, data)


@MODES
def test_numpy_array_checks_length_before_allocating(compiled):
    huge = cs.Container(rows=2**62, cols=2**31, padding=None, data=None)
    header = cs.Struct("rows" / cs.Int64ul, "cols" / cs.Int32ul).build(huge)
    blob = header + bytes(4) + bytes(64)
    with pytest.raises(TruncatedError) as e:
        framework.parse(matrix, blob, format="t", compile=compiled)
    assert e.value.path == "data" and e.value.offset == 16
    assert "remain" in str(e.value)


@MODES
def test_padding_must_be_zero(compiled):
    blob = bytearray(framework.build(matrix, dict(rows=1, cols=1, padding=None, data=np.ones((1, 1))),
                                     format="t"))
    blob[13] = 7
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(matrix, bytes(blob), format="t", compile=compiled)
    assert e.value.path == "padding" and e.value.offset == 12


def test_numpy_array_needs_explicit_byte_order():
    with pytest.raises(ValueError):
        NumpyArray("f4", 3)


def test_build_rejects_wrong_shape():
    with pytest.raises(BuildError) as e:
        framework.build(matrix, dict(rows=2, cols=2, padding=None, data=np.zeros((3, 2))), format="t")
    assert e.value.path == "data"


table = cs.Struct("n" / cs.Int64ul, "words" / StringTable(cs.this.n))


@MODES
@given(words=st.lists(st.text(), max_size=20))
def test_string_table_roundtrip_and_truncations(compiled, words):
    data = roundtrip(table, cs.Container(n=len(words), words=words), format="t", compiled=compiled)
    assert_truncations_fail(table, data, format="t", compiled=compiled)


@MODES
def test_string_table_error_names_index_and_offset(compiled):
    good = framework.build(table, dict(n=3, words=["ab", "cd", "ef"]), format="t")
    bad = good[:-1]
    with pytest.raises(TruncatedError) as e:
        framework.parse(table, bad, format="vocab", compile=compiled)
    assert e.value.path == "words[2]"
    assert e.value.offset == 8 + 12 + 4
    corrupt = bytearray(good)
    corrupt[8 + 4 + 6 + 1] = 0xFF  # inside words[1]? offsets: n(8) w0(4+2) w1 len(4) then bytes
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(table, bytes(corrupt), format="vocab", compile=compiled)
    assert "UTF-8" in str(e.value) and e.value.format == "vocab"


@MODES
@given(s=st.text())
def test_checked_string_roundtrip(compiled, s):
    schema = cs.Struct("s" / CheckedString("u32"))
    data = roundtrip(schema, cs.Container(s=s), format="t", compiled=compiled)
    assert_truncations_fail(schema, data, format="t", compiled=compiled)


def test_builtin_construct_errors_become_format_errors():
    schema = cs.Struct("magic" / cs.Const(b"FiFu"), "x" / cs.Int32ul)
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(schema, b"XXXX\0\0\0\0", format="finalfusion")
    assert e.value.path == "magic" and e.value.format == "finalfusion"
    with pytest.raises(TruncatedError) as e:
        framework.parse(schema, b"FiFu\0", format="finalfusion")
    assert e.value.path == "x"
    with pytest.raises(BuildError):
        framework.build(schema, dict(x=2**40), format="finalfusion")
    with pytest.raises(BuildError):
        framework.build(schema, dict(), format="finalfusion")


def test_buffer_stream_views_do_not_copy():
    blob = bytes(range(10))
    s = BufferStream(blob)
    s.seek(2)
    v = s.view(3)
    assert bytes(v) == b"\x02\x03\x04" and s.tell() == 5
    with pytest.raises(EOFError):
        s.view(100)


def test_valid_names_the_field_it_checks():
    """A Valid after a fixed-size field points at where that field starts; after a variable-size one (whose
    start it cannot compute) at where it ends: a ValueMismatchError either way, never construct's own."""
    from wvformats.framework import Valid

    fixed = cs.Struct("a" / cs.Int8ul, "b" / cs.Int16ul, Valid("b", cs.this.b < 5))
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(fixed, b"\0\x09\0", format="t")
    assert (e.value.path, e.value.offset, e.value.found) == ("b", 1, 9)
    varying = cs.Struct("a" / cs.Int8ul, "b" / cs.VarInt, Valid("b", cs.this.b < 5))
    with pytest.raises(ValueMismatchError) as e:
        framework.parse(varying, b"\0\x09", format="t")
    assert (e.value.path, e.value.offset, e.value.found) == ("b", 2, 9)
    with pytest.raises(BuildError, match="b < 5"):
        framework.build(varying, dict(a=0, b=9), format="t")


def test_format_error_message_names_everything():
    e = FormatError("bad", format="leader", path="records[3].word", offset=99, expected=1, found=2)
    assert str(e) == "leader records[3].word at byte 99: bad (expected 1, found 2)"


NASTY = st.text(alphabet=st.sampled_from(["a", "\x00", "é", "東", "\n"]), max_size=6) | st.text(
    alphabet=st.sampled_from(["b", "\x00"]), min_size=254, max_size=258)


@settings(max_examples=30, deadline=None)
@given(strings=st.lists(NASTY, max_size=30), repeat=st.sampled_from([1, 1, 300]), cut=st.integers(0, 10**9))
def test_string_table_vectorised_offsets_equal_a_plain_loop(strings, repeat, cut):
    """Strings with NULs (false candidates), empty ones, ones of 256+ bytes (two-byte lengths) and tables
    larger than the first 64 KiB window: the same strings as a plain loop; a cut anywhere fails naming the
    string that is cut."""
    import struct

    from wvformats.framework import StringTable

    strings = strings * repeat
    data = b"".join(struct.pack("<I", len(s.encode())) + s.encode() for s in strings) + b"tail"
    table = cs.Struct("words" / StringTable(len(strings)))
    assert framework.parse(table, data, format="t").words == strings
    if strings:
        n = cut % (len(data) - 4)
        with pytest.raises(FormatError) as e:
            framework.parse(table, data[:n], format="t")
        if n < 4 * len(strings):  # not even the length fields fit: refused before reading
            return
        # the first string that does not fit in the cut data
        pos, i = 0, 0
        while pos + 4 <= n and pos + 4 + len(strings[i].encode()) <= n:
            pos += 4 + len(strings[i].encode())
            i += 1
        assert e.value.path == f"words[{i}]"


@given(words=st.lists(st.binary(max_size=5) | st.sampled_from([b"\xc3", b"\xa9", "é".encode()]),
                      min_size=1, max_size=12),
       gap=st.integers(0, 3))
def test_decode_spans_with_a_separator_equals_the_general_path(words, gap):
    """Words each followed by a space (word2vec binary) decode the same with ``sep`` as without: the same
    strings, or the same error naming the same word and offset (a word cut mid-character, beside a whole
    one, must not decode as the pair). A word holding the separator (which the callers never pass) is not
    cut in two: the general path takes it."""
    errors = "strict"  # the separator path is the strict one
    data, starts = bytearray(b"h" * gap), []
    for w in words:
        starts.append(len(data))
        data += w + b" " + b"\x20v" * gap
    s = np.array(starts, np.int64)
    e = s + np.array([len(w) for w in words], np.int64)

    def run(sep):
        try:
            return framework.decode_spans(bytes(data), s, e, errors, "records", 10, sep=sep)
        except FormatError as err:
            return (type(err), err.path, err.offset)

    assert run(b" ") == run(None)


def _chain_reference(starts, ends, most):
    """follow_chain, one successor at a time."""
    at = {s: k for k, s in enumerate(starts.tolist())}
    chain, i = [], 0
    while len(starts) and len(chain) < most:
        chain.append(i)
        nxt = at.get(int(ends[i]))
        if nxt is None:
            break
        i = nxt
    return chain


@given(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 9).map(lambda k: k == 0), st.integers(1, 5)), min_size=10, max_size=120),
       st.integers(0, 130))
def test_follow_chain_matches_the_one_by_one_walk(records, most):
    """Records tile the data; some have a false candidate inside them (ending anywhere): the chain from the
    first record is the records, in order, and never a false candidate, up to ``most``."""
    starts, ends, pos = [], [], 0
    for size, false, inner in records:
        starts.append(pos)
        ends.append(pos + size)
        if false and size > 1:  # a candidate inside this record, with a bogus length
            starts.append(pos + min(inner, size - 1))
            ends.append(pos + min(inner, size - 1) + inner * 3)
        pos += size
    starts_a, ends_a = np.array(starts, np.int64), np.array(ends, np.int64)
    got = framework.follow_chain(starts_a, ends_a, most).tolist()
    assert got == _chain_reference(starts_a, ends_a, most)


@settings(max_examples=300)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=150), filler=st.randoms(use_true_random=False),
       guesses=st.sampled_from(["exact", "random", "early", "none"]), seed=st.integers(0, 2**32 - 1),
       segment=st.integers(1, 60), overlap=st.integers(0, 30), most=st.integers(0, 160),
       bad=st.integers(0, 160))
def test_lockstep_chain_keeps_only_the_chain(sizes, filler, guesses, seed, segment, overlap, most, bad):
    """Records whose first byte is their size (the other bytes look like sizes too; record ``bad`` is one
    the step does not take). Whatever the guesses (the true next record, any offset, too early, none), the
    walk gives the chain from the first record in order, never a record off it, and all of it (up to
    ``most`` and ``bad``) when the guesses are true."""
    data = bytearray()
    starts = []
    for i, size in enumerate(sizes):
        starts.append(len(data))
        data += bytes([0 if i == bad else size]) + bytes(filler.choice([0, 1, 2, 3, 13, 200]) for _ in range(size - 1))
    u8 = np.frombuffer(bytes(data), np.uint8)
    end = len(u8)
    rng = np.random.default_rng(seed)

    def step(at):
        ok = at < end
        at = np.where(ok, at, 0)
        n = u8[at].astype(np.int64)
        return ok & (n > 0) & (at + n <= end), at + 1, at + n

    def guess(at):
        if guesses == "none":
            return np.full(len(at), -1, np.int64)
        if guesses == "exact":
            k = np.searchsorted(starts, at)
            return np.where(k < len(starts), np.array(starts + [-1])[k], -1)
        if guesses == "early":  # a true record start, but one before the offset asked about
            return np.array(starts)[rng.integers(0, len(starts), len(at))]
        return at + rng.integers(0, 20, len(at))

    got, ends, nexts = framework.lockstep_chain(step, guess, 0, end, segment, overlap, 12, most)
    chain = starts[: min(most, bad)]
    assert got.tolist() == chain[: len(got)]
    assert ends.tolist() == [s + 1 for s in got.tolist()]
    assert nexts.tolist() == [s + sizes[i] for i, s in enumerate(got.tolist())]
    if guesses == "exact":
        assert got.tolist() == chain


@given(data=st.binary(max_size=80).map(lambda b: bytes(c if c < 3 else 0 for c in b)) | st.binary(max_size=80),
       lo=st.integers(0, 80), width=st.integers(0, 80))
def test_short_prefix_candidates_are_exactly_the_offsets_before_three_zero_bytes(data, lo, width):
    """The u16 shortcut finds every offset in [lo, hi - 4] whose next three bytes are zero, and no other,
    whatever the window's parity and edges."""
    hi = min(len(data), lo + width)
    lo = min(lo, hi)
    u8 = np.frombuffer(data, np.uint8)
    want = [p for p in range(lo, hi - 3) if data[p + 1 : p + 4] == b"\0\0\0"]
    assert framework.records._short_prefixes(u8, lo, hi).tolist() == want


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_gets_its_own_worker_pool():
    """After the parent has used the worker pool, a forked child's jobs still run (a pool inherited without
    its threads would queue them forever)."""
    import multiprocessing

    assert framework.background(sum, [1, 2]).result(timeout=30) == 3
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_use_pool_or_fail)
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0


def _use_pool_or_fail() -> None:
    os._exit(0 if framework.background(sum, [3, 4]).result(timeout=20) == 7 else 1)


@given(reference=st.binary(max_size=40),
       writes=st.lists(st.tuples(st.integers(0, 48), st.binary(max_size=12)), max_size=8),
       step=st.sampled_from([1, 3, 1 << 24]), most=st.sampled_from([0, 1, 256]))
def test_compare_stream_finds_what_a_byte_buffer_would_show(reference, writes, step, most):
    """Writes at any positions (seeking back to patch, forward past a gap, beyond the reference's end),
    compared as they come in small or whole steps, their differences kept as runs or the writes kept
    whole: the size and first difference are those of the same writes into a byte buffer compared with
    the reference afterwards."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(framework.CompareStream, "_STEP", step)
        m.setattr(framework.CompareStream, "_MOST_RUNS", most)
        stream = framework.CompareStream(reference)
        plain = io.BytesIO()
        for at, data in writes:
            for s in (stream, plain):
                s.seek(at)
                s.write(data)
        built = plain.getvalue()
        first = next((i for i, (a, b) in enumerate(zip(reference, built, strict=False)) if a != b), None)
        if first is None and len(built) != len(reference):
            first = min(len(built), len(reference))
        assert stream.size == len(built)
        assert stream.first_difference() == first
