"""Word-vector formats: wvformats vs word-vectors vs gensim vs the raw-read floor, in one run.

    python3 benchmarks/bench_wordvec.py [--words 400000] [--dim 100] [--repeat 3] [--text-reads | --binary-reads]
        [--python /tmp/v-default/bin/python] [--against /work/venvs/other/bin/python]

Generates a synthetic embedding (realistic word lengths, about 6% non-ASCII words) in every format under
benchmarks/data/, then times each reader in fresh processes on a warm page cache (the readers of a file in
turns, the ratios paired within a turn) and prints Markdown tables of medians, peak RSS and ratios, of the
read alone and of the read with the reader's imports counted (each trial reads the file through first, untimed,
then imports, then reads). The peers and the floor run in this interpreter; wvformats runs in
``--python`` (by default this one too): point it at a fresh venv holding only ``pip install wvformats`` to
measure the default install; ``--against`` adds the reads of the wvformats another interpreter holds (an
install of another commit) to the same turns, for a paired before/after ratio. Reads also time wvformats' pure-Python twins of its compiled word-table kernels
(``WVFORMATS_PURE_PYTHON=1``): numpy's record walks for binary files; pyarrow's parser for text files, and
numpy's (pyarrow hidden as well). Not run in CI.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import floor_read, floor_write, measure, summary, table, trial, warm  # noqa: E402

import wvformats as wv  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
SHM = Path("/dev/shm")  # a tmpfs on Linux
NON_ASCII = ["é", "ü", "ß", "ж", "д", "λ", "日", "本", "語", "한", "😀", "\u00a0", "ñ", "ø"]


def make_words(n: int, rng: np.random.Generator) -> list[str]:
    lengths = np.clip(rng.poisson(6.5, n) + 1, 1, 40)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", np.uint8)
    words, seen = [], set()
    for i, n_chars in enumerate(lengths):
        w = bytes(letters[rng.integers(0, len(letters), n_chars)]).decode()
        if rng.random() < 0.06:
            pos = int(rng.integers(0, len(w) + 1))
            w = w[:pos] + NON_ASCII[int(rng.integers(0, len(NON_ASCII)))] + w[pos:]
        w = f"{w}{i}" if w in seen else w
        seen.add(w)
        words.append(w)
    return words


def generate(n: int, dim: int) -> dict[str, Path]:
    DATA.mkdir(exist_ok=True)
    paths = {f: DATA / f"emb-{n}x{dim}.{f}" for f in ("leader", "word2vec-binary", "word2vec-text", "glove")}
    if all(p.exists() for p in paths.values()):
        return paths
    rng = np.random.default_rng(0)
    emb = wv.Embeddings(make_words(n, rng), np.round(rng.normal(0, 0.4, (n, dim)), 5).astype("<f4"))
    for fmt, p in paths.items():
        t = time.perf_counter()
        wv.write(emb, p, fmt)
        print(f"generated {p.name} ({p.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f} s",
              file=sys.stderr)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, default=400_000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-gensim-text", action="store_true", help="gensim text reads take ~40 s each")
    ap.add_argument("--text-reads", action="store_true", help="only the word2vec text and GloVe reads")
    ap.add_argument("--binary-reads", action="store_true", help="only the Leader and word2vec binary reads")
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose wvformats is measured")
    ap.add_argument("--against", help="an interpreter whose wvformats (another commit) is read beside it")
    args = ap.parse_args()
    paths = generate(args.words, args.dim)
    wvr = {"leader": "read_leader", "word2vec-binary": "read_w2v", "word2vec-text": "read_w2v_text",
           "glove": "read_glove"}
    gensim = {"word2vec-binary": "binary=True", "word2vec-text": "binary=False",
              "glove": "binary=False, no_header=True"}
    out = [f"Synthetic {args.words} x {args.dim}, median of {args.repeat} fresh-process runs, warm cache.\n"]
    ours = "import wvformats as wv\nwv.formats()\n"
    # the text parsers' twins: the same read without the compiled kernel (pyarrow's parser), and without either
    # (pyarrow out of reach: its import fails; numpy's parser)
    no_kernel = "import os\nos.environ['WVFORMATS_PURE_PYTHON'] = '1'\n" + ours
    numpy_only = "import sys\nsys.modules['pyarrow'] = None\n" + no_kernel
    for fmt, p in paths.items():
        if args.text_reads and fmt not in ("word2vec-text", "glove") or args.binary_reads and fmt not in (
                "leader", "word2vec-binary"):
            continue
        path = str(p)
        hot = warm(path)  # every trial starts with the file in the page cache
        floor_setup, floor_timed = floor_read(path)
        read = f"e = wv.read({path!r}, {fmt!r})"
        # (name, setup, timed, interpreter); the file is read through first (untimed), then the setup: the
        # imports (wv.formats() loads the codec registry, as importing a peer loads that library), timed apart:
        # the tables give the read alone and the read with the imports counted
        specs = [("floor: read the file into memory", floor_setup, floor_timed, sys.executable),
                 ("wvformats", ours, read, args.python),
                 # what a script pays: `import wvformats` (which loads no family), then a read that imports the
                 # codec of the format it finds (construct, the schema, the family)
                 ("wvformats, `import wvformats` then the read", "import wvformats as wv", read, args.python)]
        if args.against:
            specs.append(("wvformats of --against", ours, read, args.against))
        if fmt in ("leader", "word2vec-binary"):
            specs.append(("wvformats, numpy's record walk (no kernel)", no_kernel, read, args.python))
        if fmt in ("word2vec-text", "glove"):
            specs += [("wvformats, pyarrow's parser (no kernel)", no_kernel, read, args.python),
                      ("wvformats, numpy's parser (no kernel, no pyarrow)", numpy_only, read, args.python)]
        specs.append(("word-vectors", "import word_vectors as w", f"w.{wvr[fmt]}({path!r})", sys.executable))
        if fmt in gensim and not (args.skip_gensim_text and fmt != "word2vec-binary"):
            specs.append(("gensim", "from gensim.models import KeyedVectors as K",
                          f"K.load_word2vec_format({path!r}, {gensim[fmt]})", sys.executable))
        # in turns: every reader once per turn, so that the machine's load moves the rows of a turn alike; the
        # ratios are the medians of the per-turn ratios. Each read starts once the threads its imports started
        # are idle (numpy's OpenBLAS threads spin for ~0.1 s after the import, on one of this machine's two
        # cores): the read alone; the script's path row has no such wait (its read imports numpy itself)
        turns: dict[str, list[dict[str, float]] | None] = {name: [] for name, *_ in specs}
        for _ in range(args.repeat):
            for name, setup, timed, python in specs:
                try:
                    if turns[name] is not None:
                        turns[name].append(trial(setup, timed, python=python, pre=hot, idle=True))
                except RuntimeError:
                    turns[name] = None  # (word-vectors fails on some files)
        rows = [(name, summary(runs) if runs else None) for name, runs in turns.items()]
        size = p.stat().st_size / 1e6
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        text = table(f"read {fmt} ({size:.0f} MB; load average {load} after the rows)", rows, "wvformats",
                     turns={name: runs for name, runs in turns.items() if runs}, imports=True)
        print(text, flush=True)
        out.append(text)
    if args.text_reads or args.binary_reads:
        (DATA / "last-run.md").write_text("\n".join(out), encoding="utf-8")
        return
    # writing: wvformats vs the raw-write floor (the same number of bytes), to this disk (fsync'd: the device's
    # time, which varies a lot on a VM, is most of it) and to a tmpfs when there is one (no device: what is
    # left is the work of making and writing the bytes, which varies far less from trial to trial)
    places = [("disk", DATA)] + [("tmpfs", SHM)] * SHM.is_dir()
    for (where, folder), fmt in itertools.product(places, ("leader", "word2vec-binary")):
        p = paths[fmt]
        dst = folder / f"wvformats-bench-out.{fmt}"
        # each trial writes a new file and starts with no dirty pages (the writeback of one trial would slow
        # the next one down)
        fresh = f"import os\nos.path.exists({str(dst)!r}) and os.unlink({str(dst)!r})\nos.sync()"
        setup = f"import wvformats as wv\ne = wv.read({str(p)!r}, {fmt!r})\n{fresh}"
        load, write = floor_write(str(p), str(dst), fsync=True)  # wv.write fsyncs by default
        rows = [("floor: write the same bytes", measure(f"{load}\n{fresh}", write, repeat=args.repeat)),
                ("wvformats write", measure(setup, f"wv.write(e, {str(dst)!r}, {fmt!r})", repeat=args.repeat))]
        text = table(f"write {fmt} ({where})", rows, "wvformats write")
        print(text, flush=True)
        out.append(text)
        os.unlink(dst)
    # writing text: wvformats vs the peers (none of them fsyncs: durable=False here) and the raw-write floor
    wvw = {"word2vec-text": "write_w2v_text", "glove": "write_glove"}
    gensim_w = {"word2vec-text": "", "glove": ", write_header=False"}
    src = str(paths["word2vec-binary"])
    for fmt in ("word2vec-text", "glove"):
        dst = str(DATA / f"out.{fmt}")
        fresh = f"import os\nos.path.exists({dst!r}) and os.unlink({dst!r})\nos.sync()"
        load, write = floor_write(str(paths[fmt]), dst)
        rows = [("floor: write the same bytes", measure(f"{load}\n{fresh}", write, repeat=args.repeat)),
                ("wvformats write", measure(f"import wvformats as wv\ne = wv.read({src!r})\n{fresh}",
                                            f"wv.write(e, {dst!r}, {fmt!r}, durable=False)", repeat=args.repeat)),
                ("word-vectors", measure(f"import word_vectors as w\nv, m = w.read_w2v({src!r})\n{fresh}",
                                         f"w.{wvw[fmt]}({dst!r}, v, m)", repeat=args.repeat)),
                ("gensim", measure(f"from gensim.models import KeyedVectors as K\n"
                                   f"kv = K.load_word2vec_format({src!r}, binary=True)\n{fresh}",
                                   f"kv.save_word2vec_format({dst!r}, binary=False{gensim_w[fmt]})",
                                   repeat=args.repeat))]
        text = table(f"write {fmt} (from a model in memory)", rows, "wvformats write")
        print(text, flush=True)
        out.append(text)
        os.unlink(dst)
    text = schema_overhead(paths, args.repeat)
    print(text, flush=True)
    out.append(text)
    (DATA / "last-run.md").write_text("\n".join(out), encoding="utf-8")


def handwritten(mm, fmt: str, at: int, n: int, dim: int) -> tuple[list[str], np.ndarray]:
    """A plain Python loop over the records of a Leader or word2vec binary table starting at byte ``at`` of
    ``mm``: what a reader without the framework looks like (no checks beyond what Python does anyway)."""
    out, words, pos, find, rb = np.empty((n, dim), np.float32), [], at, mm.find, 4 * dim
    for i in range(n):
        if fmt == "leader":
            size = int.from_bytes(mm[pos : pos + 4], "little")
            words.append(mm[pos + 4 : pos + 4 + size].decode("utf-8"))
            pos += 4 + size
        else:
            while mm[pos] == 10:
                pos += 1
            sp = find(b" ", pos)
            words.append(mm[pos:sp].decode("utf-8"))
            pos = sp + 1
        out[i] = np.frombuffer(mm, "<f4", dim, pos)
        pos += rb
    return words, out


def _schema_setup(fmt: str, path: str) -> str:
    """Setup code of the schema-overhead trials: ``mm`` (the file mapped), ``schema`` (compiled ahead),
    ``table`` (the records construct for the header's counts) and ``at`` (where the records start)."""
    here = str(Path(__file__).resolve().parent)
    setup = (f"import mmap, sys\nsys.path.insert(0, {here!r})\nimport construct as cs\nimport wvformats as wv\n"
             "from wvformats import framework, registry\nfrom wvformats.framework import LeaderRecords, "
             "Word2VecRecords\nfrom bench_wordvec import handwritten\nwv.formats()\n"
             f"f = open({path!r}, 'rb')\nmm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\n"
             f"schema = registry.get({fmt!r}).schema\nframework.compiled(schema)\n")
    if fmt == "leader":
        return setup + ("n, dim = int.from_bytes(mm[8:16], 'little'), int.from_bytes(mm[16:24], 'little')\n"
                        "table, at = LeaderRecords(n, dim), 24\n")
    return setup + ("at = mm.find(b'\\n') + 1\nn, dim = map(int, mm[: at - 1].split())\n"
                    "table = Word2VecRecords(n, dim)\n")


def schema_overhead(paths: dict[str, Path], repeat: int) -> str:
    """What the schema around a record table costs: the big file parsed through the format's schema and by
    the table construct alone (on the bytes after the header), beside a plain hand-written Python loop over
    the records (fresh processes, the file mapped, no model built); and, in-process, the same two parses of
    a one-record file, whose difference is the schema's own cost per file (construct's Struct, the header
    fields, the trailer, the error translation), interpreted and compiled."""
    import tempfile
    import timeit

    lines = ["### schema-driven parsing against the table construct alone and a hand-written loop", "",
             "| table | through the schema s | table construct alone s | hand-written loop s | schema's own "
             "cost per file, interpreted / compiled |", "|---|---|---|---|---|"]
    for fmt in ("leader", "word2vec-binary"):
        path = str(paths[fmt])
        setup = _schema_setup(fmt, path) + warm(path)
        timed = [f"framework.parse(schema, mm, format={fmt!r}, compile=True)",
                 "s = framework.BufferStream(mm)\ns.seek(at)\ntable._parse(s, cs.Container(), 'records')",
                 f"handwritten(mm, {fmt!r}, at, n, dim)"]
        cells = [f"{measure(setup, t, repeat=repeat)['seconds']:.3f}" for t in timed]
        with tempfile.TemporaryDirectory() as tmp:
            tiny = str(Path(tmp) / f"one.{fmt}")
            wv.write(wv.Embeddings(["word"], np.ones((1, 100), np.float32)), tiny, fmt)
            scope: dict = {}
            exec(_schema_setup(fmt, tiny), scope)
            alone = min(timeit.repeat("s = framework.BufferStream(mm)\ns.seek(at)\n"
                                      "table._parse(s, cs.Container(), 'records')", globals=scope, number=2000))
            costs = [min(timeit.repeat(f"framework.parse(schema, mm, format={fmt!r}, compile={c})", globals=scope,
                                       number=2000)) - alone for c in (False, True)]
            scope["mm"].close()
            scope["f"].close()
        cells.append(" / ".join(f"{c / 2000 * 1e6:.0f} us" for c in costs))
        lines.append(f"| {fmt} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
