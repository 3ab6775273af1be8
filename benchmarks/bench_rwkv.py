"""ggml quantization: wvformats.families.ggml.quants vs gguf.quants on a 4096 x 4096 matrix, in one run.

    python3 benchmarks/bench_rwkv.py [--size 4096] [--repeat 3]

Prints medians (in-process, after one warm-up) and the ratio wvformats / gguf for quantize and dequantize
of every shared type; results are also checked to be byte-identical.

Then reads an FP16 RWKV v4 model of about 280 MB (written once to benchmarks/data/) in fresh processes:
opening it (records parsed, tensors as zero-copy views of the mmap), and opening it and copying every
tensor's bytes out, against the floor of reading the file's bytes into memory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import gguf
import numpy as np
from gguf import quants as gq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import in_process, measure, table  # noqa: E402

from wvformats.families.ggml import quants

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
    print("\n| K-quant (read only) | dequantize ours s | gguf s | ratio | identical |\n|---|---|---|---|---|")
    from wvformats.schemas.ggml import BLOCKS

    rng = np.random.default_rng(1)
    for name in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"):
        dtype = next(dt for n, _, dt in BLOCKS[101].values() if n == name)
        raw = rng.integers(0, 256, (args.size * args.size // 256, dtype.itemsize), dtype=np.uint8)
        blocks = raw.view(dtype).reshape(-1).copy()
        for field in ("d", "dmin"):
            if field in dtype.names:
                blocks[field] = rng.normal(size=len(blocks)).astype(np.float16)
        qtype = getattr(gguf.GGMLQuantizationType, name)
        u8 = blocks.view(np.uint8).reshape(len(blocks), -1)
        same = quants.dequantize(blocks, name).tobytes() == gq.dequantize(u8, qtype).astype(np.float32).tobytes()
        td = in_process(lambda b=blocks, n=name: quants.dequantize(b, n), args.repeat)
        rd = in_process(lambda b=u8, t=qtype: gq.dequantize(b, t), args.repeat)
        print(f"| {name} | {td:.3f} | {rd:.3f} | {td / rd:.2f} | {same} |", flush=True)
    model_read(args.repeat)


def model_read(repeat: int) -> None:
    import wvformats as wv
    from wvformats.families.ggml.rwkv import build_model

    path = Path(__file__).resolve().parent / "data" / "rwkv-v4-fp16.bin"
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        rng = np.random.default_rng(0)
        n_vocab, C, n_layer = 20000, 1024, 8
        p = {"emb.weight": rng.standard_normal((n_vocab, C), np.float32),
             "blocks.0.ln0.weight": np.ones(C, np.float32), "blocks.0.ln0.bias": np.zeros(C, np.float32),
             "ln_out.weight": np.ones(C, np.float32), "ln_out.bias": np.zeros(C, np.float32),
             "head.weight": rng.standard_normal((n_vocab, C), np.float32)}
        for i in range(n_layer):
            b = f"blocks.{i}."
            for k in ("ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias", "att.time_mix_k", "att.time_mix_v",
                      "att.time_mix_r", "att.time_first", "att.time_decay", "ffn.time_mix_k", "ffn.time_mix_r"):
                p[b + k] = rng.standard_normal(C, np.float32)
            for k in ("att.key.weight", "att.value.weight", "att.receptance.weight", "att.output.weight",
                      "ffn.receptance.weight"):
                p[b + k] = rng.standard_normal((C, C), np.float32)
            p[b + "ffn.key.weight"] = rng.standard_normal((4 * C, C), np.float32)
            p[b + "ffn.value.weight"] = rng.standard_normal((C, 4 * C), np.float32)
        wv.write(build_model(p, n_vocab=n_vocab, n_embed=C, n_layer=n_layer, dtype="FP16"), path, "rwkv")
    size = path.stat().st_size
    setup = f"import wvformats as wv\np = {str(path)!r}"
    rows = [
        ("raw read (floor)", measure(setup, "data = open(p, 'rb').read()", repeat)),
        ("wvformats open (zero-copy views)", measure(setup, "m = wv.read(p); n = len(m.tensors)", repeat)),
        ("wvformats open + copy every tensor", measure(
            setup, "m = wv.read(p); data = [t.blocks.tobytes() for t in m.tensors.values()]", repeat)),
    ]
    print(f"\nmodel: {size / 2**20:.0f} MB, FP16 RWKV v4, {repeat} fresh processes each, warm cache\n")
    print(table("reading an rwkv.cpp model", rows, "raw read (floor)"))


if __name__ == "__main__":
    main()
