"""infini-gram indexes: our builder against brute force and against the real engine (in a subprocess)."""

import atexit
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wvformats.errors import FormatError
from wvformats.families.infinigram import pointers
from wvformats.families.infinigram.index import InfiniGramIndex, build, check, suffix_array


def brute_count(docs, query, width, version=4):
    sep = (1 << (8 * width)) - 1
    stream = []
    for d in docs:
        stream += [sep] + (list(d)[::-1] if version == 5 else list(d))
    q = list(query)[::-1] if version == 5 else list(query)
    if not q:
        return len(stream)
    return sum(stream[i : i + len(q)] == q for i in range(len(stream) - len(q) + 1))


def _dir():
    # the engine finds files by substring: keep the file-kind words out of the path
    d = tempfile.mkdtemp(prefix="ig")
    atexit.register(shutil.rmtree, d, True)
    return d


@st.composite
def corpora(draw):
    width = draw(st.sampled_from([1, 2]))
    sep = (1 << (8 * width)) - 1
    # small alphabets make repeats; include values next to SEP
    alphabet = st.sampled_from([0, 1, 2, 3, sep - 1, 256 % sep])
    docs = draw(st.lists(st.lists(alphabet, max_size=8), min_size=1, max_size=6))
    return width, docs


@settings(max_examples=40)
@given(corpus=corpora(), version=st.sampled_from([4, 5]), shards=st.integers(1, 3), data=st.data())
def test_counts_equal_brute_force(corpus, version, shards, data):
    width, docs = corpus
    shards = min(shards, len(docs))  # no empty shard (build refuses one)
    d = build(docs, _dir(), token_width=width, version=version, shards=shards)
    ix = InfiniGramIndex(d, token_width=width, version=version)
    sep = (1 << (8 * width)) - 1
    assert ix.count([]) == brute_count(docs, [], width) and ix.count([sep]) == len(docs)
    flat = [t for doc in docs for t in doc]
    for _ in range(5):
        n = data.draw(st.integers(1, 3))
        q = data.draw(st.lists(st.sampled_from(flat or [0]), min_size=n, max_size=n))
        assert ix.count(q) == brute_count(docs, q, width, version), q


def test_suffix_array_is_sorted():
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 4, 300)
    order = suffix_array(keys)
    suffixes = [tuple(keys[i:]) for i in order]
    assert suffixes == sorted(suffixes) and sorted(order.tolist()) == list(range(300))


def test_the_notes_worked_example():
    d = build([[2, 44], [], [256, 1]], _dir(), token_width=2)
    assert (d / "tokenized.0").read_bytes().hex() == "ffff02002c00ffffffff00010100"
    assert (d / "table.0").read_bytes().hex() == "0a0c0204080006"  # byte order, not token order
    assert np.frombuffer((d / "offset.0").read_bytes(), "<u8").tolist() == [0, 6, 8]
    assert (d / "unigram.0").read_text() == "1 1\n2 1\n44 1\n256 1\n65535 3\n"


def test_pointer_array_round_trip():
    v = np.array([0, 1, 255, 256, 2**24 - 1], np.uint64)
    for k in (3, 4, 8):
        assert pointers.decode(pointers.encode(v, k), k).tolist() == v.tolist()
    with pytest.raises(ValueError):
        pointers.encode(np.array([2**24]), 3)


ENGINE = """
import json, sys
from infini_gram.engine import InfiniGramEngine
d, width, version, queries = json.loads(sys.argv[1])
e = InfiniGramEngine(index_dir=d, eos_token_id=0, vocab_size=(1 << (8 * width)) - 1,
                     token_dtype={1: "u8", 2: "u16", 4: "u32"}[width], version=version)
print(json.dumps([e.count(input_ids=q)["count"] for q in queries]))
"""


ENGINE_DOCS = """
import json, sys
from infini_gram.engine import InfiniGramEngine
d, n = json.loads(sys.argv[1])
e = InfiniGramEngine(index_dir=d, eos_token_id=0, vocab_size=65535, token_dtype="u16", version=4)
print(json.dumps([[r["doc_ix"], r["token_ids"]] for r in (e.get_doc_by_ix(doc_ix=i, max_disp_len=100)
                                                          for i in range(n))]))
"""


