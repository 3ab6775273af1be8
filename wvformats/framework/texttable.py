"""Text word tables (word2vec text, GloVe and fastText ``.vec``: a word and its numbers per line), the header
line ``"<count> <dim>"`` and what follows the last record.

Numbers are parsed by pyarrow's multi-threaded CSV reader on regular bodies, else by numpy a chunk of lines at
a time, and written in the file's own number style (``repr``, ``fixed6``, ``g5``) with vectorised passes; each
falls back to a checked per-line loop that names the bad line.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import construct as cs
import numpy as np

from ..errors import BuildError, FormatError, NoFinalNewlineWarning, TruncatedError, ValueMismatchError
from .fields import Checked, evaluate
from .located import fail, tell, warn
from .streams import Job, background, release, window
from .strings import decode_all, decode_spans
from .wordtables import (
    F32,
    checked_dimension,
    compiled_module,
    kernel_words,
    matrix_to_write,
    parsed_table,
    read_params,
    span_repeats,
    text_dtype,
    touched,
    unicode_errors,
    word_bytes,
)

STYLE_ROWS = 50  # lines whose numbers decide the number style (a quick summary in the standard library reads
# as many: schemas/constructs/wordvec_lines.py)


def _content(line: bytes) -> bytes:
    """A line (without its newline) as the tables read it: a final ``\\r`` dropped, and trailing spaces and
    tabs when it ends with a space (fastText and word2vec.c write one)."""
    line = line[:-1] if line.endswith(b"\r") else line
    return line.rstrip(b" \t") if line.endswith(b" ") else line


def _fmt_repr(row: np.ndarray) -> list[str]:
    return [str(v) for v in row]  # numpy's shortest float32 repr, as gensim and word-vectors write


def _fmt_fixed6(row: np.ndarray) -> list[str]:
    return ["%f" % v for v in row.tolist()]  # word2vec.c "%lf "


def _fmt_g5(row: np.ndarray) -> list[str]:
    return ["%.5g" % v for v in row.tolist()]  # fastText: setprecision(5)


def _fmt_repr16(row: np.ndarray) -> list[str]:
    """numpy's str of a float32 before 2.3 (gh-28679): positional up to 1e16, not only up to 1e6, as gensim
    and word-vectors wrote under numpy 1.x and 2.0-2.2 (1234567.0, where numpy now writes 1.234567e+06)."""
    return [np.format_float_positional(v, unique=True, trim="0") if 1e6 <= abs(v) < 1e16 else str(v) for v in row]


# number styles, by name (the order detect_style tries them): repr16 spells differently from repr only from 1e6 up
TEXT_STYLES = {"repr": _fmt_repr, "fixed6": _fmt_fixed6, "g5": _fmt_g5, "repr16": _fmt_repr16}


def detect_style(chunks: list[bytes], values: np.ndarray) -> str:
    """The number style that reproduces the sampled lines' numbers (each chunk from the line's first space
    on) from their values ("repr" if none does)."""
    lines = [chunk.decode("ascii", "replace").split(" ")[1:] for chunk in chunks]
    with np.errstate(over="ignore"):  # the styles spell float32 values (a float64 read is rounded back)
        values = values.astype(F32, copy=False)
    for name, fn in TEXT_STYLES.items():
        if all(fn(row) == tokens for tokens, row in zip(lines, values, strict=False)):
            return name
    return "repr"


_TEXT_CHUNK = 16384  # lines whose numbers are parsed together


def _numbers(text: bytes, dtype: Any) -> np.ndarray | None:
    """The space-separated numbers of ``text`` by numpy's text parser, or None when it cannot read them all."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # what numpy says when it stops before the end
        try:
            return np.fromstring(text, dtype=dtype, sep=" ") if text else np.zeros(0, dtype)
        except (DeprecationWarning, ValueError):
            return None


