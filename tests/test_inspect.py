"""Quick inspect: the header and a sample, in bounded memory whatever the size; --full parses everything."""

import gzip
import json
import lzma
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats import cli
from wvformats.errors import TruncatedError

DATA = Path(__file__).parent / "data"
SAMPLES = Path(wv.__file__).parent / "sample_files"


def _text_vectors(path: Path, blocks: int, *, header: bool = True, dim: int = 100) -> int:
    """A word2vec text (or, without header, GloVe) file of ``blocks`` x 1000 distinct words, made fast."""
    rng = np.random.default_rng(0)
    rows = [" ".join(f"{x:.5f}" for x in row).encode() for row in rng.standard_normal((1000, dim))]
    with open(path, "wb") as f:
        if header:
            f.write(b"%d %d\n" % (1000 * blocks, dim))
        for b in range(blocks):
            f.write(b"".join(b"b%dw%d %s\n" % (b, i, r) for i, r in enumerate(rows)))
    return 1000 * blocks


def _in_fresh_process(*args: str) -> tuple[dict, float]:
    """``wvformats inspect --json ARGS`` in a new interpreter: its output and its peak resident memory (MB)."""
    # VmHWM, not ru_maxrss: ru_maxrss survives exec, so the child would report a larger pytest parent's peak
    code = ("import json, re, sys; from wvformats import cli; rc = cli.main(['inspect', '--json', *sys.argv[1:]]);"
            "print(int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) / 1024);"
            "sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out, _, peak = r.stdout.rstrip().rpartition("\n")
    return json.loads(out), float(peak)


def test_inspect_of_a_large_text_file_reads_the_header_and_a_sample(tmp_path):
    """inspect of a 290 MB .vec held it whole (16 s and 1.1 GB for 1.3 GB before): now the header and the
    first records, in memory that does not grow with the file; --full still parses every line."""
    big = tmp_path / "big.vec"
    n = _text_vectors(big, 350)
    size = big.stat().st_size
    assert size > 250 << 20
    info, peak = _in_fresh_process(str(big))
    assert peak < 150, f"quick inspect of a {size >> 20} MB file peaked at {peak:.0f} MB"
    assert info["format"] == "word2vec-text" and info["size"] == size
    assert info["words"] == n and info["dim"] == 100
    assert info["first_words"] == [f"b0w{i}" for i in range(10)]
    assert "parts" not in info  # (the offsets of the parts need the whole parse)


def test_quick_inspect_agrees_with_gensim(tmp_path):
    """Counts, dimension and first words as gensim reads them (the oracle), for text and binary word2vec."""
    from gensim.models import KeyedVectors

    rng = np.random.default_rng(1)
    kv = KeyedVectors(7)
    kv.add_vectors([f"wort{i}" for i in range(2500)] + ["Daniël", "日本"], rng.normal(size=(2502, 7)))
    for binary, name in ((False, "word2vec-text"), (True, "word2vec-binary")):
        p = tmp_path / f"g{int(binary)}.w2v"
        kv.save_word2vec_format(str(p), binary=binary)
        theirs = KeyedVectors.load_word2vec_format(str(p), binary=binary)
        info = wv.inspect(p)
        assert info["format"] == name
        assert info["words"] == len(theirs.index_to_key) and info["dim"] == theirs.vector_size
        assert info["first_words"] == theirs.index_to_key[:10]
        assert info["sampled"].startswith("header and the first 1000 records")


def test_glove_count_is_an_estimate_marked_as_such(tmp_path):
    """A file without a header states no count: the quick answer is named an estimate (never a count it
    did not make), close to the true count; a file the sample covers is counted exactly."""
    p = tmp_path / "g.txt"
    n = _text_vectors(p, 20, header=False, dim=30)
    info = wv.inspect(p, "glove")
    assert "words" not in info
    assert abs(info["words_estimate"] - n) / n < 0.05
    assert wv.inspect(p, "glove", full=True)["words"] == n
    small = tmp_path / "s.txt"
    small.write_bytes(b"a 1 2\nb 3 4\n")
    assert wv.inspect(small, "glove")["words"] == 2


def test_compressed_text_is_inspected_from_its_first_bytes(tmp_path):
    p = tmp_path / "v.vec.gz"
    plain = tmp_path / "v.vec"
    n = _text_vectors(plain, 5, dim=20)
    p.write_bytes(gzip.compress(plain.read_bytes()))
    info = wv.inspect(p)
    assert info["compression"] == "gzip" and info["words"] == n and info["first_words"][0] == "b0w0"


def test_finalfusion_quick_inspect_of_a_peer_file(tmp_path):
    """A file written by finalfusion-python: metadata TOML, chunk list with offsets, word count and first
    words, from the chunk headers (the oracle: what the peer wrote and reads back)."""
    import finalfusion as ff

    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(40)] + ["Daniël"]
    m = rng.normal(size=(len(words), 6)).astype(np.float32)
    emb = ff.Embeddings(ff.storage.NdArray(m), ff.vocab.SimpleVocab(words),
                        norms=ff.norms.Norms(np.ones(len(words), np.float32)),
                        metadata=ff.metadata.Metadata({"model": "peer", "dims": 6}))
    p = tmp_path / "peer.fifu"
    emb.write(str(p))
    theirs = ff.load_finalfusion(str(p))
    info = wv.inspect(p)
    assert info["metadata"] == dict(theirs.metadata)
    assert [c["type"] for c in info["chunk_types"]] == ["metadata", "simple_vocab", "ndarray", "nd_norms"]
    assert sum(c["bytes"] for c in info["chunk_types"]) + info["chunk_types"][0]["offset"] == p.stat().st_size
    assert info["words"] == len(theirs.vocab) and info["first_words"] == list(theirs.vocab.words)[:10]
    assert (info["rows"], info["dim"]) == theirs.storage.shape
    full = wv.inspect(p, full=True)
    assert [c["type"] for c in full["chunk_types"]] == [c["type"] for c in info["chunk_types"]]


