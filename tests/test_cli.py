"""The command line as a user meets it: exit codes, one-line errors in the user's terms, help, and the
commands gensim and finalfusion-utils users expect. Run as a subprocess where exit codes and stderr matter."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats.errors import FormatError


def sample(name: str) -> Path:
    return Path(wv.__file__).parent / "sample_files" / name


def run(*args, cwd=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wvformats.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, **kw)


def one_error_line(r: subprocess.CompletedProcess) -> str:
    """The error of a failed command: exactly one line, with no traceback and no errno."""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and "[Errno" not in r.stderr, r.stderr
    return lines[0]


# -- 4. errors in the user's terms ------------------------------------------------------------------------


@pytest.mark.parametrize("text,family,where", [
    # a word2vec text file whose second line is short: word2vec-binary was sniffed and read floats from text
    (b"3 4\na 1 2 3 4\nb 1 2\nc 1 2 3 4\n", "word2vec-text", "records[1] at byte 14"),
    (b"3 4\na 1 2\nb 1 2 3 4\nc 1 2 3 4\n", "word2vec-text", "records[0] at byte 4"),
    # a GloVe file with one short line: "no registered format matches"
    (b"a 1 2 3 4\nb 1 2\nc 1 2 3 4\n", "glove", "records[1] at byte 10"),
])
def test_a_damaged_text_file_reports_its_own_family_error(tmp_path, text, family, where):
    f = tmp_path / "damaged.txt"
    f.write_bytes(text)
    assert wv.sniff(f) == family
    with pytest.raises(FormatError) as e:
        wv.read(f)
    assert e.value.format == family and where in str(e.value) and "wrong number of values" in str(e.value)
    r = run("inspect", f)
    assert r.returncode == 2 and one_error_line(r).startswith(f"wvformats: error: {f}: {family} {where}")


def test_real_binary_files_still_sniff_as_binary():
    assert wv.sniff(sample("sample.bin")) == "word2vec-binary"
    assert wv.sniff(sample("sample-c-newlines.bin")) == "word2vec-binary"


@pytest.mark.parametrize("args,asked,actual,hint", [
    (["convert", "glove.txt", "x.model", "--to", "sentencepiece"], "sentencepiece", "glove",
     "wvformats convert FILE OUT --to fasttext|finalfusion|leader|npz-embeddings|word2vec-binary|word2vec-text"),
    (["convert", sample("sample-bpe.model"), "bpe.txt"], "word2vec-text", "sentencepiece",
     "wvformats sentencepiece export FILE OUT --to hf|tsv|json"),
    (["sentencepiece", "export", "glove.txt", "out.json", "--to", "json"], "sentencepiece", "glove",
     "wvformats convert FILE OUT --to"),
    (["rwkv", "quantize", "glove.txt", "out.bin", "--type", "Q5_1"], "rwkv", "glove", "wvformats similar FILE WORD"),
    (["convert", sample("sample-rwkv-q5_1.bin"), "x.vec"], "word2vec-text", "rwkv", "wvformats rwkv quantize"),
])
def test_a_file_of_another_family_is_named_with_what_can_be_done(tmp_path, args, asked, actual, hint):
    (tmp_path / "glove.txt").write_bytes(sample("sample.glove").read_bytes())
    r = run(*args, cwd=tmp_path)
    line = one_error_line(r)
    assert r.returncode == 2
    assert f"is a {actual} file" in line and asked in line and hint in line, line
    # what the file is comes first; the error of the format asked for, if any, only after it
    said = line.partition(f"; read as {asked}: ")[0]
    assert f"is a {actual} file" in said and hint in said, line
    assert "end-group tag" not in said and "constant field" not in said and "expected SentencePiece" not in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["glove.txt"]  # nothing written


GGUF_VOCAB = Path(__file__).parent / "data" / "gguf" / "ggml-vocab-bert-bge.gguf"


def _gensim_file(name: str) -> Path:
    from gensim.test.utils import datapath

    return Path(datapath(name))


def test_what_a_file_is_never_ends_in_a_dangling_semicolon(tmp_path):
    """Every format's sentence of what a file of it is and what can be done with it ends in a use, also for a
    format no other format takes and no command serves (GGUF: it said "... is a gguf file (GGUFModel); ")."""
    from wvformats import api, registry

    for name, fmt in registry.load().items():
        said = api.what_it_is("f", fmt)
        assert said.startswith(f"f is a {name} file") and not said.rstrip().endswith(";"), said
        assert "`wvformats " in said.partition("; ")[2], said
    commands = [("similar", GGUF_VOCAB, "the"), ("convert", GGUF_VOCAB, tmp_path / "x.vec"),
                ("sentencepiece", "export", GGUF_VOCAB, tmp_path / "o.json", "--to", "json")]
    for args in commands:
        r = run(*args)
        line = one_error_line(r)
        # (GGUF converts to safetensors and to sentencepiece, its tokenizer: the uses named)
        assert r.returncode == 2 and "is a gguf file (GGUFModel); `wvformats convert FILE OUT --to " \
            "safetensors|safetensors-sharded|sentencepiece` " \
            "converts it" in line, line
        assert not line.rstrip().endswith(";"), line
    with pytest.raises(FormatError) as e:
        wv.read(GGUF_VOCAB, format="sentencepiece")
    assert "is a gguf file (GGUFModel); `wvformats convert FILE OUT --to safetensors|safetensors-sharded|sentencepiece` converts it; " \
        "read as sentencepiece: " in str(e.value)
    # a format no other format takes and no command serves (npz) says what inspect shows
    assert api.what_it_is("f", registry.get("npz")).endswith("`wvformats inspect FILE` shows what it holds")


def test_a_format_forced_on_a_file_of_another_kind_says_what_the_file_is_then_its_error():
    """``-f``/``format=`` naming a format the file is not: what the file is comes first, then the named
    format's own error with its field and offset (before, only the named format's deepest error)."""
    r = run("inspect", "-f", "sentencepiece", GGUF_VOCAB)
    line = one_error_line(r)
    assert r.returncode == 2
    said, _, then = line.partition("; read as sentencepiece: ")
    assert "not a sentencepiece file" in said and "is a gguf file" in said, line
    assert then == "fields[0] at byte 0: wire type 7 does not exist", line
    vectors = _gensim_file("euclidean_vectors.bin")
    r = run("validate", "-f", "fasttext", vectors)
    assert r.returncode == 1
    said, _, then = r.stdout.partition("; read as fasttext: ")
    assert "is a word2vec-binary file (Embeddings); `wvformats convert" in said, r.stdout
    assert then.startswith("dictionary.size at byte 56: does not satisfy size >= 0"), r.stdout
    [report] = json.loads(run("validate", "--json", "-f", "fasttext", vectors).stdout)
    assert (report["field"], report["offset"], report["size"]) == ("dictionary.size", 56, vectors.stat().st_size)
    for call in (lambda: wv.inspect(vectors, "fasttext"), lambda: wv.read(vectors, "fasttext"),
                 lambda: wv.parse_file(vectors, "fasttext")):
        with pytest.raises(FormatError, match=r"is a word2vec-binary file .*; read as fasttext: dictionary.size"):
            call()
    r = run("dump", "-f", "fasttext", vectors)
    assert r.returncode == 2 and "is a word2vec-binary file" in one_error_line(r)


def test_a_fasttext_file_of_an_unknown_version_is_named_fasttext(tmp_path):
    """fastText's magic with version 13: fastText's error naming the versions it reads (fastText itself
    refuses a version newer than its own), not "no registered format matches"."""
    import struct

    data = bytearray(_gensim_file("lee_fasttext_new.bin").read_bytes())
    assert struct.unpack_from("<2i", data) == (793712314, 11)  # (gensim writes version 11)
    struct.pack_into("<i", data, 4, 13)
    f = tmp_path / "v13.bin"
    f.write_bytes(bytes(data))
    assert wv.sniff(f) == "fasttext"
    with pytest.raises(FormatError) as e:
        wv.read(f)
    assert e.value.format == "fasttext" and e.value.path == "version" and e.value.offset == 4
    assert "fastText reads versions 1 to 12" in str(e.value) and e.value.found == 13
    r = run("validate", "--json", f)
    [report] = json.loads(r.stdout)
    assert r.returncode == 1 and (report["format"], report["field"], report["offset"]) == ("fasttext", "version", 4)


def test_system_errors_are_sentences_with_the_path(tmp_path):
    (tmp_path / "adir").mkdir()
    r = run("convert", sample("sample.glove"), "adir", "--to", "glove", "--force", cwd=tmp_path)
    assert r.returncode == 2 and one_error_line(r).startswith("wvformats: error: adir: is a folder")
    assert ".tmp" not in r.stderr and list((tmp_path / "adir").iterdir()) == []
    (tmp_path / "afile").write_text("x")
    r = run("docs", "afile", cwd=tmp_path)
    assert r.returncode == 2 and one_error_line(r).startswith("wvformats: error: afile: exists and is not a folder")
    r = run("inspect", "missing.vec", cwd=tmp_path)
    assert r.returncode == 2 and one_error_line(r) == "wvformats: error: missing.vec: no such file or folder"


@pytest.mark.parametrize("command", ["inspect", "dump", "sniff"])
def test_a_closed_pipe_ends_quietly(command):
    """``wvformats inspect f | head -c1``: the reader goes away; no error line, the shell's SIGPIPE status."""
    p = subprocess.Popen([sys.executable, "-m", "wvformats.cli", command, str(sample("sample.txt"))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait() == 141 and err == b""


def test_validate_says_which_number_float32_cannot_hold(tmp_path):
    f = tmp_path / "precise.txt"
    f.write_bytes(b"2 3\na 0.25 0.5 0.75\nb 0.5 0.123456789 0.25\n")
    report = wv.validate(f)
    assert not report.ok and report.first_difference == 35
    assert "line 3: 0.123456789 does not survive float32 (it is written back as 0.12345679)" in str(report)
    assert "dtype='float64'" in str(report)
    assert wv.read(f, dtype="float64").vectors[1, 1] == 0.123456789  # what the hint promises
    r = run("validate", f)
    assert r.returncode == 1 and "line 3: 0.123456789 does not survive float32" in r.stdout
    f.write_bytes(b"2 3\na 0.25 2 3\nb 1 0.5 3\n")  # "2" comes back as "2.0": a spelling, not precision lost
    assert wv.validate(f).notes == []


def test_invalid_utf8_suggests_unicode_errors_which_inspect_and_validate_take(tmp_path):
    f = tmp_path / "latin1.txt"
    f.write_bytes(b"2 3\ncaf\xe9 1 2 3\nb 1 2 3\n")
    with pytest.raises(FormatError, match=r"records\[0\].word at byte 7: invalid UTF-8.*unicode_errors='replace'"):
        wv.read(f)
    r = run("inspect", f)
    assert r.returncode == 2 and "--unicode-errors replace" in one_error_line(r)
    r = run("inspect", f, "--unicode-errors", "replace", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["words"] == 2
    r = run("validate", f, "--unicode-errors", "ignore")
    assert r.returncode == 1 and "rebuild differs (first difference at byte 7" in r.stdout  # read, not refused
    assert wv.read(f, unicode_errors="replace").words[0] == "caf\ufffd"


@pytest.mark.parametrize("format", [None, "glove", "infini-gram"])
def test_a_missing_path_is_a_file_not_found_error(tmp_path, format):
    with pytest.raises(FileNotFoundError) as e:
        wv.read(tmp_path / "nope.vec", format)
    assert isinstance(e.value, FormatError) and e.value.filename == str(tmp_path / "nope.vec")


def test_enum_fields_are_named_values():
    """``trainer_spec.model_type`` is ``BPE`` (an IntEnum equal to 2), as inspect shows it; sentencepiece's
    own protobuf module is the oracle of the numbers."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    path = sample("sample-bpe.model")
    proto = pb.ModelProto.FromString(path.read_bytes())
    spec = wv.read(path).trainer_spec
    assert repr(spec.model_type) == "<ModelType.BPE: 2>" and str(spec.model_type) == "BPE"
    assert spec.model_type == proto.trainer_spec.model_type == pb.TrainerSpec.BPE
    assert json.loads(run("inspect", path, "--json").stdout)["model_type"] == "BPE"
    unigram = wv.read(Path(__file__).parent / "data" / "sentencepiece" / "botchan_en_unigram_1000.model")
    assert repr(unigram.trainer_spec.model_type) == "<ModelType.UNIGRAM: 1>"


def test_models_and_tensors_have_short_reprs():
    sp = wv.read(sample("sample-bpe.model"))
    assert repr(sp) == "<SentencePieceModel BPE: 80 pieces>"
    model = wv.read(sample("sample-rwkv-q5_1.bin"))
    assert repr(model) == ("<RwkvModel v4 version 101: n_vocab=16 n_embed=32 n_layer=1 data_type=8 (Q5_1), "
                           "24 tensors>")
    assert repr(model.tensors["emb.weight"]) == "<Tensor 'emb.weight' FP16 (16, 32) at byte 54>"
    index = wv.read(sample("sample-index"))
    assert repr(index).endswith(": 1 shard(s), 52 tokens of 1 byte(s)>")
    assert all(len(repr(x)) < 120 for x in (sp, model, index, *model.tensors.values()))


# -- 5. the command line explains itself -----------------------------------------------------------------


def test_version_and_help_list_each_command_once():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"wvformats {wv.__version__}"
    r = run("--help")
    assert r.returncode == 0
    # the core commands, then the families' own (wvformats/families/<family>/commands.py), by family
    commands = ["formats", "sniff", "inspect", "dump", "validate", "convert", "similar", "analogy", "docs", "samples",
                "fasttext", "rwkv", "gguf", "infinigram", "sentencepiece"]
    listed = [line.split()[0] for line in r.stdout.splitlines() if line.startswith("    ") and line.split()]
    assert [c for c in listed if c in commands] == commands  # each once, in one place
    assert "130 interrupted" in r.stdout and "141 output closed" in r.stdout


def test_options_say_their_choices():
    r = run("convert", "--help")
    text = " ".join(r.stdout.split())
    assert f"--to FORMAT output format, one of: {', '.join(wv.api.writable_formats())}" in text
    assert "infini-gram" not in text.split("--to FORMAT")[1].split("--force")[0]  # built, not converted to
    assert "repr the shortest that reads back the same float32 (0.12345679" in text and "fixed6 six decimals" in text
    assert "--unicode-errors {strict,replace,ignore}" in text
    for command in ("inspect", "validate"):
        assert "--unicode-errors {strict,replace,ignore}" in run(command, "--help").stdout


def test_formats_is_a_table_of_what_each_format_can_do():
    rows = {r["name"]: r for r in json.loads(run("formats", "--json").stdout)}
    assert rows["glove"]["convert_to"] == ["fasttext", "finalfusion", "leader", "npz-embeddings", "word2vec-binary",
                                           "word2vec-text"]
    assert rows["sentencepiece"]["convert_to"] == ["gguf"] and rows["sentencepiece"]["write"]  # the tokenizer bridge
    assert rows["gguf"]["convert_to"] == ["safetensors", "safetensors-sharded", "sentencepiece"]
    assert rows["safetensors"]["convert_to"] == ["gguf", "safetensors-sharded"]
    assert rows["safetensors-sharded"]["convert_to"] == ["gguf", "safetensors"]  # (and itself, with --shard-size)
    assert rows["safetensors-sharded"]["write"] and rows["safetensors-sharded"]["validate"] == "consistency"
    assert not rows["infini-gram"]["write"] and rows["infini-gram"]["validate"] == "consistency"
    assert "subwords" in rows["finalfusion"]["lookups"] and rows["word2vec-text"]["lookups"] == "similar, analogy"
    lines = run("formats").stdout.splitlines()
    assert lines[0].split() == ["format", "extensions", "write", "validate", "convert", "to", "lookups"]
    assert any(line.startswith("infini-gram") and "infinigram build" in line for line in lines)


@pytest.fixture(scope="module")
def random_vectors(tmp_path_factory):
    """3000 random words: enough rows that the top ten are found by partition, not by a full sort."""
    rng = np.random.default_rng(7)
    path = tmp_path_factory.mktemp("similar") / "random.txt"
    wv.write(wv.Embeddings([f"w{i}" for i in range(3000)], rng.standard_normal((3000, 24)).astype(np.float32)),
             path, "word2vec-text")
    return path


@pytest.mark.parametrize("name", ["random", "sample.txt", "sample.bin"])
def test_similar_and_analogy_agree_with_gensim(random_vectors, name):
    from gensim.models import KeyedVectors

    path = random_vectors if name == "random" else sample(name)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=name.endswith(".bin"))
    a, b, c = kv.index_to_key[1:4]
    r = run("similar", path, a, "-k", "7", "--json")
    got = json.loads(r.stdout)["results"]
    want = kv.most_similar(a, topn=7)
    assert [g["word"] for g in got] == [w for w, _ in want]
    np.testing.assert_allclose([g["similarity"] for g in got], [s for _, s in want], rtol=1e-5, atol=1e-6)
    got = json.loads(run("analogy", path, a, b, c, "-k", "5", "--json").stdout)["results"]
    want = kv.most_similar(positive=[b, c], negative=[a], topn=5)
    assert [g["word"] for g in got] == [w for w, _ in want]
    np.testing.assert_allclose([g["similarity"] for g in got], [s for _, s in want], rtol=1e-5, atol=1e-6)
    text = run("similar", path, a, "-k", "2")  # plain output: word, tab, similarity, as gensim's pairs
    want = kv.most_similar(a, topn=2)
    assert [line.split("\t")[0] for line in text.stdout.splitlines()] == [w for w, _ in want]
    assert [float(line.split("\t")[1]) for line in text.stdout.splitlines()] == pytest.approx(
        [s for _, s in want], abs=1e-6)
    got = json.loads(run("analogy", path, a, b, c, "--json").stdout)  # the query in gensim's terms too
    assert (got["query"], got["positive"], got["negative"]) == ([a, b, c], [b, c], [a])


def test_similar_composes_unknown_words_as_finalfusion_does(tmp_path):
    """finalfusion-python's word_similarity and analogy (which assume L2-normalised rows) are the oracle,
    on a bucket-subword file written with --normalize; 'unseenword' is in no vocabulary."""
    import finalfusion

    path = tmp_path / "n.fifu"
    assert run("convert", sample("sample-bucket.fifu"), path, "--normalize").returncode == 0
    ff = finalfusion.load_finalfusion(str(path))
    for args, want in ((["similar", path, "unseenword", "-k", "3"], ff.word_similarity("unseenword", 3)),
                       (["analogy", path, "the", "of", "unseenword", "-k", "3"],
                        ff.analogy("the", "of", "unseenword", 3))):
        got = json.loads(run(*args, "--json").stdout)["results"]
        assert [g["word"] for g in got] == [x.word for x in want]
        np.testing.assert_allclose([g["similarity"] for g in got], [x.similarity for x in want], rtol=1e-5)


def test_similar_refuses_what_it_cannot_look_up(tmp_path):
    r = run("similar", sample("sample.txt"), "zzz")
    assert r.returncode == 2 and "'zzz' is not in" in one_error_line(r) and "no subwords" in r.stderr
    r = run("similar", sample("sample-bpe.model"), "the")
    assert r.returncode == 2 and "is a sentencepiece file" in one_error_line(r)
    assert run("similar", sample("sample.txt"), "the", "-k", "0").returncode == 2


# -- 6. long work shows progress; tokenizers load at once or fail at once ---------------------------------

SP_MODEL = Path(__file__).parent / "data" / "sentencepiece" / "botchan_en_bpe_1000.model"
TEXTS = ["hello world", "It was the best of times.", "hello there, world"]


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    return tmp_path


def _indexed_documents(index: Path) -> list[list[int]]:
    """The documents of a one-shard u16 index, from its tokenized file (separator 0xFFFF before each)."""
    tokens = np.fromfile(index / "tokenized.0", "<u2").tolist()
    docs, current = [], None
    for t in tokens:
        if t == 0xFFFF:
            if current is not None:
                docs.append(current)
            current = []
        else:
            current.append(t)
    return [*docs, current]


@pytest.mark.parametrize("kind", ["tokenizer.model", "tokenizer.json"])
def test_build_with_a_local_tokenizer_needs_no_network(corpus, kind):
    """sentencepiece's own encoder is the oracle of the ids an index built with a local tokenizer holds."""
    import sentencepiece

    tokenizer = SP_MODEL
    if kind == "tokenizer.json":
        tokenizer = corpus / "tokenizer.json"
        assert run("sentencepiece", "export", SP_MODEL, tokenizer, "--to", "hf").returncode == 0
    r = run("infinigram", "build", corpus / "data", corpus / "index", "--token-width", "2", "--tokenizer", tokenizer,
            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    sp = sentencepiece.SentencePieceProcessor(model_file=str(SP_MODEL))
    assert _indexed_documents(corpus / "index") == [sp.encode(t) for t in TEXTS]
    r = run("infinigram", "count", corpus / "index", "--text", "hello", "--tokenizer", tokenizer)
    assert r.returncode == 0 and r.stdout.strip() == "2"


def test_an_unloadable_tokenizer_fails_at_once_in_one_line(corpus):
    """Offline, a Hub name retried for 48 s and printed 27 lines."""
    import time

    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env["HF_ENDPOINT"] = "https://unreachable.invalid"  # no network, whatever the machine has
    env["HF_HOME"] = str(corpus / "hf-home")  # an empty cache
    start = time.monotonic()
    r = run("infinigram", "build", corpus / "data", corpus / "index", "--token-width", "2", "--tokenizer",
            "gpt2", env=env)
    assert time.monotonic() - start < 20
    line = one_error_line(r)
    assert r.returncode == 2 and "cannot load the tokenizer 'gpt2'" in line and "tokenizer.model" in line
    assert not (corpus / "index").exists()
    r = run("infinigram", "build", corpus / "data", corpus / "index", "--token-width", "2", "--tokenizer",
            sample("sample.txt"))
    assert r.returncode == 2 and "is neither a tokenizer.json nor a SentencePiece model" in one_error_line(r)


def _on_a_terminal(*args) -> str:
    """What the command writes to a terminal (stdout and stderr both on a pseudo-terminal)."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # (0 columns: tqdm draws nothing)
        os.execv(sys.executable, [sys.executable, "-m", "wvformats.cli", *map(str, args)])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out.decode("utf-8", "replace")


def test_validate_full_shows_progress_on_a_terminal_only(tmp_path):
    from wvformats import infinigram

    index = tmp_path / "index"
    infinigram.build([[1, 2, 3] * 50, [2, 3, 4] * 50], index, token_width=2)
    assert "suffix order of index" in _on_a_terminal("validate", index, "--full")
    assert "suffix order" not in _on_a_terminal("validate", index, "--full", "--quiet")
    r = run("validate", index, "--full")  # stderr not a terminal: quiet
    assert r.returncode == 0 and r.stderr == ""
    seen = []
    assert wv.validate(index, full=True, progress=seen.append).ok and sum(seen) == 301  # every neighbouring pair


def test_the_readme_sentencepiece_edits_work_as_shown(tmp_path):
    """The README's editing lines, with sentencepiece's processor as the oracle of the edited model."""
    import sentencepiece
    from wvformats.schemas.sentencepiece import PieceType

    from wvformats import sentencepiece as spm

    sp = wv.read(SP_MODEL)
    edited = spm.add_piece(sp, "<sep>", type=PieceType.USER_DEFINED)  # a PieceType as well as its name
    edited = spm.set_piece(edited, 5, score=-2.5)
    edited = spm.set_normalizer(edited, add_dummy_prefix=False)
    wv.write(edited, tmp_path / "edited.model")
    proc = sentencepiece.SentencePieceProcessor(model_file=str(tmp_path / "edited.model"))
    assert proc.get_piece_size() == len(sp) + 1 and proc.id_to_piece(len(sp)) == "<sep>"
    assert proc.is_unknown(0) and proc.get_score(5) == -2.5 and proc.encode("a<sep>b")[1] == len(sp)
    assert wv.read(tmp_path / "edited.model").normalizer_spec.add_dummy_prefix is False


def test_validate_reports_the_failing_field_and_offset_as_fields_and_cuts_long_values(tmp_path):
    """``ValidationReport`` (and ``validate --json``) keeps where the file fails as ``field`` and ``offset``,
    not only inside the message, with the file's real size; a long byte value in the error is cut to its
    start and its length (before: the padding's every byte, and no offset field)."""
    data = bytearray(sample("sample-tiny.gguf").read_bytes())
    report = wv.validate(sample("sample-tiny.gguf"))
    assert report.ok and report.field is None and report.offset is None
    data[0x290] = 7  # a byte inside the 26 zero bytes of padding before the tensor data (at 646)
    bad = tmp_path / "badpad.gguf"
    bad.write_bytes(bytes(data))
    r = run("validate", "--json", bad)
    [report] = json.loads(r.stdout)
    assert r.returncode == 1 and (report["field"], report["offset"], report["size"]) == ("padding", 646, len(data))
    assert report["error"].endswith("padding bytes are not zero (found b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
                                    "\\x00\\x00\\x00\\x07\\x... (26 bytes in all))"), report["error"]
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(bytes(data[:300]))
    report = wv.validate(cut)
    assert not report.ok and report.size == 300 and report.field and report.offset is not None
    assert f"{report.field} at byte {report.offset}" in report.error


def test_bytes_paths_are_taken_as_open_takes_them(tmp_path):
    """A bytes path (os.fsencode, as open() and os.listdir give them) works for every API call, as a str does."""
    src = Path(__file__).parent / "data" / "fasttext" / "trained" / "sup-hs.bin"
    b = os.fsencode(src)
    assert wv.read(b).labels == wv.read(src).labels
    assert wv.inspect(b)["format"] == "fasttext" and wv.validate(b).ok and wv.sniff(b) == "fasttext"
    out = os.fsencode(tmp_path / "x.vec")
    wv.write(wv.read(b), out)
    wv.convert(b, os.fsencode(tmp_path / "y.vec"))
    assert (tmp_path / "x.vec").read_bytes() == (tmp_path / "y.vec").read_bytes()


# -- every error names its file ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """A fastText model cut short, a GGUF header cut short, good files beside them, and a safetensors file no
    tensor of which Q8_0 fits."""
    d = tmp_path_factory.mktemp("damaged")
    toy = Path(__file__).parent / "data" / "fasttext" / "toy-model.bin"
    (d / "cut.bin").write_bytes(toy.read_bytes()[:3000])
    (d / "cut.gguf").write_bytes(b"GGUF\x03\0\0\0\xff\xff\xff\xff")
    (d / "good.vec").write_bytes(sample("sample.txt").read_bytes())
    (d / "good.gguf").write_bytes((Path(wv.__file__).parent / "sample_files" / "sample-tiny.gguf").read_bytes())
    from safetensors.numpy import save_file

    save_file({"w": np.ones((2, 100), np.float32)}, d / "rows100.safetensors")
    return d


@pytest.mark.parametrize("args,named", [
    (["inspect", "{d}/cut.bin"], "cut.bin"),
    (["inspect", "--full", "{d}/cut.bin"], "cut.bin"),
    (["inspect", "-f", "glove", "{d}/cut.bin"], "cut.bin"),
    (["dump", "{d}/cut.bin"], "cut.bin"),
    (["validate", "{d}/good.vec", "{d}/cut.gguf", "--encoding", "cp852"], "cut.gguf"),
    (["similar", "{d}/cut.bin", "night"], "cut.bin"),
    (["analogy", "{d}/cut.bin", "a", "b", "c"], "cut.bin"),
    (["convert", "{d}/cut.bin", "{d}/out.vec"], "cut.bin"),
    (["convert", "{d}/rows100.safetensors", "{d}/out.gguf", "--type", "Q8_0"], "out.gguf"),
    (["convert", "{d}/good.vec", "{d}/out.gguf"], "good.vec"),
    (["convert", "{d}/good.vec", "{d}/out.leader", "--newline"], "out.leader"),
    (["gguf", "dump", "{d}/cut.gguf"], "cut.gguf"),
    (["gguf", "set", "{d}/cut.gguf", "general.name", "x"], "cut.gguf"),
    (["gguf", "new", "{d}/cut.gguf", "{d}/out.gguf"], "cut.gguf"),
    (["gguf", "new", "{d}/good.gguf", "{d}/out.gguf", "--set", "general.nmae=x"], "good.gguf"),
    (["fasttext", "predict", "{d}/cut.bin", "{d}/good.vec"], "cut.bin"),
    (["fasttext", "nn", "{d}/cut.bin", "night"], "cut.bin"),
    (["fasttext", "analogies", "{d}/cut.bin", "a", "b", "c"], "cut.bin"),
    (["sentencepiece", "export", "{d}/cut.bin", "{d}/out.json", "--to", "hf"], "cut.bin"),
    (["rwkv", "quantize", "{d}/cut.bin", "{d}/out.bin", "--type", "Q8_0"], "cut.bin"),
])
def test_every_command_line_error_names_its_file(damaged, capsys, args, named):
    """A parse error named the format, field and offset but not the file (``wvformats: error: fasttext
    output.data at byte 2873: ...``); with several files, or a source and a destination, the user could not
    tell which. The error line starts with the file the error is in."""
    from wvformats import cli

    assert cli.main([a.format(d=damaged) for a in args]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"wvformats: error: {damaged / named}: "), err


def test_an_error_writing_to_standard_output_names_no_temporary_file(damaged):
    r = run("convert", damaged / "rows100.safetensors", "-", "--to", "gguf", "--type", "Q8_0")
    assert r.returncode == 2 and r.stdout == ""
    assert one_error_line(r).startswith("wvformats: error: standard output: gguf: type Q8_0 (--type) applied to 0")


def test_the_api_names_the_file_of_a_format_error(damaged):
    """``FormatError.file`` is set where the API opens a file (read, or the destination of write)."""
    with pytest.raises(FormatError) as e:
        wv.read(damaged / "cut.bin")
    assert e.value.file == str(damaged / "cut.bin") and e.value.path == "output.data"
    st = wv.read(damaged / "rows100.safetensors")
    with pytest.raises(FormatError) as e:
        wv.write(st, damaged / "out.gguf", type="Q8_0")
    assert e.value.file == str(damaged / "out.gguf")


def test_an_error_a_model_raises_later_names_the_commands_input():
    """A FormatError raised after the API returned (a lazily read part of a model) names the command's one
    input file; one that names its file is not named twice."""
    import argparse

    from wvformats.cli import _sentence

    args = argparse.Namespace(model=Path("lid.ftz"), input="-")
    e = FormatError("bad code", format="fasttext", path="input.codes", offset=459292)
    assert _sentence(e, args) == "lid.ftz: fasttext input.codes at byte 459292: bad code"
    assert _sentence(e, argparse.Namespace(files=[Path("a"), Path("b")])) == str(e)  # (which one: unknown)
    e.file = "other.ftz"
    assert _sentence(e, args).startswith("other.ftz: fasttext")
    assert _sentence(FileNotFoundError(2, "No such file or directory", "x.vec"), args) == \
        "x.vec: No such file or directory"


# -- --dedupe, for every format that holds words --------------------------------------------------------------

WORD_TARGETS = [("out.vec", "word2vec-text"), ("out.w2v", "word2vec-binary"), ("out.glove", "glove"),
                ("out.leader", "leader"), ("out.fifu", "finalfusion"), ("out.npz", "npz-embeddings"),
                ("out.bin", "fasttext")]


@pytest.mark.parametrize("name,format", WORD_TARGETS)
def test_dedupe_works_for_every_target_that_holds_words(tmp_path, name, format):
    """``--dedupe`` worked to finalfusion and fastText only ("word2vec-text files take no write option
    'deduplicate'"): the embeddings are deduplicated once, for any writer; the words, written in the encoding
    they were read in, are each kept once with the row lookups use (the first)."""
    from wvformats import cli

    words = ["ŕ", "b", "ŕ", "c"]  # (a word cp852 holds, which is not ASCII)
    vectors = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    src = tmp_path / "dup.vec"
    wv.write(wv.Embeddings(words, vectors), src, to_encoding="cp852")
    out = tmp_path / name
    keep = ["--no-normalize"] if format == "finalfusion" else []  # (rows as given, not L2-normalised)
    assert cli.main(["convert", str(src), str(out), "--to", format, "--encoding", "cp852", "--dedupe", *keep]) == 0
    back = wv.read(out, format, encoding="cp852") if format not in ("finalfusion", "npz-embeddings") else \
        wv.read(out, format)
    assert back.words == ["ŕ", "b", "c"]
    np.testing.assert_array_equal(back.embedding_batch(back.words)[0], vectors[[0, 1, 3]])
    if format not in ("finalfusion", "npz-embeddings"):  # their words are UTF-8 by the format
        assert "ŕ".encode("cp852") in out.read_bytes() and "ŕ".encode() not in out.read_bytes()


@pytest.mark.parametrize("name,format", WORD_TARGETS)
def test_dedupe_of_the_issues_fasttext_model(tmp_path, name, format):
    """The command of the report: a cp852 fastText model read as UTF-8 with replacement characters, whose words
    then repeat, converted with --dedupe; the words lookups use, once each. A fastText model to fastText looks
    its words up by their bytes, which repeat none: written as read."""
    from wvformats import cli

    src = Path(__file__).parent / "data" / "fasttext" / "cp852_fasttext.bin"
    m = wv.read(src, unicode_errors="replace")
    assert m.duplicates == 6
    out = tmp_path / name
    assert cli.main(["convert", str(src), str(out), "--to", format, "--unicode-errors", "replace", "--dedupe"]) == 0
    if format == "fasttext":
        assert out.read_bytes() == src.read_bytes()
        return
    back, once = wv.read(out), m.deduplicated()
    assert back.words == once.words and back.duplicates == 0
    rows = back.embedding_batch(once.words)[0]
    if format == "finalfusion":  # (normalised, as finalfusion writes rows from elsewhere, the norms kept)
        rows = rows * back.norms[:, None]
    np.testing.assert_allclose(rows, once.vectors, rtol=1e-6, atol=1e-7)


def test_dedupe_is_refused_by_formats_without_words(tmp_path):
    from wvformats.errors import OptionError

    st = wv.safetensors.SafeTensors.from_arrays({"w": np.ones((2, 32), np.float32)})
    with pytest.raises(OptionError, match="gguf files take no write option 'deduplicate'"):
        wv.write(st, tmp_path / "x.gguf", deduplicate=True)