class _TextNumbers:
    """The numbers of text lines, parsed a chunk of lines at a time into one growing matrix (peak memory:
    the result plus one chunk, not the whole text again), with the ``vocab`` filter applied per chunk so
    that unwanted lines never reach the number parser; errors name the line."""

    def __init__(self, context: Any, buf: Any, raws: list[Any], starts: list[int], base: int, path: str) -> None:
        self.context, self.buf, self.raws, self.starts, self.base, self.path = context, buf, raws, starts, base, path
        self.errors = unicode_errors(context)
        self.dtype = text_dtype(context)
        vocab = read_params(context).get("vocab")
        self.wanted = None if vocab is None else set(vocab)
        self.words: list[str] = []
        self.parts: list[np.ndarray] = []
        self.rows = 0
        self.sample: list[bytes] = []
        self.sample_values = np.zeros((0, 0), F32)

    def add(self, nums: list[bytes], first: int, dim: int) -> None:
        if not nums:
            return
        raws = self.raws[first : first + len(nums)]
        words = decode_all(raws, self.errors, self.path, lambda k: self.base + self.starts[first + k])
        lines = list(range(len(nums)))
        if self.wanted is not None:
            lines = []
            for k, w in enumerate(words):
                if w in self.wanted:
                    self.wanted.discard(w)
                    lines.append(k)
            words = [words[k] for k in lines]
            nums = [nums[k] for k in lines]
        self.words += words
        values = _numbers(b"".join(nums), self.dtype)
        if values is None or values.size != len(nums) * dim:
            for j, chunk in zip(lines, nums, strict=True):  # name the first line that does not parse
                row = _numbers(chunk, self.dtype)  # the same parser, one line at a time
                if row is not None and row.size == dim:
                    continue
                at = first + j
                bad = next((t for t in chunk.split(b" ")[1:] if _numbers(t, self.dtype) is None or not t), chunk[1:])
                raise fail(f"{self.path}[{at}]", self.base + self.starts[at] + len(self.raws[at]),
                           f"not a number: {bad[:40].decode('ascii', 'replace')!r}", ValueMismatchError)
            raise fail(self.path, self.base + self.starts[first], "numbers do not parse", ValueMismatchError)
        matrix = values.reshape(len(nums), dim)
        if not self.sample and len(nums):
            self.sample, self.sample_values = nums[:STYLE_ROWS], matrix[:STYLE_ROWS]
        self.parts.append(matrix)
        self.rows += len(nums)

    def result(self, dim: int) -> tuple[list[str], np.ndarray]:
        if len(self.parts) == 1:
            return self.words, self.parts[0]
        out = np.empty((self.rows, dim), self.dtype)  # pages are committed as rows are copied in
        at = 0
        self.parts.reverse()
        while self.parts:  # each chunk is released as soon as it is copied
            part = self.parts.pop()
            out[at : at + len(part)] = part
            at += len(part)
            del part
        return self.words, out


_ARROW_MIN_BYTES = 1 << 20  # text bodies at least this large try pyarrow's parser first (tests lower it)
_ARROW_PIECE = 8 << 20  # bytes of lines handed to pyarrow at once: bounds the float64 intermediate
_ARROW_BLOCK = 2 << 20  # pyarrow parses a piece in blocks of this size, one per thread


