"""SentencePiece ``tokenizer.model``: the ``sentencepiece.ModelProto`` protobuf message.

Described field by field as ``sentencepiece_model.proto`` declares it. Two schema generations:
``GENERATIONS["0.2.0"]`` (``self_test_data = 4``, no TrainerSpec field 55) and ``GENERATIONS["0.2.3"]``
(``reserved 4``: an old file's self-test data is an unknown field; ``auto_character_coverage = 55``).
``ModelProto`` is their union, the default for reading. Every message but ``Sample`` has ``extensions 200
to max``. On disk it is plain protobuf wire data, parsed losslessly by ``wvformats.schemas.protobuf.message``;
these descriptions give the fields their names and types.
"""

from wvformats.schemas.protobuf import message

from wvformats.framework.protobuf import F, MessageType, ProtoEnum


class PieceType(ProtoEnum):
    """``SentencePiece.Type``."""

    NORMAL = 1
    UNKNOWN = 2
    CONTROL = 3
    USER_DEFINED = 4
    UNUSED = 5
    BYTE = 6


class ModelType(ProtoEnum):
    """``TrainerSpec.ModelType``."""

    UNIGRAM = 1
    BPE = 2
    WORD = 3
    CHAR = 4


PIECE_TYPES = {t.value: t.name for t in PieceType}
MODEL_TYPES = {t.value: t.name for t in ModelType}

EXTENSIONS = (200, (1 << 29) - 1)  # every message but Sample: extensions 200 to max

SentencePiece = MessageType("SentencePiece", [
    F(1, "piece", "string", default=""),
    F(2, "score", "float", default=0.0),
    F(3, "type", "enum", default=1, enum=PieceType),
], EXTENSIONS)

TrainerSpec = MessageType("TrainerSpec", [
    F(1, "input", "string", "repeated"),
    F(2, "model_prefix", "string", default=""),
    F(3, "model_type", "enum", default=1, enum=ModelType),
    F(4, "vocab_size", "int32", default=8000),
    F(5, "accept_language", "string", "repeated"),
    F(6, "self_test_sample_size", "int32", default=0),
    F(7, "input_format", "string", default=""),
    F(10, "character_coverage", "float", default=0.9995),
    F(11, "input_sentence_size", "uint64", default=0),
    F(12, "mining_sentence_size", "int32", default=0),
    F(13, "training_sentence_size", "int32", default=0),
    F(14, "seed_sentencepiece_size", "int32", default=1000000),
    F(15, "shrinking_factor", "float", default=0.75),
    F(16, "num_threads", "int32", default=16),
    F(17, "num_sub_iterations", "int32", default=2),
    F(18, "max_sentence_length", "int32", default=4192),
    F(19, "shuffle_input_sentence", "bool", default=True),
    F(20, "max_sentencepiece_length", "int32", default=16),
    F(21, "split_by_unicode_script", "bool", default=True),
    F(22, "split_by_whitespace", "bool", default=True),
    F(23, "split_by_number", "bool", default=True),
    F(24, "treat_whitespace_as_suffix", "bool", default=False),
    F(25, "split_digits", "bool", default=False),
    F(26, "allow_whitespace_only_pieces", "bool", default=False),
    F(30, "control_symbols", "string", "repeated"),
    F(31, "user_defined_symbols", "string", "repeated"),
    F(32, "vocabulary_output_piece_score", "bool", default=True),
    F(33, "hard_vocab_limit", "bool", default=True),
    F(34, "use_all_vocab", "bool", default=False),
    F(35, "byte_fallback", "bool", default=False),
    F(36, "required_chars", "string", default=""),
    F(40, "unk_id", "int32", default=0),
    F(41, "bos_id", "int32", default=1),
    F(42, "eos_id", "int32", default=2),
    F(43, "pad_id", "int32", default=-1),
    F(44, "unk_surface", "string", default=" \u2047 "),
    F(45, "unk_piece", "string", default="<unk>"),
    F(46, "bos_piece", "string", default="<s>"),
    F(47, "eos_piece", "string", default="</s>"),
    F(48, "pad_piece", "string", default="<pad>"),
    F(49, "train_extremely_large_corpus", "bool", default=False),
    F(50, "enable_differential_privacy", "bool", default=False),
    F(51, "differential_privacy_noise_level", "float", default=0.0),
    F(52, "differential_privacy_clipping_threshold", "uint64", default=0),
    F(53, "pretokenization_delimiter", "string", default=""),
    F(54, "seed_sentencepieces_file", "string", default=""),
    F(55, "auto_character_coverage", "bool", default=False),  # 0.2.3
], EXTENSIONS)
TrainerSpec_0_2_0 = MessageType("TrainerSpec", [f for f in TrainerSpec.fields if f.number != 55], EXTENSIONS)

NormalizerSpec = MessageType("NormalizerSpec", [
    F(1, "name", "string", default=""),
    F(2, "precompiled_charsmap", "bytes", default=b""),
    F(3, "add_dummy_prefix", "bool", default=True),
    F(4, "remove_extra_whitespaces", "bool", default=True),
    F(5, "escape_whitespaces", "bool", default=True),
    F(6, "normalization_rule_tsv", "string", default=""),
], EXTENSIONS)

Sample = MessageType("Sample", [F(1, "input", "string", default=""), F(2, "expected", "string", default="")])
SelfTestData = MessageType("SelfTestData", [F(1, "samples", Sample, "repeated")], EXTENSIONS)

ModelProto = MessageType("ModelProto", [
    F(1, "pieces", SentencePiece, "repeated"),
    F(2, "trainer_spec", TrainerSpec),
    F(3, "normalizer_spec", NormalizerSpec),
    F(4, "self_test_data", SelfTestData),  # 0.2.0; reserved in 0.2.3 (then an unknown field)
    F(5, "denormalizer_spec", NormalizerSpec),
], EXTENSIONS)

GENERATIONS = {
    "0.2.0": MessageType("ModelProto", [
        F(1, "pieces", SentencePiece, "repeated"),
        F(2, "trainer_spec", TrainerSpec_0_2_0),
        F(3, "normalizer_spec", NormalizerSpec),
        F(4, "self_test_data", SelfTestData),
        F(5, "denormalizer_spec", NormalizerSpec),
    ], EXTENSIONS),
    "0.2.3": MessageType("ModelProto", [
        F(1, "pieces", SentencePiece, "repeated"),
        F(2, "trainer_spec", TrainerSpec),
        F(3, "normalizer_spec", NormalizerSpec),
        F(5, "denormalizer_spec", NormalizerSpec),
    ], EXTENSIONS, reserved=(4,)),
}

model_proto = message
