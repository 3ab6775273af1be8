"""SentencePiece models trained by the real package: same pieces, byte-exact rebuild, typed specs."""

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _train(corpus, **kw):
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(input=str(corpus), model_writer=out, vocab_size=60, minloglevel=2,
                                   hard_vocab_limit=False, **kw)
    return out.getvalue()


def _load(data, tmp_path, name):
    p = tmp_path / name
    p.write_bytes(data)
    return wv.read(p), spm.SentencePieceProcessor(model_file=str(p)), p


def test_edits_load_in_sentencepiece_and_keep_other_bytes(corpus, tmp_path):
    from wvformats import sentencepiece as S

    data = _train(corpus)
    model, sp, _ = _load(data, tmp_path, "orig.model")
    edited = S.add_piece(model, "<city>", 0.0, "USER_DEFINED")
    edited = S.set_piece(edited, 10, score=-0.5)
    edited = S.set_normalizer(edited, add_dummy_prefix=False)
    p = tmp_path / "edited.model"
    wv.write(edited, p, "sentencepiece")
    assert wv.validate(p).ok
    sp2 = spm.SentencePieceProcessor(model_file=str(p))
    assert sp2.get_piece_size() == sp.get_piece_size() + 1
    assert sp2.piece_to_id("<city>") == sp.get_piece_size() and sp2.get_score(10) == -0.5
    assert "<city>" in sp2.encode("a <city> b", out_type=str)
    assert not sp2.encode("hello", out_type=str)[0].startswith("\u2581")  # no dummy prefix any more
    # untouched pieces keep their exact bytes
    new = p.read_bytes()
    assert all(f.value in new for f in wv.parse_file(tmp_path / "orig.model")[:9])
    removed = S.remove_piece(model, len(model) - 1)
    q = tmp_path / "removed.model"
    wv.write(removed, q, "sentencepiece")
    assert spm.SentencePieceProcessor(model_file=str(q)).get_piece_size() == len(model) - 1


def test_merge_and_exports(corpus, tmp_path):
    import json

    from wvformats import sentencepiece as S

    a, _, _ = _load(_train(corpus), tmp_path, "a.model")
    other = tmp_path / "other.txt"
    other.write_text("zebra xylophone quartz\n" * 200, encoding="utf-8")
    b, _, _ = _load(_train_other(other), tmp_path, "b.model")
    merged = S.merge(a, b, score=-100.0)
    p = tmp_path / "merged.model"
    wv.write(merged, p, "sentencepiece")
    sp = spm.SentencePieceProcessor(model_file=str(p))
    added = [x for x in b.piece_strings if x not in a.piece_strings and
             b.pieces[b.piece_to_id(x)][2] == "NORMAL"]
    assert added and sp.get_piece_size() == len(a) + len(added)
    tsv = S.to_tsv(a).splitlines()
    assert len(tsv) == len(a) and tsv[0].split("\t")[0] == a.piece_strings[0]
    rows = json.loads(json.dumps(S.to_json(a)))
    assert rows[5]["piece"] == a.piece_strings[5] and rows[5]["score"] == float(a.scores[5])


def _train_other(path):
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(input=str(path), model_writer=out, vocab_size=25, minloglevel=2,
                                   hard_vocab_limit=False)
    return out.getvalue()


PIECE_TEXT = st.text(alphabet=st.sampled_from(["a", "\u2581", "\n", "\x15", "\u00e9", "\u6771", "\x00", "\ufffd"]),
                     max_size=8) | st.text(min_size=118, max_size=130, alphabet="ab\n")


@settings(max_examples=60, deadline=None)
@given(pieces=st.lists(st.tuples(PIECE_TEXT, st.floats(width=32), st.sampled_from([None, 1, 2, 3, 4, 6])),
                       max_size=30),
       spec=st.booleans())
