"""ggml quantization: wvformats.quants vs gguf.quants on a 4096 x 4096 matrix, in one run.

    python3 benchmarks/bench_rwkv.py [--size 4096] [--repeat 3]

Prints medians (in-process, after one warm-up) and the ratio wvformats / gguf for quantize and dequantize
of every shared type; results are also checked to be byte-identical.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import gguf
import numpy as np
from gguf import quants as gq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import in_process  # noqa: E402

from wvformats import quants

TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    x = np.random.default_rng(0).normal(size=(args.size, args.size)).astype(np.float32)
    print("| type | quantize ours s | gguf s | ratio | dequantize ours s | gguf s | ratio | identical |")
    print("|---|---|---|---|---|---|---|---|")
    for name in TYPES:
        qtype = getattr(gguf.GGMLQuantizationType, name)
        ours_q = quants.quantize(x, name)
        ref_q = gq.quantize(x, qtype)
        same = ours_q.tobytes() == ref_q.tobytes()
        tq = in_process(lambda n=name: quants.quantize(x, n), args.repeat)
        rq = in_process(lambda t=qtype: gq.quantize(x, t), args.repeat)
        td = in_process(lambda b=ours_q, n=name: quants.dequantize(b, n), args.repeat)
        rd = in_process(lambda b=ref_q, t=qtype: gq.dequantize(b, t), args.repeat)
        print(
            f"| {name} | {tq:.3f} | {rq:.3f} | {tq / rq:.2f} | {td:.3f} | {rd:.3f} | {td / rd:.2f} | {same} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