def test_finalfusion_quick_inspect_follows_the_short_explicit_vocab_length(tmp_path):
    """finalfusion-python 0.7.1 writes the explicit vocabulary's length 8 bytes short per n-gram: the walk by
    lengths steps over the shortfall (as the full parse does) and names the quirk."""
    import finalfusion as ff

    words = ["hallo", "welt", "Daniël"]
    vocab = ff.vocab.ExplicitVocab(words, ff.subword.ExplicitIndexer(["<ha", "hal", "all", "llo"]))
    m = np.arange(7 * 3, dtype=np.float32).reshape(7, 3)
    p = tmp_path / "explicit.fifu"
    ff.Embeddings(ff.storage.NdArray(m), vocab).write(str(p))
    info, full = wv.inspect(p), wv.inspect(p, full=True)
    assert info["quirks"] == full["quirks"]
    assert [c["type"] for c in info["chunk_types"]] == ["explicit_subword_vocab", "ndarray"]
    assert (info["words"], info["rows"], info["dim"]) == (3, 7, 3)


def test_finalfusion_quick_inspect_reads_no_vocabulary_beyond_its_first_words(tmp_path):
    """A 300 000-word vocabulary: the quick walk allocates next to nothing (the full parse decodes every word)."""
    import tracemalloc

    words = [f"word{i}" for i in range(300_000)]
    p = tmp_path / "many.fifu"
    wv.write((words, np.zeros((len(words), 2), np.float32)), p)
    tracemalloc.start()
    info = wv.inspect(p)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert info["words"] == 300_000 and info["first_words"][-1] == "word9"
    assert peak < 2 << 20, peak


def test_finalfusion_cut_file_names_the_chunk_and_offset(tmp_path):
    data = (SAMPLES / "sample-simple.fifu").read_bytes()
    p = tmp_path / "cut.fifu"
    p.write_bytes(data[:-300])
    with pytest.raises(TruncatedError) as e:
        wv.inspect(p)
    assert "finalfusion" in str(e.value) and "chunks[2]" in str(e.value) and e.value.offset == 184


