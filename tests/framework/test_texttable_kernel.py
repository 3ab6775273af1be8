"""The text tables' compiled number parser (wvformats/framework/_texttable.c): every decimal spelling gives the
bits of Python's float() (float64) and of np.float32(float(s)) (float32), whatever the spelling (shortest
repr, %f, %.5g, exponents, long mantissas, subnormals, near-halfway cases), on one thread or two."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wvformats.framework import texttable as text

K = text.compiled_module("_texttable")


def test_the_kernel_is_built():
    assert K is not None, "wvformats.framework._texttable is not built: the install under test has no compiler?"


def _parse(spellings: list[str], dtype: str) -> np.ndarray:
    """The spellings as one GloVe body of one number per line, by the kernel."""
    body = "".join(f"w{i} {s}\n" for i, s in enumerate(spellings)).encode("ascii")
    got = text._kernel_text(body, 0, len(body), None, None, "strict", "r", np.dtype(dtype))
    assert got is not None, "the kernel declined a regular body"
    return got[1][:, 0]


def _halfway(bits: int) -> list[str]:
    """Spellings at and within an ulp of the point halfway between a double and the next one up."""
    a = struct.unpack("<d", struct.pack("<Q", bits))[0]
    b = np.nextafter(a, np.inf)
    from decimal import Decimal, getcontext

    getcontext().prec = 800
    mid = (Decimal(a) + Decimal(float(b))) / 2
    return [format(mid, "f"), format(mid, "e"), f"{mid:.25e}", f"{mid:.17e}", f"{mid:.16e}"]


finite64 = st.floats(allow_nan=False, allow_infinity=False)
finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
spellings = st.one_of(
    finite64.map(repr),
    finite32.map(lambda v: str(np.float32(v))),
    finite64.map(lambda v: "%f" % v),
    finite32.map(lambda v: "%.5g" % v),
    finite64.map(lambda v: "%.17g" % v),
    finite64.map(lambda v: "%.25e" % v),
    st.tuples(st.integers(0, 10**40), st.integers(-400, 400)).map(lambda t: f"{t[0]}e{t[1]}"),
    st.tuples(st.integers(0, 10**25), st.integers(0, 30), st.booleans()).map(
        lambda t: ("-" if t[2] else "") + f"{t[0]}"[: len(f"{t[0]}") - t[1]] + "." + f"{t[0]}"[len(f"{t[0]}") - t[1]:]
        if t[1] < len(f"{t[0]}") else f".{t[0]}"),
    st.integers(0, (1 << 63) - 1).map(lambda b: repr(struct.unpack("<d", struct.pack("<Q", b))[0])),
    st.integers(1, (1 << 52) - 1).map(lambda b: "%.30e" % struct.unpack("<d", struct.pack("<Q", b))[0]),  # subnormal
    st.integers(0, (1 << 62)).flatmap(lambda b: st.sampled_from(_halfway(b))),
    st.sampled_from(["0", "-0", "-0.0", "+1", "1.", ".5", "9007199254740993", "1e22", "1e23", "4.9e-324",
                     "2.4703282292062327e-324", "1.7976931348623157e308", "1e309", "3.4028235677973366e38",
                     "3.4028235e38", "1e-45", "7e-46", "0.000001", "123456789012345678901234567890"]),
).filter(lambda s: "inf" not in s and "nan" not in s)


@settings(max_examples=400, deadline=None)
@given(st.lists(spellings, min_size=1, max_size=20))
def test_numbers_are_the_bits_of_python_float(values):
    wide = _parse(values, "<f8")
    assert wide.tobytes() == np.array([float(s) for s in values], "<f8").tobytes()
    narrow = _parse(values, "<f4")
    with np.errstate(over="ignore"):  # (float32 of a double past its range: inf, as the kernel gives)
        assert narrow.tobytes() == np.array([np.float32(float(s)) for s in values], "<f4").tobytes()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, (1 << 24) + 2), st.integers(-12, 12), st.booleans(), st.booleans()),
                min_size=1, max_size=30))
def test_float32_values_of_short_mantissas_are_float32_of_float(parts):
    """The float32 output's shortcut (m <= 2^24 times or over 10^k, k <= 10, in one float32 operation) and the
    spellings beside its bounds: np.float32(float(s)) bit for bit."""
    spelt = []
    for m, k, neg, point in parts:
        digits = str(m)
        if point and k < 0 and -k < len(digits):  # the point inside the digits: m / 10^-k
            s = f"{digits[:k]}.{digits[k:]}"
        else:
            s = f"{digits}e{k}"
        spelt.append(("-" if neg else "") + s)
    assert _parse(spelt, "<f4").tobytes() == np.array([np.float32(float(s)) for s in spelt], "<f4").tobytes()


def test_one_float32_operation_rounds_as_the_double_then_float32():
    """Why the shortcut is exact, checked for every operand it takes: for every m <= 2^24 and k <= 10,
    float32(m) times or over float32(10^k) (one rounding) is float32(double(m) times or over 10^k) (two)."""
    for lo in range(0, (1 << 24) + 1, 1 << 22):
        m = np.arange(lo, min(lo + (1 << 22), (1 << 24) + 1), dtype=np.int64)
        single, double = m.astype(np.float32), m.astype(np.float64)
        for k in range(11):
            assert np.array_equal((single / np.float32(10.0**k)).view(np.uint32),
                                  (double / 10.0**k).astype(np.float32).view(np.uint32))
            assert np.array_equal((single * np.float32(10.0**k)).view(np.uint32),
                                  (double * 10.0**k).astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("dtype", ["<f4", "<f8"])
def test_a_body_of_many_blocks_parses_on_two_threads_to_the_same_bits(monkeypatch, dtype):
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.normal(0, 0.4, 30_000), 10.0 ** rng.uniform(-330, 308, 10_000)])
    spelt = [repr(v) if i % 3 else "%.6f" % v for i, v in enumerate(values.tolist())]
    monkeypatch.setattr(text, "_KERNEL_BLOCK", 4096)  # about 60 blocks, half of them on the worker
    got = _parse(spelt, dtype)
    with np.errstate(over="ignore"):
        assert got.tobytes() == np.array([float(s) for s in spelt]).astype(dtype).tobytes()


def test_inf_and_nan_read_as_the_line_loop_reads_them():
    """inf and nan in any case and sign, NaN positive (numpy's parser reads "-nan" so, and so do the others)."""
    spelt = ["inf", "-inf", "+Inf", "Infinity", "-INFINITY", "nan", "-nan", "NaN"]
    got = _parse(spelt, "<f8")
    assert got.tobytes() == np.array([float(s.replace("-nan", "nan")) for s in spelt], "<f8").tobytes()
    assert not np.signbit(got[5:]).any()


@pytest.mark.parametrize("line", [b"w nan(1)\n", b"w infx\n", b"w 1_0\n", b"w 0x10\n", b"w 1e\n", b"w .\n", b"w -\n",
                                  b"w 1,5\n", b"w  1\n", b"w 1\t\n", b" 1\n", b"w 1 \t\n", b"w 1\r\r\n", b"w 1"])
def test_what_is_not_a_regular_line_is_declined(line):
    """Spellings outside the decimal grammar and lines that are not ``word number`` go to the twins."""
    assert text._kernel_text(line, 0, len(line), None, 1, "strict", "r") is None


def test_sizes_are_checked_before_the_kernel_writes():
    out, ws, we = np.empty(3, "<f4"), np.empty(2, np.int64), np.empty(2, np.int64)
    body = b"a 1 2\nb 3 4\n"
    with pytest.raises(ValueError, match="smaller"):
        K.parse_rows(body, 0, len(body), 2, False, out, ws, we, 2)
    with pytest.raises(OverflowError):
        K.parse_rows(body, 0, len(body), 1 << 40, False, out, ws, we, 1 << 40)
    with pytest.raises(ValueError, match="outside"):
        K.parse_rows(body, 0, len(body) + 1, 2, False, np.empty(4, "<f4"), ws, we, 2)
    with pytest.raises(ValueError, match="outside"):
        K.count_lines(body, 5, 2)
    with pytest.raises(ValueError, match="not aligned"):  # (an int64 offset at an odd address: undefined)
        K.parse_rows(body, 0, len(body), 2, False, np.empty(4, "<f4"), np.zeros(17, np.uint8)[1:], we, 2)
    assert K.count_lines(body, 0, len(body)) == 2
    # fewer lines than rows, a body not ending with its newline, a number running to the end: declined, and
    # nothing read past the body's end (the sanitizer job runs this)
    for short, rows in [(b"a 1\n", 2), (b"a 1", 1), (b"a 12345678901234567890", 1), (b"a 1\nb", 2), (b"a -", 1)]:
        got = K.parse_rows(short, 0, len(short), 1, False, np.empty(rows, "<f4"), np.empty(rows, np.int64),
                           np.empty(rows, np.int64), rows)
        assert got[0] == -1
