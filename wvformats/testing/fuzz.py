"""Mutation fuzzing: seeded mutants of valid files must parse or fail with the library's own error, naming the
format, the field path and the byte offset, in words of ours, within bounded time and memory."""

from __future__ import annotations

import re
import signal
import threading
import time
import tracemalloc
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from .. import framework
from ..errors import FormatError
from .roundtrip import target

# words of an error that came from numpy, construct or Python rather than from a check of ours
FOREIGN = (framework.UNCHECKED, "stream read less than specified amount", "Error in path",
           "asks for more memory", "window shape cannot be larger", "array is too big",
           "Maximum allowed dimension", "Traceback")

# values a hostile length or count field takes: the edges of each width, and lengths just past the data
HOSTILE = (0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**40, 2**62,
           2**63 - 1, 2**63, 2**64 - 1)
DECIMALS = (b"0", b"1", b"-1", b"1000", b"65536", b"16777217", b"4294967296", b"9223372036854775808",
            b"99999999999999999999", b"1e309", b"nan")


class Limits(NamedTuple):
    """What one call on one mutant may take: seconds, and bytes allocated at its peak (numpy's included)."""

    seconds: float = 10.0
    memory: int = 32 << 20


DEFAULT_LIMITS = Limits()


def _random_bytes(rng: np.random.Generator, n: int) -> bytes:
    return rng.integers(0, 256, n, dtype=np.uint8).tobytes()


