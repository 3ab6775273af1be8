"""Reading a gzip-compressed text file: wvformats on the .gz vs a plain read plus ``gzip -dc``.

    python3 benchmarks/bench_compression.py [--words 100000] [--dim 100] [--repeat 3]

The target (issue 20): reading ``x.txt.gz`` takes at most 1.5x (wvformats reading ``x.txt`` + ``gzip -dc
x.txt.gz > /dev/null``), and its peak memory is that of the plain read plus a few blocks of lines, not the
decompressed file (the text is parsed as it is decompressed). Every row is a fresh process on a warm page
cache, the import of wvformats timed too. Prints a Markdown table and the ratios. Not run in CI.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_wordvec import DATA, make_words  # noqa: E402
from common import measure, table, warm  # noqa: E402

import wvformats as wv  # noqa: E402


def generate(n: int, dim: int) -> tuple[Path, Path]:
    """A GloVe text file and its gzip (by the gzip tool, default level) under benchmarks/data/."""
    DATA.mkdir(exist_ok=True)
    plain = DATA / f"emb-{n}x{dim}.glove.txt"
    packed = plain.with_name(plain.name + ".gz")
    if not plain.exists():
        rng = np.random.default_rng(0)
        emb = wv.Embeddings(make_words(n, rng), np.round(rng.normal(0, 0.4, (n, dim)), 5).astype("<f4"))
        wv.write(emb, plain, "glove")
    if not packed.exists():
        subprocess.run(["gzip", "-k", str(plain)], check=True)
    return plain, packed


def gunzip_seconds(path: Path, repeat: int) -> dict[str, float]:
    """Median wall time of ``gzip -dc path > /dev/null``."""
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(["gzip", "-dc", str(path)], stdout=subprocess.DEVNULL, check=True)
        runs.append(time.perf_counter() - t)
    return {"seconds": sorted(runs)[len(runs) // 2], "maxrss_mb": float("nan")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    plain, packed = generate(args.words, args.dim)
    timed = "import wvformats as wv\ne = wv.read({!r}, 'glove')"
    read_plain = measure(warm(str(plain)), timed.format(str(plain)), repeat=args.repeat)
    gunzip = gunzip_seconds(packed, args.repeat)
    read_gz = measure(warm(str(packed)), timed.format(str(packed)), repeat=args.repeat)
    floor = {"seconds": read_plain["seconds"] + gunzip["seconds"], "maxrss_mb": read_plain["maxrss_mb"]}
    print(f"{plain.name}: {plain.stat().st_size / 1e6:.0f} MB, gzip {packed.stat().st_size / 1e6:.0f} MB\n")
    print(table("Reading a .gz GloVe file", [
        ("wvformats read of the plain file", read_plain),
        ("gzip -dc > /dev/null", gunzip),
        ("plain read + gzip -dc", floor),
        ("wvformats read of the .gz", read_gz),
    ], "plain read + gzip -dc"))
    print(f"ratio .gz read / (plain read + gzip -dc) = {read_gz['seconds'] / floor['seconds']:.2f} (target <= 1.5)")
    print(f"peak RSS: .gz read {read_gz['maxrss_mb']:.0f} MB, plain read {read_plain['maxrss_mb']:.0f} MB, "
          f"decompressed file {plain.stat().st_size / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
