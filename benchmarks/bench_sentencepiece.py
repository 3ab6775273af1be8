"""SentencePiece: parse a 32,000-piece ModelProto into the typed model and rebuild it, vs protobuf (upb).

    python3 benchmarks/bench_sentencepiece.py [--pieces 32000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sentencepiece import sentencepiece_model_pb2 as pb2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import in_process  # noqa: E402

import wvformats as wv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pieces", type=int, default=32000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    m = pb2.ModelProto()
    for i in range(args.pieces):
        p = m.pieces.add()
        p.piece, p.score = f"\u2581piece{i}", -float(i) / 7
        if i < 3:
            p.type = 2 if i == 0 else 3
    m.trainer_spec.model_type, m.trainer_spec.vocab_size = 2, args.pieces
    data = m.SerializeToString()
    fmt = wv.registry.get("sentencepiece")
    parsed = fmt.parse(data)

    def ours_parse():
        return fmt.to_model(fmt.parse(data))

    def ours_build():
        import io

        out = io.BytesIO()
        fmt.build(parsed, out)
        return out.getvalue()

    assert ours_build() == data
    from wvformats.families.sentencepiece.model import set_piece

    model = fmt.to_model(parsed)

    def edit_and_build():
        import io

        out = io.BytesIO()
        fmt.build(fmt.from_model(set_piece(model, 5, score=-1.0)), out)
        return out.getvalue()

    assert len(edit_and_build()) == len(data)
    rows = [("wvformats parse -> typed model", in_process(ours_parse, args.repeat)),
            ("protobuf ParseFromString", in_process(lambda: pb2.ModelProto().ParseFromString(data), args.repeat)),
            ("wvformats rebuild", in_process(ours_build, args.repeat)),
            ("protobuf SerializeToString", in_process(m.SerializeToString, args.repeat)),
            ("wvformats set_piece (re-score one piece) + rebuild", in_process(edit_and_build, args.repeat))]
    print(f"{args.pieces} pieces, {len(data)} bytes, median of {args.repeat}")
    print("| step | median ms |\n|---|---|")
    for name, t in rows:
        print(f"| {name} | {1000 * t:.2f} |")
    print(f"\nparse ratio {rows[0][1] / rows[1][1]:.1f}x, rebuild ratio {rows[2][1] / rows[3][1]:.1f}x")


if __name__ == "__main__":
    main()