def test_vectorised_piece_run_equals_the_field_by_field_parse(pieces, spec):
    """protobuf-serialised models (pieces with newlines, U+0015, NUL, long pieces whose length takes two
    bytes, explicit NORMAL types): the numpy run path gives the same pieces, score bits and types as
    protobuf and as the generic field-by-field parse, and the same fields when materialised."""
    from sentencepiece import sentencepiece_model_pb2 as pb2
    from wvformats.schemas.sentencepiece import model_proto

    from wvformats import framework
    from wvformats.families.sentencepiece.codec import parse
    from wvformats.families.sentencepiece.model import SentencePieceModel

    m = pb2.ModelProto()
    for text, score, type_ in pieces:
        p = m.pieces.add()
        p.piece, p.score = text, score
        if type_ is not None:
            p.type = type_
    if spec:
        m.trainer_spec.vocab_size = len(pieces)
        m.normalizer_spec.add_dummy_prefix = False
    data = m.SerializeToString()
    fast, slow = parse(data), framework.parse(model_proto, data, format="sentencepiece")
    a, b = SentencePieceModel(fast), SentencePieceModel(slow)
    assert a.piece_strings == b.piece_strings == [p.piece for p in m.pieces]
    assert a.scores.tobytes() == b.scores.tobytes() == np.array([p.score for p in m.pieces], "<f4").tobytes()
    assert a.types.tolist() == b.types.tolist() == [p.type for p in m.pieces]
    assert a.trainer_spec.vocab_size == m.trainer_spec.vocab_size
    assert a.normalizer_spec.add_dummy_prefix == m.normalizer_spec.add_dummy_prefix
    out = io.BytesIO()
    wv.registry.get("sentencepiece").build(fast, out)
    assert out.getvalue() == data
    assert list(getattr(fast, "fields", fast)) == list(slow)


def test_errors_after_the_piece_run_name_the_field_index_and_offset():
    from sentencepiece import sentencepiece_model_pb2 as pb2

    from wvformats.errors import FormatError
    from wvformats.families.sentencepiece.codec import parse

    m = pb2.ModelProto()
    for i in range(50):
        m.pieces.add().piece = f"p{i}"
    m.trainer_spec.vocab_size = 50
    m.trainer_spec.model_prefix = "x" * 40
    data = m.SerializeToString()
    with pytest.raises(FormatError) as e:
        parse(data[:-3])
    assert e.value.format == "sentencepiece" and "[50]" in e.value.path and e.value.offset is not None


def _tag(number, wire):
    from wvformats.framework.protowire import encode_varint

    return encode_varint(number << 3 | wire)


def _wire(number, wire, value):
    """One field's wire bytes: a varint, 8 or 4 raw bytes, or length-delimited bytes."""
    from wvformats.framework.protowire import encode_varint

    if wire == 0:
        return _tag(number, 0) + encode_varint(value)
    if wire == 2:
        return _tag(number, 2) + encode_varint(len(value)) + value
    return _tag(number, wire) + value


VARINTS = st.sampled_from([0, 1, 2, 4, 6, 7, 9, 200, 2**31 - 1, 2**31, 2**32 + 5, 2**63 + 7, 2**64 - 1])


@st.composite
def odd_fields(draw, numbers, wires=(0, 0, 2, 2, 5, 1)):
    """Fields of the given numbers on any of ``wires`` (the one their type has, mostly), repeated at will."""
    out = b""
    for _ in range(draw(st.integers(0, 8))):
        number = draw(st.sampled_from(numbers))
        wire = draw(st.sampled_from(wires))
        value = {0: VARINTS, 1: st.binary(min_size=8, max_size=8), 5: st.binary(min_size=4, max_size=4),
                 2: st.text("ab\u2581", max_size=4).map(str.encode)}[wire]
        out += _wire(number, wire, draw(value))
    return out


@settings(max_examples=80, deadline=None)
@given(pieces=st.lists(odd_fields([1, 2, 3]), max_size=4), trainer=st.lists(odd_fields([1, 3, 4, 10, 11, 19, 43]),
       max_size=3), normalizer=odd_fields([1, 3]), stray=odd_fields([2, 3], wires=(0, 5, 1)))
