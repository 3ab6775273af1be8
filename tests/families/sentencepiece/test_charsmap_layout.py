"""The precompiled charsmap's layout is the schema's (``schemas.sentencepiece.precompiled_charsmap``): the real
models' blobs parse through it and rebuild byte-exact, and ``CharsMap`` reads them through it."""

from pathlib import Path

import numpy as np
import pytest
from roundtrip import MODES
from sentencepiece import sentencepiece_model_pb2 as pb2
from wvformats.schemas.sentencepiece import precompiled_charsmap, precompiled_charsmap_head

import wvformats as wv
from wvformats import framework
from wvformats.errors import FormatError, TruncatedError, ValueMismatchError
from wvformats.sentencepiece import CharsMap

MODELS = sorted((Path(__file__).parents[2] / "data" / "sentencepiece").glob("*.model"))


@MODES
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_real_charsmaps_are_the_schemas_layout(path, compiled):
    blob = pb2.ModelProto.FromString(path.read_bytes()).normalizer_spec.precompiled_charsmap  # protobuf's reading
    schema = framework.compiled(precompiled_charsmap) if compiled else precompiled_charsmap
    parsed = framework.parse(schema, blob, format="sentencepiece")
    assert parsed.trie_size == int.from_bytes(blob[:4], "little") > 0  # (the test's own reading of the prefix)
    assert parsed.trie.nbytes == parsed.trie_size and parsed.normalized.endswith(b"\0")
    assert framework.build(schema, parsed, format="sentencepiece") == blob
    assert framework.parse(precompiled_charsmap_head, blob, format="sentencepiece").trie_size == parsed.trie_size
    cm = wv.read(path).charsmap
    assert np.array_equal(cm.units, parsed.trie) and cm.normalized == parsed.normalized


@pytest.mark.parametrize(("blob", "error", "path"), [
    (b"\x01\x00", TruncatedError, "trie_size"),
    ((1000).to_bytes(4, "little") + bytes(8), TruncatedError, "trie"),
    ((6).to_bytes(4, "little") + bytes(8), ValueMismatchError, "trie_size"),
])
def test_a_broken_charsmap_names_the_schemas_field_inside_the_model(blob, error, path):
    with pytest.raises(error) as e:
        CharsMap(blob)
    assert isinstance(e.value, FormatError) and e.value.path == f"normalizer_spec.precompiled_charsmap.{path}"
    assert e.value.format == "sentencepiece"