def test_sentencepiece_trainer_and_normalizer_summary():
    """The trainer and normalizer fields as the sentencepiece package's own protobuf reads them (the oracle)."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    path = DATA / "sentencepiece" / "botchan_en_unigram_1000.model"
    proto = pb.ModelProto()
    proto.ParseFromString(path.read_bytes())
    info = wv.inspect(path)
    assert info["pieces"] == len(proto.pieces)
    assert info["first_pieces"] == [p.piece for p in proto.pieces[:10]]
    assert info["trainer"]["vocab_size"] == proto.trainer_spec.vocab_size
    assert info["trainer"]["model_type"] == "UNIGRAM" and info["model_type"] == "UNIGRAM"
    assert info["normalizer"]["name"] == proto.normalizer_spec.name
    assert info["normalizer"]["precompiled_charsmap"] == f"{len(proto.normalizer_spec.precompiled_charsmap)} bytes"


def test_long_lists_are_cut_as_gguf_dump_cuts_them(tmp_path, capsys):
    """A SentencePiece model with 760 control pieces (as Mistral's tokenizer.model), made by sentencepiece's
    trainer: inspect prints the first 16 of its trainer's control_symbols and how many in all, as ``gguf dump``
    does; --all and --json show every one."""
    import sentencepiece as spm

    (tmp_path / "c.txt").write_text("\n".join(f"the quick brown fox jumps over the lazy dog {i}" for i in range(200)))
    controls = [f"[control_{i}]" for i in range(760)]
    spm.SentencePieceTrainer.train(input=str(tmp_path / "c.txt"), model_prefix=str(tmp_path / "m"), vocab_size=800,
                                   model_type="bpe", control_symbols=controls, minloglevel=2)
    path = str(tmp_path / "m.model")
    assert cli.main(["inspect", path]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("trainer: "))
    assert "'[control_15]', ... (760 in all; --all shows them)]" in line and "[control_16]" not in line
    assert len(text) < 2000
    assert cli.main(["inspect", path, "--all"]) == 0
    text = capsys.readouterr().out
    assert all(f"'{c}'" in text for c in controls) and "in all" not in text
    assert cli.main(["inspect", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trainer"]["control_symbols"] == controls


def test_shown_cuts_lists_at_any_depth():
    from wvformats.commands import shown

    value = {"a": list(range(20)), "b": [(1,), ("x", list(range(17)))], "c": "s"}
    assert shown(value) == ("{'a': [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ... (20 in all; --all shows "
                            "them)], 'b': [(1,), ('x', [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ... (17 "
                            "in all; --all shows them)])], 'c': 's'}")
    assert shown(value, None) == repr(value) and shown(value, 2).startswith("{'a': [0, 1, ... (20 in all;")


def test_rwkv_types_per_tensor(tmp_path):
    p = tmp_path / "tiny.bin"
    p.write_bytes(lzma.decompress((DATA / "rwkv" / "tiny-rwkv-4v0-660K-FP16.bin.xz").read_bytes()))
    info = wv.inspect(p)
    assert info["tensor_table"] == wv.inspect(p, full=True)["tensor_table"]
    assert {t["dtype"] for t in info["tensor_table"]} <= {"FP16", "FP32"}


def test_infinigram_shards_and_token_width():
    info = wv.inspect(SAMPLES / "sample-index")
    assert info["shards"] == 1 and info["token_width"] == 1


def test_cli_full_flag(capsys):
    path = SAMPLES / "sample-fasttext.vec"
    assert cli.main(["inspect", str(path), "--json"]) == 0
    quick = json.loads(capsys.readouterr().out)
    assert cli.main(["inspect", str(path), "--full", "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert "parts" in full and "parts" not in quick
    assert full["words"] == quick["words"] and full["dim"] == quick["dim"]


def test_finalfusion_quick_inspect_names_a_chunk_field_that_holds_no_valid_value(tmp_path):
    """A storage chunk whose dtype id is not f32's (found by fuzzing: quick inspect raised construct's bare
    ConstError): a ValueMismatchError naming the chunk's field, its offset and the value found."""
    from wvformats import registry
    from wvformats.errors import ValueMismatchError
    from wvformats.framework.walk import walk
    from wvformats.samples import sample_dir

    data = bytearray((sample_dir() / "sample-simple.fifu").read_bytes())
    _, spans = walk(registry.get("finalfusion").schema, bytes(data), format="finalfusion")
    at = next(s.start for s in spans if s.path.endswith(".type_id"))
    data[at : at + 4] = (99).to_bytes(4, "little")
    bad = tmp_path / "bad.fifu"
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueMismatchError) as e:
        wv.inspect(bad)
    assert e.value.format == "finalfusion" and e.value.offset == at and e.value.found == 99
    assert e.value.path.endswith(".type_id") and e.value.path.startswith("chunks[")


_COUNT_OPENS = '''
import json, os, sys
from wvformats import api, compression

target, calls = os.path.realpath(sys.argv[2]), {"opens": 0, "detect": 0}


def hook(event, args):  # every open of the file, by open(), io.open or os.open
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)) and \\
            os.path.realpath(os.fsdecode(args[0])) == target:
        calls["opens"] += 1


detect = compression.detect


def counted(*args, **kwargs):
    calls["detect"] += 1
    return detect(*args, **kwargs)


compression.detect = counted
getattr(api, sys.argv[1])(sys.argv[2])  # (registry and codec imported first: their own files are not counted)
calls = {"opens": 0, "detect": 0}
sys.addaudithook(hook)
getattr(api, sys.argv[1])(sys.argv[2])
print(json.dumps(calls))
'''


@pytest.mark.parametrize("call", ["sniff", "read", "validate", "inspect"])
def test_one_call_opens_its_input_once(call):
    """A plain file is resolved once per call (its kind, compression, first bytes and buffer: one Source):
    one open of the file for sniff, read, validate and inspect, and no second look for its compression
    (before: compression.detect ran 3 times and the file was opened 4 times for one read)."""
    from wvformats.samples import sample_files

    path = next(p for p in sample_files() if p.name == "sample-simple.fifu")
    out = subprocess.run([sys.executable, "-c", _COUNT_OPENS, call, str(path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"opens": 1, "detect": 0}
