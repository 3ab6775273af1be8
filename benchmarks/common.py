"""Shared timing helpers for the benchmarks: fresh-process trials on a warm cache, medians, ratio tables."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import textwrap

_RUNNER = r"""
import json, re, time, sys
{pre}
t_setup = time.perf_counter()
{setup}
t_idle = time.perf_counter()
{idle}
t0 = time.perf_counter()
{timed}
dt = time.perf_counter() - t0
# VmHWM is per address space, so it starts afresh at exec (ru_maxrss would inherit the parent's peak)
rss = int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024
print(json.dumps({{"seconds": dt, "setup": t_idle - t_setup, "idle": t0 - t_idle, "maxrss_mb": rss}}))
"""

# Waits (at most 1 s) until the process's other threads are idle: no CPU time spent by any thread but this one,
# which sleeps, over 10 ms. What the imports started goes on after them: numpy's OpenBLAS worker threads spin
# (sched_yield) for ~0.1 s after their start before they sleep, taking a core from a read that uses both.
_IDLE = """\
_until = time.perf_counter() + 1.0
while time.perf_counter() < _until:
    _cpu = time.process_time()
    time.sleep(0.01)
    if time.process_time() - _cpu < 0.001:
        break
"""


def floor_read(path: str) -> tuple[str, str]:
    """(setup, timed) of the physical floor for reading a file: its bytes into one preallocated buffer with
    unbuffered reads (the fastest plain read; ``open().read()`` can be several times slower here)."""
    return ("import os\nimport numpy as np",
            f"f = open({path!r}, 'rb', buffering=0)\nbuf = np.empty(os.fstat(f.fileno()).st_size, np.uint8)\n"
            "view, got = memoryview(buf), 0\n"
            "while got < len(buf):\n    got += f.readinto(view[got:])\nf.close()")


def floor_write(src: str, dst: str, fsync: bool = False) -> tuple[str, str]:
    """(setup, timed) of the physical floor for writing: ``src``'s bytes (read in the setup) written to
    ``dst`` with unbuffered writes of 16 MB (``fsync``: then flushed to disk)."""
    setup, read = floor_read(src)
    timed = (f"f = open({dst!r}, 'wb', buffering=0)\nview = memoryview(buf)\n"
             "for at in range(0, len(view), 1 << 24):\n    f.write(view[at : at + (1 << 24)])\n"
             + ("os.fsync(f.fileno())\n" if fsync else "") + "f.close()")
    return f"{setup}\n{read}", timed


def warm(path: str) -> str:
    """Setup code that reads ``path`` through once: the VM this runs on pages out cold file pages within
    seconds (DAMON), so a file warmed once before a row is partly on disk again by its later trials. 64 KB at
    a time, so that it adds nothing to the peak memory nor changes later allocations (freeing a 1 MB buffer
    raised glibc's mmap threshold to 1 MB: freed arrays of the timed code below that size then stayed in the
    heap, 2.7 MB of the fastText mmap open's peak)."""
    return (f"_f = open({path!r}, 'rb', buffering=0)\n_b = bytearray(1 << 16)\n"
            "while _f.readinto(_b):\n    pass\n_f.close()\ndel _f, _b")


def trial(setup: str, timed: str, timeout: float = 600, python: str = sys.executable,
          pre: str = "", idle: bool = False) -> dict[str, float]:
    """Run ``timed`` once in a fresh ``python`` after ``pre`` (untimed: warming a file) and ``setup``
    (imports): ``seconds`` is ``timed``'s time, ``setup`` the setup's. ``idle``: ``timed`` starts once the
    threads the setup started have gone idle (``idle`` the seconds waited, counted in neither)."""
    code = _RUNNER.format(pre=textwrap.dedent(pre), setup=textwrap.dedent(setup), timed=textwrap.dedent(timed),
                          idle=_IDLE if idle else "")
    # -P: the installed wvformats, never a source tree in the working directory (where `schemas/` is not
    # yet the `wvformats.schemas` package)
    out = subprocess.run([python, "-P", "-c", code], capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "trial failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(setup: str, timed: str, repeat: int = 3, python: str = sys.executable) -> dict[str, float]:
    """Median seconds and the largest peak RSS over ``repeat`` fresh-process trials (of ``python``)."""
    runs = [trial(setup, timed, python=python) for _ in range(repeat)]
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "maxrss_mb": max(r["maxrss_mb"] for r in runs)}


def measure_turns(rows: list[tuple[str, str, str]], repeat: int = 3,
                  python: str = sys.executable) -> dict[str, list[dict[str, float]]]:
    """Every trial of each row (name, setup, timed): one fresh-process trial of each row per turn, the rows
    in turn, for ``repeat`` turns, so that the machine's load (and this VM's I/O) moves all rows of a turn
    alike. Summarise a row with :func:`summary`, compare two with :func:`paired_ratio`."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in rows}
    for _ in range(repeat):
        for name, setup, timed in rows:
            runs[name].append(trial(setup, timed, python=python))
    return runs


def summary(runs: list[dict[str, float]]) -> dict[str, float]:
    """Median seconds and the largest peak RSS of some trials."""
    return {"seconds": statistics.median(r["seconds"] for r in runs), "maxrss_mb": max(r["maxrss_mb"] for r in runs)}


def paired_ratio(a: list[dict[str, float]], b: list[dict[str, float]]) -> float:
    """The median over turns of a's seconds / b's seconds in the same turn (rows of :func:`measure_turns`)."""
    return statistics.median(x["seconds"] / y["seconds"] for x, y in zip(a, b, strict=True))


def in_process(fn, repeat: int = 3) -> float:
    """Median seconds of ``fn()`` over ``repeat`` calls in this process, after one warm-up call."""
    import time

    fn()
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def paired(ours, ref, repeat: int) -> tuple[float, float, float]:
    """Median seconds of ``ours()`` and ``ref()`` called in turn in this process ``repeat`` times (after one
    warm-up call of each), and the median of the per-turn ratios ours / ref."""
    import time

    ours(), ref()
    mine, theirs = [], []
    for _ in range(repeat):
        for fn, runs in ((ours, mine), (ref, theirs)):
            t = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t)
    ratios = [a / b for a, b in zip(mine, theirs, strict=True)]
    return statistics.median(mine), statistics.median(theirs), statistics.median(ratios)


def table(title: str, rows: list[tuple[str, dict[str, float] | None]], base: str,
          turns: dict[str, list[dict[str, float]]] | None = None, imports: bool = False) -> str:
    """A Markdown table: median seconds, peak RSS and the ratio to the row named ``base``: of the medians,
    or, for rows in ``turns`` (of :func:`measure_turns`, base among them), the median of per-turn ratios.
    ``imports``: two more columns, the seconds with the setup (the imports) counted and their paired ratio."""
    ref = dict(rows)[base]
    paired = " (paired)" if turns else ""
    more = f" s, imports counted | x {base}, imports counted{paired} |" if imports else ""
    lines = [f"### {title}", "", f"| reader | median s | peak RSS MB | x {base}{paired} |{more}",
             "|---|---|---|---|" + ("---|---|" if imports else "")]

    def whole(runs: list[dict[str, float]]) -> list[dict[str, float]]:
        return [{"seconds": r["seconds"] + r["setup"]} for r in runs]

    for name, r in rows:
        if r is None:
            lines.append(f"| {name} | failed | | |" + (" | |" if imports else ""))
            continue
        ratio = r["seconds"] / ref["seconds"] if ref else float("nan")
        if turns and name in turns:
            ratio = paired_ratio(turns[name], turns[base])
        line = f"| {name} | {r['seconds']:.3f} | {r['maxrss_mb']:.0f} | {ratio:.2f} |"
        if imports and turns and name in turns:
            mine = whole(turns[name])
            line += (f" {statistics.median(x['seconds'] for x in mine):.3f} |"
                     f" {paired_ratio(mine, whole(turns[base])):.2f} |")
        lines.append(line)
    return "\n".join(lines) + "\n"
