"""infini-gram builds past memory: a generated corpus several times the budget, built out of core (1 and 2
workers, and on a local 2-worker Dask cluster) beside the in-memory build of the same corpus, and beside the
real indexer's own parts-and-merge build of the same tokenized file at the same budget.

    python3 benchmarks/bench_infinigram_outofcore.py [--width 2] [--tokens 210000000] [--mem 100M] [--mem2 100M]
        [--rows ram,mem,real,workers,dask]

The corpus: ``--width 2``: u16 tokens, documents of 100 to 4000 tokens drawn from a Zipf law over a
50,000-token vocabulary (natural text's repeats: frequent n-grams tie far past the first bytes), one document
in 50 an exact copy of an earlier one; ``--width 1``: u8 text, documents of 20 to 200 words drawn from 50
common English words (``--tokens`` bytes). Each build runs in a fresh process that generates the same
documents from a seed (the generation is inside its time). Its peak memory is measured from outside twice:
``/usr/bin/time``'s maximum resident set (the largest of the process and each of its children, every page
counted, not sampled) and the resident set (VmRSS) of the process and all its descendants, summed, sampled
every 20 ms; its CPU time is user + system of the whole tree; disk is the blocks the output folder holds,
sampled every 20 ms. Every output is checked byte-identical to the first row's.

The ``real`` row: ``infini_gram``'s compiled indexer (``rust_indexing``, as ``infini_gram.indexing`` runs it
with ``--cpus 1``) over the ``ram`` row's tokenized file: ``make-part`` over parts of ``mem / 12`` bytes for
u8 (``mem / 8`` for u16; the number of parts a power of two, each part 100,000 bytes longer, as its
``--mem`` in GiB sizes them, here given in bytes), then ``merge`` and ``concat``; its table compared with
ours. Each step's maximum resident set by ``/usr/bin/time``; the row's seconds and CPU are their sums.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
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
width = options.pop("token_width")
WORDS = ("the of and to in is was for on that with as by at from his her an were are which this be or "
         "had not but first one their its new after who they have has been also into more other over").split()

def text():
    rng = np.random.default_rng(0)
    words = [w.encode() for w in WORDS]
    made = 0
    while made < tokens:
        doc = b" ".join(words[i] for i in rng.integers(0, len(words), int(rng.integers(20, 200))))
        doc = doc[: tokens - made]
        yield doc
        made += len(doc) + 1

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
    build(docs() if width == 2 else text(), out, token_width=width, **options)
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
    """The bytes the folder's files hold on disk (their blocks: a file with holes counts what it holds)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def _timed(cmd: list[str], watch: Path | None = None, cwd: str | None = None) -> dict:
    """``cmd`` under ``/usr/bin/time -v``: wall seconds, CPU (user + system), its maximum resident set, and the
    sampled peaks of the tree's summed VmRSS and of ``watch``'s blocks."""
    t = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-v", *cmd], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True, cwd=cwd)
    err: list[str] = []
    import threading

    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    reader.start()
    peak = disk = 0
    while proc.poll() is None:
        peak = max(peak, _rss(_tree(proc.pid)))
        if watch is not None and watch.exists():
            disk = max(disk, _du(watch))
        time.sleep(0.02)
    seconds = time.perf_counter() - t
    reader.join()
    text = "".join(err)
    if proc.returncode != 0:
        raise RuntimeError(text[-3000:])

    def field(name: str) -> float:
        return float(re.search(rf"{re.escape(name)}: ([0-9.]+)", text).group(1))

    return {"seconds": seconds, "cpu": field("User time (seconds)") + field("System time (seconds)"),
            "maxrss": int(field("Maximum resident set size (kbytes)")) * 1024, "peak_rss": peak, "disk": disk}


def run(tokens: int, out: Path, options: dict) -> dict:
    script = out.parent / "build_script.py"
    script.write_text(BUILD)
    return _timed([sys.executable, "-P", str(script), str(tokens), str(out), json.dumps(options)], out)


