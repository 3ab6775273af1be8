"""Mutation fuzzing over every registered format's bundled samples: read, validate and inspect of each mutated
file either work or fail with the library's own error, naming the format, in words of ours (never numpy's,
construct's or Python's), within a bounded time and memory.

Seeded and deterministic: the header numbers swept, then CASES random mutants per sample in CI (a few
seconds in all). A longer campaign runs for
a number of seconds in all, spread over the samples, from a seed of your choice:

    WVFORMATS_FUZZ_SECONDS=600 WVFORMATS_FUZZ_SEED=1 python -m pytest tests/test_fuzz.py -q -x

A failure names the sample, seed, case and mutations; ``mutant(sample, seed, case)`` rebuilds that input.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
import tracemalloc
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats import framework
from wvformats.errors import FormatError
from wvformats.samples import sample_files

SAMPLES = sample_files()
CASES = 24  # mutants per sample in CI (about 3 s in all)
SECONDS = float(os.environ.get("WVFORMATS_FUZZ_SECONDS") or 0)  # a longer run: seconds in all
SEED = int(os.environ.get("WVFORMATS_FUZZ_SEED") or 0)
TIME_LIMIT = 10.0  # seconds one call may take on a mutant of a sample of at most 15 kB (they take ms)
MEMORY_LIMIT = 32 << 20  # bytes one call may allocate at its peak (numpy's allocations are traced too)

# words of an error that came from numpy, construct or Python rather than from a check of ours
FOREIGN = (framework.UNCHECKED, "stream read less than specified amount", "Error in path",
           "asks for more memory", "window shape cannot be larger", "array is too big",
           "Maximum allowed dimension", "Traceback")

# values a hostile length or count field takes: the edges of each width, and lengths just past the data
HOSTILE = (0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**40, 2**62,
           2**63 - 1, 2**63, 2**64 - 1)
DECIMALS = (b"0", b"1", b"-1", b"1000", b"65536", b"16777217", b"4294967296", b"9223372036854775808", b"99999999999999999999",
            b"1e309", b"nan")


def _random_bytes(rng: np.random.Generator, n: int) -> bytes:
    return rng.integers(0, 256, n, dtype=np.uint8).tobytes()


def _mutate(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    """One mutation of ``data`` and its description."""
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


def mutant(sample: Path, seed: int, case: int, out: Path) -> tuple[Path, str]:
    """Write mutant ``case`` of ``sample`` (a file, or a folder one of whose files is mutated) under ``out``."""
    rng = np.random.default_rng([seed, zlib.crc32(sample.name.encode()), case])
    target = out / sample.name
    if target.is_dir():
        shutil.rmtree(target)
    if sample.is_dir():
        shutil.copytree(sample, target)
        files = sorted(p.name for p in sample.iterdir())
        victim = target / files[int(rng.integers(0, len(files)))]
    else:
        victim = target
        shutil.copyfile(sample, target)
    data, done = victim.read_bytes(), []
    for _ in range(1 if rng.random() < 0.6 else int(rng.integers(2, 4))):
        data, what = _mutate(data, rng)
        done.append(what)
    victim.write_bytes(data)
    return target, (f"{victim.name}: " if sample.is_dir() else "") + ", ".join(done)


def header_numbers(data: bytes):
    """Each of the first two decimal numbers (a text header's count and dimension) replaced by values past
    what the data holds: (mutant, description)."""
    for m in list(re.finditer(rb"\d+", data[:4096]))[:2]:
        for value in (b"0", b"1000", b"65536", b"4294967296", b"99999999999999999999"):
            yield data[: m.start()] + value + data[m.end() :], f"number={value.decode()} at {m.start()}"


class _Overtime(BaseException):  # not an Exception: nothing in the library may catch it
    pass


def _on_alarm(signum, frame):
    raise _Overtime


def _call(label: str, fn):
    """``fn()``'s result or the FormatError it raised, within TIME_LIMIT and MEMORY_LIMIT."""
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        return fn()
    except FormatError as e:
        return e
    except _Overtime:
        pytest.fail(f"{label}: still running after {TIME_LIMIT} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        peak = tracemalloc.get_traced_memory()[1] - base
        assert peak <= MEMORY_LIMIT, f"{label}: allocated {peak} bytes at its peak"
        assert time.perf_counter() - start <= TIME_LIMIT, label


def _ours(label: str, text: str) -> None:
    foreign = [w for w in FOREIGN if w in text]
    assert not foreign, f"{label}: an error in words not ours: {text}"


def check_mutant(path: Path, fmt: str, label: str, *, in_memory: bool = False) -> None:
    """read, validate and inspect ``path`` as ``fmt``: each works or fails with our error for ``fmt``."""
    calls = [("read", lambda: wv.read(path, fmt)), ("validate", lambda: wv.validate(path, fmt)),
             ("inspect", lambda: wv.inspect(path, fmt))]
    if in_memory:
        calls.append(("read(mmap=False)", lambda: wv.read(path, fmt, mmap=False)))
    for name, fn in calls:
        where = f"{label}: {name}"
        got = _call(where, fn)
        if isinstance(got, FormatError):
            assert got.format == fmt, f"{where}: {got!r} does not name {fmt}"
            _ours(where, str(got))
        elif isinstance(got, wv.ValidationReport):
            assert got.format == fmt
            if got.error:
                assert got.error.startswith(fmt), f"{where}: {got.error}"
            for text in [got.error or "", *got.problems]:
                _ours(where, text)


def test_the_samples_cover_every_format():
    assert {wv.sniff(p) for p in SAMPLES} == set(wv.formats())


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_mutants_fail_with_our_errors_in_bounded_time_and_memory(sample, tmp_path):
    fmt = wv.sniff(sample)
    check_mutant(sample, fmt, f"{sample.name} unmutated")  # the bounds hold for the sample itself
    budget = SECONDS / len(SAMPLES)
    started = time.perf_counter()
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # doubtful fields and duplicate words warn; they are no failures
            if sample.is_file():
                for data, what in header_numbers(sample.read_bytes()):
                    (tmp_path / sample.name).write_bytes(data)
                    check_mutant(tmp_path / sample.name, fmt, f"{sample.name} ({what})")
            case = 0
            while case < CASES or time.perf_counter() - started < budget:
                path, what = mutant(sample, SEED, case, tmp_path)
                check_mutant(path, fmt, f"{sample.name} seed {SEED} case {case} ({what})", in_memory=case % 4 == 0)
                case += 1
    finally:
        signal.signal(signal.SIGALRM, previous)
        if not tracing:
            tracemalloc.stop()
