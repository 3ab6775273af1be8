"""Memory of a GGUF vocabulary read (issue 39: at most 3x the file): the mapped file's pages that the string
walk and the token decode pass over are let go, and the heap holds little besides the tokens themselves."""

import json
import subprocess
import sys
from pathlib import Path

VOCAB = Path(__file__).resolve().parents[2] / "data" / "gguf" / "ggml-vocab-llama-spm.gguf"

# a fresh process: the mapping's resident pages (/proc/self/smaps) and the heap's peak (tracemalloc) of a read of
# the vocabulary and its token list, after a read of another GGUF (every module imported)
_PROBE = r"""
import json, re, sys, tracemalloc
import wvformats as wv
from wvformats.samples import sample_dir
path = sys.argv[1]
wv.read(str(sample_dir() / "sample-tiny.gguf"))
tracemalloc.start()
m = wv.read(path)
tokens = m.metadata["tokenizer.ggml.tokens"].tolist()
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
smaps = open("/proc/self/smaps").read().split("\n")
at = next(i for i, line in enumerate(smaps) if line.endswith(path))
rss = 1024 * int(re.search(r"Rss:\s+(\d+)", "\n".join(smaps[at : at + 8])).group(1))
own = sys.getsizeof(tokens) + sum(sys.getsizeof(t) for t in tokens)
print(json.dumps({"rss": rss, "peak": peak, "tokens": own, "count": len(tokens)}))
"""


def test_a_vocabulary_read_keeps_little_of_the_file_and_of_the_heap_besides_the_tokens():
    out = subprocess.run([sys.executable, "-P", "-c", _PROBE, str(VOCAB)], capture_output=True, text=True,
                         check=True)
    got = json.loads(out.stdout)
    size = VOCAB.stat().st_size
    assert got["count"] == 32000
    # the walk over the string array and the decode let its pages go: they were all resident (708 of 707 KB)
    assert got["rss"] <= size / 2, got
    # the heap's peak: the 32,000 tokens as Python strings (2.5 MB) and little else (offsets, one decode chunk)
    assert got["peak"] <= 1.5 * got["tokens"], got
