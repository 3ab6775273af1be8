"""`wvformats gguf dump | set | new`, checked against llama.cpp's gguf-py scripts (gguf-dump --json,
gguf-set-metadata, gguf-new-metadata) on llama.cpp's vocabulary files and a file with tensors."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import wvformats as wv

DATA = Path(__file__).parents[2] / "data" / "gguf"
TINY = Path(wv.__file__).parent / "sample_files" / "sample-tiny.gguf"


def ours(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wvformats.cli", "gguf", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def script(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"gguf.scripts.{name}", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("path", [DATA / "ggml-vocab-bert-bge.gguf", DATA / "ggml-vocab-llama-spm.gguf", TINY])
@pytest.mark.parametrize("arrays", [False, True])
def test_dump_json_is_gguf_dumps(path, arrays):
    flag = ["--json-array"] if arrays else []
    want = json.loads(script("gguf_dump", "--json", *flag, path).stdout)
    got = ours("dump", path, "--json", *flag)
    assert got.returncode == 0, got.stderr
    got = json.loads(got.stdout)
    assert got["metadata"] == want["metadata"]
    assert got["tensors"] == want["tensors"]


def test_dump_shows_every_key():
    path = DATA / "ggml-vocab-llama-spm.gguf"
    text = ours("dump", path).stdout
    model = wv.read(path)
    assert all(f" {key} = " in text for key in model.metadata)
    assert "(32000 in all; --all shows them)" in text
    last = model.metadata["tokenizer.ggml.tokens"][-1]
    assert repr(last) not in text and repr(last) in ours("dump", path, "--all").stdout  # --all: every element


def test_set_in_place_as_gguf_set_metadata(tmp_path):
    theirs, mine = tmp_path / "theirs.gguf", tmp_path / "mine.gguf"
    for p in (theirs, mine):
        shutil.copy(DATA / "ggml-vocab-bert-bge.gguf", p)
    assert script("gguf_set_metadata", theirs, "bert.context_length", "1024", "--force").returncode == 0
    r = ours("set", mine, "bert.context_length", "1024")
    assert r.returncode == 0 and "in place" in r.stdout
    assert mine.read_bytes() == theirs.read_bytes()


def test_set_on_a_compressed_file_rewrites_it_compressed(tmp_path):
    """The offsets of a .gguf.gz are those of its decompressed bytes: a number is never written into the gzip
    stream (it was, corrupting it), the file is rewritten, compressed as before."""
    path = tmp_path / "m.gguf.gz"
    subprocess.run(["gzip", "-c", str(TINY)], stdout=path.open("wb"), check=True)
    r = ours("set", path, "llama.context_length", "128")
    assert r.returncode == 0 and "rewritten" in r.stdout
    assert path.read_bytes()[:2] == b"\x1f\x8b" and wv.validate(path).ok
    assert wv.read(path).metadata["llama.context_length"] == 128


def test_set_of_a_string_rewrites_the_file(tmp_path):
    path = tmp_path / "m.gguf"
    shutil.copy(TINY, path)
    r = ours("set", path, "general.name", "a much longer name than before")
    assert r.returncode == 0 and "rewritten" in r.stdout
    assert wv.read(path).metadata["general.name"] == "a much longer name than before" and wv.validate(path).ok
    assert ours("set", path, "general.name", "x", "--type", "UINT32").returncode == 2  # 'x' is no UINT32


def test_new_sets_and_removes_as_gguf_new_metadata(tmp_path):
    src = DATA / "ggml-vocab-bert-bge.gguf"
    theirs, mine = tmp_path / "theirs.gguf", tmp_path / "mine.gguf"
    assert script("gguf_new_metadata", src, theirs, "--general-name", "renamed", "--remove-metadata",
                  "bert.attention.head_count", "--force").returncode == 0
    r = ours("new", src, mine, "--set", "general.name=renamed", "--remove", "bert.attention.head_count")
    assert r.returncode == 0, r.stderr
    a, b = wv.read(theirs), wv.read(mine)
    assert list(a.metadata) == list(b.metadata) and "bert.attention.head_count" not in b.metadata
    assert all(a.metadata.type(k) == b.metadata.type(k) for k in a.metadata)
    assert json.loads(ours("dump", mine, "--json", "--json-array").stdout)["metadata"]["general.name"]["value"] \
        == "renamed"
    assert ours("new", src, src, "--set", "general.name=x").returncode == 2  # never over its own input


def test_set_of_a_key_the_file_lacks_is_refused_unless_asked_for(tmp_path):
    """A mistyped key (``llama.context_lenght``) was added as a new STRING key, exit 0; gguf-set-metadata
    refuses a key the file lacks, and so does ``set`` now (exit 2, a usage error: the file is untouched), naming
    the file and the closest key; --add or --type adds it, and says "added"."""
    path, theirs = tmp_path / "m.gguf", tmp_path / "theirs.gguf"
    shutil.copy(TINY, path)
    shutil.copy(TINY, theirs)
    assert script("gguf_set_metadata", theirs, "llama.context_lenght", "8192", "--force").returncode == 1
    before = path.read_bytes()
    r = ours("set", path, "llama.context_lenght", "8192")
    assert r.returncode == 2, r
    assert f"{path}: no metadata key 'llama.context_lenght' (the closest is 'llama.context_length')" in r.stderr
    assert "--add" in r.stderr and path.read_bytes() == before
    r = ours("set", path, "llama.context_lenght", "8192", "--add")
    assert r.returncode == 0 and r.stdout.startswith("added llama.context_lenght = '8192' [STRING,")
    assert wv.read(path).metadata["llama.context_lenght"] == "8192"
    r = ours("set", path, "llama.rope.freq_bass", "1e4", "--type", "FLOAT32")
    assert r.returncode == 0 and r.stdout.startswith("added llama.rope.freq_bass")
    assert wv.read(path).metadata.type("llama.rope.freq_bass") == "FLOAT32"


def test_new_refuses_to_set_a_key_the_source_lacks_without_a_type(tmp_path):
    src, dst = TINY, tmp_path / "new.gguf"
    r = ours("new", src, dst, "--set", "general.nmae=x")
    assert r.returncode == 2 and not dst.exists()
    assert f"{src}: no metadata key 'general.nmae' (the closest is 'general.name')" in r.stderr
    assert "--set general.nmae:STRING=x" in r.stderr
    assert ours("new", src, dst, "--set", "general.nmae:STRING=x").returncode == 0
    assert wv.read(dst).metadata["general.nmae"] == "x"


def test_metadata_mapping_adds_keys_as_a_dict_does():
    """The Python API keeps a mapping's semantics (a model is built key by key, ``update`` and ``setdefault``
    add): only the command line, where a key is typed at a shell, refuses a key the file lacks."""
    model = wv.read(TINY)
    model.metadata["general.nmae"] = "x"
    model.metadata.update({"a.b": 1})
    assert model.metadata["general.nmae"] == "x" and model.metadata.type("a.b") == "UINT32"