def real(tokenized: Path, width: int, budget: int, work: Path) -> dict:
    """The real indexer's parts-and-merge build of ``tokenized`` (its steps as ``infini_gram.indexing`` runs
    them with --cpus 1, parts sized from ``budget`` bytes as it sizes them from --mem GiB)."""
    import infini_gram
    import numpy as np

    exe = str(Path(infini_gram.__file__).with_name("rust_indexing"))
    size = tokenized.stat().st_size
    ratio = int(np.ceil(np.log2(size) / 8))
    batches = 1
    while batches * (budget // (12 if width == 1 else 8)) < size:
        batches *= 2
    step = size // batches
    step += (width - step % width) % width
    parts, merged = work / "parts", work / "merged"
    parts.mkdir(parents=True)
    merged.mkdir()
    common = ["--ratio", str(ratio), "--token-width", str(width)]
    steps = [[exe, "make-part", "--data-file", str(tokenized), "--parts-dir", str(parts), "--start-byte",
              str(i * step), "--end-byte", str(min((i + 1) * step + 100000, size)), *common] for i in range(batches)]
    steps.append([exe, "merge", "--data-file", str(tokenized), "--parts-dir", str(parts), "--merged-dir",
                  str(merged), "--num-threads", "1", "--hacksize", "100000", *common])
    steps.append([exe, "concat", "--data-file", str(tokenized), "--merged-dir", str(merged), "--merged-file",
                  str(work / "table.0"), "--num-threads", "1", *common])
    rows = [_timed(cmd, work) for cmd in steps]
    return {"seconds": sum(r["seconds"] for r in rows), "cpu": sum(r["cpu"] for r in rows),
            "maxrss": max(r["maxrss"] for r in rows), "peak_rss": max(r["peak_rss"] for r in rows),
            "disk": max(r["disk"] for r in rows) + size, "parts": batches}


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
    ap.add_argument("--width", type=int, default=2, choices=[1, 2], help="2: u16 Zipf tokens; 1: u8 English-like text")
    ap.add_argument("--tokens", type=int, default=210_000_000)
    ap.add_argument("--mem", default="100M", help="the budget of the 1-process build")
    ap.add_argument("--mem2", default="100M", help="the budget of the 2-worker build: its parent and 2 workers")
    ap.add_argument("--rows", default="ram,mem,real,workers,dask",
                    help="which builds: ram (in memory), mem (1 process), real (the real indexer's parts and merge "
                         "at --mem, after ram), workers (2), dask (2 Dask workers)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="igbench"))
    from wvformats.families.infinigram.outofcore import parse_size

    budget = parse_size(args.mem)
    rows = []
    configs = {"ram": ("in memory", {}), "mem": (f"`--mem {args.mem}` (1 process)", {"max_memory": args.mem}),
               "workers": (f"`--mem {args.mem2} --workers 2`", {"max_memory": args.mem2, "workers": 2}),
               # each task gets what the 1-process build had
               "dask": (f"Dask LocalCluster, 2 worker processes, `--mem {args.mem}` per task",
                        {"max_memory": args.mem, "dask": True}),
               "real": (f"real indexer (rust_indexing make-part/merge/concat), parts for {args.mem}", None)}
    ref = ref_table = ram_out = None
    for row in args.rows.split(","):
        name, options = configs[row]
        out = root / f"out{len(rows)}"
        if options is None:  # the real indexer over the in-memory row's tokenized file
            assert ram_out is not None, "the real row needs the ram row before it"
            r = real(ram_out / "tokenized.0", args.width, budget, out)
            name += f" ({r.pop('parts')} parts)"
            r.update(name=name, same=(out / "table.0").read_bytes() == ref_table, size=0)
        else:
            r = run(args.tokens, out, {**options, "token_width": args.width})
            d = digest(out)
            if ref is None:
                ref, ref_table = d, (out / "table.0").read_bytes() if (out / "table.0").exists() else None
            r.update(name=name, same=d == ref, size=sum((out / p).stat().st_size for p in d))
        rows.append(r)
        print(json.dumps(r), file=sys.stderr, flush=True)
        if row == "ram":
            ram_out = out
        elif len(rows) > 1:
            shutil.rmtree(out)
    corpus = args.width * args.tokens
    print(f"corpus: {args.tokens} u{8 * args.width} tokens ({corpus / 2**20:.0f} MiB tokenized, {corpus / budget:.1f}x "
          f"the budget of {args.mem}); index {rows[0]['size'] / 2**20:.0f} MiB; load {os.getloadavg()[0]:.1f}")
    print("| build | seconds | CPU s | max RSS, /usr/bin/time (MiB) | peak RSS, tree sampled (MiB) | peak disk (MiB) "
          "| vs first row | identical |\n|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['seconds']:.1f} | {r['cpu']:.1f} | {r['maxrss'] / 2**20:.1f} | "
              f"{r['peak_rss'] / 2**20:.1f} | {r['disk'] / 2**20:.0f} | {r['seconds'] / rows[0]['seconds']:.2f}x | "
              f"{r['same']} |")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
