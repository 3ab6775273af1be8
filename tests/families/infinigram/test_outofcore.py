"""Out-of-core infini-gram builds (max_memory / --mem, workers, the Dask engine, resuming): the same bytes as
the in-memory build and as the real indexer, whatever the parts, the workers and the engine."""

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pydivsufsort import divsufsort
from test_infinigram import _dir, engine_counts, gpt2_tokenizer, real_indexer
from wvformats.schemas.infinigram import pointer_width

from wvformats.families.infinigram import outofcore, pointers
from wvformats.families.infinigram.build import build, build_jsonl
from wvformats.families.infinigram.index import InfiniGramIndex

# about the smallest budget the builder takes: parts of 13-16 KB, so that small corpora get many
SMALL = "46.03M"
SMALL2 = "148.06M"  # the same parts for each of 2 workers, beside the parent and the resource tracker


def _same_files(a: Path, b: Path) -> list[str]:
    names = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    return names


def _corpus(width: int, seed: int = 0) -> list[list[int]]:
    """Documents with tokens next to SEP and above 255 (byte order is not token order), two longer than a
    part, and an exact copy of one of them: its suffixes agree with the copy's far past any window."""
    rng = np.random.default_rng(seed)
    sep = (1 << (8 * width)) - 1
    alphabet = np.array(sorted({0, 1, 2, 255 % sep, 256 % sep, sep - 1}))
    docs = [alphabet[rng.integers(0, len(alphabet), int(rng.integers(0, 3000)))].tolist() for _ in range(30)]
    long = alphabet[rng.integers(0, len(alphabet), 20_000 // width)].tolist()
    docs[5] = long
    docs[17] = list(long)  # the same document again
    docs[23] = [1] * (18_000 // width)  # a run: every suffix agrees with the next for the rest of it
    return docs


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("shards", [1, 3])
def test_parts_and_merge_write_the_in_memory_bytes(width, shards):
    docs = _corpus(width, seed=width + shards)
    metas = [{"i": i} for i in range(len(docs))]
    root = Path(_dir())
    ours = build(docs, root / "ram", token_width=width, shards=shards, metadata=metas)
    parts = build(docs, root / "parts", token_width=width, shards=shards, metadata=metas, max_memory=SMALL)
    names = _same_files(ours, parts)
    assert len(names) == 6 * shards
    budget = outofcore.parse_size(SMALL)
    for s in range(shards):  # several parts in every shard, and documents longer than a part
        assert len(outofcore.plan((ours / f"tokenized.{s}").stat().st_size, width, budget)) >= 2
    assert max(map(len, docs)) * width > outofcore.part_length(budget, width)
    assert not (parts / ".wvformats-work").exists()


def test_windows_that_tie_are_ordered_from_the_corpus(tmp_path):
    """Suffixes of one part whose window text is a prefix of another's (a repeat longer than the window
    extension) are put in order by reading the corpus past the window, and the table is the one of
    libdivsufsort over the whole corpus. Without that step the order would be the window's (checked: the
    parts' pointers change)."""
    rng = np.random.default_rng(3)
    doc = rng.integers(0, 3, 3000).astype(np.uint8).tobytes()
    ds = b"\xff" + doc + b"\xff" + doc + b"\xff" + bytes(2500) + b"\xff" + doc[:1500]
    corpus = tmp_path / "c"
    corpus.write_bytes(ds)
    n, k = len(ds), pointer_width(len(ds))
    ranges = [(s, min(s + 700, n)) for s in range(0, n, 700)]
    parts = [tmp_path / f"p{i}" for i in range(len(ranges))]
    metas = [outofcore.sort_part(str(corpus), 1, k, a, b, str(p)) for (a, b), p in zip(ranges, parts, strict=True)]
    assert sum(m["reordered"] > 0 for m in metas) >= 3
    assert metas[-1]["reordered"] == 0  # the last window reaches the end of the corpus: exact
    whole = divsufsort(np.frombuffer(ds, np.uint8).copy()).tolist()
    for (a, b), p in zip(ranges, parts, strict=True):  # each part is its suffixes in the whole corpus's order
        assert pointers.decode(p.read_bytes(), k).tolist() == [x for x in whole if a <= x < b]
    outofcore.merge(str(corpus), parts, k, 48 << 20, tmp_path / "t")
    ref = build([ds[1:3001], ds[3002:6002], bytes(2500), ds[-1500:]], tmp_path / "ref", token_width=1,
                unigram=False)
    assert (tmp_path / "t").read_bytes() == (ref / "table.0").read_bytes()


def test_merge_orders_ties_across_parts_past_the_first_words(tmp_path):
    """merge_runs: suffixes of different runs that agree on 8, 24, 56 ... bytes are ordered by the bytes
    after; suffixes that end (the corpus ends) come before those that go on."""
    ds = (b"ab" * 40 + b"c") * 3 + b"ab" * 40
    corpus = tmp_path / "c"
    corpus.write_bytes(ds)
    c = outofcore.Corpus(corpus)
    everything = np.arange(len(ds))
    order = sorted(everything.tolist(), key=lambda p: ds[p:])
    runs = [np.array(sorted(everything[r::3].tolist(), key=lambda p: ds[p:])) for r in range(3)]
    assert outofcore.merge_runs(c, runs, gather=7, mem=1 << 10).tolist() == order
    c.close()


def test_the_real_engine_answers_the_same_on_a_parts_build():
    pytest.importorskip("infini_gram")
    width = 2
    docs = _corpus(width, seed=9)
    d = build(docs, _dir(), token_width=width, shards=2, max_memory=SMALL2, workers=2)
    rng = np.random.default_rng(0)
    flat = np.concatenate([np.array(x, np.int64) for x in docs if x])
    queries = [[], [65535], [1] * 50] + [flat[i : i + int(rng.integers(1, 6))].tolist()
                                         for i in rng.integers(0, len(flat) - 6, 25)]
    ix = InfiniGramIndex(d, token_width=width)
    assert [ix.count(q) for q in queries] == engine_counts(d, width, 4, queries)


def _write_jsonl(src: Path, docs: int, words: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    vocab = "the of and to in is was for on that with as by at from his her an hello world".split()
    src.mkdir(parents=True)
    for name, part in (("a.jsonl", range(0, docs, 2)), ("sub/b.jsonl", range(1, docs, 2))):
        (src / name).parent.mkdir(exist_ok=True)
        with open(src / name, "w") as f:
            for i in part:
                n = words * 6 if i == 3 else int(rng.integers(0, words))  # one document longer than a part
                f.write(json.dumps({"text": " ".join(rng.choice(vocab, n)), "id": i}) + "\n")


@pytest.mark.parametrize("width", [1, 2])
def test_byte_identical_to_the_real_indexer_in_parts(width, gpt2_cache):
    """The real indexer sorts in parts too when it has several cpus (`--cpus 2`: two parts and its own
    merge, each part over 100 KB so that its hack window holds): its files equal our build under a small
    budget (many parts, 2 workers), u8 raw bytes and u16 through the GPT-2 tokenizer, 2 shards."""
    root = Path(_dir())
    _write_jsonl(root / "src", 100, 3000 if width == 1 else 2400, seed=width)
    theirs = real_indexer(root / "src", root / "theirs", width, 4, 2, gpt2_cache, cpus=2)
    tokenize = gpt2_tokenizer(gpt2_cache).encode if width == 2 else None
    ours = build_jsonl(root / "src", root / "ours", token_width=width, shards=2, tokenize=tokenize,
                       max_memory=SMALL2, workers=2)
    for s in range(2):  # (its parts must be over 100 KB, else its table is corrupt: bug 2 of the notes)
        size = (ours / f"tokenized.{s}").stat().st_size
        share = outofcore.task_budget(outofcore.parse_size(SMALL2), 2)
        assert size > 2 * 100_000 and len(outofcore.plan(size, width, share)) > 2
    assert len(_same_files(theirs, ours)) == 12


def test_a_local_dask_cluster_writes_the_same_bytes():
    distributed = pytest.importorskip("distributed")
    docs = _corpus(2, seed=5)
    root = Path(_dir())
    ours = build(docs, root / "ram", token_width=2, shards=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  dashboard_address=":0") as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        cl = build(docs, root / "dask", token_width=2, shards=2, max_memory=SMALL, engine="dask",
                   scheduler=cluster.scheduler_address)
    _same_files(ours, cl)


def test_options_are_checked_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="too small"):
        build([[1, 2]], tmp_path / "a", max_memory="1M")
    # 2 workers, their parent and multiprocessing's resource tracker: 4 interpreters, room for a part in each worker
    with pytest.raises(ValueError, match=r"too small for a parent and 2 workers: .* at least 148\.0 MiB"):
        build([[1, 2]], tmp_path / "a", max_memory="113M", workers=2)
    with pytest.raises(ValueError, match="not a memory size"):
        build([[1, 2]], tmp_path / "a", max_memory="lots")
    with pytest.raises(ValueError, match="scheduler"):
        build([[1, 2]], tmp_path / "a", engine="dask")
    with pytest.raises(ValueError, match="engine"):
        build([[1, 2]], tmp_path / "a", engine="spark", scheduler="x")
    assert not (tmp_path / "a").exists()
    assert outofcore.parse_size("1.5G") == 3 << 29 and outofcore.parse_size("400MiB") == 400 << 20


def _parts(lines, how):
    """(shard, part) of the progress lines that say a part was sorted / reused."""
    return {m.groups() for line in lines if (m := re.search(rf"shard (\d+): part (\d+)/\d+ {how}", line))}


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_then_resume_same_bytes_no_finished_part_redone(tmp_path, workers):
    """`wvformats infinigram build --mem` stopped by SIGTERM while it sorts parts, then run again: the
    second run reports every part the first one finished as reused (and sorts only the rest), and the
    index equals the in-memory build."""
    src = tmp_path / "src"
    _write_jsonl(src, 40, 4000, seed=7)
    out = tmp_path / "idx"
    cmd = [sys.executable, "-m", "wvformats.cli", "infinigram", "build", str(src), str(out), "--mem",
           "46.1M" if workers == 1 else "148.2M", "--shards", "2", "--workers", str(workers)]
    first = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in first.stderr:  # stop it once some parts are finished
        lines.append(line)
        if len(_parts(lines, r"(?:sorted(?: early)? \[|rewritten)")) >= 3:
            first.send_signal(signal.SIGTERM)
            break
    _, rest = first.communicate(timeout=120)
    lines += rest.splitlines()
    assert first.returncode == 128 + signal.SIGTERM, "".join(lines)[-2000:]
    assert not out.exists() and (tmp_path / ".idx.partial" / ".wvformats-work").is_dir()
    done = r"(?:sorted(?: early)? \[|rewritten)"  # (a part sorted early with another pointer width is rewritten)
    finished = _parts(lines, done)
    second = subprocess.run(cmd, stderr=subprocess.PIPE, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    again, reused = _parts(second.stderr.splitlines(), done), _parts(second.stderr.splitlines(), "reused")
    assert finished and finished <= reused and not finished & again
    assert len(reused | again) == len(_parts(second.stderr.splitlines(), rf"(?:{done}|reused)")) > len(finished)
    assert not (tmp_path / ".idx.partial").exists()
    ref = build_jsonl(src, tmp_path / "ref", shards=2)
    _same_files(ref, out)


def test_resume_rechecks_what_it_reuses(tmp_path):
    """A finished part is reused only while its record matches: a changed file (CRC) or other parameters
    mean it is sorted again, not trusted."""
    corpus = tmp_path / "c"
    corpus.write_bytes(np.random.default_rng(2).integers(0, 4, 200_000).astype(np.uint8).tobytes())
    part = tmp_path / "p"
    first = outofcore.sort_part(str(corpus), 1, 3, 50_000, 100_000, str(part))
    assert not first.get("reused")
    assert outofcore.sort_part(str(corpus), 1, 3, 50_000, 100_000, str(part)).get("reused")
    raw = bytearray(part.read_bytes())
    raw[0] ^= 1
    part.write_bytes(bytes(raw))
    again = outofcore.sort_part(str(corpus), 1, 3, 50_000, 100_000, str(part))
    assert not again.get("reused") and again["crc32"] == first["crc32"]
    aux = outofcore.aux_path(part)  # each suffix's LCP and the bytes after it, which the merge orders by
    assert aux.stat().st_size == outofcore.AUX_SIZE * part.stat().st_size // 3
    raw = bytearray(aux.read_bytes())
    raw[-1] ^= 1
    aux.write_bytes(bytes(raw))
    assert not outofcore.sort_part(str(corpus), 1, 3, 50_000, 100_000, str(part)).get("reused")
    assert not outofcore.sort_part(str(corpus), 1, 3, 50_000, 90_000, str(part)).get("reused")


def _maps_of(path: Path) -> list[str]:
    return [line for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(str(path))]


def test_the_merge_reads_the_corpus_without_mapping_it(tmp_path):
    """The corpus is read by pread, never memory-mapped: a mapped file's pages count in the resident set,
    and Linux 6.x maps a whole large folio (0.1-0.7 MB measured) at each fault, so random reads over a
    mapped corpus put its pages in the process faster than any drop could (the merge of a 200 MB corpus
    peaked 14 MB over its budget)."""
    ds = np.random.default_rng(4).integers(0, 4, 300_000).astype(np.uint8).tobytes()
    corpus = tmp_path / "c"
    corpus.write_bytes(ds)
    c = outofcore.Corpus(corpus)
    pos = np.random.default_rng(5).integers(0, len(ds), 2000)
    cols, lens = c.keys(pos, 3, 2, 1 << 12)
    assert not _maps_of(corpus)
    want = np.zeros((len(pos), 16), np.uint8)
    for i, p in enumerate(pos.tolist()):
        chunk = ds[p + 3 : p + 19]
        want[i, : len(chunk)] = np.frombuffer(chunk, np.uint8)
        assert lens[i] == len(chunk)
    assert (cols.view(np.uint8) == want).all()
    assert c.cmp(10, 20) == (-1 if ds[10:] < ds[20:] else 1)
    c.close()


def test_a_comparison_against_a_splitters_first_bytes_is_the_corpus_order(tmp_path):
    """Corpus.cmp_head (a binary search's comparison, the splitter's first HEAD bytes read once) orders every pair as
    Corpus.cmp does: pairs decided in those bytes, pairs tied past them (long repeats), suffixes that end within
    them, a suffix against itself."""
    ds = _repetitive(20_000, 3)
    corpus = tmp_path / "c"
    corpus.write_bytes(ds)
    c = outofcore.Corpus(corpus)
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, len(ds), (3000, 2)).tolist() + [[len(ds) - 3, len(ds) - 40], [len(ds) - 1, 5], [7, 7]]
    pairs += [[i, i + 3] for i in range(len(ds) // 2 - 20, len(ds) // 2 + 400, 37)]  # (in the run of 700 ones)
    for x, y in pairs:
        head = ds[y : y + outofcore.HEAD]
        assert c.cmp_head(x, y, head) == c.cmp(x, y) == (ds[x:] > ds[y:]) - (ds[x:] < ds[y:]), (x, y)
    c.close()


def _sorted_parts(tmp_path, ds, length):
    corpus = tmp_path / "c"
    corpus.write_bytes(ds)
    n, k = len(ds), pointer_width(len(ds))
    ranges = [(s, min(s + length, n)) for s in range(0, n, length)]
    parts = [str(tmp_path / f"p{i}") for i in range(len(ranges))]
    for (a, b), p in zip(ranges, parts, strict=True):
        outofcore.sort_part(str(corpus), 1, k, a, b, p)
    return str(corpus), ranges, parts, k


@pytest.mark.parametrize("pieces", [2, 3, 7])
def test_a_merge_split_into_ranges_writes_the_same_table(tmp_path, pieces):
    """A shard's merge split by key ranges (splitters sampled from the parts; each range written at its
    offset of the table, as the workers of `--workers N` do): the same bytes as one merge, and every range
    holds suffixes (none is empty on this corpus)."""
    rng = np.random.default_rng(6)
    doc = rng.integers(0, 3, 2000).astype(np.uint8).tobytes()
    ds = b"\xff" + doc + b"\xff" + rng.integers(0, 5, 9000).astype(np.uint8).tobytes() + b"\xff" + doc
    corpus, ranges, parts, k = _sorted_parts(tmp_path, ds, 1500)
    bounds = outofcore.split(corpus, parts, k, pieces)
    assert len(bounds) == pieces + 1 and all(sum(a) < sum(b) for a, b in zip(bounds, bounds[1:], strict=False))
    one = tmp_path / "one"
    outofcore.merge(corpus, [Path(p) for p in parts], k, 40 << 20, one)
    split = tmp_path / "split"
    outofcore.merge(corpus, [Path(p) for p in parts], k, 40 << 20, split, pieces=pieces)
    ref = build([ds[1:2001], ds[2002:11002], ds[11003:]], tmp_path / "ref", token_width=1, unigram=False)
    assert one.read_bytes() == split.read_bytes() == (ref / "table.0").read_bytes()


def test_the_ranges_of_a_split_merge_are_even_over_many_parts_alike(tmp_path):
    """Parts alike in content (one random text cut in 81 parts) split into ranges of even counts: on one grid of
    samples a splitter falls at the same offset between two samples of every part and those errors add up (the
    first range held 18% more than the others here, a third of a range more at 64 MiB in 77 parts); each part's
    samples shifted by a fraction of a step, they cancel."""
    ds = b"\xff" + np.random.default_rng(9).integers(0, 6, 400_000).astype(np.uint8).tobytes()
    corpus, ranges, parts, k = _sorted_parts(tmp_path, ds, 5000)
    for pieces in (3, 7, 16):
        sizes = np.diff([sum(b) for b in outofcore.split(corpus, parts, k, pieces)])
        assert np.abs(sizes / (len(ds) / pieces) - 1).max() < 0.05, (pieces, sizes)


def test_the_last_ranges_of_a_split_merge_halve_and_the_table_is_the_same(tmp_path):
    """With ``taper``, the last ranges of a split merge halve in size one after the other (the last two equal), so
    that the range a worker merges alone at the end is small; the table is the same bytes."""
    assert outofcore.range_shares(6, 4) == [1, 1, 0.5, 0.25, 0.125, 0.125]
    assert outofcore.range_shares(3, 0) == [1, 1, 1] and outofcore.range_shares(2, 5) == [1, 0.5]
    ds = b"\xff" + np.random.default_rng(9).integers(0, 6, 200_000).astype(np.uint8).tobytes()
    corpus, ranges, parts, k = _sorted_parts(tmp_path, ds, 30_000)
    table = str(tmp_path / "table")
    bounds = outofcore.prepare_merge(corpus, parts, ranges, 1, k, 8, table, 4)
    sizes = [sum(b) - sum(a) for a, b in zip(bounds, bounds[1:], strict=False)]
    want = np.array(outofcore.range_shares(8, 4)) / sum(outofcore.range_shares(8, 4)) * len(ds)
    assert np.allclose(sizes, want, rtol=0.2), (sizes, want.round())
    for j in range(len(bounds) - 1):
        outofcore.merge_piece(corpus, parts, k, 48 << 20, table + ".merging", j, bounds, punch=True)
    outofcore.seal_table(corpus, parts, k, table)
    ref = build([ds[1:]], tmp_path / "ref", token_width=1, unigram=False)
    assert Path(table).read_bytes() == (ref / "table.0").read_bytes()


def test_a_finished_merge_range_is_reused_only_while_its_bytes_hold(tmp_path):
    ds = b"\xff" + np.random.default_rng(8).integers(0, 4, 40_000).astype(np.uint8).tobytes()
    corpus, ranges, parts, k = _sorted_parts(tmp_path, ds, 7000)
    table = str(tmp_path / "table")
    bounds = outofcore.prepare_merge(corpus, parts, ranges, 1, k, 2, table)
    merging = table + ".merging"
    assert not outofcore.merge_piece(corpus, parts, k, 40 << 20, merging, 1, bounds).get("reused")
    assert outofcore.merge_piece(corpus, parts, k, 40 << 20, merging, 1, bounds).get("reused")
    raw = bytearray(Path(merging).read_bytes())
    at = sum(bounds[1]) * k
    raw[at] ^= 1
    Path(merging).write_bytes(bytes(raw))
    assert not outofcore.merge_piece(corpus, parts, k, 40 << 20, merging, 1, bounds).get("reused")
    assert outofcore.prepare_merge(corpus, parts, ranges, 1, k, 2, table) == bounds  # the file is kept
    assert outofcore.merge_piece(corpus, parts, k, 40 << 20, merging, 1, bounds).get("reused")
    outofcore.merge_piece(corpus, parts, k, 40 << 20, merging, 0, bounds)
    outofcore.seal_table(corpus, parts, k, table)
    ref = build([ds[1:]], tmp_path / "ref", token_width=1, unigram=False)
    assert Path(table).read_bytes() == (ref / "table.0").read_bytes()


def test_two_workers_merge_one_shard_in_ranges(capsys):
    """`--workers 2` on a single shard: its merge runs as 16 ranges (8 per worker: equal counts of
    suffixes are not equal work, and the last range runs alone) and the index is the in-memory build's."""
    docs = _corpus(2, seed=11)
    root = Path(_dir())
    ours = build(docs, root / "ram", token_width=2)
    par = build(docs, root / "par", token_width=2, max_memory=SMALL2, workers=2, progress_bar=True)
    err = capsys.readouterr().err
    assert {int(m) for m in re.findall(r"merge range (\d+) done", err)} == set(range(1, 17))
    _same_files(ours, par)


def _repetitive(n: int, seed: int) -> bytes:
    """Bytes with long repeats: a few documents copied many times over a small alphabet, and a run."""
    rng = np.random.default_rng(seed)
    docs = [rng.integers(0, 4, int(rng.integers(50, 400))).astype(np.uint8).tobytes() for _ in range(5)]
    out = bytearray()
    while len(out) < n:
        out += b"\xff" + (docs[int(rng.integers(0, 5))] if rng.random() < 0.6 else
                          rng.integers(0, 4, int(rng.integers(1, 300))).astype(np.uint8).tobytes())
    out[n // 2 : n // 2 + 700] = b"\x01" * 700
    return bytes(out[:n])


@pytest.mark.skipif(outofcore._K is None, reason="compares the kernel with its twin")
@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("at_end", [False, True])
def test_the_records_kernel_is_its_twin(width, at_end):
    """_kernel.part_records and outofcore.records: the same pointers, records and undecided pairs, on windows
    with repeats longer than the window (pairs it cannot decide), from the part's start and from a chunk's."""
    from pydivsufsort import divsufsort as dss

    ds = _repetitive(5800, seed=width)
    ds += ds[1000:1200]  # the window ends inside a repeat
    win = np.frombuffer(ds, np.uint8).copy()
    sa = dss(win)
    pos = sa[(sa % width == 0) & (sa < 5900)].astype(np.int32)  # (a window of 100 bytes past the part)
    for lo, prev in ((0, -1), (100, int(pos[99]))):
        c = pos[lo:]
        ties = outofcore._K.part_records(win, c, 1000, 3, at_end, ptr := bytearray(len(c) * 3),
                                         aux := bytearray(len(c) * outofcore.AUX_SIZE), prev)
        assert (ties, bytes(ptr), bytes(aux)) == outofcore.records(win, c, 1000, 3, at_end, prev)
        assert bool(ties) is not at_end
        lcps = np.frombuffer(bytes(aux), np.uint8).reshape(-1, outofcore.AUX_SIZE)[:, :2].copy().view("<u2")
        assert bool((lcps == outofcore.LCP_UNKNOWN).any()) is not at_end and (lcps < 64).any()


@pytest.mark.skipif(outofcore._K is None, reason="compares the kernel with its twin")
@pytest.mark.parametrize("width", [1, 2])
def test_the_merge_kernel_is_its_twin(tmp_path, monkeypatch, width):
    """The loser tree of _kernel.merge and the batch merge of the twin write the same table, libdivsufsort's
    order of the whole corpus, from parts with ties past every tail, pieces of two ranges included."""
    from pydivsufsort import divsufsort as dss

    ds = _repetitive(30_000, seed=5)
    corpus, ranges, parts, k = _sorted_parts(tmp_path, ds, 4000) if width == 1 else (None, None, None, None)
    if width == 2:
        corpus = tmp_path / "c"
        corpus.write_bytes(ds)
        k = pointer_width(len(ds))
        ranges = [(s, min(s + 4000, len(ds))) for s in range(0, len(ds), 4000)]
        parts = [str(tmp_path / f"p{i}") for i in range(len(ranges))]
        for (a, b), p in zip(ranges, parts, strict=True):
            outofcore.sort_part(str(corpus), 2, k, a, b, p)
        corpus = str(corpus)
    sa = dss(np.frombuffer(ds, np.uint8).copy())
    want = pointers.encode(sa[sa % width == 0].astype(np.int64), k).tobytes()
    tables = []
    for twin in (False, True):
        if twin:
            monkeypatch.setattr(outofcore, "_K", None)
        out = tmp_path / f"t{twin}"
        outofcore.merge(corpus, [Path(p) for p in parts], k, 48 << 20, out, pieces=2)
        tables.append(out.read_bytes())
    assert tables[0] == tables[1] == want


@pytest.mark.skipif(outofcore._K is None, reason="the kernel frees the parts")
def test_the_build_merge_frees_the_parts_as_it_goes(tmp_path):
    """The build's merge (punch=True) frees the consumed bytes of the parts (the disk holds the parts or the
    table, not both): the blocks the parts hold fall by more than half, and the table is right."""
    from pydivsufsort import divsufsort as dss

    ds = np.random.default_rng(1).integers(0, 7, 3_000_000).astype(np.uint8).tobytes()
    corpus, ranges, parts, k = _sorted_parts(tmp_path, ds, 1_000_000)
    before = sum(Path(p).stat().st_blocks + outofcore.aux_path(Path(p)).stat().st_blocks for p in parts)
    table = str(tmp_path / "table")
    bounds = outofcore.prepare_merge(corpus, parts, ranges, 1, k, 1, table)
    outofcore.merge_piece(corpus, parts, k, 48 << 20, table + ".merging", 0, bounds, punch=True)
    after = sum(Path(p).stat().st_blocks + outofcore.aux_path(Path(p)).stat().st_blocks for p in parts)
    assert after < before / 2, (before, after)
    outofcore.seal_table(corpus, parts, k, table)
    assert Path(table).read_bytes() == pointers.encode(dss(np.frombuffer(ds, np.uint8).copy()).astype(np.int64), k).tobytes()


@pytest.mark.parametrize("corpus", ["run", "two", "tiny"])
def test_the_merge_keys_on_lcp_and_byte_over_many_parts(tmp_path, corpus):
    """The loser tree keys each suffix by its LCP with the one written last and its byte there (0 where it ends):
    corpora whose suffixes nearly all agree on both (one byte repeated, two alternating, parts of a few bytes that
    end inside the corpus's last run) merge into libdivsufsort's order of the whole corpus."""
    from pydivsufsort import divsufsort as dss

    ds = {"run": b"\x07" * 20_000, "two": b"ab" * 9_000 + b"a" * 1_000 + b"ab" * 500,
          "tiny": np.random.default_rng(2).integers(0, 2, 6_000).astype(np.uint8).tobytes() + b"\0" * 3000}[corpus]
    corpus_path, ranges, parts, k = _sorted_parts(tmp_path, ds, 700)
    out = tmp_path / "table"
    outofcore.merge(corpus_path, [Path(p) for p in parts], k, 48 << 20, out, pieces=3)
    want = pointers.encode(dss(np.frombuffer(ds, np.uint8).copy()).astype(np.int64), k).tobytes()
    assert out.read_bytes() == want


def test_crc32_combine_is_zlibs():
    import zlib

    rng = np.random.default_rng(3)
    for la, lb in [(0, 0), (1, 0), (0, 9), (3, 7), (1000, 1), (4096, 12345), (7, 1 << 20)]:
        a, b = rng.bytes(la), rng.bytes(lb)
        assert outofcore.crc32_combine(zlib.crc32(a), zlib.crc32(b), lb) == zlib.crc32(a + b), (la, lb)


@pytest.mark.parametrize("pieces", [1, 3])
def test_a_sealed_table_records_the_crc_of_its_bytes(tmp_path, pieces):
    """The table's record takes its CRC from its ranges' records (combined, not read back) and the parts' records
    theirs from the bytes as they were written: each is the CRC of the file, so a resumed build reuses them."""
    rng = np.random.default_rng(4)
    ds = rng.integers(0, 5, 60_000).astype(np.uint8).tobytes()
    corpus, ranges, parts, k = _sorted_parts(tmp_path, ds, 9_000)
    for p in parts:
        meta = json.loads(Path(p + ".json").read_text())
        assert meta["crc32"] == outofcore.crc32(Path(p)) and meta["aux"] == outofcore.crc32(outofcore.aux_path(Path(p)))
        assert outofcore.finished(Path(p), start=meta["start"]) is not None
    table = str(tmp_path / "table")
    bounds = outofcore.prepare_merge(corpus, parts, ranges, 1, k, pieces, table)
    for j in range(len(bounds) - 1):
        outofcore.merge_piece(corpus, parts, k, 48 << 20, table + ".merging", j, bounds)
    meta = outofcore.seal_table(corpus, parts, k, table)
    assert meta["crc32"] == outofcore.crc32(Path(table))
    assert outofcore.table_done(corpus, k, table) is not None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pydivsufsort's libgomp is found in /proc/self/maps")
def test_parts_sort_on_one_openmp_thread_and_the_count_comes_back():
    """While a part sorts, libdivsufsort's OpenMP runtime runs one thread (a second one spins after each call);
    the count the process had before comes back after."""
    import pydivsufsort  # noqa: F401 - loads libgomp

    with outofcore.one_thread():
        assert outofcore._OMP, "libgomp not found among the mapped libraries"
        get, put = outofcore._OMP
        assert get() == 1
    before = get()
    put(2)
    with outofcore.one_thread():
        assert get() == 1
    assert get() == 2
    put(before)


@pytest.mark.parametrize("width", [1, 2])
def test_parts_sorted_while_the_documents_spool(monkeypatch, capsys, width):
    """With workers, parts are sorted while the documents are still read, from the first part's window on, with
    pointers of EARLY_WIDTH bytes or the width of the size so far (here 2, so that the corpus's size crossing 64 KiB
    changes it): those whose width the finished corpus no longer has get their pointers rewritten (not sorted
    again), those whose window left ties (a document copied, longer than the window) are sorted again after the
    spool, the rest kept; the index is the in-memory build's."""
    from wvformats.families.infinigram import build as build_module

    monkeypatch.setattr(build_module, "EARLY_WIDTH", 2)
    docs = _corpus(width, seed=21)
    root = Path(_dir())
    ours = build(docs, root / "ram", token_width=width)
    par = build(docs, root / "par", token_width=width, max_memory=SMALL2, workers=2, progress_bar=True)
    err = capsys.readouterr().err
    assert re.search(r"sorted early with width 2, not 3", err), err
    assert re.search(r"part \d+/\d+ rewritten to width 3", err), err
    assert "sorted again (ties past its window)" in err
    assert "sorted early [" in err
    _same_files(ours, par)


def test_a_part_sorted_with_another_pointer_width_is_rewritten_not_sorted(tmp_path, monkeypatch):
    """A finished part asked for with another pointer width (a part sorted while the documents spooled, before the
    corpus's final size was known): its pointers are rewritten with the new width and its records kept, without
    sorting it again; the files are those of a part sorted with that width, and reused from then on."""
    corpus = tmp_path / "c"
    corpus.write_bytes(np.random.default_rng(3).integers(0, 4, 300_000).astype(np.uint8).tobytes())
    part, ref = tmp_path / "p", tmp_path / "ref"
    outofcore.sort_part(str(corpus), 1, 4, 100_000, 250_000, str(part))
    aux = outofcore.aux_path(part).read_bytes()
    outofcore.sort_part(str(corpus), 1, 3, 100_000, 250_000, str(ref))
    import pydivsufsort

    def no_sort(*args):
        raise AssertionError("sorted again")

    monkeypatch.setattr(pydivsufsort, "divsufsort", no_sort)
    got = outofcore.sort_part(str(corpus), 1, 3, 100_000, 250_000, str(part))
    assert got["rewidth"] == 4 and got["k"] == 3
    assert part.read_bytes() == ref.read_bytes() and outofcore.aux_path(part).read_bytes() == aux
    assert outofcore.aux_path(ref).read_bytes() == aux
    again = outofcore.sort_part(str(corpus), 1, 3, 100_000, 250_000, str(part))
    assert again.get("reused") and again["crc32"] == outofcore.crc32(part)
    # a width too narrow for its pointers: refused (a rewrite falls back to the sort, which refuses it), the part
    # left as it was
    monkeypatch.undo()
    with pytest.raises(ValueError, match="does not fit in 2 bytes"):
        outofcore.sort_part(str(corpus), 1, 2, 100_000, 250_000, str(part))
    assert part.read_bytes() == ref.read_bytes()
    assert outofcore.sort_part(str(corpus), 1, 3, 100_000, 250_000, str(part)).get("reused")
    # a record without a width (or a width that is not one): sorted again, not trusted
    rec = Path(str(part) + ".json")
    for k in (None, "4", 9):
        meta = json.loads(rec.read_text())
        meta.pop("k") if k is None else meta.update(k=k)
        rec.write_text(json.dumps(meta))
        again = outofcore.sort_part(str(corpus), 1, 3, 100_000, 250_000, str(part))
        assert not again.get("reused") and not again.get("rewidth") and part.read_bytes() == ref.read_bytes()


def _worker_threads() -> tuple[str | None, str | None, int]:
    """In a worker: its OpenBLAS and OpenMP settings and its threads once numpy is imported."""
    import os

    import numpy  # noqa: F401 - OpenBLAS starts its threads as numpy is imported

    threads = int(re.search(r"Threads:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))
    return os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS"), threads


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc/self/status")
def test_local_workers_start_with_one_thread_each(monkeypatch):
    """A local worker starts with OpenBLAS and OpenMP on one thread: numpy's import otherwise starts an OpenBLAS
    thread on every core, spinning ~0.1 s of CPU each before it sleeps (a worker is one process of the budget,
    one core). The parent's own environment is as it was."""
    import os

    from wvformats.families.infinigram import engines

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    eng = engines.Local(2)
    try:
        got = [eng.submit(_worker_threads) for _ in range(2)]
        assert [f.result(timeout=60) for f in got] == [("1", "1", 1)] * 2
        assert len(eng.pool._processes) == 2
    finally:
        eng.close()
    assert os.environ["OMP_NUM_THREADS"] == "3" and "OPENBLAS_NUM_THREADS" not in os.environ


def test_the_spools_unigram_counts_stay_within_a_few_mb():
    """The spool's unigram file of a u16 shard holding every id: counted in chunks and written a batch of lines at a
    time, it allocates under 5 MB (all 65,536 lines as Python strings at once and bincount's int64 copy of 2^19
    tokens took 10.6 MB, which held an out-of-core parent over its 40 MiB); the file is the in-memory build's."""
    import tempfile
    import tracemalloc

    from wvformats.families.infinigram.build import _SpoolWriter, _unigram_text

    folder = Path(tempfile.mkdtemp(prefix="igspool"))
    wr = _SpoolWriter(folder, 0, 2, False, True)
    doc = np.arange(65535, dtype="<u2").tobytes()
    for _ in range(24):
        wr.add(doc, None)
    tracemalloc.start()
    try:
        wr.close()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 << 20, peak
    toks = np.frombuffer((folder / "tokenized.0").read_bytes(), "<u2")
    assert (folder / "unigram.0").read_bytes() == _unigram_text([toks], 2)


@pytest.mark.skipif(outofcore._K is None, reason="the kernel frees the parts")
def test_a_merge_in_many_ranges_frees_every_range_of_the_parts(tmp_path):
    """Each range of a split merge frees the slices of the parts it consumed, including a slice shorter than the
    kernel's step between frees (16 ranges over parts of 200,000 suffixes: 12,500 records per slice, under 1 MiB of
    records): the parts' blocks fall to a few per part, not only by the slices longer than the step."""
    ds = np.random.default_rng(8).integers(0, 7, 1_200_000).astype(np.uint8).tobytes()
    corpus, ranges, parts, k = _sorted_parts(tmp_path, ds, 200_000)
    files = [f for p in parts for f in (Path(p), outofcore.aux_path(Path(p)))]
    before = sum(f.stat().st_blocks for f in files)
    table = str(tmp_path / "table")
    bounds = outofcore.prepare_merge(corpus, parts, ranges, 1, k, 16, table)
    for j in range(len(bounds) - 1):
        outofcore.merge_piece(corpus, parts, k, 48 << 20, table + ".merging", j, bounds, punch=True)
    after = sum(f.stat().st_blocks for f in files)
    assert after < before / 20, (before, after)
    outofcore.seal_table(corpus, parts, k, table)
    from pydivsufsort import divsufsort as dss

    assert Path(table).read_bytes() == pointers.encode(dss(np.frombuffer(ds, np.uint8).copy()).astype(np.int64), k).tobytes()
