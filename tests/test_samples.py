"""The main job (`wvformats samples`): its generated GloVe file, read by a peer, and its timed read."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats import samples
from wvformats.errors import OptionError

ROOT = Path(__file__).resolve().parent.parent


def test_generated_glove_is_what_gensim_reads(tmp_path):
    path = tmp_path / "g.glove"
    words, vectors = samples.write_glove(path, 9000, 7, seed=3)
    from gensim.models import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=True)
    assert kv.index_to_key == words
    assert np.array_equal(kv.vectors.view(np.uint32), vectors.view(np.uint32))  # -0.0 spelled "-0.0000" too
    assert (vectors < 0).any() and (vectors > 0).any() and (np.signbit(vectors) & (vectors == 0)).any()
    emb = wv.read(path)
    assert emb.words == words and np.array_equal(emb.vectors.view(np.uint32), vectors.view(np.uint32))


@pytest.mark.parametrize("words, dim", [(0, 100), (1_000_001, 100), (10, 0)])
def test_generated_glove_refuses_sizes_it_cannot_spell(tmp_path, words, dim):
    with pytest.raises(OptionError, match=f"not {words} x {dim}"):
        samples.write_glove(tmp_path / "g.glove", words, dim)
    assert not (tmp_path / "g.glove").exists()


def test_cli_samples_times_a_glove_read_with_pyarrow():
    r = subprocess.run([sys.executable, "-m", "wvformats.cli", "samples", "--json", "--words", "12000"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    timed = json.loads(r.stdout)[-1]
    assert timed["sample"] == "generated 12000 x 100 GloVe (10 MB)" and timed["ok"], timed
    assert timed["round_trip"].startswith("same words and values; pyarrow's CSV reader: read in ")
    assert timed["seconds"] > 0 and timed["summary"] == "words=12000, dim=100"


def test_cli_samples_refuses_a_size_out_of_range(capsys):
    from wvformats import cli

    assert cli.main(["samples", "--words", "-1"]) == 2
    assert "--words takes 0 to 1000000, not -1" in capsys.readouterr().err


def test_the_default_install_is_the_fast_one():
    """pyarrow (the text parser), mmh3 (floret hashing) and tqdm (progress bars) come with a plain
    `pip install wvformats`; the extras that used to bring them still resolve."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {d.split(">")[0].split("=")[0] for d in project["dependencies"]}
    assert {"pyarrow", "mmh3", "tqdm"} <= names
    extras = project["optional-dependencies"]
    assert {d.split(">")[0] for d in extras["fast"]} == {"pyarrow", "mmh3"} and extras["cli"] == ["tqdm>=4.60"]


SNIFF = """
import sys
from wvformats import cli
code = cli.main(sys.argv[1:])
print(code, "pyarrow" in sys.modules)
"""


def test_pyarrow_is_imported_only_when_a_text_table_is_parsed(tmp_path):
    small = tmp_path / "small.vec"
    wv.write(wv.Embeddings(["a", "b"], np.ones((2, 3), np.float32)), small, "word2vec-text")
    big = tmp_path / "big.glove"
    samples.write_glove(big, 2000, 100)  # 1.6 MB: over the 1 MB from which pyarrow parses
    said = []
    for args, twins in ((["sniff", small, big], ""), (["convert", big, tmp_path / "o.leader"], ""),
                        (["convert", big, tmp_path / "p.leader"], "1")):
        env = {**os.environ, "WVFORMATS_PURE_PYTHON": twins}
        r = subprocess.run([sys.executable, "-c", SNIFF, *map(str, args)], capture_output=True, text=True, env=env)
        said.append(r.stdout.split()[-2:])
    assert said == [["0", "False"],  # start-up and sniffing (small or big text) never pay for the import
                    ["0", "False"],  # nor a parse by the compiled text kernel
                    ["0", "True"]]  # a parse of a big text body by its twin does
