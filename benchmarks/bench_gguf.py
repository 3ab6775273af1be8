"""GGUF: wvformats vs gguf-py (GGUFReader, gguf.quants), in one run.

    python3 benchmarks/bench_gguf.py VOCAB.gguf [--size 2048] [--repeat 3] [--model-mb 2048]

1. Open a vocabulary GGUF (llama.cpp's models/ggml-vocab-*.gguf; gemma-4's has 262k tokens) and read the
   architecture and the token list, in fresh processes: wvformats.read vs gguf.GGUFReader + the field's
   contents(), against the floor of reading the file's bytes; and wv.inspect's summary. Peak RSS per row, and
   the peak of a read over python + the imports and over python alone, as x the file (issue 39: at most 3x).
2. Open a multi-GB GGUF (written once to benchmarks/data/ with gguf.GGUFWriter: F16 tensors) and read the
   architecture and every tensor's shape: O(header) for both (tensors are views of the memory map).
3. Quantize / dequantize a size x size float32 matrix with both, every type both support; outputs compared.
   Ours and gguf.quants run interleaved (one call of each per repeat), so that the machine's load moves
   both alike; the ratio is the median of the per-repeat ratios.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import gguf
import numpy as np
from gguf import quants as gq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import floor_read, measure, paired, table, warm  # noqa: E402
from wvformats.schemas.ggml import LAYOUTS

from wvformats.families.ggml import quants

QUANTIZE = ["BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"]
DEQUANTIZE_ONLY = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "NVFP4", "IQ2_XXS", "IQ2_XS", "IQ2_S",
                   "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"]


def vocab(path: str, repeat: int, no_peer: bool = False) -> None:
    key = "tokenizer.ggml.tokens"
    print(f"load average before: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = [
        ("python, nothing imported", measure("", "pass", repeat)),
        ("raw read (floor)", measure(*floor_read(path), repeat)),
        ("python + numpy + wvformats imported, nothing read", measure(
            "import wvformats as wv\nwv.formats()", "pass", repeat)),
        ("wvformats: read + architecture + tokens", measure(
            f"import wvformats as wv\nwv.formats()\n{warm(path)}",
            f"m = wv.read({path!r})\narch = m.architecture\ntokens = m.metadata[{key!r}].tolist()", repeat)),
        ("wvformats: read + architecture", measure(
            f"import wvformats as wv\nwv.formats()\n{warm(path)}", f"m = wv.read({path!r})\narch = m.architecture",
            repeat)),
        ("wvformats: inspect (header, key/values, tensor table)", measure(
            f"import wvformats as wv\nwv.formats()\n{warm(path)}", f"info = wv.inspect({path!r})", repeat)),
        *([] if no_peer else [("gguf-py: GGUFReader + architecture + tokens", measure(
            f"import gguf\n{warm(path)}",
            f"r = gguf.GGUFReader({path!r})\narch = r.fields['general.architecture'].contents()\n"
            f"tokens = r.fields[{key!r}].contents()", 1))]),
    ]
    print(table(f"Open {Path(path).name} ({Path(path).stat().st_size / 1e6:.1f} MB), architecture and tokens",
                rows, "wvformats: read + architecture + tokens"))
    # memory (issue 39: at most 3x the file), over python + the imports and over python alone
    peak = dict(rows)
    size = Path(path).stat().st_size / (1 << 20)
    for name in ("wvformats: read + architecture + tokens", "wvformats: read + architecture"):
        over_imports = peak[name]["maxrss_mb"] - peak["python + numpy + wvformats imported, nothing read"]["maxrss_mb"]
        over_python = peak[name]["maxrss_mb"] - peak["python, nothing imported"]["maxrss_mb"]
        print(f"{name}: peak {over_imports:.1f} MiB over python + imports = {over_imports / size:.2f}x the "
              f"{size:.1f} MiB file; {over_python:.1f} MiB over python alone = {over_python / size:.2f}x")
    print(f"load average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}\n")


def big_model(mb: int, repeat: int) -> None:
    path = Path(__file__).resolve().parent / "data" / f"gguf-f16-{mb}mb.gguf"
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        w = gguf.GGUFWriter(str(path), "llama")
        w.add_context_length(4096)
        n = mb * (1 << 20) // (2 * 4096 * 4096)
        for i in range(max(n, 1)):
            w.add_tensor_info(f"blk.{i}.w", (4096, 4096), np.dtype(np.float16), 4096 * 4096 * 2)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        w.close()
        with open(path, "r+b") as f:  # the data section: zeros, as a sparse extension of the file
            start = -(-f.seek(0, 2) // 32) * 32
            f.truncate(start + max(n, 1) * 4096 * 4096 * 2)
    p = str(path)
    rows = [
        ("wvformats: read + architecture + shapes", measure(
            "import wvformats as wv\nwv.formats()", f"m = wv.read({p!r})\na = m.architecture\ns = [t.shape for t in m.tensors.values()]",
            repeat)),
        ("gguf-py: GGUFReader + architecture + shapes", measure(
            "import gguf", f"r = gguf.GGUFReader({p!r})\na = r.fields['general.architecture'].contents()\n"
            "s = [t.shape for t in r.tensors]", repeat)),
    ]
    print(table(f"Open a {path.stat().st_size / 1e9:.1f} GB F16 GGUF (header only is read)", rows,
                "wvformats: read + architecture + shapes"))


def quant(size: int, repeat: int) -> None:
    x = np.random.default_rng(0).normal(size=(size, size)).astype(np.float32)
    print("| type | quantize ours s | gguf s | ratio | dequantize ours s | gguf s | ratio | identical |")
    print("|---|---|---|---|---|---|---|---|")
    for name in QUANTIZE:
        qtype = gguf.GGMLQuantizationType[name]
        ours, ref = quants.quantize(x, name), gq.quantize(x, qtype)
        same = ours.tobytes() == ref.tobytes()
        same &= quants.dequantize(ours, name).tobytes() == gq.dequantize(ref, qtype).astype(np.float32).tobytes()
        tq, rq, q_ratio = paired(lambda n=name: quants.quantize(x, n), lambda t=qtype: gq.quantize(x, t), repeat)
        td, rd, d_ratio = paired(lambda b=ours, n=name: quants.dequantize(b, n),
                                 lambda b=ref, t=qtype: gq.dequantize(b, t), repeat)
        print(f"| {name} | {tq:.3f} | {rq:.3f} | {q_ratio:.2f} | {td:.3f} | {rd:.3f} | {d_ratio:.2f} | {same} |",
              flush=True)
    print("\n| type (dequantize only) | ours s | gguf s | ratio | identical |\n|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for name in DEQUANTIZE_ONLY:
        block, dtype = LAYOUTS[name]
        blocks = rng.integers(0, 256, size * size // block * dtype.itemsize, dtype=np.uint8).view(dtype).copy()
        for field in ("d", "dmin"):
            if field in dtype.names and dtype[field] == np.float16:
                blocks[field] = rng.normal(size=len(blocks)).astype(np.float16)
        if name == "IQ1_M":  # its fp16 scale is the top nibbles of its four u16 sub-block scales
            sc, d = blocks["scales"].view("<u2"), rng.normal(size=len(blocks)).astype("<f2").view("<u2")
            for k in range(4):
                sc[:, k] = (sc[:, k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12)
        qtype = gguf.GGMLQuantizationType[name]
        u8 = blocks.view(np.uint8).reshape(len(blocks), -1)
        same = quants.dequantize(blocks, name).tobytes() == gq.dequantize(u8, qtype).astype(np.float32).tobytes()
        td, rd, ratio = paired(lambda b=blocks, n=name: quants.dequantize(b, n),
                               lambda b=u8, t=qtype: gq.dequantize(b, t), repeat)
        print(f"| {name} | {td:.3f} | {rd:.3f} | {ratio:.2f} | {same} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("vocab", help="a vocabulary GGUF, e.g. llama.cpp's models/ggml-vocab-gemma-4.gguf")
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--model-mb", type=int, default=2048)
    ap.add_argument("--only", choices=("vocab", "model", "quant"), help="run one of the three parts")
    ap.add_argument("--no-peer", action="store_true", help="vocabulary: leave gguf-py out (it takes minutes)")
    args = ap.parse_args()
    if args.only in (None, "vocab"):
        vocab(args.vocab, args.repeat, args.no_peer)
    if args.only in (None, "model"):
        big_model(args.model_mb, args.repeat)
    if args.only in (None, "quant"):
        quant(args.size, args.repeat)


if __name__ == "__main__":
    main()
