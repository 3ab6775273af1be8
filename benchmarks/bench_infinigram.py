"""infini-gram: build and query a ~10M-token u8 index, wvformats vs the real indexer and engine.

    python3 benchmarks/bench_infinigram.py [--tokens 10000000] [--queries 2000]

Builds the same JSONL corpus with `python -m infini_gram.indexing` (single core) and with
wvformats.families.infinigram.build.build_jsonl, checks the files are byte-identical, then times count() per query in
each engine (the real one in a subprocess, as always) and reports medians. Peak memory from VmHWM.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

WORDS = ("the of and to in is was for on that with as by at from his her an were are which this be or "
         "had not but first one their its new after who they have has been also into more other over").split()

ENGINE = r"""
import json, re, statistics, sys, time
from infini_gram.engine import InfiniGramEngine
d, queries = json.loads(open(sys.argv[1]).read())
e = InfiniGramEngine(index_dir=d, eos_token_id=0, vocab_size=255, token_dtype="u8", version=4)
times, ftimes, out = [], [], []
for q in queries:
    t = time.perf_counter(); c = e.count(input_ids=q)["count"]; times.append(time.perf_counter() - t)
    t = time.perf_counter(); e.find(input_ids=q); ftimes.append(time.perf_counter() - t)
    out.append(c)
print(json.dumps({"median_us": 1e6 * statistics.median(times), "find_us": 1e6 * statistics.median(ftimes),
                  "counts": out}))
"""


def hwm_mb() -> float:
    return int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=2000)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="igbench"))
    src = root / "src"
    src.mkdir()
    rng = np.random.default_rng(0)
    size = 0
    with open(src / "corpus.jsonl", "w") as f:
        while size < args.tokens:
            text = " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), int(rng.integers(20, 200))))
            f.write(json.dumps({"text": text, "id": size}) + "\n")
            size += len(text) + 1
    theirs, ours = root / "theirs", root / "ours"
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "infini_gram.indexing", "--data_dir", str(src), "--save_dir",
                        str(theirs), "--token_dtype", "u8", "--add_metadata", "--add_unigram", "--cpus", "1",
                        "--mem", "8", "--ulimit", "1024"], capture_output=True, text=True,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    t_theirs = time.perf_counter() - t
    assert r.returncode == 0, r.stderr[-2000:]
    code = ("import sys, time, re; from wvformats.families.infinigram.build import build_jsonl; import pydivsufsort; "
            "hwm = lambda: int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) / 1024; "
            f"base = hwm(); t = time.perf_counter(); build_jsonl({str(src)!r}, {str(ours)!r}); "
            "dt = time.perf_counter() - t; print(dt, hwm(), base)")
    # single core both: libdivsufsort's OpenMP threads pinned to one
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    t_ours, mem_ours, mem_base = map(float, out.stdout.split())
    same = all((ours / p.name).read_bytes() == p.read_bytes() for p in theirs.iterdir())
    tokens = (ours / "tokenized.0").stat().st_size
    print(f"corpus: {tokens} tokens (u8)")
    print("| build | seconds | note |\n|---|---|---|")
    print(f"| real indexer (1 cpu) | {t_theirs:.2f} | |")
    print(f"| wvformats build_jsonl | {t_ours:.2f} | {t_ours / t_theirs:.2f}x, peak {mem_ours:.0f} MB "
          f"({(mem_ours - mem_base) * 2**20 / tokens:.1f} bytes/token above the {mem_base:.0f} MB of the "
          f"interpreter and imports; the JSONL input is streamed), byte-identical: {same} |")
    data = (ours / "tokenized.0").read_bytes()
    queries = []
    for _ in range(args.queries):
        i = int(rng.integers(0, len(data) - 8))
        queries.append(list(data[i : i + int(rng.integers(1, 8))]))
    qfile = root / "q.json"
    qfile.write_text(json.dumps([str(theirs), queries]))
    r = subprocess.run([sys.executable, "-c", ENGINE, str(qfile)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    engine = json.loads(r.stdout.strip().splitlines()[-1])
    from wvformats.families.infinigram.index import InfiniGramIndex

    ix = InfiniGramIndex(ours, token_width=1)
    times, ftimes, counts = [], [], []
    for q in queries:
        t = time.perf_counter()
        counts.append(ix.count(q))
        times.append(time.perf_counter() - t)
        t = time.perf_counter()
        ix.find(q)
        ftimes.append(time.perf_counter() - t)
    ours_us, find_us = 1e6 * statistics.median(times), 1e6 * statistics.median(ftimes)
    print("\n| per query (median us) | count | find |\n|---|---|---|")
    print(f"| real engine (C++, pybind) | {engine['median_us']:.1f} | {engine['find_us']:.1f} |")
    print(f"| wvformats | {ours_us:.1f} ({ours_us / engine['median_us']:.2f}x) | "
          f"{find_us:.1f} ({find_us / engine['find_us']:.2f}x) |")
    print(f"\nsame counts: {counts == engine['counts']}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
