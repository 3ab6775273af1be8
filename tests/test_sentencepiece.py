"""SentencePiece models trained by the real package: same pieces, byte-exact rebuild, typed specs."""

import io

import numpy as np
import pytest

import wvformats as wv

spm = pytest.importorskip("sentencepiece")  # the 'peers' extra, installed by CI

TEXT = ("The quick brown fox jumps over the lazy dog. Naïve café owners déjà vu 東京 日本語 text. " * 3
        + "Pack my box with five dozen liquor jugs 12345. ") * 40


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    p = tmp_path_factory.mktemp("spm") / "corpus.txt"
    p.write_text("\n".join(TEXT.split(". ")), encoding="utf-8")
    return p


@pytest.mark.parametrize("model_type,extra", [
    ("unigram", {}), ("bpe", {}), ("char", {}), ("word", {}),
    ("bpe", {"byte_fallback": True}),
    ("unigram", {"user_defined_symbols": ["<sep>", "<cls>"], "control_symbols": ["<mask>"], "pad_id": 3}),
    ("unigram", {"bos_id": -1, "eos_id": -1}),
])
def test_trained_models_parse_to_the_same_pieces_and_rebuild_byte_exact(corpus, tmp_path, model_type, extra):
    out = io.BytesIO()
    vocab = 400 if extra.get("byte_fallback") else 60
    spm.SentencePieceTrainer.train(input=str(corpus), model_writer=out, vocab_size=vocab, model_type=model_type,
                                   minloglevel=2, hard_vocab_limit=False, **extra)
    p = tmp_path / "m.model"
    p.write_bytes(out.getvalue())
    assert wv.sniff(p) == "sentencepiece"
    assert wv.validate(p).ok
    ours = wv.read(p)
    sp = spm.SentencePieceProcessor(model_file=str(p))
    assert len(ours) == sp.get_piece_size()
    assert ours.piece_strings == [sp.id_to_piece(i) for i in range(len(ours))]
    assert np.array_equal(ours.scores, np.array([sp.get_score(i) for i in range(len(ours))], np.float32))
    for i, (_, _, kind) in enumerate(ours.pieces):
        assert (kind == "CONTROL") == sp.is_control(i) and (kind == "UNKNOWN") == sp.is_unknown(i)
        assert (kind == "BYTE") == sp.is_byte(i)
    assert ours.trainer_spec.model_type == {"unigram": 1, "bpe": 2, "word": 3, "char": 4}[model_type]
    assert ours.trainer_spec.pad_id == extra.get("pad_id", -1)
    assert ours.trainer_spec.bos_id == extra.get("bos_id", 1)
    assert ours.normalizer_spec.name == "nmt_nfkc" and ours.normalizer_spec.add_dummy_prefix is True
    info = wv.inspect(p)
    assert info["pieces"] == len(ours) and info["model_type"] == model_type.upper()


def test_typed_view_matches_protobuf(corpus):
    pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(input=str(corpus), model_writer=out, vocab_size=60, minloglevel=2,
                                   hard_vocab_limit=False)
    m = pb2.ModelProto()
    m.ParseFromString(out.getvalue())
    ours = wv.registry.get("sentencepiece").to_model(wv.registry.get("sentencepiece").parse(out.getvalue()))
    for name in ("vocab_size", "character_coverage", "num_threads", "unk_surface", "byte_fallback", "pad_id"):
        assert getattr(ours.trainer_spec, name) == pytest.approx(getattr(m.trainer_spec, name)), name
        assert ours.trainer_spec.has(name) == m.trainer_spec.HasField(name), name
    assert ours.normalizer_spec.precompiled_charsmap == m.normalizer_spec.precompiled_charsmap


def test_truncations_fail_cleanly(corpus):
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(input=str(corpus), model_writer=out, vocab_size=60, minloglevel=2,
                                   hard_vocab_limit=False)
    data = out.getvalue()
    fmt = wv.registry.get("sentencepiece")
    for n in range(1, len(data), max(1, len(data) // 300)):
        try:
            fmt.to_model(fmt.parse(data[:n]))
        except wv.FormatError as e:
            assert e.format == "sentencepiece"
