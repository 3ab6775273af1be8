"""infini-gram builds past memory: a generated corpus several times the budget, built out of core (1 and 2
workers, and on a local 2-worker Dask cluster) beside the in-memory build of the same corpus.

    python3 benchmarks/bench_infinigram_outofcore.py [--tokens 210000000] [--mem 100M] [--mem2 100M] [--rows mem,workers,ram,dask]

The corpus: u16 tokens, documents of 100 to 4000 tokens drawn from a Zipf law over a 50,000-token
vocabulary (natural text's repeats: frequent n-grams tie far past the first bytes), one document in 50
an exact copy of an earlier one. Each build runs in a fresh process that generates the same documents from
a seed. Its peak memory is measured from outside: the resident set (VmRSS: anonymous memory plus the
resident pages of memory-mapped files) of the process and all its descendants, summed, sampled every
20 ms; disk is the output folder's size, sampled likewise. Every out-of-core output is checked
byte-identical to the in-memory one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUILD = r"""
import sys, json
import numpy as np
from wvformats.families.infinigram.build import build

tokens, out, options = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])

def docs():
    rng = np.random.default_rng(0)
    made, kept = 0, []
    while made < tokens:
        if kept and rng.random() < 0.02:
            doc = kept[int(rng.integers(0, len(kept)))]
        else:
            n = min(int(rng.integers(100, 4000)), tokens - made)
            doc = np.minimum(rng.zipf(1.2, n), 50_000).astype(np.uint16)
            if len(kept) < 64:
                kept.append(doc)
        yield doc
        made += len(doc) + 1

if __name__ == "__main__":
    cluster = None
    if options.pop("dask", None):
        from distributed import LocalCluster
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=":0")
        options.update(engine="dask", scheduler=cluster.scheduler_address)
    build(docs(), out, token_width=2, **options)
    if cluster is not None:
        cluster.close()
"""


def _tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                ppid = int(open(f"/proc/{entry.name}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _rss(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def _du(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def run(tokens: int, out: Path, options: dict) -> dict:
    script = out.parent / "build_script.py"
    script.write_text(BUILD)
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-P", str(script), str(tokens), str(out), json.dumps(options)],
                            stderr=subprocess.PIPE, text=True)
    peak = disk = 0
    while proc.poll() is None:
        peak = max(peak, _rss(_tree(proc.pid)))
        disk = max(disk, _du(out) if out.exists() else 0)
        time.sleep(0.02)
    seconds = time.perf_counter() - t
    err = proc.stderr.read()
    if proc.returncode != 0:
        raise RuntimeError(err[-3000:])
    return {"seconds": seconds, "peak_rss": peak, "disk": disk}


def digest(path: Path) -> dict[str, str]:
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            h = hashlib.sha256()
            with open(p, "rb") as f:
                while chunk := f.read(1 << 24):
                    h.update(chunk)
            out[str(p.relative_to(path))] = h.hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=210_000_000)
    ap.add_argument("--mem", default="100M", help="the budget of the 1-process build")
    ap.add_argument("--mem2", default="100M", help="the budget of the 2-worker build: its parent and 2 workers")
    ap.add_argument("--rows", default="mem,workers,ram,dask",
                    help="which builds: ram (in memory), mem (1 process), workers (2), dask (2 Dask workers)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="igbench"))
    from wvformats.families.infinigram.outofcore import parse_size

    budget = parse_size(args.mem)
    rows = []
    configs = {"ram": ("in memory", {}), "mem": (f"--mem {args.mem}", {"max_memory": args.mem}),
               "workers": (f"--mem {args.mem2} --workers 2", {"max_memory": args.mem2, "workers": 2}),
               # each task gets what the 1-process build had
               "dask": (f"Dask LocalCluster, 2 worker processes, --mem {args.mem} per task",
                        {"max_memory": args.mem, "dask": True})}
    configs = [configs[row] for row in args.rows.split(",")]
    ref = None
    for name, options in configs:  # the first row is the reference of "identical"
        out = root / f"out{len(rows)}"
        r = run(args.tokens, out, dict(options))
        d = digest(out)
        if ref is None:
            ref = d
        r.update(name=name, same=d == ref, size=sum((out / p).stat().st_size for p in d))
        rows.append(r)
        print(json.dumps(r), file=sys.stderr, flush=True)
        if len(rows) > 1:
            shutil.rmtree(out)
    corpus = 2 * args.tokens
    print(f"corpus: {args.tokens} u16 tokens ({corpus / 2**20:.0f} MiB tokenized, {corpus / budget:.1f}x the "
          f"budget of {args.mem}); index {rows[0]['size'] / 2**20:.0f} MiB; load {os.getloadavg()[0]:.1f}")
    print("| build | seconds | peak RSS (tree, MiB) | peak disk (MiB) | vs first row | identical |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['seconds']:.1f} | {r['peak_rss'] / 2**20:.1f} | {r['disk'] / 2**20:.0f} | "
              f"{r['seconds'] / rows[0]['seconds']:.2f}x | {r['same']} |")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
