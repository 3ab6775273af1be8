"""No from_model assigns a derived field (issue 38, item 1): a family gives its content (words, arrays,
metadata) and the schema's ``Derived`` fields (counts, lengths, sizes) are computed by the builder. Each format
below has derived fields; what its ``from_model`` gives for a new model names none of them, and the file
written reads back as written."""

import construct as cs
import numpy as np
import pytest

import wvformats as wv
from wvformats import framework, registry
from wvformats.families.ggml.gguf import GGUFModel
from wvformats.families.numpy.codec import NpzArrays

ANY = "**"  # a path segment that stands for any path: the fields of a construct the walk does not know


def derived_paths(schema):
    """The paths of the schema's derived fields (``Derived``, ``Rebuild``), wherever they are nested: a tuple
    of names, "[]" for an element of a table, ``ANY`` inside a custom construct (its value's layout unknown)."""
    paths, seen = set(), set()

    def scan(v, path):
        if isinstance(v, (list, tuple)):
            for x in v:
                scan(x, path)
            return
        if isinstance(v, dict):
            for x in v.values():
                scan(x, path)
            return
        if not isinstance(v, cs.Construct) or (id(v), path) in seen:
            return
        seen.add((id(v), path))
        if isinstance(v, cs.Renamed):  # (a field's name and its doc: layers of one name)
            name = v.name
            while isinstance(v, cs.Renamed):
                name, v = name or v.name, v.subcon
            scan(v, path + (name,) if name else path)
        elif isinstance(v, cs.Struct):
            scan(v.subcons, path)
        elif isinstance(v, cs.Rebuild):
            paths.add(path)
            scan(v.subcon, path)
        elif isinstance(v, cs.IfThenElse):
            scan([v.thensubcon, v.elsesubcon], path)
        elif isinstance(v, cs.Switch):
            scan([*v.cases.values(), v.default], path)
        elif isinstance(v, (cs.Array, cs.GreedyRange, framework.Table)):
            scan(v.subcon, path + ("[]",))
        elif isinstance(v, cs.Subconstruct):
            scan(v.subcon, path)
        else:
            scan([x for x in vars(v).values() if isinstance(x, (cs.Construct, list, tuple, dict))], path + (ANY,))

    scan(schema, ())
    return paths


def given_paths(obj, path=()):
    """The paths of every value in a built value that holds something (not None), "[]" for a list's element."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            if v is not None:
                out.add(path + (k,))
            out |= given_paths(v, path + (k,))
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            out |= given_paths(x, path + ("[]",))
    return out


def matches(pattern, path):
    """Whether ``path`` is ``pattern``, each ``ANY`` of which stands for any segments (none too)."""
    if not pattern:
        return not path
    if pattern[0] == ANY:
        return any(matches(pattern[1:], path[i:]) for i in range(len(path) + 1))
    return bool(path) and pattern[0] == path[0] and matches(pattern[1:], path[1:])


EMBEDDINGS = wv.Embeddings(["king", "queen", "x"], np.arange(6, dtype=np.float32).reshape(3, 2))
MODELS = {
    "gguf": lambda: GGUFModel.from_arrays({"w": np.ones((2, 32), np.float32), "b": np.zeros(32, np.float32)},
                                          {"general.architecture": "test"}),
    "npz": lambda: NpzArrays({"a": np.arange(3.0), "b": np.zeros((2, 2), np.int16)}),
    "npz-embeddings": lambda: EMBEDDINGS,
    "finalfusion": lambda: EMBEDDINGS,
    "fasttext": lambda: EMBEDDINGS,
}
OPTIONS = {"finalfusion": {"normalize": False}}  # (the rows as given)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_from_model_gives_content_only(name, tmp_path):
    fmt = registry.get(name)
    derived = derived_paths(fmt.schema)
    assert derived, f"{name}'s schema declares no derived field"
    model = MODELS[name]()
    options = OPTIONS.get(name, {})
    given = given_paths(fmt.from_model(model, **options))
    assigned = {".".join(g) for g in given if any(matches(d, g) for d in derived)}
    assert not assigned, f"{name}'s from_model assigns {sorted(assigned)}, which its schema derives"
    path = tmp_path / f"out.{fmt.extensions[0].lstrip('.')}"
    wv.write(model, path, name, **options)
    assert wv.validate(path, name).ok