def _pyarrow() -> Any:
    """(pyarrow, pyarrow.csv, pyarrow.compute), or None without the optional `fast` extra."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    return pa, pcsv, pc


def _arrow_text(buf: Any, pos: int, end: int, count: int | None, dim: int | None, errors: str,
                path: str, dtype: np.dtype = F32) -> tuple[list[str], np.ndarray, cs.Container, None] | None:
    """Parse a regular text table with pyarrow's multi-threaded CSV reader, or return None (else its words,
    vectors, layout, and None: the words' repeats are not counted here).

    Regular means: every line is ``word`` and ``dim`` numbers separated by single spaces, all lines end
    alike (``\n`` or ``\r\n``, with or without one trailing space), the last line ends with a newline and
    ``count`` (when given) matches. The result is then exactly what the line loop produces: numbers are
    parsed as float64 and rounded to float32 as numpy does (NaN made positive as numpy's parser makes it),
    words are decoded with the same policy. Anything else, a bad UTF-8 word included, returns None and the
    line loop parses the file and names the offending line.
    """
    arrow = _pyarrow()
    if arrow is None or buf[end - 1 : end] != b"\n":
        return None
    pa, pcsv, _ = arrow
    width, trailing, crlf = _first_width(buf, pos, end)
    if (dim is not None and width != dim) or width == 0:
        return None
    dim = width
    names = ["w", *(f"v{j}" for j in range(dim)), *(["t"] if trailing else [])]
    types = {n: pa.float64() for n in names[1 : dim + 1]} | {"w": pa.binary(), "t": pa.binary()}
    options = dict(
        read_options=pcsv.ReadOptions(column_names=names, block_size=_ARROW_BLOCK),
        parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False,
                                        newlines_in_values=False, ignore_empty_lines=False),
        convert_options=pcsv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                            quoted_strings_can_be_null=False))
    u8 = np.frombuffer(buf, np.uint8)
    ahead = background(_lines_matrix, buf, pos, end, count, dim, dtype)  # counted and faulted in beside the parse

    def piece(at: int) -> tuple[int, Any]:
        """Parse the lines from ``at`` up to about _ARROW_PIECE bytes on: (where they stop, table or None)."""
        stop = buf.find(b"\n", min(at + _ARROW_PIECE, end - 1), end) + 1
        if crlf:  # \r only right before each \n, or a word holding a \r would be cut in two
            cr = int(np.count_nonzero(u8[at:stop] == 13))
            if cr != int(np.count_nonzero(u8[at:stop] == 10)):
                return stop, None
        elif buf.find(b"\r", at, stop) >= 0:
            return stop, None
        try:
            table = pcsv.read_csv(pa.py_buffer(memoryview(buf)[at:stop]), **options)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return stop, None
        return stop, (None if crlf and table.num_rows != cr else table)

    out: np.ndarray | None = None
    words: list[str] = []
    rows = 0
    pending = background(piece, pos)  # the next piece parses on a worker while this thread copies one
    try:
        while pending is not None:
            stop, table = pending.result()
            pending = background(piece, stop) if stop < end and table is not None else None
            if table is None:
                return None
            n = table.num_rows
            offsets, data = _arrow_binary(table.column("w"), n)
            if n and int(np.diff(offsets).min()) == 0:
                return None  # a line starting with a space: the line loop reports it
            if trailing and (tail := _arrow_binary(table.column("t"), n)[0])[-1] != tail[0]:
                return None  # something after the trailing space
            try:
                words += decode_spans(data, offsets[:-1], offsets[1:], errors, path, 0)
            except FormatError:
                return None
            out = ahead.result() if out is None else out
            if out is None or rows + n > len(out):
                return None
            part = out[rows : rows + n]
            with np.errstate(all="ignore"):  # float64 to float32 as numpy's parser rounds, column by column
                for j in range(dim):
                    k = 0
                    for chunk in table.column(j + 1).chunks:
                        part[k : k + len(chunk), j] = chunk.to_numpy()
                        k += len(chunk)
            del table
            nan = np.isnan(part)
            if nan.any():
                part[nan] = np.float32("nan")  # numpy's parser reads "-nan" as a positive NaN
            rows += n
            release(buf, stop)
    finally:  # a piece or the line count may still read the buffer: done before the caller may close it
        if pending is not None:
            pending.exception()
        ahead.exception()
    vectors = ahead.result() if out is None else out
    if vectors is None or rows != len(vectors):
        return None
    return words, vectors, _layout(buf, pos, vectors, trailing, crlf), None


def _layout(buf: Any, pos: int, vectors: np.ndarray, trailing: bool, crlf: bool) -> cs.Container:
    """The layout of a regular body of ``len(vectors)`` lines from ``pos`` that ends with a newline (the number
    style from its first lines), as the line loop records it."""
    rows = len(vectors)
    head = bytes(buf[pos : _nth_newline(buf, pos, min(rows, STYLE_ROWS))])
    style = detect_style([_line_numbers(ln) for ln in head.split(b"\n")[:-1]], vectors[:STYLE_ROWS]) if rows \
        else "repr"
    return cs.Container(style=style, trailing_space=bool(rows) and trailing, crlf=bool(rows) and crlf,
                        final_newline=True)


# ---------------------------------------------------------------------------------------------------------
# the compiled parser (wvformats/framework/_texttable.c): its pure-Python twins are the pyarrow path above and
# numpy's parser in the line loop, which give the same values (float() of each spelling) and layout

_KERNEL_BLOCK = 8 << 20  # bytes of lines per kernel call: mapped pages are let go of a block at a time
def _first_width(buf: Any, pos: int, end: int) -> tuple[int, bool, bool]:
    """(numbers on the first line, whether it ends with a space, whether with ``\\r``), as the fast paths
    take a regular body's width from it (0: not a width they read)."""
    first = buf.find(b"\n", pos, end)
    line = bytes(buf[pos:first])
    crlf = line.endswith(b"\r")
    line = line[:-1] if crlf else line
    trailing = line.endswith(b" ")
    line = line[:-1] if trailing else line
    return (0 if line.endswith(b" ") else line.count(b" ")), trailing, crlf


def _kernel_text(buf: Any, pos: int, end: int, count: int | None, dim: int | None, errors: str,
                 path: str, dtype: np.dtype = F32) -> tuple[list[str], np.ndarray, cs.Container, int | None] | None:
    """Parse a regular text table with the compiled kernel, or return None (as :func:`_arrow_text`: the same
    regular bodies, the same results, and how many words repeat an earlier one where the word kernel counted
    them).

    The body is cut into blocks of lines; the two halves of the blocks are counted, then parsed, on two
    threads (the kernel lets go of the GIL), each block's numbers straight into its rows of the result and
    its mapped pages let go of once parsed. The words are made from the spans the kernel found, by the word
    kernel (as :func:`decode_spans` decodes them), their hashes kept for the duplicate count."""
    k = compiled_module("_texttable")
    if k is None or end <= pos or buf[end - 1 : end] != b"\n" or isinstance(buf, memoryview):
        return None
    width, trailing, crlf = _first_width(buf, pos, end)
    if width == 0 or (dim is not None and width != dim):
        return None
    dim = width
    cuts = [pos]
    while cuts[-1] < end:
        cuts.append(min(end, buf.find(b"\n", min(cuts[-1] + _KERNEL_BLOCK, end - 1), end) + 1))
    blocks = list(zip(cuts[:-1], cuts[1:], strict=True))
    half = (len(blocks) + 1) // 2

    def counts(part: list[tuple[int, int]]) -> list[int]:
        found = []
        for a, z in part:
            found.append(k.count_lines(buf, a, z))
            release(buf, z, a)  # (the parse maps them again from the page cache: minor faults)
        return found

    other = background(counts, blocks[half:]) if len(blocks) > 1 else None
    try:
        lines = counts(blocks[:half])
    finally:
        lines += other.result() if other is not None else []
    rows = sum(lines)
    if not rows or (count is not None and rows != count) or rows * (2 + 2 * dim) > end - pos:
        return None  # (a line holds a word, dim numbers and their separators)
    firsts = np.concatenate([[0], np.cumsum(lines)]).tolist()
    wide = dtype.itemsize == 8
    out = np.empty((rows, dim), dtype)
    wstarts = np.empty(rows, np.int64)
    wends = np.empty(rows, np.int64)
    hashes = np.empty(rows, np.uint64)
    wk = compiled_module("_wordtables")
    words: list[Any] = [None] * rows  # (each block's words put in place: no lists joined)
    unhashed: list[int] = []  # blocks whose words the word kernel did not make (and hash)

    def parse(which: range) -> tuple[int, int] | None:
        """Trailing spaces and carriage returns of the blocks ``which`` (their words put in ``words``), or
        None: not regular."""
        spaces = returns = 0
        for b in which:
            a, z = blocks[b]
            r0, r1 = firsts[b], firsts[b + 1]
            got, _, t, c = k.parse_rows(buf, a, z, dim, wide, out[r0:r1], wstarts[r0:r1], wends[r0:r1], r1 - r0)
            if got < 0:
                return None
            spaces, returns = spaces + t, returns + c
            try:
                if not kernel_words(wk, buf, wstarts, wends, r0, r1, errors, hashes, words, path, 0, sep=b" "):
                    unhashed.append(b)
            except FormatError:
                return None  # the line loop reports it
            release(buf, z, a)
        return spaces, returns

    second = background(parse, range(half, len(blocks))) if len(blocks) > 1 else None
    try:
        head = parse(range(half))
    finally:  # (the worker reads ``buf``: done before the caller may close it)
        tail = second.result() if second is not None else (0, 0)
    if head is None or tail is None:
        return None
    spaces, returns = head[0] + tail[0], head[1] + tail[1]
    if spaces not in (0, rows) or returns not in (0, rows) or (spaces == rows) != trailing:
        return None  # lines that end differently: the line loop records what they share
    repeats = span_repeats(buf, wstarts, wends, hashes) if not unhashed else None
    return words, out, _layout(buf, pos, out, trailing, returns == rows), repeats


def _lines_matrix(buf: Any, pos: int, end: int, count: int | None, dim: int,
                  dtype: np.dtype = F32) -> np.ndarray | None:
    """The (lines, dim) result of a text body, faulted in: ``count`` lines, or as many as it has newlines;
    None when that many lines of ``dim`` numbers cannot fit in the body (it is not regular)."""
    if count is None:
        u8 = np.frombuffer(buf, np.uint8)
        count = 0
        for a in range(pos, end, _ARROW_PIECE):
            count += int(np.count_nonzero(u8[a : min(end, a + _ARROW_PIECE)] == 10))
            release(buf, a)
    if count * (2 + 2 * dim) > end - pos:  # a line holds a word, dim numbers and their separators
        return None
    return touched((count, dim), dtype)


def _line_numbers(line: bytes) -> bytes:
    """The numbers of a line (from its first space on) as the line loop sees them."""
    line = _content(line)
    return line[line.find(b" ") :]


def _arrow_binary(column: Any, n: int) -> tuple[np.ndarray, Any]:
    """A binary column's n + 1 value offsets (int64 positions in its data buffer) and that buffer."""
    array = column.combine_chunks()
    offsets = np.frombuffer(array.buffers()[1], np.int32, n + 1, array.offset * 4).astype(np.int64)
    return offsets, array.buffers()[2] or b""


def _nth_newline(buf: Any, pos: int, n: int) -> int:
    for _ in range(n):
        pos = buf.find(b"\n", pos) + 1
    return pos


_WRITE_VALUES = 1 << 18  # numbers formatted per pyarrow job when writing text
_FEW = 64  # at most this many numbers (or 1/64 of a job) are mended by splicing, more by one masked pass


def _many(count: int, n: int) -> bool:
    """Whether ``count`` of a job's ``n`` numbers to mend are too many to splice in one by one."""
    return count > max(_FEW, n // 64)


_POW10 = np.array([10**i for i in range(13)], dtype=np.float64)  # exact powers of ten


def _casts_as_expected(pa: Any, pc: Any) -> bool:
    """Whether this pyarrow's float -> string casts write what the text writer relies on: the shortest digits
    that read back to the value, positionally from 1e-4 to 1e5 or more, ``1`` for 1.0 (checked once)."""
    global _CASTS_OK
    if _CASTS_OK is None:
        f32 = np.array([0.1, -1.5e-4, 999999.94, 1.0, -0.0, 0.33333334, 123.456], F32)
        f64 = np.array([0.00015, 2.0, 99999.0, -0.0, 0.1, 12345.0])
        _CASTS_OK = (pc.cast(pa.array(f32), pa.string()).to_pylist()
                     == ["0.1", "-0.00015", "999999.94", "1", "-0", "0.33333334", "123.456"]
                     and pc.cast(pa.array(f64), pa.string()).to_pylist()
                     == ["0.00015", "2", "99999", "-0", "0.1", "12345"])
    return _CASTS_OK


_CASTS_OK: bool | None = None
# numpy prints a float32 positionally when its magnitude, as a double, is 0 or in [1e-4, 1e6): the least
# float32 from 1e-4 on (float32(1e-4) itself is just below it and prints as 1e-04)
_POSITIONAL_FROM = np.nextafter(np.float32(1e-4), np.float32(1))


def _mended(pa: Any, pc: Any, text: Any, wrong: np.ndarray, flat: np.ndarray, style: str) -> Any:
    """``text`` with the numbers at ``wrong`` spelled by the style's own formatter: spliced in between the
    unchanged runs when they are few, by one masked pass when many."""
    fix = np.flatnonzero(wrong)
    if not fix.size:
        return text
    spelled = pa.array(TEXT_STYLES[style](flat[fix]), pa.string())
    if _many(fix.size, len(flat)):
        return pc.replace_with_mask(text, pa.array(wrong), spelled)
    parts, at = [], 0
    for j, i in enumerate(fix.tolist()):
        parts += [text.slice(at, i - at), spelled.slice(j, 1)]
        at = i + 1
    parts.append(text.slice(at))
    return pa.concat_arrays(parts)


def _repr_numbers(pa: Any, pc: Any, flat: np.ndarray, style: str = "repr") -> Any:
    """numpy's ``str()`` of each float32 of ``flat`` (the "repr" style, or "repr16"), as a pyarrow string array.

    pyarrow's cast writes the same shortest digits; the spellings differ only where numpy writes ``1.0``
    for ``1`` (whole numbers: ``.0`` appended) and where it switches to scientific notation (magnitudes
    under 1e-4 or from 1e6 on, NaN and inf: the style's own formatter spells those, usually few)."""
    text = pc.cast(pa.array(flat), pa.string())
    with np.errstate(invalid="ignore"):
        mag = np.abs(flat)
        positional = (mag == 0) | ((mag >= _POSITIONAL_FROM) & (mag < np.float32(1e6)))
        whole = positional & (flat == np.trunc(flat))
    if _many(np.count_nonzero(whole), len(flat)):  # whole numbers (zero rows, counts)
        text = pc.if_else(pa.array(whole), pc.binary_join_element_wise(text, ".0", ""), text)
        whole[:] = False
    return _mended(pa, pc, text, ~positional | whole, flat, style)


def _g5_numbers(pa: Any, pc: Any, flat: np.ndarray) -> Any:
    """``"%.5g" % v`` of each float32 of ``flat`` (the "g5" style of fastText), as a pyarrow string array.

    A magnitude in [1e-4, 1e5) times 10^(4 - its decimal exponent) is exact in float64 (a 24-bit
    significand times 5^k, k <= 9, fits in 53 bits), so rounding it half to even gives the 5 significant
    digits printf gives; the double nearest those digits is then cast to its shortest spelling, which is
    %g's (positional in that range, trailing zeros dropped). Other magnitudes (scientific in %g), a round
    up to 1e5, NaN and inf are formatted by Python."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = np.abs(flat).astype(np.float64)
        plain = (mag >= 1e-4) & (mag < 1e5)
        k = np.where(plain, 4 - np.floor(np.log10(np.where(plain, mag, 1.0))), 0).astype(np.intp)
        s = mag * _POW10[k]
        k[plain & (s < 1e4)] += 1  # log10 rounded across a power of ten
        k[plain & (s >= 1e5)] -= 1
        r = np.rint(mag * _POW10[k])
        plain &= (r < 1e5) | (k > 0)  # 99999.5 rounds to 1e+05: scientific
        zero = mag == 0
        y = np.where(plain, np.copysign(r / _POW10[k], flat), flat)  # zeros as they are: "0", "-0"
        plain |= zero
    text = pc.cast(pa.array(np.where(plain, y, 0.0)), pa.string())
    return _mended(pa, pc, text, ~plain, flat, "g5")


_FIXED_COLUMN = np.arange(17)  # "-123456789.123456": the widest %f spelling taken by _fixed6_numbers


def _fixed6_numbers(pa: Any, pc: Any, flat: np.ndarray) -> Any:
    """``"%f" % v`` of each float32 of ``flat`` (the "fixed6" style of word2vec.c), as a pyarrow string array.

    A float32 magnitude times 1e6 is exact in float64 (a 24-bit significand times 2^6 5^6), so rint gives
    printf's six decimals of the exact value, rounded half to even. The digits are laid out in numpy as
    17-byte rows, right-aligned, and the used part of each row packed into the array. Magnitudes from 1e9
    on, NaN and inf are formatted by Python."""
    n = len(flat)
    with np.errstate(invalid="ignore"):
        mag = np.abs(flat).astype(np.float64)
        plain = mag < 1e9
    whole, frac = np.divmod(np.rint(np.where(plain, mag, 0.0) * 1e6).astype(np.int64), 1_000_000)
    digits = np.searchsorted(_POW10[1:10], whole, side="right") + 1  # of the whole part
    whole, frac = whole.astype(np.int32), frac.astype(np.int32)
    out = np.empty((n, 17), np.uint8)
    for c in range(16, 10, -1):
        frac, out[:, c] = np.divmod(frac, 10)
    for c in range(9, 0, -1):
        whole, out[:, c] = np.divmod(whole, 10)
    out += 48
    out[:, 10] = 46  # "."
    neg = np.signbit(flat)  # -0.0 and what rounds to zero keep their sign, as printf's do
    first = 10 - digits - neg
    out[np.flatnonzero(neg), first[neg]] = 45  # "-"
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(17 - first, out=offsets[1:])
    packed = out[_FIXED_COLUMN >= first[:, None]]
    text = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(packed))
    return _mended(pa, pc, text, ~plain, flat, "fixed6")


# number styles written through pyarrow
_ARROW_STYLES = {"repr": _repr_numbers, "g5": _g5_numbers, "fixed6": _fixed6_numbers,
                 "repr16": partial(_repr_numbers, style="repr16")}


def _text_lines(arrow: Any, style: str, words: list[Any], rows: np.ndarray, tail: str) -> Any | None:
    """The text lines ``word v1 ... vD`` of ``words`` and ``rows`` (numbers in ``style``) joined by
    ``tail``, as one pyarrow buffer; None when a word is for the checked loop to refuse (not a str, empty,
    holding a space or newline, not UTF-8 encodable)."""
    pa, _, pc = arrow
    if not all(type(w) is str for w in words) or min(map(len, words)) == 0:
        return None
    joined = "\n".join(words)
    if " " in joined or joined.count("\n") != len(words) - 1:
        return None
    try:
        names = pa.array(words, pa.string())
    except UnicodeError:  # surrogate escapes: the bytes of words in another encoding, joined as bytes (a view
        try:  # as strings is not checked; the joins below copy bytes)
            names = pa.array([w.encode("utf-8", "surrogateescape") for w in words], pa.binary()).view(pa.string())
        except (pa.ArrowException, UnicodeError):
            return None
    except pa.ArrowException:
        return None
    n, dim = rows.shape
    numbers = _ARROW_STYLES[style](pa, pc, rows.reshape(-1))
    per_row = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * dim), numbers)
    lines = pc.binary_join_element_wise(names, pc.binary_join(per_row, " "), " ")
    return pc.binary_join(pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), lines), tail)[0].as_buffer()


def _write_text_lines(style: str, words: list[Any], arr: np.ndarray, tail: str, final: bool, stream: Any) -> int:
    """Write the lines of a text table with the vectorised number spellings and pyarrow's joins, two blocks
    of rows formatting on worker threads while this one writes; the index of the first line not written
    (every line without pyarrow, or from the first block holding a word the checked loop must refuse)."""
    arrow = _pyarrow()
    n, dim = arr.shape
    if style not in _ARROW_STYLES or arrow is None or not n or not _casts_as_expected(arrow[0], arrow[2]):
        return 0
    step = max(1, _WRITE_VALUES // max(dim, 1))
    starts = list(range(0, n, step))

    def job(a: int) -> Job:
        return background(_text_lines, arrow, style, words[a : a + step], arr[a : a + step], tail)

    jobs = deque(job(a) for a in starts[:2])  # a block's text is let go of once written
    for k, a in enumerate(starts):
        text = jobs.popleft().result()
        if k + 2 < len(starts):
            jobs.append(job(starts[k + 2]))
        if text is None:
            for pending in jobs:
                pending.exception()  # done with the rows before the checked loop goes on
            return a
        stream.write(memoryview(text))
        stream.write((tail if final or a + step < n else tail.rstrip("\r\n")).encode("ascii"))
    return n


# the fast parsers of regular bodies, in the order they are tried, and the body size from which each is
_FAST = (("kernel", _kernel_text), ("arrow", _arrow_text))
_MIN_BYTES = {"kernel": 0, "arrow": _ARROW_MIN_BYTES}
_FORCED: list[Any] = []  # (name, the row counts it accepted) while text_parser forces one
TEXT_PARSERS = ("kernel", "arrow", "lines")


@contextmanager
def text_parser(name: str) -> Iterator[list[int]]:
    """Parse every text body with the parser ``name`` (of ``TEXT_PARSERS``), whatever its size, for tests and
    benchmarks: ``"kernel"`` (the compiled kernel), ``"arrow"`` (pyarrow's CSV reader), ``"lines"`` (numpy's
    parser, a chunk of lines at a time); a body the fast parser declines goes to the line loop, which names
    any fault. Yields the list of the row counts of the bodies the forced fast parser accepted."""
    if name not in TEXT_PARSERS:
        raise ValueError(f"unknown text parser {name!r}; use {', '.join(TEXT_PARSERS)}")
    if _FORCED:
        raise RuntimeError("a text parser is forced already")
    accepted: list[int] = []
    _FORCED[:] = [name, accepted]
    try:
        yield accepted
    finally:
        _FORCED.clear()


class TextRecords(Checked):
    """Lines ``word v1 ... vD``: words split off at the first ASCII space, numbers parsed in one pass.

    ``count=None`` reads to the end (GloVe); ``dim=None`` takes the width from the first line. Trailing
    spaces and ``\\r`` are stripped (fastText and word2vec.c write them) and recorded with the number style
    and the final newline in ``layout``, so a file in any writer's canonical form rebuilds byte-exact.
    """

    def __init__(self, count: Any = None, dim: Any = None, *, max_dim: int | None = None) -> None:
        super().__init__()
        self.count = count
        self.dim = dim
        self.max_dim = max_dim

    def _parse(self, stream: Any, context: Any, path: str) -> cs.Container:
        declared = None if self.count is None else int(evaluate(self.count, context))
        dim = None if self.dim is None else checked_dimension(self.dim, context, path, stream, self.max_dim)
        want = declared
        limit = read_params(context).get("limit")
        if limit is not None:
            want = int(limit) if want is None else min(want, int(limit))
        buf, base = window(stream)
        if isinstance(buf, memoryview):
            buf = buf.tobytes()
        pos = stream.tell() - base
        end = len(buf)
        if limit is None and read_params(context).get("vocab") is None:
            for name, parser in _FAST:
                if _FORCED and _FORCED[0] != name or not _FORCED and end - pos < _MIN_BYTES[name]:
                    continue
                fast = parser(buf, pos, end, declared, dim, unicode_errors(context), path, text_dtype(context))
                if fast is not None:
                    words, vectors, layout, repeats = fast
                    if _FORCED:
                        _FORCED[1].append(len(words))
                    stream.seek(base + end)
                    return parsed_table(repeats, words=words, vectors=vectors, layout=layout)
        find = buf.find
        raws: list[bytes] = []
        nums: list[bytes] = []
        starts: list[int] = []
        trailing = crlf = 0
        parsed = _TextNumbers(context, buf, raws, starts, base, path)
        i = 0
        while pos < end and (want is None or i < want):
            nl = find(b"\n", pos)
            stop = end if nl < 0 else nl
            e = stop
            if e > pos and buf[e - 1] == 13:
                e -= 1
                crlf += 1
            content_end = e
            if e > pos and buf[e - 1] == 32:
                while e > pos and buf[e - 1] in (32, 9):
                    e -= 1
                trailing += 1
            sp = find(b" ", pos, e)
            if sp < 0 and e < content_end and (dim == 0 or dim is None and i == 0):
                # a word without numbers (dimension 0): "word \n"; the space after it is not a trailing one
                sp = e = find(b" ", pos, content_end)  # the first space ends the word (which may end in tabs)
                trailing -= content_end - sp == 1
            if content_end == pos:
                raise fail(f"{path}[{i}]", base + pos, "empty line", ValueMismatchError)
            if sp <= pos:
                raise fail(f"{path}[{i}]", base + pos, "a line needs a word and numbers separated by spaces",
                           ValueMismatchError)
            chunk = buf[sp:e]
            width = chunk.count(b" ")
            if dim is None:
                dim = width
            elif width != dim:
                raise fail(f"{path}[{i}]", base + pos, "wrong number of values on the line",
                           ValueMismatchError, expected=dim, found=width)
            starts.append(pos)
            raws.append(buf[pos:sp])
            nums.append(chunk)
            i += 1
            pos = end if nl < 0 else nl + 1
            if len(nums) == _TEXT_CHUNK:  # parse the numbers a chunk of lines at a time: bounded memory
                parsed.add(nums, i - len(nums), dim)
                nums = []
                release(buf, pos)
        if declared is not None and want is not None and i < want:  # (GloVe: a limit is at most)
            raise fail(f"{path}[{i}]", base + pos, "fewer lines than the header declares",
                       TruncatedError, expected=declared, found=i)
        dim = dim or 0
        lines = i
        parsed.add(nums, i - len(nums), dim)
        words, vectors = parsed.result(dim)
        stream.seek(base + pos)
        style = "repr"
        if len(words):
            style = detect_style(parsed.sample, parsed.sample_values)
        ends_nl = lines == 0 or buf[pos - 1 : pos] == b"\n"
        if not ends_nl:  # (once the numbers have parsed: a file that fails is not also warned about)
            # the peers read a last line without its newline as complete (scripts that join lines write
            # them); so does this, but a file cut inside its last number looks the same: say so
            warn(context, f"{path}[{i - 1}]", base + starts[-1], "the last line has no newline; read as "
                 "complete (a file cut off inside its last number would look the same)", NoFinalNewlineWarning)
        layout = cs.Container(style=style, trailing_space=bool(lines) and trailing == lines,
                              crlf=bool(lines) and crlf == lines, final_newline=ends_nl)
        return cs.Container(words=words, vectors=vectors, layout=layout)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        words = obj["words"]
        n = len(words)
        if self.count is not None:
            count = int(evaluate(self.count, context))
            if count != n:
                raise fail(path, tell(stream), "word count does not match the header", BuildError,
                           expected=count, found=n)
        arr = np.asarray(obj["vectors"])
        dim = int(evaluate(self.dim, context)) if self.dim is not None else (arr.shape[1] if arr.ndim == 2 else 0)
        arr = matrix_to_write(arr, n, dim, path, stream)
        layout = obj.get("layout") or {}
        style = layout.get("style", "repr")
        fmt = TEXT_STYLES[style]
        tail = (" " if layout.get("trailing_space") else "") + ("\r\n" if layout.get("crlf") else "\n")
        final = layout.get("final_newline", True)
        done = _write_text_lines(style, words, arr, tail, final, stream)
        out: list[str] = []
        for i, w in enumerate(words[done:], done):
            word_bytes(w, f"{path}[{i}].word", stream)
            line = w + " " + " ".join(fmt(arr[i]))
            out.append(line + (tail if (final or i < n - 1) else tail.rstrip("\r\n")))
            if len(out) >= 4096:
                stream.write("".join(out).encode("utf-8", "surrogateescape"))
                out.clear()
        stream.write("".join(out).encode("utf-8", "surrogateescape"))  # (escapes: a word in another encoding)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any) -> Any:
        """Words without a space or line break and finite float32 rows (their shortest digits read back as the
        same float32); the layout is the writer's default (None: whatever the parse finds fits)."""
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp

        words = st.text(st.characters(blacklist_characters=" \n\r", blacklist_categories=("Cs", "Zs", "Cc")),
                        min_size=1, max_size=6)
        floats = st.floats(width=32, allow_nan=False, allow_infinity=False)

        def rows(count: int, dim: int) -> Any:
            return st.builds(cs.Container, words=st.lists(words, min_size=count, max_size=count),
                             vectors=hnp.arrays(np.float32, (count, dim), elements=floats), layout=st.none())

        count = None if self.count is None else int(evaluate(self.count, context))
        dim = None if self.dim is None else int(evaluate(self.dim, context))
        counts = st.integers(0, 3) if count is None else st.just(count)
        # (a width read from the first line: none without lines)
        return counts.flatmap(lambda n: rows(n, dim if dim is not None else 0 if n == 0 else 1 + n % 3))


class HeaderLine(Checked):
    """The ASCII line ``"<count> <dim>\\n"`` of word2vec files; any whitespace is tolerated and kept."""

    def _parse(self, stream: Any, context: Any, path: str) -> cs.Container:
        pos = stream.tell()
        buf, base = window(stream)
        head = bytes(buf[pos - base : pos - base + 256])  # any buffer (a memoryview has no find)
        nl = head.find(b"\n")
        nl = nl + pos - base if nl >= 0 else -1
        if nl < 0:
            raise fail(path, pos, "no header line '<count> <dim>'", TruncatedError)
        raw = bytes(buf[pos - base : nl + 1])
        parts = raw.split()
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise fail(path, pos, "header must be two decimal integers", ValueMismatchError, found=raw)
        stream.seek(base + nl + 1)
        return cs.Container(count=int(parts[0]), dim=int(parts[1]), raw=raw)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        raw = obj.get("raw")
        canonical = f"{obj['count']} {obj['dim']}\n".encode("ascii")
        if raw is None or raw.split() != canonical.split():
            raw = canonical
        stream.write(raw)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any) -> Any:
        """A small count and dimension, written in the canonical spelling (raw None)."""
        from hypothesis import strategies as st

        return st.builds(cs.Container, count=st.integers(0, 3), dim=st.integers(1, 3), raw=st.none())


class Trailer(Checked):
    """Bytes after the last record, kept so the file rebuilds byte-exact (the peers ignore them).

    Skipped, and None, when the caller asked for a ``limit`` of rows.
    """

    def _parse(self, stream: Any, context: Any, path: str) -> bytes | None:
        if read_params(context).get("limit") is not None:
            return None
        return stream.read()

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj:
            stream.write(obj)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError(path=path)

    def strategy(self, context: Any) -> Any:
        """Bytes of any kind after the records: the parse keeps them whatever they are."""
        from hypothesis import strategies as st

        return st.binary(max_size=4)
