"""fastText: wvformats vs the fasttext module (C++) and gensim's load_facebook_model, and the raw-read floor.

    python3 benchmarks/bench_fasttext.py [--words 200000] [--dim 100] [--bucket 2000000]
    python3 benchmarks/bench_fasttext.py --parts lookups   # one word a call: gensim's lee_fasttext_new.bin
                                                           # and a generated cc.en.300.bin-shaped model

The issue's size is the default: an unsupervised skipgram model of 200k words x 100 dims with 2M buckets
(an 0.9 GB file), and a supervised, product-quantized one (softmax over 50 labels, word bigrams) for
predict. Both are synthetic (random rows) and written by wvformats; the peer reads them as its own.
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import floor_read, measure, measure_turns, paired_ratio, summary, table, warm  # noqa: E402

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
    ap.add_argument("--repeat", type=int, default=5, help="turns (gensim: one)")
    ap.add_argument("--parts", default="open,oov,predict", help="which measurements, comma-separated (and "
                    "lookups: per call, on lee_fasttext_new.bin and a generated cc.en.300-shaped model)")
    ap.add_argument("--calls", type=int, default=2000, help="lookups: calls per row")
    ap.add_argument("--models", default="lee,cc300", help="lookups: which models (lee: gensim's "
                    "lee_fasttext_new.bin; cc300: 200k words x 300 dims, 2M buckets, generated)")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if "lookups" in parts:
        lookups_part(args.calls, args.repeat, args.models.split(","))
    if not parts & {"open", "oov", "predict"}:
        return
    p = str(generate(args.words, args.dim, args.bucket))
    if "open" in parts:
        open_part(p, args.repeat)
    if "oov" in parts:
        oov_part(p, args.repeat)
    if "predict" in parts:
        predict_part(args.words, args.dim, args.bucket, args.repeat)


def open_part(p: str, r: int) -> None:
    """Open the model ready for lookups (one word looked up after the open: the peers have read everything
    by then); the floor and the readers in turn, so that each ratio is of trials under the same load."""
    floor_setup, floor_timed = floor_read(p)
    look = "e.embedding('w12')"
    turns = measure_turns([
        ("floor: read the file into memory", f"{warm(p)}\n{floor_setup}", floor_timed),
        ("wvformats read (mmap)", f"{SETUP}\n{warm(p)}", f"e = wv.read({p!r}, mmap=True)\n{look}"),
        ("wvformats read (copy)", f"{SETUP}\n{warm(p)}", f"e = wv.read({p!r}, mmap=False)\n{look}"),
        ("fasttext.load_model", f"import fasttext\n{warm(p)}",
         f"e = fasttext.load_model({p!r})\ne.get_word_vector('w12')"),
    ], r)
    # gensim takes 15-50 s: one turn, paired with one mmap open
    turns.update(measure_turns([
        ("wvformats read (mmap), beside gensim", f"{SETUP}\n{warm(p)}", f"e = wv.read({p!r}, mmap=True)\n{look}"),
        ("gensim load_facebook_model", f"from gensim.models.fasttext import load_facebook_model\n{warm(p)}",
         f"e = load_facebook_model({p!r})\ne.wv['w12']"),
    ], 1))
    rows = [(name, summary(runs)) for name, runs in turns.items()]
    baseline = measure(SETUP, "pass", r)
    rows.insert(1, ("python + imports only (baseline)", baseline))
    # (gensim's row: its one trial over the floor's median, not paired)
    print(table(f"open {Path(p).name}", rows, "floor: read the file into memory",
                {name: runs for name, runs in turns.items() if len(runs) == r}))
    mmap, size = dict(rows)["wvformats read (mmap)"], Path(p).stat().st_size / 2**20
    in_file, objects = vocabulary_size(p)
    over = mmap["maxrss_mb"] - baseline["maxrss_mb"]
    ratios = {
        "fasttext.load_model / wvformats mmap (paired)": paired_ratio(turns["fasttext.load_model"],
                                                                      turns["wvformats read (mmap)"]),
        "gensim / wvformats mmap (one turn)": paired_ratio(turns["gensim load_facebook_model"],
                                                           turns["wvformats read (mmap), beside gensim"]),
        "wvformats copy / floor (paired)": paired_ratio(turns["wvformats read (copy)"], turns[rows[0][0]]),
    }
    for name, x in ratios.items():
        print(f"- {name}: {x:.2f}x")
    copy_peak = dict(rows)["wvformats read (copy)"]["maxrss_mb"]
    print(f"- copy peak RSS / file: {copy_peak / size:.2f}x ({copy_peak:.0f} MB / {size:.0f} MB)")
    print(f"- mmap open: peak RSS {mmap['maxrss_mb']:.0f} MB, {over:.0f} MB over python + imports; the vocabulary "
          f"is {in_file:.1f} MB in the file and {objects:.1f} MB as Python objects (its str in a list and a "
          f"str -> index dict with its ints): {over / in_file:.1f}x the first, {over / objects:.1f}x the second\n")


def vocabulary_size(p: str) -> tuple[float, float]:
    """The dictionary's MB in the file (its header and entries: bytes, NUL, i64 count, i8 type) and as the
    least a Python reader holds: the words as str, in a list and a str -> index dict with its int values
    (those past 256 are objects of their own)."""
    import wvformats as wv

    m = wv.read(p, mmap=True)
    words = list(m.words)
    index = dict(zip(words, range(len(words)), strict=True))
    in_file = 28 + sum(len(w.encode("utf-8", "surrogateescape")) + 10 for w in words)
    objects = (sum(map(sys.getsizeof, words)) + sys.getsizeof(words) + sys.getsizeof(index)
               + sum(map(sys.getsizeof, range(257, len(words)))))
    return in_file / 2**20, objects / 2**20


def oov_part(p: str, r: int) -> None:
    wf = DATA / "ft-oov.json"
    wf.write_text(json.dumps(unknown_words()))
    words = f"import json\nws = json.load(open({str(wf)!r}))"
    turns = measure_turns([
        ("wvformats embedding_batch", f"{SETUP}\n{words}\ne = wv.read({p!r}, mmap=False)\ne.embedding_batch(ws[:100])",
         "e.embedding_batch(ws)"),
        ("wvformats embedding() per word", f"{SETUP}\n{words}\ne = wv.read({p!r}, mmap=False)\ne.embedding('x')",
         "[e.embedding(w) for w in ws]"),
        ("fasttext get_word_vector per word", f"import fasttext\n{words}\ne = fasttext.load_model({p!r})",
         "[e.get_word_vector(w) for w in ws]"),
    ], r)
    rows = [(name, summary(runs)) for name, runs in turns.items()]
    print(table(f"OOV lookups in {Path(p).name}: 10000 random unknown words", rows, "wvformats embedding_batch",
                turns))
    print(f"- throughput of embedding_batch / the peer's loop: "
          f"{paired_ratio(turns['fasttext get_word_vector per word'], turns['wvformats embedding_batch']):.2f}x "
          f"(paired, median)\n")


# -- one word a call ---------------------------------------------------------------------------------------------

_PER_CALL = r"""
import json, re, statistics, sys, time
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
{open}
t2 = time.perf_counter()
hwm = int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024
out = {{"import_s": t1 - t0, "open_s": t2 - t1, "open_peak_mb": hwm}}
for kind in ("known", "unknown"):
    words, times, clock = json.load(open({words!r}))[kind], [], time.perf_counter
    for w in words:  # each call timed alone (perf_counter's own cost, ~0.1 us, is in every row alike)
        a = clock()
        {call}
        times.append(clock() - a)
    us = sorted(t * 1e6 for t in times)
    out[kind] = {{"median_us": statistics.median(us), "mean_us": statistics.fmean(us),
                 "p90_us": us[int(0.9 * len(us))], "first_us": times[0] * 1e6, "calls": len(us)}}
