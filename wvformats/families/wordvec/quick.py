"""What ``inspect`` reports of a word2vec text or GloVe file, from its first lines, in the standard library
only: a text file's summary then needs neither numpy nor construct (``wvformats inspect small.vec`` starts in
a fraction of the time). The codec's ``inspect_head`` gives the same summary from the schema.

The summary answers only for a sample it reads exactly as the schema would: well-formed lines, words that
decode, numbers whose spelling it can tell. For anything else it returns None, and the codec reads the
sample and reports any fault with its field path and byte offset.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Callable
from typing import Any

from ...schemas.constructs.wordvec_lines import MAX_DIM, STYLE_ROWS, content
from ...schemas.identity import WORDVEC_HEADER, WORDVEC_HEADER_MOST

SAMPLE_ROWS = 1000  # records a quick inspect reads (for the number style and a GloVe file's estimated count)
FIRST_WORDS = 10  # of which it shows
# the numbers of a line from its first space on, " v1 v2 ... vD", in spellings every text parser of the codec
# reads alike (the sniffers accept a few more, which the codec then reads or refuses)
_NUMBERS = re.compile(rb"(?: [-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf))*")


def summary(buf: Any, *, header: bool, unicode_errors: str | None = None) -> dict[str, Any] | None:
    """The quick summary of a whole (uncompressed) text file in ``buf``: word2vec text when ``header``, else
    GloVe; None when the sample holds anything the schema would read differently or refuse."""
    size, pos, count, dim = len(buf), 0, None, None
    if header:  # the header line as the sniffer reads it, within the bytes the schema's HeaderLine looks at
        found = WORDVEC_HEADER.read(bytes(buf[:WORDVEC_HEADER_MOST]))
        if found is None or found[0]["dim"] > MAX_DIM:
            return None
        count, dim, pos = found[0]["count"], found[0]["dim"], found[1]
    want = SAMPLE_ROWS if count is None else min(count, SAMPLE_ROWS)
    words: list[bytes] = []
    numbers: list[bytes] = []
    while len(words) < want and pos < size:
        nl = buf.find(b"\n", pos)
        if nl < 0:  # a last line without its newline: the schema warns of it
            return None
        line = content(bytes(buf[pos:nl]))
        sp = line.find(b" ")
        if sp <= 0 or not _NUMBERS.fullmatch(line, sp):
            return None  # no word, no numbers, or a number the parser may not read
        width = line.count(b" ", sp)
        if dim is None:
            dim = width
        if width != dim or dim == 0:
            return None
        words.append(line[:sp])
        if len(numbers) < STYLE_ROWS:
            numbers.append(line[sp + 1 :])
        pos = nl + 1
    if count is not None and len(words) < want:
        return None  # fewer lines than the header declares
    try:
        decoded = [w.decode("utf-8", unicode_errors or "strict") for w in words]
    except UnicodeDecodeError:
        return None
    style = number_style([n.split(b" ") for n in numbers])
    if style is None:
        return None
    sampled = len(words)
    info: dict[str, Any] = {}
    if count is not None:
        info["words"] = count  # as the header states it (--full counts the records)
    elif pos >= size:  # the sample is the whole file
        info["words"] = sampled
    elif sampled:  # GloVe: no header; from the mean length of the sampled lines
        info["words_estimate"] = round(sampled * size / pos)
    info.update(dim=dim or 0, dtype="<f4", first_words=decoded[:FIRST_WORDS], number_style=style)
    info["sampled"] = f"{'header and the ' if header else ''}first {sampled} records (--full: every record)"
    return info


# -- number styles -------------------------------------------------------------------------------------------


def f32(x: float) -> float:
    """``x`` rounded to float32 (as numpy's text parser rounds: the number read as a double, then cast; past
    the largest float32, infinity)."""
    return array("f", (x,))[0]


def _roundtrips(s: str, v: float) -> bool:
    return f32(float(s)) == v


def _neighbours(v: float, p: int) -> tuple[str, str]:
    """The p-significant-digit decimals closest to ``v`` > 0: the nearest ("%.*e"), then the nearest on
    the other side of ``v``."""
    s = "%.*e" % (p - 1, v)
    digits, exp = s.split("e")
    d, e = int(digits.replace(".", "")), int(exp) - p + 1
    return s, f"{d + 1 if float(s) < v else d - 1}e{e}"


def is_repr32(t: str, v: float) -> bool | None:
    """Whether ``t`` is ``str(numpy.float32(v))`` for the float32 value ``v`` read from it: numpy's Dragon4
    "unique" digits (the fewest that read back as ``v``; the nearest such), positional from 1e-4 up and
    scientific below. None from 1e6 up, where numpy versions differ (2.3 moved the switch to scientific
    from 1e16 down to 1e6)."""
    if math.isnan(v) or math.isinf(v):
        return t == ("nan" if math.isnan(v) else "inf" if v > 0 else "-inf")
    a = abs(v)
    if a >= 1e6:
        return None
    body = t[1:] if t.startswith("-") else t
    if (t != body) != (math.copysign(1.0, v) < 0):
        return False
    if a == 0:
        return body == "0.0"
    mantissa, _, exp = body.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0").rstrip("0")
    e = int(exp) if exp else len(whole.lstrip("0")) - 1 if whole.strip("0") else len(frac.lstrip("0")) - len(frac) - 1
    if not digits or body != _spelled(digits, e, a):
        return False  # not numpy's layout of these digits
    p = len(digits)
    nearest, _ = _neighbours(a, p)
    if nearest.split("e")[0].replace(".", "").rstrip("0") != digits and _roundtrips(nearest, a):
        return False  # numpy takes the nearest p-digit decimal when it reads back as v
    return p == 1 or not any(_roundtrips(s, a) for s in _neighbours(a, p - 1))  # and no shorter one does


def _spelled(digits: str, e: int, a: float) -> str:
    """numpy's float32 str of the positive value ``a`` whose significant digits are ``digits``, the first
    of them at the decimal exponent ``e``."""
    if a >= 1e-4:
        if e >= 0:
            return f"{digits[: e + 1].ljust(e + 1, '0')}.{digits[e + 1 :] or '0'}"
        return f"0.{'0' * (-e - 1)}{digits}"
    return f"{digits[0]}{'.' + digits[1:] if len(digits) > 1 else ''}e{'+' if e >= 0 else '-'}{abs(e):02d}"


# whether a number is spelt in a style, given its float32 value: numpy's shortest repr (gensim, word-vectors),
# "%f" (word2vec.c), "%.5g" (fastText); the names and order of the writers' ``framework.TEXT_STYLES``, but for "repr16",
# which differs from "repr" only from 1e6 up, where ``is_repr32`` leaves the file to the codec
SPELLED_IN: dict[str, Callable[[str, float], bool | None]] = {
    "repr": is_repr32,
    "fixed6": lambda t, v: t == "%f" % v,
    "g5": lambda t, v: t == "%.5g" % v,
}


def number_style(lines: list[list[bytes]]) -> str | None:
    """The style whose spelling of each number's float32 value is the number as written ("repr" when none
    is); None when a value is one whose spelling this module cannot tell."""
    tokens = [t.decode("ascii") for line in lines for t in line]
    values = [f32(float(t)) for t in tokens]
    for name, spelled_in in SPELLED_IN.items():
        for t, v in zip(tokens, values, strict=True):
            found = spelled_in(t, v)
            if found is None:
                return None
            if not found:
                break
        else:
            return name
    return "repr"
