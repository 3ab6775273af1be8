"""Where the memory of a fastText mmap open and first lookup goes: one fresh process per line.

    python3 benchmarks/mem_fasttext_open.py [PATH] [--copies DIR] [--python PY ...]

For each stage (the parse, the model, the first lookup) the growth over the process after its imports of
VmHWM, RssAnon and RssFile (/proc/self/status), then what tracemalloc saw: held after the stage and its
traced peak. A second run with glibc's mmap threshold fixed (MALLOC_MMAP_THRESHOLD_) shows how much of
RssAnon is freed heap that glibc keeps (its dynamic threshold puts the temporaries in the heap).

PATH defaults to the issue's model, benchmarks/data/ft-200000x100-b2000000.bin (200k words x 100 dims, 2M
buckets; made by bench_fasttext.py's generator when missing). What a fault of the mapped file costs the process
depends on the page-cache folios its pages are in (Linux maps the folio a fault lands in whole): ``--copies DIR``
measures two copies of the file made in DIR, one written 16 MB a write (on ext4 with Linux 6.18 its pages are
cached in 2 MB folios) and one by ``cp`` (small folios), after a probe of how much of the file one fault maps.
``--python`` runs the stages under other interpreters too (another install of wvformats: before / after), the
interpreters alternating within each file.
"""

from __future__ import annotations

import argparse
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

# how much of the file one fault maps: one byte read in each of 64 regions of 2 MB, through a fresh map
_PROBE = r"""
import mmap, re, sys
def file_kb():
    return int(re.search(r"RssFile:\s+(\d+)", open("/proc/self/status").read()).group(1))
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
regions = range(1, min(65, len(m) >> 21))
before = file_kb()
for r in regions:
    m[(r << 21) + 4096]
print(f"one fault maps {(file_kb() - before) / len(regions) / 1024:.2f} MB of the file on average")
"""


def stages(python: str, path: str) -> None:
    runs = [("as is", "rss", {}), ("as is", "trace", {}),
            ("glibc mmap threshold fixed at 128 KB", "rss", {"MALLOC_MMAP_THRESHOLD_": "131072"})]
    for title, mode, env in runs:
        print(f"-- {title}, {'tracemalloc' if mode == 'trace' else '/proc/self/status'}")
        out = subprocess.run([python, "-P", "-c", _STAGES, path, mode], env={**os.environ, **env},
                             capture_output=True, text=True, check=True)
        print(out.stdout, end="")


def copies(path: Path, folder: Path) -> list[Path]:
    """Two copies of ``path`` in ``folder``: written 16 MB a write (large page-cache folios) and by cp."""
    folder.mkdir(parents=True, exist_ok=True)
    large, small = folder / f"{path.stem}-16mb-writes.bin", folder / f"{path.stem}-cp.bin"
    with open(path, "rb", buffering=0) as src, open(large, "wb", buffering=0) as dst:
        while block := src.read(1 << 24):
            dst.write(block)
    subprocess.run(["cp", "--reflink=never", str(path), str(small)], check=True)
    return [large, small]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", nargs="?", help="the model (default: the generated 200k x 100, 2M buckets)")
    ap.add_argument("--copies", type=Path, help="also measure two copies of the file made in this folder "
                    "(written 16 MB a write: large folios; by cp: small ones)")
    ap.add_argument("--python", action="append", default=[], help="another interpreter to run the stages "
                    "under (its own install of wvformats); may be given more than once")
    args = ap.parse_args()
    if args.path is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_fasttext import generate

        args.path = str(generate(200_000, 100, 2_000_000))
    files = [Path(args.path)] + (copies(Path(args.path), args.copies) if args.copies else [])
    for f in files:
        probe = subprocess.run([sys.executable, "-c", _PROBE, str(f)], capture_output=True, text=True, check=True)
        print(f"== {f} ({probe.stdout.strip()})")
        for python in [sys.executable, *args.python]:
            print(f"- {python}")
            stages(python, str(f))


if __name__ == "__main__":
    main()
