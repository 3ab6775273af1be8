"""GGUF <-> SentencePiece: llama.cpp's SentencePiece vocabularies written as tokenizer.model files that
sentencepiece loads and that tokenize llama.cpp's own test cases (.inp/.out) to its ids, tokenizer.model files
written as vocabulary-only GGUFs, and check() against what SentencePieceProcessor refuses (issue 27, item 7)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv

spm = pytest.importorskip("sentencepiece")  # the 'peers' extra, installed by CI
gguf = pytest.importorskip("gguf")
from sentencepiece import sentencepiece_model_pb2 as pb  # noqa: E402

DATA = Path(__file__).parents[2] / "data"
# llama.cpp's SentencePiece ('llama') vocabularies with their tokenizer test cases (tests/data/gguf/README.md)
SPM_VOCABS = {"llama-spm": DATA / "gguf" / "ggml-vocab-llama-spm.gguf",
              "phi-3": DATA / "gguf" / "ggml-vocab-phi-3.gguf.xz"}
BOTCHAN = DATA / "sentencepiece" / "botchan_en_bpe_1000.model"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "wvformats.cli", *map(str, args)], capture_output=True, text=True)


def _cases(name):
    """llama.cpp's test-tokenizer-0 cases: (text, ids) pairs."""
    base = DATA / "gguf" / f"ggml-vocab-{name}.gguf"
    texts = Path(f"{base}.inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    ids = [[int(x) for x in line.split()] for line in Path(f"{base}.out").read_text().split("\n")]
    assert len(ids) >= len(texts) > 40
    return list(zip(texts, ids, strict=False))


@pytest.fixture(scope="module", params=sorted(SPM_VOCABS))
def bridged(request, tmp_path_factory):
    """(name, the GGUF model, the tokenizer.model `wvformats convert` wrote from it)."""
    name = request.param
    out = tmp_path_factory.mktemp("bridge") / f"{name}.model"
    r = _cli("convert", SPM_VOCABS[name], out)
    assert r.returncode == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and "the tokenizer only" in warning[0], r.stderr
    return name, wv.read(SPM_VOCABS[name]), out


def test_converted_vocabularies_tokenize_llama_cpp_test_cases_to_its_ids(bridged):
    """`wvformats convert ggml-vocab-phi-3.gguf tokenizer.model` wrote a model sentencepiece refused
    (INTERNAL: unk is already defined). Now sentencepiece loads it, and encodes each of llama.cpp's test texts
    to the ids llama.cpp gives (its .out file)."""
    name, model, path = bridged
    sp = spm.SentencePieceProcessor(model_file=str(path))
    tokens = model.metadata["tokenizer.ggml.tokens"].tolist()
    assert sp.vocab_size() == len(tokens) and [sp.id_to_piece(i) for i in range(len(tokens))] == tokens
    assert [sp.get_score(i) for i in range(len(tokens))] == model.metadata["tokenizer.ggml.scores"].tolist()
    cases = _cases(name)
    assert [sp.encode(text) for text, _ in cases] == [ids for _, ids in cases]
    meta = model.metadata
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id()) == (meta["tokenizer.ggml.unknown_token_id"],
                                                       meta["tokenizer.ggml.bos_token_id"],
                                                       meta["tokenizer.ggml.eos_token_id"])


def test_converted_vocabularies_validate_and_inspect_with_their_piece_count(bridged):
    """inspect said vocab_size 8000 (the TrainerSpec default, the field being absent) for 32,064 pieces."""
    name, model, path = bridged
    n = len(model.metadata["tokenizer.ggml.tokens"])
    r = _cli("validate", path)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("inspect", "--json", path)
    info = json.loads(r.stdout)
    assert info["pieces"] == info["vocab_size"] == n and info["trainer"]["vocab_size"] == n
    assert wv.read(path).check() == []