def test_typed_view_reads_odd_wire_data_as_protobuf_does(pieces, trainer, normalizer, stray):
    """Fields on the wrong wire type or with enum values the enum does not name are unknown fields; int32
    and enum keep the low 32 bits of a varint (a 5-byte -1 is -1); a sub-message written twice merges;
    strays (a trainer_spec sent as a varint) are skipped: every value and presence as protobuf reads them,
    and the bytes still rebuild exactly."""
    import math
    import struct

    from sentencepiece import sentencepiece_model_pb2 as pb2

    data = b"".join(_wire(1, 2, p) for p in pieces) + b"".join(_wire(2, 2, t) for t in trainer)
    data += _wire(3, 2, normalizer) + stray
    m = pb2.ModelProto()
    m.ParseFromString(data)
    ours = wv.registry.get("sentencepiece").to_model(wv.registry.get("sentencepiece").parse(data))

    def same(a, b):
        return (isinstance(a, float) and math.isnan(a) and math.isnan(b)) or a == b

    for view, theirs, names in ((ours.trainer_spec, m.trainer_spec, ["model_type", "vocab_size",
                                 "character_coverage", "input_sentence_size", "shuffle_input_sentence",
                                 "pad_id"]),
                                (ours.normalizer_spec, m.normalizer_spec, ["name", "add_dummy_prefix"])):
        for name in names:
            assert view.has(name) == theirs.HasField(name), name
            assert same(getattr(view, name), getattr(theirs, name)), name
    assert ours.trainer_spec.input == list(m.trainer_spec.input)
    for name in ("trainer_spec", "normalizer_spec", "denormalizer_spec"):  # strays are no sub-message
        assert ours.proto.has(name) == m.HasField(name), name
    assert ours.piece_strings == [p.piece for p in m.pieces]
    assert ours.types.tolist() == [p.type for p in m.pieces]
    bits = [struct.pack("<f", p.score) for p in m.pieces]
    assert all(same(struct.unpack("<f", a)[0], struct.unpack("<f", b)[0])
               for a, b in zip(bits, [ours.scores[i : i + 1].tobytes() for i in range(len(ours))], strict=True))
    out = io.BytesIO()
    wv.registry.get("sentencepiece").build(wv.registry.get("sentencepiece").parse(data), out)
    assert out.getvalue() == data


SOURCE_MODELS = sorted((__import__("pathlib").Path(__file__).parents[2] / "data" / "sentencepiece").glob("*.model"))