status = open("/proc/self/status").read()
out["end_peak_mb"], out["end_anon_mb"] = (int(re.search(rf"{{k}}:\s+(\d+)", status).group(1)) / 1024
                                          for k in ("VmHWM", "RssAnon"))
print(json.dumps(out))
"""

# (reader, imports, open, call): one fresh process each, the same words in the same order
_READERS = [
    ("wvformats embedding(w)", "import wvformats as wv\nwv.formats()", "e = wv.read({p!r}, mmap=True)",
     "e.embedding(w)"),
    ("wvformats m[w]", "import wvformats as wv\nwv.formats()", "e = wv.read({p!r}, mmap=True)", "e[w]"),
    ("gensim get_vector(w)", "from gensim.models.fasttext import load_facebook_model",
     "e = load_facebook_model({p!r}).wv", "e.get_vector(w)"),
    ("fasttext get_word_vector(w)", "import fasttext", "e = fasttext.load_model({p!r})", "e.get_word_vector(w)"),
]


def lee_model() -> Path:
    from gensim.test.utils import datapath

    return Path(datapath("lee_fasttext_new.bin"))


def lookup_words(p: Path, calls: int) -> Path:
    """``calls`` words of the vocabulary drawn at random (uniformly, with repeats: the worst case for a table
    kept a chunk at a time) and ``calls`` unknown words (random letters, some with a non-ASCII letter)."""
    import wvformats as wv

    words = wv.read(p).words
    rng = np.random.default_rng(4)
    known = [words[i] for i in rng.integers(0, len(words), calls).tolist()]
    vocab = set(words)
    unknown = [w for w in unknown_words(2 * calls) if w not in vocab][:calls]
    out = DATA / f"lookup-words-{p.stem}.json"
    DATA.mkdir(exist_ok=True)
    out.write_text(json.dumps({"known": known, "unknown": unknown}))
    return out


def per_call(p: Path, words: Path, imports: str, open_: str, call: str) -> dict:
    code = _PER_CALL.format(imports=imports, open=open_.format(p=str(p)), words=str(words), call=call)
    out = subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "trial failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def lookups_part(calls: int, r: int, models: list[str]) -> None:
    """One word a call, as users call it in a loop: per-call median, mean and 90th percentile of ``calls``
    calls after the open (fresh processes; the import and open timed apart), words of the vocabulary and
    unknown words, on gensim's lee_fasttext_new.bin (``r`` turns) and a generated model of cc.en.300.bin's
    shape (300 dims, 2M buckets, 200k words; at most 3 turns: gensim takes a minute and 5.7 GB to load it)."""
    import statistics

    chosen = {"lee": lambda: (lee_model(), r), "cc300": lambda: (generate(200_000, 300, 2_000_000), min(r, 3))}
    for p, turns in (chosen[m]() for m in models):
        words = lookup_words(p, calls)
        runs: dict[str, list[dict]] = {name: [] for name, *_ in _READERS}
        for _ in range(turns):
            for name, imports, open_, call in _READERS:
                runs[name].append(per_call(p, words, imports, open_, call))

        def med(name: str, kind: str, key: str, runs: dict = runs) -> float:
            return statistics.median(t[kind][key] if kind else t[key] for t in runs[name])

        print(f"### one word a call, {p.name}: {calls} calls a row, median of {turns} fresh process(es)\n")
        print("| reader | import s | open s | open peak MB | after the calls: peak MB | anonymous MB | known: median us "
              "| mean us | p90 us | unknown: median us | mean us | p90 us |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name in runs:
            print(f"| {name} | {med(name, '', 'import_s'):.2f} | {med(name, '', 'open_s'):.3f} | "
                  f"{med(name, '', 'open_peak_mb'):.0f} | {med(name, '', 'end_peak_mb'):.0f} | "
                  f"{med(name, '', 'end_anon_mb'):.0f} | "
                  + " | ".join(f"{med(name, kind, key):.2f}" for kind in ("known", "unknown")
                               for key in ("median_us", "mean_us", "p90_us")) + " |")
        ours = "wvformats embedding(w)"
        gensim, peer = "gensim get_vector(w)", "fasttext get_word_vector(w)"
        print(f"\n- known words, median per call: embedding(w) / gensim get_vector "
              f"{med(ours, 'known', 'median_us') / med(gensim, 'known', 'median_us'):.2f}x, m[w] / gensim "
              f"{med('wvformats m[w]', 'known', 'median_us') / med(gensim, 'known', 'median_us'):.2f}x (target <= 2x)")
        print(f"- unknown words, median per call: embedding(w) / gensim "
              f"{med(ours, 'unknown', 'median_us') / med(gensim, 'unknown', 'median_us'):.2f}x (target <= 1x), / fasttext "
              f"{med(ours, 'unknown', 'median_us') / med(peer, 'unknown', 'median_us'):.2f}x (target <= 4x)")
        print(f"- open: fasttext.load_model / wvformats mmap read {med(peer, '', 'open_s') / med(ours, '', 'open_s'):.1f}x\n")


def predict_part(n: int, dim: int, bucket: int, r: int) -> None:
    s = str(generate_supervised(n // 10, dim // 2, bucket // 10))
    lf = DATA / "ft-lines.json"
    lf.write_text(json.dumps(lines(n // 10, n // 10)))
    load = f"import json\nls = json.load(open({str(lf)!r}))"
    peer = f"import fasttext\n{load}\ne = fasttext.load_model({s!r})"
    turns = measure_turns([
        ("wvformats predict (batched)", f"{SETUP}\n{load}\ne = wv.read({s!r})\ne.predict(ls[:10])", "e.predict(ls)"),
        ("wvformats predict per line", f"{SETUP}\n{load}\ne = wv.read({s!r})\ne.predict(ls[0])",
         "[e.predict(t) for t in ls]"),
        ("fasttext predict per line", peer, "[e.predict(t) for t in ls]"),
        ("fasttext predict (list)", peer, "e.predict(ls)"),
    ], r)
    rows = [(name, summary(runs)) for name, runs in turns.items()]
    print(table(f"predict 10000 lines, {Path(s).name} (quantized, softmax, bigrams)", rows,
                "wvformats predict (batched)", turns))
    ours = turns["wvformats predict (batched)"]
    print(f"- throughput of predict (batched) / the peer's: "
          f"{paired_ratio(turns['fasttext predict (list)'], ours):.2f}x its list call, "
          f"{paired_ratio(turns['fasttext predict per line'], ours):.2f}x its per-line loop (paired, medians)\n")


if __name__ == "__main__":
    main()