def test_tokenizer_model_back_to_a_vocabulary_gguf(bridged, tmp_path):
    """`wvformats convert tokenizer.model vocab.gguf`: the tokenizer keys as llama.cpp's converter writes them
    (gguf-py reads them): llama.cpp's own tokens, scores and special ids back, and its token types, but where
    a tokenizer.model has no way to say them (phi-3: the unk token CONTROL, padding tokens UNKNOWN, </s>
    USER_DEFINED, which the converter writes NORMAL). Converted again, the same tokenizer.model (but for the
    USER_DEFINED piece the converter made NORMAL)."""
    name, model, path = bridged
    out = tmp_path / "vocab.gguf"
    r = _cli("convert", path, out)
    assert r.returncode == 0, r.stderr
    fields = gguf.GGUFReader(out).fields
    meta = model.metadata
    assert fields["general.architecture"].contents() == "llama"  # (a tokenizer.model does not name its model's)
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.bos_token_id",
                "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"):
        assert fields[key].contents() == (meta[key].tolist() if key.endswith("tokens") else meta[key]), key
    assert np.array_equal(fields["tokenizer.ggml.scores"].contents(), meta["tokenizer.ggml.scores"])
    old, new = np.asarray(meta["tokenizer.ggml.token_type"]), np.array(fields["tokenizer.ggml.token_type"].contents())
    changed = {(int(a), int(b)) for a, b in zip(old[old != new], new[old != new], strict=True)}
    assert changed == ({(3, 2), (4, 1), (2, 5)} if name == "phi-3" else set())
    assert wv.read(out).check() == [] and wv.validate(out).ok
    again = tmp_path / "again.model"
    assert _cli("convert", out, again).returncode == 0
    first, second = wv.read(path), wv.read(again)
    assert first.piece_strings == second.piece_strings and np.array_equal(first.scores, second.scores)
    retyped = {(i, first.piece(i)[2], second.piece(i)[2]) for i in np.flatnonzero(first.types != second.types)}
    assert retyped == ({(2, "USER_DEFINED", "NORMAL")} if name == "phi-3" else set())
    if name == "llama-spm":
        assert again.read_bytes() == path.read_bytes()


def test_bridged_model_is_what_protobuf_writes():
    """The messages are built by field name in field-number order: protobuf rewrites them unchanged."""
    sp = wv.sentencepiece.from_gguf(wv.read(SPM_VOCABS["phi-3"]), warn=False)
    data = bytes(sp._msg.buf)
    proto = pb.ModelProto.FromString(data)
    assert proto.SerializeToString() == data
    assert proto.trainer_spec.eos_piece == "<|endoftext|>" and proto.trainer_spec.byte_fallback
    assert proto.normalizer_spec.name == "identity" and not proto.normalizer_spec.remove_extra_whitespaces


def test_vocabularies_sentencepiece_cannot_hold_are_refused_naming_the_token(tmp_path):
    model = wv.read(SPM_VOCABS["llama-spm"])
    tokens = model.metadata["tokenizer.ggml.tokens"].tolist()
    tokens[100] = tokens[99]
    model.metadata["tokenizer.ggml.tokens"] = tokens
    src = tmp_path / "dup.gguf"
    wv.write(model, src)
    r = _cli("convert", src, tmp_path / "t.model")
    assert r.returncode == 2 and not (tmp_path / "t.model").exists()
    assert f"tokenizer.ggml.tokens[100]: {tokens[99]!r} is piece 99 too (sentencepiece: {tokens[99]} is already " \
           "defined)" in r.stderr, r.stderr
    r = _cli("convert", DATA / "gguf" / "ggml-vocab-bert-bge.gguf", tmp_path / "t.model")
    assert r.returncode == 2 and "a 'bert' vocabulary, not SentencePiece's" in r.stderr, r.stderr


# ---------------------------------------------------------------------------------------------------------
# check(): what SentencePieceProcessor refuses, sentencepiece itself the oracle


def _mutant(edit):
    proto = pb.ModelProto.FromString(BOTCHAN.read_bytes())
    edit(proto)
    return proto.SerializeToString()


def _set(i, **values):
    def edit(proto):
        for k, v in values.items():
            setattr(proto.pieces[i], k, v)
    return edit


def _spec(part, **values):
    def edit(proto):
        for k, v in values.items():
            setattr(getattr(proto, part), k, v)
    return edit


