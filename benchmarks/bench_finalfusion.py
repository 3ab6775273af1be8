"""finalfusion: wvformats vs finalfusion-python 0.7.1 and the raw-read floor, in one run.

    python3 benchmarks/bench_finalfusion.py [--words 400000] [--dim 300] [--bucket-exp 21]

The issue's full size (400k x 300 with 2^21 buckets) is a 2.9 GB file; the defaults are smaller so the
run fits a few minutes on 2 cores. Measures opening (mmap and read), OOV lookups and writing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import measure, table  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


def generate(n: int, dim: int, exp: int) -> Path:
    import finalfusion as ff

    DATA.mkdir(exist_ok=True)
    p = DATA / f"ff-{n}x{dim}-b{exp}.fifu"
    if not p.exists():
        rng = np.random.default_rng(0)
        words = [f"w{i}x{'é' if i % 17 == 0 else ''}" for i in range(n)]
        m = rng.normal(size=(n + 2**exp, dim)).astype(np.float32)
        vocab = ff.vocab.FinalfusionBucketVocab(words, ff.subword.FinalfusionHashIndexer(bucket_exp=exp))
        ff.Embeddings(ff.storage.NdArray(m), vocab).write(str(p))
    return p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--bucket-exp", type=int, default=18)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    p = str(generate(args.words, args.dim, args.bucket_exp))
    open(p, "rb").read()
    oov = [f"unknownword{i}" for i in range(2000)]
    rows = [
        ("floor: read() the file", measure("", f"open({p!r}, 'rb').read()", args.repeat)),
        # wv.formats() loads the codec registry (about 60 ms, once per process), as `import finalfusion`
        # loads that library: imports are setup for both
        ("wvformats read (mmap)", measure("import wvformats as wv\nwv.formats()", f"e = wv.read({p!r}, mmap=True)",
                                          args.repeat)),
        ("wvformats read (copy)", measure("import wvformats as wv\nwv.formats()", f"e = wv.read({p!r}, mmap=False)",
                                          args.repeat)),
        ("finalfusion-python (mmap)", measure("import finalfusion as ff", f"e = ff.load_finalfusion({p!r}, mmap=True)",
                                              args.repeat)),
        ("finalfusion-python (read)", measure("import finalfusion as ff", f"e = ff.load_finalfusion({p!r})",
                                              args.repeat)),
    ]
    print(table(f"open {Path(p).name}", rows, "wvformats read (mmap)"))
    lookups = [
        ("wvformats embedding_batch (2000 OOV words)", measure(
            f"import wvformats as wv\ne = wv.read({p!r})\nws = {oov!r}\ne.embedding_batch(ws[:10])",
            "e.embedding_batch(ws)", args.repeat)),
        ("wvformats embedding() x 2000", measure(f"import wvformats as wv\ne = wv.read({p!r})\nws = {oov!r}",
                                                 "[e.embedding(w) for w in ws]", args.repeat)),
        ("finalfusion-python embedding() x 2000", measure(
            f"import finalfusion as ff\ne = ff.load_finalfusion({p!r})\nws = {oov!r}",
            "[e.embedding(w) for w in ws]", args.repeat)),
    ]
    print(table("OOV lookups (2000 unknown words; finalfusion-python has no batch call)", lookups,
                "wvformats embedding_batch (2000 OOV words)"))
    out = str(DATA / "ff-out.fifu")
    writes = [
        ("floor: write() the file's bytes", measure(f"data = open({p!r}, 'rb').read()",
                                                    f"f = open({out!r}, 'wb'); f.write(data); f.close()",
                                                    args.repeat)),
        ("wvformats write (atomic, fsync)", measure(f"import wvformats as wv\ne = wv.read({p!r}, mmap=False)",
                                                    f"wv.write(e, {out!r})", args.repeat)),
        ("wvformats write (atomic, durable=False)", measure(
            f"import wvformats as wv\ne = wv.read({p!r}, mmap=False)", f"wv.write(e, {out!r}, durable=False)",
            args.repeat)),
        ("finalfusion-python write (in place, no fsync)", measure(
            f"import finalfusion as ff\ne = ff.load_finalfusion({p!r})", f"e.write({out!r})", args.repeat)),
    ]
    print(table("write (from a model read into memory; output replaces an existing file)", writes,
                "wvformats write (atomic, durable=False)"))


if __name__ == "__main__":
    main()