def mutate(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    """One mutation of ``data`` and its description: bytes set, a bit flipped, a cut, bytes inserted or
    deleted, a hostile integer of 1 to 8 bytes (mostly in the first 256 bytes), a hostile decimal in the text,
    or a stretch copied over another."""
    d = bytearray(data)
    kind = str(rng.choice(["set", "bit", "cut", "insert", "delete", "int", "int", "number", "splice"]))
    if not d:
        return _random_bytes(rng, int(rng.integers(1, 17))), "random bytes"
    at = int(rng.integers(0, len(d)))
    if kind == "set":
        for i in rng.integers(0, len(d), int(rng.integers(1, 5))).tolist():
            d[i] = int(rng.integers(0, 256))
    elif kind == "bit":
        d[at] ^= 1 << int(rng.integers(0, 8))
    elif kind == "cut":
        del d[at:]
    elif kind == "insert":
        d[at:at] = _random_bytes(rng, int(rng.integers(1, 17)))
    elif kind == "delete":
        del d[at : at + int(rng.integers(1, 17))]
    elif kind == "int":  # a hostile length, count or offset: mostly in the headers
        width = int(rng.choice([1, 2, 4, 8]))
        value = int(rng.choice([*HOSTILE, len(d) - 1, len(d) + 1])) % (1 << 8 * width)
        at = int(rng.integers(0, max(1, min(len(d), 256) - width + 1))) if rng.random() < 0.7 else at
        d[at : at + width] = value.to_bytes(width, "little")
        kind = f"u{8 * width}={value}"
    elif kind == "number":  # a hostile decimal in a text header or body
        numbers = list(re.finditer(rb"-?\d+", bytes(d[:4096])))
        if numbers:
            m = numbers[int(rng.integers(0, min(len(numbers), 2 if rng.random() < 0.5 else 32)))]  # header?
            value = DECIMALS[int(rng.integers(0, len(DECIMALS)))]
            d[m.start() : m.end()] = value
            kind = f"number={value.decode()}"
            at = m.start()
    else:  # a stretch of the file copied over another (a record or header where another was)
        src, n = int(rng.integers(0, len(d))), int(rng.integers(1, 65))
        d[at : at + n] = d[src : src + n]
        kind = f"splice from {src}"
    return bytes(d), f"{kind} at {at}"


def header_numbers(data: bytes) -> Iterator[tuple[bytes, str]]:
    """Each of the first two decimal numbers (a text header's count and dimension) replaced by values past
    what the data holds: (mutant, description)."""
    for m in list(re.finditer(rb"\d+", data[:4096]))[:2]:
        for value in (b"0", b"1000", b"65536", b"4294967296", b"99999999999999999999"):
            yield data[: m.start()] + value + data[m.end() :], f"number={value.decode()} at {m.start()}"


def mutate_some(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    """One to three mutations of ``data`` (one, more often than not) and their descriptions."""
    done = []
    for _ in range(1 if rng.random() < 0.6 else int(rng.integers(2, 4))):
        data, what = mutate(data, rng)
        done.append(what)
    return data, ", ".join(done)


def mutants(data: bytes, seed: int = 0, cases: int = 24, start: int = 0) -> Iterator[tuple[bytes, str]]:
    """Mutants ``start`` to ``start + cases - 1`` of ``data``, the same for the same seed: (mutant,
    description)."""
    key = zlib.crc32(bytes(data[:4096]))
    for case in range(start, start + cases):
        out, done = mutate_some(bytes(data), np.random.default_rng([seed, key, case]))
        yield out, f"seed {seed} case {case}: {done}"


class _Overtime(BaseException):  # not an Exception: nothing in the library may catch it
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Overtime


def run_bounded(label: str, fn: Callable[[], Any], limits: Limits = DEFAULT_LIMITS) -> Any:
    """``fn()``'s result or the FormatError it raised. Any other exception, a call still running after
    ``limits.seconds`` (interrupted by SIGALRM in the main thread of a POSIX process; measured elsewhere)
    or one allocating more than ``limits.memory`` bytes at its peak fails, with ``label``."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGALRM, _on_alarm) if alarm else None
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    if alarm:
        signal.setitimer(signal.ITIMER_REAL, limits.seconds)
    try:
        return fn()
    except FormatError as e:
        return e
    except _Overtime:
        raise AssertionError(f"{label}: still running after {limits.seconds} s") from None
    except Exception as e:
        raise AssertionError(f"{label}: {type(e).__name__} is not the library's error: {e}") from e
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        peak = tracemalloc.get_traced_memory()[1] - base
        if not tracing:
            tracemalloc.stop()
        took = time.perf_counter() - start
        assert peak <= limits.memory, f"{label}: allocated {peak} bytes at its peak"
        assert took <= limits.seconds, f"{label}: took {took:.1f} s"


def ours(label: str, text: str) -> None:
    """Fail unless an error's text is in the library's words (none of :data:`FOREIGN`)."""
    foreign = [w for w in FOREIGN if w in text]
    assert not foreign, f"{label}: an error in words not ours: {text}"


def check_error(label: str, error: FormatError, format: str) -> None:
    """An error as the fuzz checks want it: naming ``format``, a field path and a byte offset, in our words."""
    assert error.format == format, f"{label}: {error!r} does not name {format}"
    ours(label, str(error))
    assert error.offset is not None, f"{label}: {error} names no byte offset"
    assert error.path, f"{label}: {error} names no field"


def check_mutant(what: Any, data: bytes, label: str = "mutant", *, format: str | None = None,
                 limits: Limits = DEFAULT_LIMITS) -> list[Any]:
    """Parse ``data`` with the schema, interpreted and compiled (and with the codec of a registered format):
    each works or fails with :func:`check_error`'s error, within ``limits``. Returns the results."""
    t = target(what, format)
    calls: list[tuple[str, Callable[[], Any]]] = [
        (f"{label}: parse", lambda: framework.parse(t.schema, data, format=t.format)),
        (f"{label}: compiled parse", lambda: framework.parse(t.schema, data, format=t.format, compile=True)),
    ]
    if t.registered is not None:
        calls.append((f"{label}: {t.format} codec parse", lambda: t.registered.parse(data)))
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # doubtful fields warn; they are no failures
        for name, fn in calls:
            got = run_bounded(name, fn, limits)
            if isinstance(got, FormatError):
                check_error(name, got, t.format)
            results.append(got)
    return results


def fuzz(what: Any, samples: Iterable[bytes], *, format: str | None = None, cases: int = 24, seed: int = 0,
         seconds: float = 0.0, limits: Limits = DEFAULT_LIMITS) -> int:
    """:func:`check_mutant` on each valid sample (which must parse), the hostile header numbers of it, then
    ``cases`` mutants of it, or as many as ``seconds`` allow in all. Returns the number of inputs checked."""
    t = target(what, format)
    samples = [bytes(s) for s in samples]
    budget = seconds / max(len(samples), 1)
    checked = 0
    for i, sample in enumerate(samples):
        for got in check_mutant(t, sample, f"{t.format} sample {i}", limits=limits):
            assert not isinstance(got, FormatError), f"{t.format} sample {i} is not valid: {got}"
        started = time.perf_counter()
        for data, what_ in header_numbers(sample):
            check_mutant(t, data, f"{t.format} sample {i} ({what_})", limits=limits)
            checked += 1
        case = 0
        while case < cases or time.perf_counter() - started < budget:
            for data, what_ in mutants(sample, seed, 1, start=case):
                check_mutant(t, data, f"{t.format} sample {i} ({what_})", limits=limits)
            checked += 1
            case += 1
    return checked
