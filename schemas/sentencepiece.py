"""SentencePiece ``tokenizer.model``: the ``sentencepiece.ModelProto`` protobuf message.

Described field by field as ``sentencepiece_model.proto`` declares it. Two schema generations:
``GENERATIONS["0.2.0"]`` (``self_test_data = 4``, no TrainerSpec field 55) and ``GENERATIONS["0.2.3"]``
(``reserved 4``: an old file's self-test data is an unknown field; ``auto_character_coverage = 55``).
``ModelProto`` is their union, the default for reading. Every message but ``Sample`` has ``extensions 200
to max``. On disk it is plain protobuf wire data, parsed losslessly as a list of wire fields
(``wvformats.framework.protowire.Message``); these descriptions give the fields their names, types,
defaults and meanings (in our words, after the comments of ``sentencepiece_model.proto``), for the model,
the generated docs page and the annotated dump.
"""

from construct import GreedyBytes, Int32ul, Struct, this

from wvformats.framework import NumpyArray, Valid
from wvformats.framework.protobuf import F, MessageType, ProtoEnum, ProtoMessage


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
# sentencepiece's loader (model_interface.cc, InitializePieces) refuses a piece of this many bytes or more
# (kMaxPieceSize), an empty one or one with a NUL (0.2.2 on), the same text twice, a second UNKNOWN piece or
# none, BYTE pieces other than the 256 "<0xXX>" (X uppercase hex) or without byte_fallback, and byte_fallback
# without all 256; normalizer.cc a precompiled_charsmap whose trie size is not a multiple of 1024 bytes
MAX_PIECE_BYTES = 8000
BYTE_PIECES = tuple(f"<0x{b:02X}>" for b in range(256))
CHARSMAP_TRIE_UNIT = 1024

