"""No from_model assigns a derived field (issue 38, item 1): a family gives its content (words, arrays,
metadata) and the schema's ``Derived`` fields (counts, lengths, sizes) are computed by the builder. Each format
below has derived fields; what its ``from_model`` gives for a new model names none of them, and the file
written reads back as written."""

import construct as cs
import numpy as np
import pytest

import wvformats as wv
from wvformats import registry
from wvformats.families.ggml.gguf import GGUFModel
from wvformats.families.numpy.codec import NpzArrays


def derived_names(schema):
    """The names of the schema's derived fields (``Derived``, ``Rebuild``), wherever they are nested."""
    names, seen = set(), set()

    def scan(v):
        if isinstance(v, cs.Construct):
            if id(v) in seen:
                return
            seen.add(id(v))
            core = v
            while isinstance(core, cs.Renamed):
                core = core.subcon
            if isinstance(v, cs.Renamed) and v.name and isinstance(core, cs.Rebuild):
                names.add(v.name)
            for x in vars(v).values():
                scan(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                scan(x)
        elif isinstance(v, dict):
            for x in v.values():
                scan(x)

    scan(schema)
    return names


def given_names(obj):
    """The keys of every Container (and dict) in a built value that hold something (not None)."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            if v is not None:
                out.add(k)
            out |= given_names(v)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            out |= given_names(x)
    return out


EMBEDDINGS = wv.Embeddings(["king", "queen", "x"], np.arange(6, dtype=np.float32).reshape(3, 2))
MODELS = {
    "gguf": lambda: GGUFModel.from_arrays({"w": np.ones((2, 32), np.float32), "b": np.zeros(32, np.float32)},
                                          {"general.architecture": "test"}),
    "npz": lambda: NpzArrays({"a": np.arange(3.0), "b": np.zeros((2, 2), np.int16)}),
    "npz-embeddings": lambda: EMBEDDINGS,
    "finalfusion": lambda: EMBEDDINGS,
}
OPTIONS = {"finalfusion": {"normalize": False}}  # (the rows as given)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_from_model_gives_content_only(name, tmp_path):
    fmt = registry.get(name)
    derived = derived_names(fmt.schema)
    assert derived, f"{name}'s schema declares no derived field"
    model = MODELS[name]()
    options = OPTIONS.get(name, {})
    assigned = given_names(fmt.from_model(model, **options)) & derived
    assert not assigned, f"{name}'s from_model assigns {sorted(assigned)}, which its schema derives"
    path = tmp_path / f"out.{fmt.extensions[0].lstrip('.')}"
    wv.write(model, path, name, **options)
    assert wv.validate(path, name).ok
