"""The jtt plugin's whole property-test file: round trips in both modes, truncations and mutation fuzzing of
drawn files, whose header and tensors are drawn together (the one fact of the format a generic strategy
cannot know)."""

import numpy as np
from hypothesis import strategies as st
from jtt import DTYPES, FORMAT, from_model

import wvformats as wv
from wvformats.testing import property_tests

tensors = st.dictionaries(st.text(min_size=1, max_size=5).filter(lambda n: n != "__metadata__"),
                          st.tuples(st.sampled_from(sorted(DTYPES)), st.lists(st.integers(0, 3), max_size=3)),
                          max_size=3)
header = tensors.map(lambda ts: from_model({"tensors": {n: np.zeros(s, DTYPES[d]) for n, (d, s) in ts.items()},
                                            "metadata": {"k": "v"}})["header"])


def data(context):
    return st.just({name: np.arange(int(np.prod(e["shape"])), dtype=DTYPES[e["dtype"]]).reshape(e["shape"])
                    for name, e in context.header.items() if name != "__metadata__"})


SAMPLE = wv.framework.build(FORMAT.schema, from_model({"tensors": {"w": np.eye(2, dtype="<f4")}}), format="jtt")
globals().update(property_tests(FORMAT, fields={"header": header, "data": data}, samples=[SAMPLE]))


def test_the_plugin_reaches_the_command(tmp_path):
    """Named in WVFORMATS_PLUGINS, the plugin's files are sniffed, inspected, dumped and validated."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "m.jtt"
    path.write_bytes(SAMPLE)
    env = {**os.environ, "WVFORMATS_PLUGINS": "jtt_plugin", "PYTHONPATH": str(Path(__file__).parent)}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "wvformats.cli", *args, str(path)], capture_output=True,
                              text=True, env=env)

    assert run("sniff").stdout.strip() == f"{path}: jtt"
    assert run("validate").returncode == 0
    assert "data.w" in run("dump").stdout
    damaged = bytearray(SAMPLE)
    damaged[-1:] = b""
    path.write_bytes(damaged)
    r = run("validate")
    assert r.returncode == 1 and "data.w" in r.stdout