# NormalizerSpec.precompiled_charsmap, its bytes as normalizer.cc reads them (DecodePrecompiledCharsMap): the
# trie's size, a darts-clone double array, then the replacement strings the trie's values point into
precompiled_charsmap_head = Struct(
    "trie_size" / Int32ul * "bytes of the double-array trie that follows (sentencepiece: a multiple of 1024)",
)
precompiled_charsmap = Struct(
    *precompiled_charsmap_head.subcons,
    Valid("trie_size", this.trie_size % 4 == 0, "the trie is whole u32 units") * "trie_size % 4 == 0",
    "trie" / NumpyArray("<u4", this.trie_size // 4) * "darts-clone double-array units, u32 little-endian",
    "normalized" / GreedyBytes * "the replacement strings, each ending in NUL (a leaf's value is its offset here)",
)

SentencePiece = MessageType("SentencePiece", [
    F(1, "piece", "string", default="", doc="the piece's text, UTF-8; sentencepiece refuses empty pieces (and, since 0.2.2, NUL)"),
    F(2, "score", "float", default=0.0, doc="unigram: log probability; BPE: merge priority (higher merges first)"),
    F(3, "type", "enum", default=1, enum=PieceType, doc="UNKNOWN: the unk piece; CONTROL: <s>, </s>, never from text; USER_DEFINED: always whole; BYTE: <0xXX> of byte_fallback; UNUSED: never produced"),
], EXTENSIONS)

TrainerSpec = MessageType("TrainerSpec", [
    F(1, "input", "string", "repeated", doc="the training corpus files: one sentence per line, or TSV source<tab>target for a shared vocabulary"),
    F(2, "model_prefix", "string", default="", doc="training wrote <model_prefix>.model and <model_prefix>.vocab"),
    F(3, "model_type", "enum", default=1, enum=ModelType, doc="the segmentation algorithm"),
    F(4, "vocab_size", "int32", default=8000, doc="number of pieces to train"),
    F(5, "accept_language", "string", "repeated", doc="languages the model is meant for, informational only (deprecated in 0.2.3)"),
    F(6, "self_test_sample_size", "int32", default=0, doc="number of sentences kept as self_test_data (deprecated in 0.2.3)"),
    F(7, "input_format", "string", default="", doc='"text" (a sentence per line, the default) or "tsv" (sentence<tab>frequency)'),
    F(10, "character_coverage", "float", default=0.9995, doc="share of the corpus's characters the alphabet must cover; the rarest others become unk"),
    F(11, "input_sentence_size", "uint64", default=0, doc="most sentences loaded from input (0: all); they are sampled when shuffled"),
    F(12, "mining_sentence_size", "int32", default=0, doc="deprecated: sentences used to mine seed pieces"),
    F(13, "training_sentence_size", "int32", default=0, doc="deprecated: sentences used to train pieces"),
    F(14, "seed_sentencepiece_size", "int32", default=1000000, doc="seed pieces the unigram trainer starts from (must exceed vocab_size)"),
    F(15, "shrinking_factor", "float", default=0.75, doc="unigram: share of pieces kept after each EM round, by their effect on the loss (< 1)"),
    F(16, "num_threads", "int32", default=16, doc="trainer threads"),
    F(17, "num_sub_iterations", "int32", default=2, doc="unigram: EM sub-iterations per round"),
    F(18, "max_sentence_length", "int32", default=4192, doc="longer sentences, in bytes, are skipped in training"),
    F(19, "shuffle_input_sentence", "bool", default=True, doc="sample input_sentence_size sentences at random instead of taking the first ones"),
    F(20, "max_sentencepiece_length", "int32", default=16, doc="longest piece, in characters"),
    F(21, "split_by_unicode_script", "bool", default=True, doc="no piece mixes Unicode scripts (Han, Hiragana and Katakana count as one)"),
    F(22, "split_by_whitespace", "bool", default=True, doc="no piece spans a whitespace inside it (false allows pieces such as in_the)"),
    F(23, "split_by_number", "bool", default=True, doc="pieces break between digits and non-digits (false keeps F1 as one piece)"),
    F(24, "treat_whitespace_as_suffix", "bool", default=False, doc="the whitespace mark ends a piece (hello_) instead of starting it (_hello)"),
    F(25, "split_digits", "bool", default=False, doc="every digit 0-9 is a piece of its own"),
    F(26, "allow_whitespace_only_pieces", "bool", default=False, doc="pieces made only of whitespace are allowed, not only as a prefix or suffix"),
    F(30, "control_symbols", "string", "repeated", doc="control pieces added to the vocabulary besides <s> and </s>; never produced from text"),
    F(31, "user_defined_symbols", "string", "repeated", doc="pieces added to the vocabulary that are always kept whole in any text"),
    F(32, "vocabulary_output_piece_score", "bool", default=True, doc="the .vocab file written in training lists each piece's score"),
    F(33, "hard_vocab_limit", "bool", default=True, doc="vocab_size is exact (training fails if it cannot be reached); false: an upper bound"),
    F(34, "use_all_vocab", "bool", default=False, doc="WORD and CHAR models: keep every symbol seen"),
    F(35, "byte_fallback", "bool", default=False, doc="text no piece covers is written as BYTE pieces <0x00>..<0xFF> instead of unk"),
    F(36, "required_chars", "string", default="", doc="characters in the alphabet whatever character_coverage says, scored by frequency"),
    F(40, "unk_id", "int32", default=0, doc="id of the unk piece (required, except with byte_fallback)"),
    F(41, "bos_id", "int32", default=1, doc="id of the begin-of-sentence piece; -1: none"),
    F(42, "eos_id", "int32", default=2, doc="id of the end-of-sentence piece; -1: none"),
    F(43, "pad_id", "int32", default=-1, doc="id of the padding piece; -1: none"),
    F(44, "unk_surface", "string", default=" \u2047 ", doc="text that decoding writes for an unk piece (U+2047 DOUBLE QUESTION MARK between spaces)"),
    F(45, "unk_piece", "string", default="<unk>", doc="text of the unk piece"),
    F(46, "bos_piece", "string", default="<s>", doc="text of the begin-of-sentence piece"),
    F(47, "eos_piece", "string", default="</s>", doc="text of the end-of-sentence piece"),
    F(48, "pad_piece", "string", default="<pad>", doc="text of the padding piece"),
    F(49, "train_extremely_large_corpus", "bool", default=False, doc="wider counters for unigram training on very large corpora (deprecated in 0.2.3)"),
    F(50, "enable_differential_privacy", "bool", default=False, doc="differentially private training on TSV counts (deprecated in 0.2.3)"),
    F(51, "differential_privacy_noise_level", "float", default=0.0, doc="standard deviation of the noise added to counts (deprecated in 0.2.3)"),
    F(52, "differential_privacy_clipping_threshold", "uint64", default=0, doc="counts below this are dropped after the noise (deprecated in 0.2.3)"),
    F(53, "pretokenization_delimiter", "string", default="", doc="no trained piece crosses this string; it is ignored in training otherwise"),
    F(54, "seed_sentencepieces_file", "string", default="", doc="file of seed pieces, a piece<tab>frequency per line"),
    F(55, "auto_character_coverage", "bool", default=False, doc="0.2.3: the trainer chooses the share of characters against subwords itself"),
], EXTENSIONS)
TrainerSpec_0_2_0 = MessageType("TrainerSpec", [f for f in TrainerSpec.fields if f.number != 55], EXTENSIONS)

NormalizerSpec = MessageType("NormalizerSpec", [
    F(1, "name", "string", default="", doc='name of the normalization rule: "nmt_nfkc", "nfkc", "identity", ... or a user name'),
    F(2, "precompiled_charsmap", "bytes", default=b"", doc="the compiled rule: u32le trie size, a double-array trie, then NUL-ended replacements"),
    F(3, "add_dummy_prefix", "bool", default=True, doc='a whitespace is put before the text, so that "world" alone and in "hello world" match'),
    F(4, "remove_extra_whitespaces", "bool", default=True, doc="leading, trailing and repeated inner whitespace is removed"),
    F(5, "escape_whitespaces", "bool", default=True, doc="whitespace becomes the meta symbol U+2581 (training needs this)"),
    F(6, "normalization_rule_tsv", "string", default="", doc="the rule as TSV (source<tab>target code points), compiled into precompiled_charsmap"),
], EXTENSIONS)

Sample = MessageType("Sample", [
    F(1, "input", "string", default="", doc="a sentence"),
    F(2, "expected", "string", default="", doc="its pieces, joined by spaces, as the model segmented it in training"),
])
SelfTestData = MessageType("SelfTestData", [
    F(1, "samples", Sample, "repeated", doc="sentences and their expected segmentation, to check a loaded model"),
], EXTENSIONS)

ModelProto = MessageType("ModelProto", [
    F(1, "pieces", SentencePiece, "repeated", doc="the vocabulary: the piece of id i is the i-th"),
    F(2, "trainer_spec", TrainerSpec, doc="the options the model was trained with (ids of unk, bos, eos, pad...)"),
    F(3, "normalizer_spec", NormalizerSpec, doc="how text is normalized before it is segmented"),
    F(4, "self_test_data", SelfTestData, doc="0.2.0: self-test samples; reserved in 0.2.3 (an unknown field there)"),
    F(5, "denormalizer_spec", NormalizerSpec, doc="how decoded text is normalized back (custom rules only)"),
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

# the pieces (tens of thousands of piece/score/type records) are read as columns: see ProtoMessage
model_proto = ProtoMessage(ModelProto, columns="pieces") * "a ModelProto message: its fields to the end of the file"
