"""fastText: wvformats vs the fasttext module (C++) and gensim's load_facebook_model, and the raw-read floor.

    python3 benchmarks/bench_fasttext.py [--words 200000] [--dim 100] [--bucket 2000000]

The issue's size is the default: an unsupervised skipgram model of 200k words x 100 dims with 2M buckets
(an 0.9 GB file), and a supervised, product-quantized one (softmax over 50 labels, word bigrams) for
predict. Both are synthetic (random rows) and written by wvformats; the peer reads them as its own.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import floor_read, measure, table, warm  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
SETUP = "import wvformats as wv\nwv.formats()"  # the codec registry loads once per process: setup


def _args(dim: int, model: int, loss: int, bucket: int, minn: int, maxn: int, ngrams: int) -> dict:
    t = struct.unpack("<q", struct.pack("<d", 1e-4))[0]
    return dict(dim=dim, ws=5, epoch=5, minCount=1, neg=5, wordNgrams=ngrams, loss=loss, model=model,
                bucket=bucket, minn=minn, maxn=maxn, lrUpdateRate=100, t=t)


def _write(p: Path, words: list[str], nlabels: int, args: dict, input_part, qin: int, output) -> None:
    import construct as cs

    import wvformats  # noqa: F401 - the registry
    from wvformats.families.fasttext import codec

    n = len(words)
    entries = cs.Container(words=words, counts=np.arange(n, 0, -1, dtype="<i8"),
                           types=np.array([0] * (n - nlabels) + [1] * nlabels, "i1"))
    d = cs.Container(size=n, nwords=n - nlabels, nlabels=nlabels, ntokens=10 * n, pruneidx_size=-1,
                     entries=entries, pruneidx=np.zeros((0, 2), "<i4"))
    obj = cs.Container(head=793712314, new_format=True, magic=793712314, version=12, args=cs.Container(args),
                       dictionary=d, quant_input=qin, input=input_part, qout=0, output=output)
    with open(p, "wb") as f:
        codec.build(obj, f)


def _words(n: int) -> list[str]:
    return [f"w{i}{'é' if i % 17 == 0 else ''}" for i in range(n - 1)] + ["</s>"]


def generate(n: int, dim: int, bucket: int) -> Path:
    DATA.mkdir(exist_ok=True)
    p = DATA / f"ft-{n}x{dim}-b{bucket}.bin"
    if not p.exists():
        rng = np.random.default_rng(0)
        rows = n + bucket
        data = np.empty((rows, dim), "<f4")
        for a in range(0, rows, 1 << 18):
            data[a : a + (1 << 18)] = rng.standard_normal((min(1 << 18, rows - a), dim), np.float32) * 0.1
        import construct as cs

        _write(p, _words(n), 0, _args(dim, 2, 2, bucket, 3, 6, 1), cs.Container(m=rows, n=dim, data=data), 0,
               cs.Container(m=n, n=dim, data=np.zeros((n, dim), "<f4")))
    return p


def generate_supervised(n: int, dim: int, bucket: int, nlabels: int = 50) -> Path:
    import construct as cs

    DATA.mkdir(exist_ok=True)
    p = DATA / f"ft-sup-{n}x{dim}-b{bucket}.ftz"
    if not p.exists():
        rng = np.random.default_rng(1)
        rows, dsub = n + bucket, 2
        nsubq = dim // dsub
        pq = cs.Container(dim=dim, nsubq=nsubq, dsub=dsub, lastdsub=dsub,
                          centroids=rng.standard_normal(dim * 256, np.float32) * 0.3)
        q = cs.Container(qnorm=0, m=rows, n=dim, codesize=rows * nsubq,
                         codes=rng.integers(0, 256, rows * nsubq, dtype=np.uint8), pq=pq, norm_codes=None, npq=None)
        words = _words(n) + [f"__label__c{i}" for i in range(nlabels)]
        _write(p, words, nlabels, _args(dim, 3, 3, bucket, 0, 0, 2), q, 1,
               cs.Container(m=nlabels, n=dim, data=rng.standard_normal((nlabels, dim), np.float32)))
    return p


def unknown_words(count: int = 10000) -> list[str]:
    rng = np.random.default_rng(2)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    out = []
    for size in rng.poisson(6.5, count) + 1:
        w = "".join(rng.choice(letters, size))
        out.append(w[:-1] + "ü" if rng.random() < 0.06 else w)
    return out


def lines(n: int, words: int, count: int = 10000) -> list[str]:
    rng = np.random.default_rng(3)
    return [" ".join(f"w{i}" if i % 5 else f"x{i}" for i in rng.integers(0, words, rng.integers(3, 25)))
            for _ in range(count)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--bucket", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parts", default="open,oov,predict", help="which measurements, comma-separated")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    p = str(generate(args.words, args.dim, args.bucket))
    r = args.repeat
    if "open" in parts:
        # ready for lookups: one word looked up after the open (the peers have read everything by then)
        rows = [
            ("floor: read the file into memory", measure(warm(p) + "\n" + floor_read(p)[0], floor_read(p)[1], r)),
            ("python + imports only (baseline)", measure(SETUP, "pass", r)),
            ("wvformats read (mmap)", measure(f"{SETUP}\n{warm(p)}", f"e = wv.read({p!r}, mmap=True)\ne.embedding('w12')",
                                              r)),
            ("wvformats read (copy)", measure(f"{SETUP}\n{warm(p)}", f"e = wv.read({p!r}, mmap=False)\ne.embedding('w12')",
                                              r)),
            ("fasttext.load_model", measure(f"import fasttext\n{warm(p)}",
                                            f"e = fasttext.load_model({p!r})\ne.get_word_vector('w12')", r)),
            ("gensim load_facebook_model", measure(
                f"from gensim.models.fasttext import load_facebook_model\n{warm(p)}",
                f"e = load_facebook_model({p!r})\ne.wv['w12']", 1)),
        ]
        print(table(f"open {Path(p).name}", rows, "wvformats read (mmap)"))
    if "oov" in parts:
        wf = DATA / "ft-oov.json"
        wf.write_text(json.dumps(unknown_words()))
        words = f"import json\nws = json.load(open({str(wf)!r}))"
        rows = [
            ("wvformats embedding_batch", measure(
                f"{SETUP}\n{words}\ne = wv.read({p!r}, mmap=False)\ne.embedding_batch(ws[:100])",
                "e.embedding_batch(ws)", r)),
            ("wvformats embedding() per word", measure(
                f"{SETUP}\n{words}\ne = wv.read({p!r}, mmap=False)\ne.embedding('x')",
                "[e.embedding(w) for w in ws]", r)),
            ("fasttext get_word_vector per word", measure(
                f"import fasttext\n{words}\ne = fasttext.load_model({p!r})",
                "[e.get_word_vector(w) for w in ws]", r)),
        ]
        print(table(f"OOV lookups in {Path(p).name}: 10000 random unknown words", rows, "wvformats embedding_batch"))
    if "predict" in parts:
        s = str(generate_supervised(args.words // 10, args.dim // 2, args.bucket // 10))
        lf = DATA / "ft-lines.json"
        lf.write_text(json.dumps(lines(args.words // 10, args.words // 10)))
        load = f"import json\nls = json.load(open({str(lf)!r}))"
        rows = [
            ("wvformats predict (batched)", measure(f"{SETUP}\n{load}\ne = wv.read({s!r})\ne.predict(ls[:10])",
                                                    "e.predict(ls)", r)),
            ("wvformats predict per line", measure(f"{SETUP}\n{load}\ne = wv.read({s!r})\ne.predict(ls[0])",
                                                   "[e.predict(t) for t in ls]", r)),
            ("fasttext predict per line", measure(f"import fasttext\n{load}\ne = fasttext.load_model({s!r})",
                                                  "[e.predict(t) for t in ls]", r)),
            ("fasttext predict (list)", measure(f"import fasttext\n{load}\ne = fasttext.load_model({s!r})",
                                                "e.predict(ls)", r)),
        ]
        print(table(f"predict 10000 lines, {Path(s).name} (quantized, softmax, bigrams)", rows,
                    "wvformats predict (batched)"))


if __name__ == "__main__":
    main()
