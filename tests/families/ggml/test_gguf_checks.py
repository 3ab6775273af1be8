"""GGUF checks against what llama.cpp's gguf_init refuses, typed metadata edits, and reports of damaged files
(issue 27: items 6, 9 and 12), with gguf-py and llama.cpp's own vocabulary files as oracles."""

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv

gguf = pytest.importorskip("gguf")  # the 'peers' extra, installed by CI

DATA = Path(__file__).parents[2] / "data" / "gguf"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "wvformats.cli", *map(str, args)], capture_output=True, text=True)


# ---------------------------------------------------------------------------------------------------------
# 12: validate of a file that fails to parse reports its real size


def test_validate_json_of_a_truncated_gguf_reports_its_size(tmp_path):
    """`validate --json` of a llama.cpp vocabulary cut short said "size": 0; the size is the file's."""
    cut = tmp_path / "cut.gguf"
    cut.write_bytes((DATA / "ggml-vocab-llama-spm.gguf").read_bytes()[:5000])
    r = _cli("validate", "--json", cut)
    assert r.returncode == 1, r.stderr
    (report,) = json.loads(r.stdout)
    assert report["size"] == 5000 and report["ok"] is False
    assert report["error"].startswith("gguf metadata[14].value.data at byte 641")
    assert wv.validate(cut).size == 5000