@pytest.mark.parametrize("shards", [2, 12])
def test_documents_by_global_index_equal_the_engine(shards):
    """get_doc_by_ix numbers the documents through the shards in the engine's order (file names sorted as
    strings: with 12 shards, shard 10 comes before shard 2) and reports the global index it was given."""
    pytest.importorskip("infini_gram")
    docs = [[i + 1, 7] for i in range(2 * shards)]
    d = build(docs, _dir(), token_width=2, shards=shards)
    r = subprocess.run([sys.executable, "-c", ENGINE_DOCS, json.dumps([str(d), len(docs)])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    ix = InfiniGramIndex(d, token_width=2)
    ours = [[g["doc_ix"], g["token_ids"]] for g in map(ix.get_doc_by_ix, range(len(docs)))]
    assert ours == json.loads(r.stdout.strip().splitlines()[-1])


def test_build_refuses_an_empty_shard(tmp_path):
    """More shards than documents would leave a shard with no tokens: the real indexer fails on it and the
    engine dies loading it, so build refuses before writing anything; check() names such a shard."""
    with pytest.raises(ValueError, match="shard 1 empty"):
        build([[1, 2, 3]], tmp_path / "x", token_width=2, shards=2)
    assert not (tmp_path / "x").exists()
    d = build([[1, 2, 3]], tmp_path / "y", token_width=2)
    for kind in ("tokenized", "table", "offset"):
        (d / f"{kind}.1").write_bytes(b"")
    assert any("empty shard" in p for p in check(InfiniGramIndex(d, token_width=2)))


@pytest.mark.parametrize("width,version,shards", [(2, 4, 1), (1, 4, 2), (2, 5, 1)])
def test_indexes_we_build_load_in_the_real_engine(width, version, shards):
    pytest.importorskip("infini_gram")
    rng = np.random.default_rng(width + version + shards)
    docs = [rng.integers(0, 5, int(rng.integers(0, 12))).tolist() for _ in range(20)]
    d = build(docs, _dir(), token_width=width, version=version, shards=shards)
    queries = [[], [(1 << (8 * width)) - 1]] + [rng.integers(0, 5, int(rng.integers(1, 4))).tolist()
                                                for _ in range(30)]
    r = subprocess.run([sys.executable, "-c", ENGINE, json.dumps([str(d), width, version, queries])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    ix = InfiniGramIndex(d, token_width=width, version=version)
    assert [ix.count(q) for q in queries] == theirs
    assert theirs[2:] == [brute_count(docs, q, width, version) for q in queries[2:]]


def test_inconsistent_files_fail_cleanly():
    d = build([[1, 2, 3], [4]], _dir(), token_width=2)
    (d / "table.0").write_bytes((d / "table.0").read_bytes()[:-1])
    with pytest.raises(FormatError):
        InfiniGramIndex(d, token_width=2)
    (d / "offset.0").write_bytes(b"\0" * 5)
    with pytest.raises(FormatError):
        InfiniGramIndex(d, token_width=2)


def test_registered_directory_format_sniff_inspect_validate():
    import wvformats as wv

    d = build([[1, 2, 3], [4, 5], []], _dir(), token_width=2, shards=2)
    assert wv.sniff(d) == "infini-gram"
    info = wv.inspect(d)
    assert info["tokens"] == 8 and info["documents"] == 3 and info["shards"] == 2 and info["token_width"] == 2
    assert wv.validate(d).ok
    # a table in token order instead of byte order is caught
    bad = build([[256, 1], [2, 44]], _dir(), token_width=2)
    table = np.frombuffer((bad / "table.0").read_bytes(), np.uint8)
    (bad / "table.0").write_bytes(table[::-1].tobytes())
    report = wv.validate(bad)
    assert not report.ok and any("order" in p or "range" in p for p in report.problems)


# Missing combinations crash in the real indexer (2.6.0): u8 with v5 (and v6 --reversed) calls bytes.copy();
# v6 with a tokenizer passes the string "u16" as a numpy dtype. Our builder handles them (brute-force tests).
REAL_BUILDS = [(1, 4, 1), (1, 4, 2), (1, 6, 1), (2, 4, 1), (2, 4, 3), (2, 5, 1), (2, 5, 2)]


def real_indexer(src, out, width, version, shards, gpt2_cache, cpus=1):
    """Index the JSONL folder ``src`` into ``out`` with the real indexer (v4/v5: infini_gram.indexing, v6:
    indexing_v6; u8 raw bytes, u16 through the small GPT-2 tokenizer of ``gpt2_cache``). ``cpus`` > 1 makes
    it sort each shard in that many parts and merge them (correct only for parts over 100 KB)."""
    import os

    pytest.importorskip("transformers")  # the real indexer imports it even without a tokenizer
    if version == 6:
        pytest.importorskip("zstandard")  # indexing_v6 imports it at the top
    module = "infini_gram.indexing_v6" if version == 6 else "infini_gram.indexing"
    cmd = [sys.executable, "-m", module, "--data_dir", str(src), "--save_dir", str(out), "--token_dtype",
           f"u{8 * width}", "--add_metadata", "--add_unigram", "--cpus", str(cpus), "--mem", "2", "--ulimit", "1024"]
    cmd += ["--shards", str(shards), "--version", str(version)] if version != 6 else []
    cmd += ["--tokenizer", "gpt2"] if width == 2 else []
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(gpt2_cache)}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def gpt2_tokenizer(gpt2_cache):
    import transformers

    snapshot = gpt2_cache / "models--gpt2" / "snapshots" / ("0" * 40)
    return transformers.AutoTokenizer.from_pretrained(str(snapshot), use_fast=False)


@pytest.mark.parametrize(("width", "version", "shards"), REAL_BUILDS)
def test_byte_identical_to_the_real_indexer(width, version, shards, gpt2_cache):
    """The real indexer (v4/v5: infini_gram.indexing, v6: indexing_v6; u8 raw bytes, u16 through the GPT-2
    tokenizer) and build_jsonl write the same bytes, and the engine answers the same on both."""
    from pathlib import Path

    from wvformats.families.infinigram.index import build_jsonl

    root = Path(_dir())
    src = root / "src"
    (src / "sub").mkdir(parents=True)
    rows = [{"text": "hello the world", "id": 1}, {"text": "", "id": 2},
            {"text": "h\u00e9llo there, the other hello", "id": 3},
            {"text": "caf\u00e9 \u6771\u4eac the", "source": "x"}, {"text": "a", "id": 5},
            {"text": "the the the world", "id": 6}]
    (src / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:3]), encoding="utf-8")
    (src / "sub" / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[3:]), encoding="utf-8")
    theirs, ours = root / "theirs", root / "ours"
    real_indexer(src, theirs, width, version, shards, gpt2_cache)
    tokenize = None
    if width == 2:
        tok = gpt2_tokenizer(gpt2_cache)
        tokenize = tok.encode
        assert max(max(tok.encode(r["text"]), default=0) for r in rows) >= 256  # the high byte matters
    build_jsonl(src, ours, token_width=width, version=version, shards=shards, tokenize=tokenize)
    names = sorted(p.name for p in theirs.iterdir())
    assert names == sorted(p.name for p in ours.iterdir()) and len(names) == 6 * shards
    for name in names:
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name