REFUSED = {
    "two unknown": (_set(5, type=2), "pieces[5] at byte "),
    "no unknown": (_set(0, type=1), "no UNKNOWN piece"),
    "unused unknown": (_set(0, type=5), "no UNKNOWN piece"),
    "duplicate": (_set(6, piece="▁a"), "pieces[6] at byte "),
    "control duplicate": (_set(1, piece="▁a"), "is piece 1 too"),
    "empty": (_set(6, piece=""), "an empty piece"),
    "nul": (_set(6, piece="a\0b"), "holds a NUL"),
    "long": (_set(6, piece="a" * 8000), "a piece of 8000 bytes"),
    "byte without fallback": (_set(6, piece="<0x41>", type=6), "the BYTE piece <0x41> without"),
    "invalid byte": (lambda p: (_set(6, piece="<0x4g>", type=6)(p), _spec("trainer_spec", byte_fallback=True)(p)),
                     "none of <0x00>..<0xFF>"),
    "fallback without bytes": (_spec("trainer_spec", byte_fallback=True), "without 256 of the 256 BYTE pieces"),
    "charsmap trie size": (lambda p: setattr(p.normalizer_spec, "precompiled_charsmap",
                                             (1025).to_bytes(4, "little") + p.normalizer_spec.precompiled_charsmap[4:]),
                           "a trie of 1025 bytes"),
    "charsmap too short": (_spec("normalizer_spec", precompiled_charsmap=b"\x00\x04\x00\x00"), "4 bytes"),
    "charsmap end": (lambda p: setattr(p.normalizer_spec, "precompiled_charsmap",
                                       p.normalizer_spec.precompiled_charsmap[:-1] + b"x"), "do not end in NUL"),
}


def test_the_real_model_passes():
    assert wv.read(BOTCHAN).check() == [] and wv.validate(BOTCHAN).ok


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_check_reports_what_sentencepiece_refuses_in_its_words(case, tmp_path):
    """validate said ok and check() did not exist for these; sentencepiece refuses each. The problem quotes
    sentencepiece's message, names the piece (and its offset) or the field."""
    edit, where = REFUSED[case]
    data = _mutant(edit)
    with pytest.raises(RuntimeError) as refused:
        spm.SentencePieceProcessor(model_proto=data)
    said = str(refused.value).strip().splitlines()[-1].removeprefix("Internal: ").removeprefix("INTERNAL: ")
    path = tmp_path / "m.model"
    path.write_bytes(data)
    problems = wv.read(path).check()
    # (the invalid byte piece also leaves byte_fallback without its 256 pieces: sentencepiece stops at the first)
    assert len(problems) == (2 if case == "invalid byte" else 1) and where in problems[0], problems
    assert said.rstrip(".") in problems[0], (said, problems)
    report = wv.validate(path)
    assert not report.ok and report.first_difference is None and report.problems == problems
    assert _cli("validate", path).returncode == 1


def test_unk_id_on_another_piece_is_reported(tmp_path):
    """sentencepiece loads it (the UNKNOWN piece is its unk id; the trainer spec's field is not read), but the
    two say different things: tools that read the field (a converter) take another piece."""
    data = _mutant(_spec("trainer_spec", unk_id=5))
    assert spm.SentencePieceProcessor(model_proto=data).unk_id() == 0
    path = tmp_path / "m.model"
    path.write_bytes(data)
    assert wv.read(path).check() == ["trainer_spec.unk_id: 5, but the UNKNOWN piece is id 0 (sentencepiece takes the "
                             "piece; tools that read the field take another)"]


def test_inspect_gives_the_piece_count_when_the_trainer_spec_has_no_vocab_size(tmp_path):
    path = tmp_path / "m.model"
    path.write_bytes(_mutant(lambda p: p.trainer_spec.ClearField("vocab_size")))
    assert spm.SentencePieceProcessor(model_file=str(path)).vocab_size() == 1000
    assert wv.inspect(path)["vocab_size"] == 1000 and wv.inspect(path, full=True)["vocab_size"] == 1000


@pytest.mark.parametrize("key, value, kind", [
    ("tokenizer.ggml.tokens", np.arange(32000, dtype=np.int32), "INT32"),
    ("tokenizer.ggml.scores", ["x"] * 32000, "STRING"),
    ("tokenizer.ggml.bos_token_id", "1", "STRING"),
    ("tokenizer.ggml.add_space_prefix", "false", "STRING"),
])
def test_tokenizer_keys_of_another_type_are_refused_by_name(key, value, kind):
    """A token list of numbers reached the piece checks as ints (AttributeError), scores of text numpy's
    "could not convert string to float", a bos id "1" was taken as 1 and add_space_prefix "false" as true."""
    model = wv.read(SPM_VOCABS["llama-spm"])
    model.metadata.set(key, value, type="ARRAY" if isinstance(value, (list, np.ndarray)) else kind,
                       element_type=kind if isinstance(value, (list, np.ndarray)) else None)
    with pytest.raises(ValueError) as info:
        wv.sentencepiece.from_gguf(model, warn=False)
    assert str(info.value).startswith(f"{key} is {model.metadata.type(key)}, llama.cpp reads "), str(info.value)