@pytest.mark.parametrize("path", SOURCE_MODELS, ids=lambda p: p.stem)
def test_models_of_the_sentencepiece_source_distribution(path):
    """Real models from sentencepiece's own test folder: byte-exact, same pieces, and the decoded charsmap
    maps every source sequence as sentencepiece's normalizer does."""
    assert len(SOURCE_MODELS) == 3
    assert wv.sniff(path) == "sentencepiece" and wv.validate(path).ok
    ours = wv.read(path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    assert len(ours) == sp.get_piece_size()
    assert ours.piece_strings == [sp.id_to_piece(i) for i in range(len(ours))]
    assert ours.scores.tolist() == [sp.get_score(i) for i in range(len(ours))]
    assert [t == 2 for t in ours.types.tolist()] == [sp.is_unknown(i) for i in range(len(ours))]
    assert [t == 3 for t in ours.types.tolist()] == [sp.is_control(i) for i in range(len(ours))]
    cm = ours.charsmap
    info = wv.inspect(path)["charsmap"]
    assert info["trie_units"] * 4 == info["trie_size"] == cm.trie_size and info["replacements"] > 1000
    mapping = cm.mapping()
    assert mapping["\uff21"] == "A" and mapping["\u2460"] == "1" and mapping["\ufb01"] == "fi"
    norm = spm.SentencePieceNormalizer(model_file=str(path))
    keys = [k for k, v in mapping.items() if v and not any(c.isspace() or c == "\u2581" for c in k + v)]
    assert len(keys) > 100000
    for k in keys[::20]:
        assert norm.normalize(k) == "\u2581" + mapping[k], k


def test_a_broken_charsmap_is_a_clean_format_error():
    from wvformats.errors import FormatError
    from wvformats.sentencepiece import CharsMap

    with pytest.raises(FormatError):
        CharsMap(b"\x01\x00")
    with pytest.raises(FormatError):
        CharsMap((1000).to_bytes(4, "little") + b"\0" * 8)
    assert CharsMap((4).to_bytes(4, "little") + b"\0\0\0\0" + b"x\0").replacements == ["x"]
    # four units whose children (labels 1-3) lead back to the root: a cycle, whose keys would triple per
    # level for 256 levels; refused once the keys far outnumber the units
    units = [0, (1 << 10) | 1, (2 << 10) | 2, (3 << 10) | 3]
    cyclic = CharsMap((16).to_bytes(4, "little") + np.array(units, "<u4").tobytes() + b"x\0")
    with pytest.raises(FormatError, match="cycle"):
        cyclic.mapping()


def test_an_empty_piece_makes_no_merges():
    """Both halves of a BPE merge are pieces; an empty piece is no half (it used to pair with every piece)."""
    from wvformats.samples import sample_files
    from wvformats.sentencepiece import set_piece, to_hf_tokenizer

    m = wv.read(next(p for p in sample_files() if p.name == "sample-bpe.model"))
    i = next(i for i in range(len(m)) if m.piece(i)[2] == "NORMAL" and len(m.piece(i)[0]) > 1)
    gone = m.piece(i)[0]
    merges = to_hf_tokenizer(m)["model"]["merges"]
    emptied = to_hf_tokenizer(set_piece(m, i, piece=""))["model"]["merges"]
    assert emptied == [x for x in merges if gone not in x and "".join(x) != gone]


def test_an_edit_of_a_broken_normalizer_spec_names_the_format():
    from wvformats.errors import FormatError
    from wvformats.sentencepiece import SentencePieceModel, set_normalizer

    broken = SentencePieceModel([dict(number=3, wire_type=2, value=b"\x0a\x05ab")])  # name: 5 bytes of 2
    with pytest.raises(FormatError) as e:
        set_normalizer(broken, add_dummy_prefix=False)
    assert e.value.format == "sentencepiece" and e.value.path.startswith("normalizer_spec")


def test_spliced_edits_equal_field_list_edits(corpus, tmp_path):
    """Piece edits on a parsed file splice its bytes; on a model made from a plain field list they edit the
    list. Both give the same file, and the result has the same pieces as the edit asked for."""
    from wvformats import sentencepiece as S
    from wvformats.framework.protowire import LazyMessage

    model, _, _ = _load(_train(corpus), tmp_path, "orig.model")
    plain = S.SentencePieceModel(list(model.fields))
    assert isinstance(model._msg, LazyMessage) and not isinstance(plain._msg, LazyMessage)

    def edits(m):
        m = S.set_piece(m, 7, piece="\u2581renamed", score=-3.5, type="USER_DEFINED")
        m = S.remove_piece(m, 3)
        m = S.add_piece(m, "x" * 130, -1.0)  # a piece whose length takes a two-byte varint
        return S.merge(m, S.add_piece(plain, "<z>", 0.0), score=-9.0)

    a, b = edits(model), edits(plain)
    out_a, out_b = io.BytesIO(), io.BytesIO()
    fmt = wv.registry.get("sentencepiece")
    fmt.build(fmt.from_model(a), out_a)
    fmt.build(fmt.from_model(b), out_b)
    assert out_a.getvalue() == out_b.getvalue()
    expected = list(model.piece_strings)
    expected[7] = "\u2581renamed"
    del expected[3]
    # merge appends what the first lacks: the removed and the renamed piece, then <z>
    assert a.piece_strings[: len(expected) + 1] == [*expected, "x" * 130] and a.piece(6)[1:] == (-3.5, "USER_DEFINED")
    assert a.piece_strings[len(expected) + 1 :] == [model.piece_strings[3], model.piece_strings[7], "<z>"]


HF_TEXTS = ["The quick brown fox", "  leading and   multiple spaces  ", "Naïve café 東京", "ＡＢＣ①ﬁ fullwidth",
            "jumps over the lazy dog. Pack my box", "12345 67890", "unseen wörds zebra", "a\tb\nc", "", " ",
            "坊っちゃん 親譲りの無鉄砲で小供の時から損ばかりしている。", "I said, 'Hello!' -- and left..."]


def _hf_cases(corpus):
    for model_type, extra in [("unigram", {}), ("bpe", {}), ("bpe", {"byte_fallback": True}),
                              ("unigram", {"byte_fallback": True}), ("unigram", {"add_dummy_prefix": False}),
                              ("bpe", {"remove_extra_whitespaces": False})]:
        out = io.BytesIO()
        spm.SentencePieceTrainer.train(input=str(corpus), model_writer=out, model_type=model_type, minloglevel=2,
                                       vocab_size=400 if extra.get("byte_fallback") else 120,
                                       hard_vocab_limit=False, **extra)
        yield f"{model_type}-{'-'.join(extra) or 'default'}", out.getvalue()
    for path in SOURCE_MODELS:
        yield path.stem, path.read_bytes()


def test_hugging_face_tokenizer_json_tokenizes_as_sentencepiece(corpus, tmp_path):
    """Our tokenizer.json, loaded by the `tokenizers` library, gives sentencepiece's ids (and decodes to its
    text) for trained Unigram and BPE models (byte fallback, no dummy prefix, whitespace kept) and for the
    source distribution's models (nmt_nfkc charsmap, Japanese)."""
    import json

    tokenizers = pytest.importorskip("tokenizers")  # installed with transformers (the 'peers' extra)
    from wvformats.sentencepiece import to_hf_tokenizer

    lines = [x for x in corpus.read_text(encoding="utf-8").splitlines() if x][:40]
    for name, data in _hf_cases(corpus):
        model, sp, _ = _load(data, tmp_path, f"{name}.model")
        tok = tokenizers.Tokenizer.from_str(json.dumps(to_hf_tokenizer(model)))
        for text in HF_TEXTS + lines:
            ids = sp.encode(text)
            assert tok.encode(text).ids == ids, (name, text)
            if sp.unk_id() not in ids:
                assert tok.decode(ids) == sp.decode(ids), (name, text)
    char = _train(corpus, model_type="char")
    with pytest.raises(ValueError):
        to_hf_tokenizer(_load(char, tmp_path, "char.model")[0])


def test_cli_export(tmp_path, capsys):
    import json

    from wvformats.cli import main

    src = SOURCE_MODELS[0]
    out = tmp_path / "tokenizer.json"
    assert main(["sentencepiece", "export", str(src), str(out), "--to", "hf"]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["model"]["type"] in ("BPE", "Unigram") and doc["normalizer"]["normalizers"][0]["type"] == "Precompiled"
    assert main(["sentencepiece", "export", str(src), str(out), "--to", "tsv"]) == 2  # exists: no --force
    assert "exists" in capsys.readouterr().err
    assert main(["sentencepiece", "export", str(src), str(out), "--to", "tsv", "--force"]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == len(wv.read(src))
    assert main(["sentencepiece", "export", str(src), str(src), "--to", "tsv", "--force"]) == 2
    assert src.read_bytes()[:1] == b"\n"  # the input is untouched


def test_schema_generations_self_test_data_and_extensions(corpus, tmp_path):
    """A 0.2.0-style file (self_test_data = 4 before denormalizer_spec = 5, an extension field 200 and
    auto_character_coverage = 55 in its TrainerSpec): read under each generation, byte-exact where the
    protobuf runtime of 0.2.3 moves field 4 behind field 5."""
    from sentencepiece import sentencepiece_model_pb2 as pb2

    from wvformats.framework.protowire import build_fields, parse_fields

    def msg(fields):
        out = bytearray()
        build_fields(fields, out)
        return bytes(out)

    base = pb2.ModelProto()
    base.ParseFromString(_train(corpus))
    base.denormalizer_spec.name = "identity"
    base.trainer_spec.auto_character_coverage = True
    data = base.SerializeToString()
    fields, _, _ = parse_fields(data, 0, len(data), "", 0)
    sample = msg([dict(number=1, wire_type=2, value="ﬁ x".encode()), dict(number=2, wire_type=2, value=b"fi x")])
    stdata = msg([dict(number=1, wire_type=2, value=sample)])
    at5 = next(i for i, f in enumerate(fields) if f["number"] == 5)
    fields.insert(at5, dict(number=4, wire_type=2, value=stdata))
    ts = next(f for f in fields if f["number"] == 2)
    ts["value"] += msg([dict(number=200, wire_type=0, value=7)])
    p = tmp_path / "old.model"
    p.write_bytes(msg(fields))
    assert wv.validate(p).ok
    union, new, old = wv.read(p), wv.read(p, generation="0.2.3"), wv.read(p, generation="0.2.0")
    assert union.self_test_data.samples[0].input == "ﬁ x" and union.self_test_data.samples[0].expected == "fi x"
    assert old.self_test_data.samples[0].expected == "fi x"
    assert new.self_test_data is None and [f["number"] for f in new.proto.unknown] == [4]
    assert new.trainer_spec.auto_character_coverage is True
    with pytest.raises(AttributeError):  # the 0.2.0 schema has no such field: it is an unknown field there
        old.trainer_spec.auto_character_coverage  # noqa: B018
    assert [f["number"] for f in old.trainer_spec.unknown] == [55, 200]
    assert [f["number"] for f in old.trainer_spec.extensions] == [200] == [f["number"] for f in
                                                                          new.trainer_spec.extensions]
    assert new.denormalizer_spec.name == "identity"
    again = pb2.ModelProto()
    again.ParseFromString(p.read_bytes())
    assert again.SerializeToString() != p.read_bytes()  # protobuf moves the unknown field 4 after field 5
    with pytest.raises(wv.FormatError):
        wv.read(p, generation="0.1")


@pytest.mark.parametrize("rule", ["identity", "nfkc_cf", "custom"])
def test_custom_normalization_rules(corpus, tmp_path, rule):
    """Models trained with other normalization rules (a custom TSV: A -> a, fullwidth Ａ -> "x y"): same
    pieces, byte-exact, and the decoded charsmap holds the custom rule."""
    kw = {"normalization_rule_name": rule}
    if rule == "custom":
        tsv = tmp_path / "rules.tsv"
        tsv.write_text("41\t61\nFF21\t78 20 79\n", encoding="utf-8")
        kw = {"normalization_rule_tsv": str(tsv)}
    model, sp, p = _load(_train(corpus, **kw), tmp_path, f"{rule}.model")
    assert wv.validate(p).ok
    assert model.piece_strings == [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    if rule == "identity":
        assert model.charsmap is None
    else:
        mapping = model.charsmap.mapping()
        if rule == "custom":
            assert mapping == {"A": "a", "\uff21": "x y"}
        else:
            assert mapping["A"] == "a"  # case folding


def _peak_mib(fn):
    """(result or raised FormatError, peak MiB traced while ``fn`` ran; numpy's buffers are traced too)."""
    import tracemalloc

    from wvformats.errors import FormatError

    tracemalloc.start()
    try:
        try:
            out = fn()
        except FormatError as e:
            out = e
        return out, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("path", SOURCE_MODELS, ids=lambda p: p.stem)
def test_charsmap_mapping_memory_is_bounded_by_its_output(path):
    """The trie walk found each level's children through a frontier x 255 int64 matrix: 1.3-1.9 GB for a
    ~240 KB nmt_nfkc charsmap. It now finds them from the units (each unit names its parent's offset), so
    the peak stays near the size of the output, on the real trie and on corrupted copies of it."""
    cm = wv.read(path).charsmap
    mapping, peak = _peak_mib(cm.mapping)
    assert len(mapping) > 100000 and peak < 96, peak
    from wvformats.sentencepiece import CharsMap

    blob = bytearray(wv.read(path).normalizer_spec.precompiled_charsmap)
    rng = np.random.default_rng(19)
    for _ in range(4):  # random units overwritten: the walk ends or refuses, within the same bound
        bad = bytearray(blob)
        for at in rng.integers(1, cm.trie_size // 4, 40):
            bad[4 + 4 * at : 8 + 4 * at] = rng.integers(0, 256, 4, np.uint8).tobytes()
        out, peak = _peak_mib(CharsMap(bytes(bad)).mapping)
        assert isinstance(out, dict | wv.FormatError) and peak < 96, peak


# -- tokenizer.json export against sentencepiece, per trainer option that changes tokenization -----------------

HF_CORPUS = ("The quick brown fox jumps over the lazy dog. Naïve café owners déjà vu 東京 日本語 text. 12345.\n"
             "def f(x):\n    if x:\n        return x  # comment\n\treturn None\n"
             "Привет мир! Γειά σου κόσμε. مرحبا بالعالم 😀🎉👍🏽 emoji   spaces\u00a0nbsp\u3000ideo\n")
HF_MIXED = ["x    y", "  leading  and   multiple spaces  ", "a\tb\nc", "\tindent\n", "\u00a0nbsp\u00a0", " \u00a0 ",
            "def f(x):\n    return x\n", "    four", "tab\t\tdouble", "emoji 😀🎉👍🏽 here", "\x01ctrl\x7f\x1b[0m",
            "Привет мир", "東京 日本語", "مرحبا", "12345 67890", "", " ", "  ", "\n", "a  \n  b", "ＡＢＣ①ﬁ",
            "I said, 'Hello!' -- and left...", "x\u3000y", "trailing   ", " \t\n lead", "end \t\n",
            "class A:\n    def m(self):\n        pass\n\n\n", "if (a &&  b) {\n\treturn;   }"]
HF_OPTIONS = {  # name: trainer options (each a class of model the export must reproduce)
    "bpe-llama-style": dict(model_type="bpe", allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
                            split_digits=True, byte_fallback=True, normalization_rule_name="identity",
                            vocab_size=500),
    "bpe-whitespace-only-nfkc": dict(model_type="bpe", allow_whitespace_only_pieces=True),
    "bpe-suffix": dict(model_type="bpe", treat_whitespace_as_suffix=True),
    "unigram-suffix": dict(model_type="unigram", treat_whitespace_as_suffix=True),
    "bpe-suffix-whitespace-only": dict(model_type="bpe", treat_whitespace_as_suffix=True,
                                       allow_whitespace_only_pieces=True, remove_extra_whitespaces=False),
    "bpe-no-whitespace-split": dict(model_type="bpe", split_by_whitespace=False),
    "unigram-identity": dict(model_type="unigram", normalization_rule_name="identity"),
    "unigram-nfkc_cf": dict(model_type="unigram", normalization_rule_name="nfkc_cf"),
    "bpe-digits-noscript": dict(model_type="bpe", split_digits=True, split_by_unicode_script=False,
                                split_by_number=False),
}


@pytest.fixture(scope="session")
def hf_models():
    """Models trained once per session with the trainer options that change tokenization (in memory)."""
    lines = [x for x in (HF_CORPUS * 30).splitlines() if x.strip()]
    out = {}
    for name, kw in HF_OPTIONS.items():
        kw = dict(kw)
        f = io.BytesIO()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=f, minloglevel=2, num_threads=1,
                                       hard_vocab_limit=False, vocab_size=kw.pop("vocab_size", 300), **kw)
        out[name] = f.getvalue()
    return out


def _hf_disagreements(data):
    """(text, sentencepiece pieces, tokenizers pieces) for every text of the mixed corpus the two encode apart."""
    import json

    tokenizers = pytest.importorskip("tokenizers")
    from wvformats.families.sentencepiece.codec import parse
    from wvformats.sentencepiece import SentencePieceModel, to_hf_tokenizer

    sp = spm.SentencePieceProcessor(model_proto=data)
    tok = tokenizers.Tokenizer.from_str(json.dumps(to_hf_tokenizer(SentencePieceModel(parse(data)))))
    texts = HF_MIXED + [x for x in HF_CORPUS.splitlines() if x]
    return [(t, sp.encode(t, out_type=str), tok.encode(t).tokens) for t in texts if sp.encode(t) != tok.encode(t).ids]


@pytest.mark.parametrize("name", ["bpe-llama-style", "bpe-whitespace-only-nfkc"])
def test_hf_export_keeps_runs_of_whitespace_only_pieces(hf_models, name):
    """allow_whitespace_only_pieces: sentencepiece's BPE merges the whole text, so "x    y" is ▁x ▁▁▁▁ y; the
    export split before every ▁ (Metaspace) and gave ▁x ▁ ▁ ▁ ▁ y. It now splits only where no piece spans."""
    assert _hf_disagreements(hf_models[name]) == []


@pytest.mark.parametrize("name", ["bpe-suffix", "unigram-suffix", "bpe-suffix-whitespace-only"])
def test_hf_export_follows_treat_whitespace_as_suffix(hf_models, name):
    """treat_whitespace_as_suffix: a dummy suffix instead of a prefix, pieces ending in ▁ (was 5 of 86 texts)."""
    assert _hf_disagreements(hf_models[name]) == []


@pytest.mark.parametrize("name", ["unigram-identity", "unigram-nfkc_cf", "bpe-digits-noscript",
                                  "bpe-no-whitespace-split", *[p.stem for p in SOURCE_MODELS]])
def test_hf_export_strips_only_spaces(hf_models, name):
    """remove_extra_whitespaces strips and collapses spaces only; the export's Strip also removed tab, newline
    and U+00A0 ("\\tindent\\n" lost its tab and newline, on the source distribution's models too)."""
    data = hf_models.get(name) or next(p for p in SOURCE_MODELS if p.stem == name).read_bytes()
    assert _hf_disagreements(data) == []


def test_hf_export_warns_where_tokenizers_cannot_follow(tmp_path, capsys):
    """A Unigram model with whitespace-only pieces: sentencepiece breaks ties between equal-score splits of a
    space run by float32 sums, tokenizers by float64; the export says so, naming the option."""
    from wvformats.families.sentencepiece.codec import parse
    from wvformats.sentencepiece import (
        InexactExportWarning,
        SentencePieceModel,
        to_hf_tokenizer,
    )

    lines = [x for x in (HF_CORPUS * 30).splitlines() if x.strip()]
    f = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=f, minloglevel=2, num_threads=1,
                                   vocab_size=300, hard_vocab_limit=False, model_type="unigram",
                                   allow_whitespace_only_pieces=True, remove_extra_whitespaces=False)
    with pytest.warns(InexactExportWarning, match="allow_whitespace_only_pieces"):
        differ = _hf_disagreements(f.getvalue())
    assert all("  " in t or "\r\n" in t for t, _, _ in differ)  # space runs only (and CR LF, see docs)
    with pytest.warns(InexactExportWarning, match="allow_whitespace_only_pieces"):
        to_hf_tokenizer(SentencePieceModel(parse(f.getvalue())))
    from wvformats.cli import main

    src, out = tmp_path / "ws.model", tmp_path / "tokenizer.json"
    src.write_bytes(f.getvalue())
    assert main(["sentencepiece", "export", str(src), str(out), "--to", "hf"]) == 0 and out.exists()
    assert "warning:" in capsys.readouterr().err