@settings(max_examples=30)
@given(corpus=corpora(), data=st.data())
def test_divsufsort_and_prefix_doubling_agree(corpus, data):
    """The two suffix sorters (libdivsufsort over bytes, numpy prefix doubling over tokens) give the
    same token order, which is the engine's (raw little-endian bytes, shorter suffix first)."""
    from wvformats.families.infinigram.build import _sorted_token_suffixes

    width, docs = corpus
    width = data.draw(st.sampled_from([width, 4]))
    sep = (1 << (8 * width)) - 1
    stream = []
    for d in docs:
        stream += [sep] + list(d)
    ds = bytearray(np.array(stream, f"<u{width}" if width > 1 else "u1").tobytes())
    fast = np.concatenate([*_sorted_token_suffixes(ds, width, chunk=3), np.zeros(0, np.int64)])
    slow = np.concatenate([*_sorted_token_suffixes(ds, width, chunk=5, fast=False), np.zeros(0, np.int64)])
    assert fast.tolist() == slow.tolist()
    assert [bytes(ds[p:]) for p in fast.tolist()] == sorted(bytes(ds[p:]) for p in range(0, len(ds), width))


@settings(max_examples=25)
@given(corpus=corpora(), version=st.sampled_from([4, 5]), shards=st.integers(1, 3), data=st.data())
def test_get_doc_and_infgram_prob_against_brute_force(corpus, version, shards, data):
    width, docs = corpus
    shards = min(shards, len(docs))
    metas = [{"i": i} for i in range(len(docs))]
    d = build(docs, _dir(), token_width=width, version=version, metadata=metas, shards=shards)
    ix = InfiniGramIndex(d, token_width=width, version=version)
    # documents go round-robin to the shards; the global doc_ix counts through shard 0, then shard 1, ...
    in_order = [i for s in range(shards) for i in range(s, len(docs), shards)]
    for doc_ix, i in enumerate(in_order):
        got = ix.get_doc_by_ix(doc_ix)
        assert got["doc_ix"] == doc_ix and got["token_ids"] == list(docs[i]) and got["doc_len"] == len(docs[i])
        assert json.loads(got["metadata"]) == {"i": i}
    with pytest.raises(IndexError):
        ix.get_doc_by_ix(len(docs))
    for s, (lo, hi) in enumerate(ix.find(docs[-1][:1])["segment_by_shard"]):  # by rank: the same doc_ix
        for rank in range(lo, hi):
            got = ix.get_doc_by_rank(s, rank)
            assert got["token_ids"] == list(docs[in_order[got["doc_ix"]]])
    flat = [t for doc in docs for t in doc] or [0]
    prompt = data.draw(st.lists(st.sampled_from(flat), max_size=4))
    cont = data.draw(st.sampled_from(flat))
    got = ix.infgram_prob(prompt, cont)
    n = got["suffix_len"]
    assert n == 0 or brute_count(docs, prompt[len(prompt) - n :], width, version) > 0
    assert n == len(prompt) or brute_count(docs, prompt[len(prompt) - n - 1 :], width, version) == 0
    base = prompt[len(prompt) - n :] if n else []
    assert got["cont_cnt"] == brute_count(docs, [*base, cont], width, version)


