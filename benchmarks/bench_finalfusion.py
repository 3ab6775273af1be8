"""finalfusion: wvformats vs finalfusion-python 0.7.1 and the raw-read floor, in one run.

    python3 benchmarks/bench_finalfusion.py [--words 400000] [--dim 300] [--bucket-exp 21]

The issue's full size (400k x 300 with 2^21 buckets) is a 2.9 GB file dense; the defaults are smaller so the
run fits a few minutes on 2 cores. Measures opening (mmap and read), OOV lookups and writing, on a dense and
on a product-quantized storage (``--storage``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import floor_read, floor_write, measure, table  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


def generate(n: int, dim: int, exp: int, quantized: bool) -> Path:
    """A bucket-vocab file written by finalfusion-python: dense rows, or product-quantized ones (dim / 10
    subquantizers of 256 centroids, with per-row norms, as `finalfusion quantize` writes them)."""
    import finalfusion as ff

    DATA.mkdir(exist_ok=True)
    p = DATA / f"ff{'q' if quantized else ''}-{n}x{dim}-b{exp}.fifu"
    if not p.exists():
        rng = np.random.default_rng(0)
        words = [f"w{i}x{'é' if i % 17 == 0 else ''}" for i in range(n)]
        vocab = ff.vocab.FinalfusionBucketVocab(words, ff.subword.FinalfusionHashIndexer(bucket_exp=exp))
        rows = n + 2**exp
        if quantized:
            q = max(1, dim // 10)
            pq = ff.storage.quantized.PQ(rng.normal(size=(q, 256, dim // q)).astype(np.float32), None)
            storage = ff.storage.QuantizedArray(pq, rng.integers(0, 256, (rows, q), dtype=np.uint8),
                                                (rng.random(rows) + 0.5).astype(np.float32))
        else:
            storage = ff.storage.NdArray(rng.normal(size=(rows, dim)).astype(np.float32))
        ff.Embeddings(storage, vocab).write(str(p))
    return p


def unknown_words() -> list[tuple[str, list[str]]]:
    """Two sets of 2000 words that no vocabulary of ``generate`` holds: ``unknownword0`` ... (long words that
    share their first 11 letters, hence most of their n-grams: the rows they sum stay in the CPU cache), and
    random words (Poisson(6.5) + 1 letters, 6% with a non-ASCII letter, as the word-vector benchmark's words:
    nearly every n-gram row is a different one)."""
    rng = np.random.default_rng(1)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    random_words = []
    for size in rng.poisson(6.5, 2000) + 1:
        w = "".join(rng.choice(letters, size))
        random_words.append(w[:-1] + "ü" if rng.random() < 0.06 else w)
    return [("unknown words 'unknownword0' ... (shared prefix)", [f"unknownword{i}" for i in range(2000)]),
            ("random unknown words", random_words)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--bucket-exp", type=int, default=18)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parts", default="open,oov,write", help="which measurements, comma-separated")
    ap.add_argument("--storage", default="dense,quantized", help="which storages, comma-separated")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    storages = args.storage.split(",")
    for storage in storages:
        run(str(generate(args.words, args.dim, args.bucket_exp, storage == "quantized")), storage, parts,
            args.repeat)


def run(p: str, storage: str, parts: set[str], repeat: int) -> None:
    open(p, "rb").read()
    name = f"{Path(p).name} ({storage})"
    rows = [] if "open" not in parts else [
        ("floor: read the file into memory", measure(*floor_read(p), repeat)),
        # wv.formats() loads the codec registry (about 60 ms, once per process), as `import finalfusion`
        # loads that library: imports are setup for both
        ("wvformats read (mmap)", measure("import wvformats as wv\nwv.formats()", f"e = wv.read({p!r}, mmap=True)",
                                          repeat)),
        ("wvformats read (copy)", measure("import wvformats as wv\nwv.formats()", f"e = wv.read({p!r}, mmap=False)",
                                          repeat)),
        ("finalfusion-python (mmap)", measure("import finalfusion as ff", f"e = ff.load_finalfusion({p!r}, mmap=True)",
                                              repeat)),
        ("finalfusion-python (read)", measure("import finalfusion as ff", f"e = ff.load_finalfusion({p!r})",
                                              repeat)),
    ]
    if rows:
        print(table(f"open {name}", rows, "wvformats read (mmap)"))
    # both models in memory (finalfusion-python's default load reads the file; ours with mmap=False), five
    # rounds of the same 2000 unknown words in each process, after one warm-up round
    for label, oov in [] if "oov" not in parts else unknown_words():
        lookups = [
            ("wvformats embedding_batch", measure(
                f"import wvformats as wv\ne = wv.read({p!r}, mmap=False)\nws = {oov!r}\ne.embedding_batch(ws)",
                "for _ in range(5): e.embedding_batch(ws)", repeat)),
            ("wvformats embedding() per word", measure(
                f"import wvformats as wv\ne = wv.read({p!r}, mmap=False)\nws = {oov!r}\n[e.embedding(w) for w in ws]",
                "for _ in range(5): [e.embedding(w) for w in ws]", repeat)),
            ("finalfusion-python embedding() per word", measure(
                f"import finalfusion as ff\ne = ff.load_finalfusion({p!r})\nws = {oov!r}\n[e.embedding(w) for w in ws]",
                "for _ in range(5): [e.embedding(w) for w in ws]", repeat)),
        ]
        print(table(f"OOV lookups in {name}: 5 x 2000 {label} (finalfusion-python has no batch call)",
                    lookups, "wvformats embedding_batch"))
    out = str(DATA / "ff-out.fifu")
    for scenario, prepare in [] if "write" not in parts else [
        ("a new file", f"os.path.exists({out!r}) and os.unlink({out!r})"),
        ("replacing an existing file", f"os.path.exists({out!r}) or shutil.copyfile({p!r}, {out!r})"),
    ]:
        # every trial starts with no dirty pages (os.sync in the setup), so that one writer's writeback does
        # not slow the next one down; the output is removed first or left in place, as the scenario says
        def setup(load: str, prepare: str = prepare) -> str:
            return f"import os, shutil\n{load}\n{prepare}\nos.sync()"

        load, write = floor_write(p, out)
        writes = [
            ("floor: write the file's bytes", measure(setup(load), write, repeat)),
            ("wvformats write (atomic, fsync: the default)", measure(
                setup(f"import wvformats as wv\ne = wv.read({p!r}, mmap=False)"), f"wv.write(e, {out!r})",
                repeat)),
            ("wvformats write (atomic, durable=False)", measure(
                setup(f"import wvformats as wv\ne = wv.read({p!r}, mmap=False)"),
                f"wv.write(e, {out!r}, durable=False)", repeat)),
            ("finalfusion-python write (in place, no fsync)", measure(
                setup(f"import finalfusion as ff\ne = ff.load_finalfusion({p!r})"), f"e.write({out!r})",
                repeat)),
        ]
        print(table(f"write {name}, {scenario} (from a model read into memory)", writes,
                    "wvformats write (atomic, durable=False)"))
    if os.path.exists(out):
        os.unlink(out)


if __name__ == "__main__":
    main()
