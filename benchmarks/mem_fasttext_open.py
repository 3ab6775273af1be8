"""Where the memory of a fastText mmap open and first lookup goes: one fresh process per line.

    python3 benchmarks/mem_fasttext_open.py [benchmarks/data/ft-200000x100-b2000000.bin]

For each stage (the parse, the model, the first lookup) the growth over the process after its imports of
VmHWM, RssAnon and RssFile (/proc/self/status), then what tracemalloc saw: held after the stage and its
traced peak. A second run with glibc's mmap threshold fixed (MALLOC_MMAP_THRESHOLD_) shows how much of
RssAnon is freed heap that glibc keeps (its dynamic threshold puts the temporaries in the heap).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_STAGES = r"""
import re, sys, tracemalloc
import wvformats as wv
from wvformats.families.fasttext import codec
from wvformats.fileio import open_buffer
wv.formats()
MB = 2**20

def status():
    s = open("/proc/self/status").read()
    return [int(re.search(rf"{k}:\s+(\d+)", s).group(1)) / 1024 for k in ("VmHWM", "RssAnon", "RssFile")]

base = status()
trace = sys.argv[2] == "trace"
if trace:
    tracemalloc.start()
buf = open_buffer(sys.argv[1], use_mmap=True)
out = {}
for label, step in [("parse", lambda _: codec.parse(buf)), ("model", codec.to_model),
                    ("first lookup", lambda m: (m.embedding("w12"), m)[1])]:
    if trace:
        tracemalloc.reset_peak()
    out[label] = step(out.get("parse") if label == "model" else out.get("model"))
    if trace:
        held, peak = tracemalloc.get_traced_memory()
        print(f"{label:13s} traced: held {held / MB:5.1f} MB, peak {peak / MB:5.1f} MB")
    else:
        hwm, anon, file = (a - b for a, b in zip(status(), base))
        print(f"{label:13s} VmHWM +{hwm:5.1f} MB  RssAnon +{anon:5.1f} MB  RssFile +{file:5.1f} MB")
"""


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).parent / "data/ft-200000x100-b2000000.bin")
    runs = [("as is", "rss", {}), ("as is", "trace", {}),
            ("glibc mmap threshold fixed at 128 KB", "rss", {"MALLOC_MMAP_THRESHOLD_": "131072"})]
    for title, mode, env in runs:
        print(f"-- {title}, {'tracemalloc' if mode == 'trace' else '/proc/self/status'}")
        out = subprocess.run([sys.executable, "-P", "-c", _STAGES, path, mode], env={**os.environ, **env},
                             capture_output=True, text=True, check=True)
        print(out.stdout, end="")


if __name__ == "__main__":
    main()