ENGINE_NTD = """
import json, sys
from infini_gram.engine import InfiniGramEngine
d, width, version, queries = json.loads(sys.argv[1])
# the engine knows versions 4 and 5 only (6 segfaults): a v6 folder is read forward, as version 4
e = InfiniGramEngine(index_dir=d, eos_token_id=0, vocab_size=(1 << (8 * width)) - 1,
                     token_dtype={1: "u8", 2: "u16", 4: "u32"}[width], version={6: 4}.get(version, version))
out = []
for q in queries:
    r = e.ntd(prompt_ids=q, max_support=100000)
    out.append({str(k): v["cont_cnt"] for k, v in r["result_by_token_id"].items()})
print(json.dumps(out))
"""


@pytest.mark.parametrize("width,version,shards", [(2, 4, 1), (1, 4, 2), (1, 4, 3), (2, 6, 1), (1, 6, 1)])
def test_exact_ntd_equals_the_engine_in_exact_mode(width, version, shards):
    """ntd over every occurrence equals the engine's with max_support above the count; a v6 index (the
    same forward files without suffix) against the engine reading it as version 4, as upstream says to."""
    pytest.importorskip("infini_gram")
    rng = np.random.default_rng(10 * width + version + shards)
    docs = [rng.integers(1, 5, int(rng.integers(1, 10))).tolist() for _ in range(25)]
    d = build(docs, _dir(), token_width=width, version=version, shards=shards)
    ix = InfiniGramIndex(d, token_width=width, version=version)
    shard_ends = set()
    for s in range(shards):  # the engine's end-of-shard bug: skip prompts that end a shard
        last = [doc for i, doc in enumerate(docs) if i % shards == s][-1]
        for n in range(1, 4):
            shard_ends.add(tuple((last[::-1] if version == 5 else last)[-n:]))
    queries = [q for q in (rng.integers(1, 5, int(rng.integers(1, 3))).tolist() for _ in range(40))
               if tuple(q[::-1] if version == 5 else q) not in shard_ends and ix.count(q)]
    r = subprocess.run([sys.executable, "-c", ENGINE_NTD, json.dumps([str(d), width, version, queries])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    for q, t in zip(queries, theirs, strict=True):
        ours = {str(k): v["cont_cnt"] for k, v in ix.ntd(q)["result_by_token_id"].items()}
        assert ours == t, q


@settings(max_examples=25)
@given(corpus=corpora(), version=st.sampled_from([4, 5, 6]), data=st.data())
def test_ntd_is_the_reading_order_next_token_distribution(corpus, version, data):
    """Brute force over documents in reading order; separators and document ends count as eos (0 here).

    For v5 indexes the released engine (2.6.0) answers differently on some corpora, and wrongly: for the
    documents [3, 2, 3, 1], [3, 1], [1], [3, 1] it gives {1: 4} after [3] (reading order: 2 once, 1 three
    times; in storage order neither), one token for every occurrence. Ours is the distribution of the token
    that follows in reading order, which is what a v4 index of the same documents gives.
    """
    width, docs = corpus
    d = build(docs, _dir(), token_width=width, version=version)
    ix = InfiniGramIndex(d, token_width=width, version=version)
    flat = [t for doc in docs for t in doc]
    if not flat:
        return
    prompt = data.draw(st.lists(st.sampled_from(flat), min_size=1, max_size=2))
    sep_id = (1 << (8 * width)) - 1
    expected: dict[int, int] = {}
    for doc in docs:
        seq = [sep_id, *doc]  # reading order, whatever the storage order
        for i in range(len(seq) - len(prompt) + 1):
            if seq[i : i + len(prompt)] == prompt:
                j = i + len(prompt)
                nxt = seq[j] if j < len(seq) else 0
                nxt = 0 if nxt == sep_id else nxt
                expected[nxt] = expected.get(nxt, 0) + 1
    got = {k: v["cont_cnt"] for k, v in ix.ntd(prompt)["result_by_token_id"].items()}
    assert got == expected


def test_get_doc_by_rank_v6_layout_and_infgram_ntd():
    import shutil

    docs = [[1, 2, 3], [4, 2, 3, 9], [2, 3]]
    d = build(docs, _dir(), token_width=2, shards=2)
    ix = InfiniGramIndex(d, token_width=2)
    found = ix.find([2, 3])
    hits = []
    for s, (lo, hi) in enumerate(found["segment_by_shard"]):
        for r in range(lo, hi):
            got = ix.get_doc_by_rank(s, r)
            hits.append((got["token_ids"], got["needle_offset"]))
            assert got["token_ids"][got["needle_offset"] : got["needle_offset"] + 2] == [2, 3]
    assert sorted(map(str, hits)) == sorted(map(str, [([1, 2, 3], 1), ([4, 2, 3, 9], 1), ([2, 3], 0)]))
    # v6: one directory per shard, the same files without suffix
    v6 = __import__("pathlib").Path(_dir())
    for s in range(2):
        (v6 / f"s{s}").mkdir()
        for p in d.glob(f"*.{s}"):
            shutil.copy(p, v6 / f"s{s}" / p.name.rpartition(".")[0])
    assert InfiniGramIndex(v6, token_width=2).count([2, 3]) == 3
    out = ix.infgram_ntd([7, 7, 2, 3])
    assert out["suffix_len"] == 2 and out["result_by_token_id"][9]["cont_cnt"] == 1
    assert out["result_by_token_id"][0]["cont_cnt"] == 2  # document ends count as eos


def test_cli_build_and_count(tmp_path, capsys):
    from wvformats.cli import main

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_text("".join(json.dumps({"text": t, "n": i}) + "\n"
                                         for i, t in enumerate(["the cat", "the hat", "a cat"])))
    out = tmp_path / "idx"
    assert main(["-q", "infinigram", "build", str(src), str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["documents"] == 3 and info["tokens"] == len("the cat the hat a cat") - 2 + 3
    assert main(["infinigram", "count", str(out), "--text", "cat"]) == 0
    assert capsys.readouterr().out.strip() == "2"
    assert main(["infinigram", "count", str(out), *map(str, b"the"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cnt"] == 2
    # never into a folder that holds files without --force; nothing left behind
    assert main(["-q", "infinigram", "build", str(src), str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["-q", "infinigram", "build", str(tmp_path / "missing"), str(tmp_path / "o2")]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "src"]
    assert main(["-q", "infinigram", "build", str(src), str(out), "--force", "--version", "6"]) == 0
    assert (out / "table").exists() and wv_validate(out)


def wv_validate(path):
    import wvformats as wv

    return wv.validate(path).ok


def test_full_check_resolves_long_ties_and_finds_each_defect(tmp_path):
    from wvformats.families.infinigram.index import check

    docs = [list(b"ab" * 40), list(b"ab" * 39 + b"c"), list(b"xyz"), list(b"ab" * 40)]
    d = build(docs, tmp_path / "i", token_width=1, metadata=[{"n": i} for i in range(4)])
    index = InfiniGramIndex(d)
    assert check(index, full=True) == []
    k, table = index.shards[0].k, bytearray((d / "table.0").read_bytes())
    ranks = [r for r in range(index.tok_cnt - 1)
             if index.shards[0].ds[index.shards[0].ptr(r):][:20] == index.shards[0].ds[index.shards[0].ptr(r + 1):][:20]]
    r = ranks[len(ranks) // 2]  # two suffixes sharing at least 20 bytes: only the tie-breaker sees the swap
    table[r * k:(r + 2) * k] = table[(r + 1) * k:(r + 2) * k] + table[r * k:(r + 1) * k]
    (d / "table.0").write_bytes(bytes(table))
    assert any(f"ranks {r} and {r + 1} are out of order" in p for p in check(InfiniGramIndex(d), full=True))

    def broken(kind, mutate):
        e = tmp_path / kind
        build(docs, e, token_width=1, metadata=[{"n": i} for i in range(4)])
        raw = bytearray((e / f"{kind}.0").read_bytes())
        (e / f"{kind}.0").write_bytes(bytes(mutate(raw)))
        return " ".join(check(InfiniGramIndex(e, token_width=1), full=True))

    assert "separator" in broken("offset", lambda b: b[:8] + (int.from_bytes(b[8:16], "little") + 1)
                                 .to_bytes(8, "little") + b[16:])
    assert "increasing" in broken("offset", lambda b: b[8:16] + b[:8] + b[16:])
    assert "metaoff" in broken("metaoff", lambda b: b[:-8])
    assert "metadata line" in broken("metaoff", lambda b: b[:8] + (int.from_bytes(b[8:16], "little") + 1)
                                     .to_bytes(8, "little") + b[16:])
    assert "out of range" in broken("table", lambda b: b"\xff" * k + b[k:])

    def widened(raw, value):  # the table rewritten with 8-byte pointers, the one at rank 1 set to ``value``
        ptrs = pointers.decode(bytes(raw), k).tolist()
        ptrs[1] = value(ptrs[1])
        return pointers.encode(np.array(ptrs, np.uint64), 8).tobytes()

    n = len(index.shards[0].ds)
    for value in (lambda p: 1 << 63, lambda p: (1 << 64) - n + p):  # no index, or one that wraps to p
        assert "pointer at rank 1 is out of range" in broken("table", lambda b, value=value: widened(b, value))


def test_open_orders_shards_as_strings_and_checks_arguments(tmp_path):
    from wvformats import infinigram

    docs = [[i % 7, i] for i in range(24)]
    d = build(docs, tmp_path / "i", token_width=2, shards=12)
    index = infinigram.open(d)
    assert [s.tok_cnt for s in index.shards] == [6] * 12 and index.doc_cnt == 24
    # document i of shard s is docs[s + 12 * i]; the engine sorts its file names as strings, so shards 10
    # and 11 come right after shard 1 and take the global doc_ix 4 to 7
    names = sorted(str(s) for s in range(12))
    assert names[:4] == ["0", "1", "10", "11"]
    assert [index.get_doc_by_ix(2 * k)["token_ids"] for k in range(12)] == [docs[int(n)] for n in names]
    with pytest.raises(ValueError):
        infinigram.open(d, version=3)


def test_v6_ntd_reads_forward():
    """A v6 index stores documents forward (as v4): the next token after [2] in [1, 2, 3] is 3, not 1."""
    d = build([[1, 2, 3]], _dir(), token_width=2, version=6)
    ix = InfiniGramIndex(d, token_width=2, version=6)
    assert {k: v["cont_cnt"] for k, v in ix.ntd([2])["result_by_token_id"].items()} == {3: 1}
    out = ix.infgram_ntd([7, 2])
    assert out["suffix_len"] == 1 and list(out["result_by_token_id"]) == [3]
    assert ix.get_doc_by_ix(0)["token_ids"] == [1, 2, 3]


def engine_counts(d, width, version, queries):
    r = subprocess.run([sys.executable, "-c", ENGINE, json.dumps([str(d), width, version, queries])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("k", "unigram"), [(None, True), (None, False), (4, True), (4, False), (8, False)])
def test_token_width_inferred_on_real_u16_indexes(k, unigram, gpt2_cache):
    """The real indexer writes 2-byte pointers for u16 tokens once the shard passes 256 bytes; read as u8
    the same files have 1-byte pointers, which cannot address it. Wider pointers (the engine takes any k)
    and a missing unigram file leave more to the other constraints. The engine answers as we do."""
    pytest.importorskip("infini_gram")
    from pathlib import Path

    import wvformats as wv

    root = Path(_dir())
    (root / "src").mkdir()
    texts = ["hello the world", "the other hello there", "a world", "the the"] * 6
    (root / "src" / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    d = real_indexer(root / "src", root / "out", 2, 4, 1, gpt2_cache)
    assert (d / "table.0").stat().st_size == (d / "tokenized.0").stat().st_size  # k = 2 for u16
    if k:
        raw = (d / "table.0").read_bytes()
        (d / "table.0").write_bytes(pointers.encode(pointers.decode(raw, 2), k).tobytes())
    if not unigram:
        (d / "unigram.0").unlink()
    tok = gpt2_tokenizer(gpt2_cache)
    queries = [tok.encode(t) for t in ("hello", " the", " world", "the other", "a")] + [[65535]]
    ix = InfiniGramIndex(d)
    assert ix.token_width == 2 and ix.shards[0].k == (k or 2)
    assert [ix.count(q) for q in queries] == engine_counts(d, 2, 4, queries)
    assert wv.validate(d).ok and wv.inspect(d)["token_width"] == 2


def test_token_width_inferred_on_u32_indexes():
    """u32 (the real indexer needs 32 GiB for it; our builder's files are the indexer's bytes): read as u16
    the pointers would be 1 byte for a 640-byte shard. The engine answers as we do."""
    pytest.importorskip("infini_gram")
    import wvformats as wv

    rng = np.random.default_rng(4)
    for docs in ([[1, 2, 3]] * 40, [rng.integers(0, 3 << 20, int(rng.integers(0, 9))).tolist() for _ in range(60)]):
        d = build(docs, _dir(), token_width=4)
        queries = [[1, 2], [2, 3], [3]] + [doc[:2] for doc in docs[:5] if doc]
        ix = InfiniGramIndex(d)
        assert ix.token_width == 4
        assert [ix.count(q) for q in queries] == engine_counts(d, 4, 4, queries)
        assert wv.validate(d).ok and wv.inspect(d)["token_width"] == 4


def test_token_width_the_issue_repro_and_what_no_width_fits():
    import wvformats as wv

    d = build([[1, 2, 3]] * 40, _dir(), token_width=2)
    assert wv.validate(d).ok and InfiniGramIndex(d).token_width == 2
    # a shard whose tokenized file does not start with a separator fits no width: each one says why
    raw = bytearray((d / "tokenized.0").read_bytes())
    raw[:2] = b"\x01\x00"
    (d / "tokenized.0").write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="cannot infer the token width") as e:
        InfiniGramIndex(d)
    assert "separator" in str(e.value) and "token_width=" in str(e.value)
    report = wv.validate(d)
    assert not report.ok and "token width" in report.error


def test_validate_and_inspect_take_the_width_and_version(capsys):
    """What the Python API's open() takes, validate and inspect take too (token_width=, version=; on the
    command line --token-width, --version), passed to the format's parse; a misspelt option is refused."""
    import wvformats as wv
    from wvformats.cli import main
    from wvformats.errors import OptionError

    d = build([[1, 2, 3]] * 40, _dir(), token_width=2, version=5)
    assert wv.validate(d, token_width=2, version=5).ok
    assert wv.inspect(d, token_width=2, version=5)["pointer_width"] == [2]
    bad = wv.validate(d, token_width=1)  # read as u8, its 1-byte pointers cannot reach 320 bytes
    assert not bad.ok and any("cannot address" in p for p in bad.problems)
    for wrong in ({"token_widht": 2}, {"version": 3}, {"token_width": 3}):
        with pytest.raises(OptionError):
            wv.validate(d, **wrong)
        with pytest.raises(OptionError):
            wv.inspect(d, **wrong)
    assert main(["validate", str(d), "--token-width", "2", "--version", "5"]) == 0
    assert main(["validate", str(d), "--token-width", "1"]) == 1
    capsys.readouterr()
    assert main(["inspect", str(d), "--token-width", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["token_width"] == 2
    assert main(["infinigram", "count", str(d), "1", "2", "--token-width", "2", "--version", "5"]) == 0
    assert capsys.readouterr().out.strip() == "40"
    assert main(["infinigram", "count", str(d), "300", "--token-width", "1"]) == 2  # read as u8
    assert "1-byte tokens" in capsys.readouterr().err


def test_cli_count_text_tokenizes_or_refuses(gpt2_cache, capsys):
    """--text on a u16 index goes through --tokenizer (the one the index was built with): on an index of
    the real indexer, the count is the engine's for the tokenizer's ids. Without a tokenizer the text's
    UTF-8 bytes are no token ids of a u16 index: a one-line usage error, exit 2 (they were counted: 0)."""
    pytest.importorskip("infini_gram")
    from pathlib import Path

    from wvformats.cli import main

    root = Path(_dir())
    (root / "src").mkdir()
    texts = ["hello the world", "hello there", "the other hello"]
    (root / "src" / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    d = real_indexer(root / "src", root / "out", 2, 4, 1, gpt2_cache)
    snapshot = gpt2_cache / "models--gpt2" / "snapshots" / ("0" * 40)
    for text in ("hello", " the", "hello the"):
        ids = gpt2_tokenizer(gpt2_cache).encode(text)
        expected = engine_counts(d, 2, 4, [ids])[0]
        assert main(["infinigram", "count", str(d), "--text", text, "--tokenizer", str(snapshot), "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert got["query"] == ids and got["cnt"] == expected
    assert expected > 0
    assert main(["infinigram", "count", str(d), "--text", "hello"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "--tokenizer" in err
    assert main(["infinigram", "count", str(d), "1", "--text", "hello", "--tokenizer", str(snapshot)]) == 2
    assert "not both" in capsys.readouterr().err


SENTENCEPIECE_MODELS = Path(__file__).parents[2] / "data" / "sentencepiece"
SP_TEXTS = ["I am a cat. As yet I have no name.", "  the cat  sat\ton the mat ", "ÉTÉ ﬁne naïve 日本", "a cat", ""]


@pytest.mark.parametrize("name", ["botchan_en_unigram_1000.model", "botchan_en_bpe_1000.model"])
@pytest.mark.parametrize("without", ["tokenizers", "sentencepiece"])
def test_a_sentencepiece_model_encodes_with_either_package(tmp_path, monkeypatch, capsys, name, without):
    """The default install brings neither package: a tokenizer.model is encoded by sentencepiece where it is
    installed (without tokenizers), else by tokenizers through the tokenizer.json export; both give
    sentencepiece's own ids, and `infinigram build --tokenizer tokenizer.model` indexes them."""
    import sentencepiece as spm

    from wvformats.cli import main
    from wvformats.families.infinigram.commands import tokenizer

    path = SENTENCEPIECE_MODELS / name
    want = [spm.SentencePieceProcessor(model_file=str(path)).encode(t) for t in SP_TEXTS]
    monkeypatch.setitem(sys.modules, without, None)  # (the package is then not importable)
    encode = tokenizer(str(path))
    assert [list(encode(t)) for t in SP_TEXTS] == want
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in SP_TEXTS))
    out = tmp_path / "idx"
    assert main(["-q", "infinigram", "build", str(src), str(out), "--token-width", "2", "--tokenizer", str(path),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == sum(map(len, want)) + len(SP_TEXTS)
    assert main(["infinigram", "count", str(out), *map(str, want[3]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cnt"] >= 1


def test_a_tokenizer_file_without_its_package_names_the_install(tmp_path, monkeypatch, capsys):
    """Neither sentencepiece nor tokenizers (the default install): one error line with the exact pip install."""
    from wvformats.cli import main

    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_text(json.dumps({"text": "a cat"}) + "\n")
    model = SENTENCEPIECE_MODELS / "botchan_en_bpe_1000.model"
    assert main(["-q", "infinigram", "build", str(src), str(tmp_path / "o"), "--token-width", "2",
                 "--tokenizer", str(model)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SentencePiece model" in err and err.rstrip().endswith("pip install sentencepiece")
    (tmp_path / "tokenizer.json").write_text("{}")
    assert main(["-q", "infinigram", "build", str(src), str(tmp_path / "o"), "--token-width", "2",
                 "--tokenizer", str(tmp_path / "tokenizer.json")]) == 2
    assert capsys.readouterr().err.rstrip().endswith("pip install tokenizers")
    assert not (tmp_path / "o").exists()


def _mapped_rss_kb(path) -> int:
    """The resident kB of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in open("/proc/self/smaps"):
        if "-" in line.split(" ", 1)[0]:
            inside = line.rstrip().endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads /proc/self/smaps")
def test_opening_an_index_faults_in_none_of_its_maps(tmp_path):
    """Opening (and so `inspect`, which the CLI runs after a build) samples the table, offsets and tokens by
    pread, not through the maps: the samples' pages (whole large folios on Linux 6.x) stayed resident and put
    the CLI's build of a 24 MB corpus at 160 MB by /usr/bin/time, over its --mem 48M. Failed before the fix
    (the table's map held hundreds of kB)."""
    from wvformats import api
    from wvformats.families.infinigram.index import InfiniGramIndex

    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 200, int(rng.integers(100, 3000))).astype(np.uint8).tobytes() for _ in range(2000)]
    d = build(docs, tmp_path / "ix", token_width=1)
    for kind in ("table.0", "tokenized.0", "offset.0"):  # (out of the page cache's way: cold or warm alike)
        assert (d / kind).stat().st_size > 1 << 20 or kind == "offset.0"
    ix = InfiniGramIndex(d, token_width=None)
    assert ix.tok_cnt > 3_000_000 and ix.shards[0].misfit(2000) is None
    assert api.inspect(d)["tokens"] == ix.tok_cnt
    assert {kind: _mapped_rss_kb(d / kind) for kind in ("table.0", "tokenized.0", "offset.0")} == dict.fromkeys(
        ("table.0", "tokenized.0", "offset.0"), 0)
