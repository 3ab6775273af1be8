"""SentencePiece: parse a 32,000-piece tokenizer.model into the typed model and rebuild it, vs protobuf (upb).

    python3 benchmarks/bench_sentencepiece.py [MODEL] [--pieces 32000] [--repeat 20] [--turns 7]

MODEL: a tokenizer.model; by default a BPE model of --pieces pieces trained once by sentencepiece's own trainer
on generated text (benchmarks/data/spm-bpe-<pieces>.model). The peer is sentencepiece's bundled
``sentencepiece_model_pb2`` on protobuf's default backend (upb, checked). In this process: each of our steps
and protobuf's in turn, --repeat turns, the ratio the median of the per-turn ratios. In fresh processes
(imports counted), --turns turns of: python + the imports, a read of the file's bytes, wvformats' read and
protobuf's parse. The machine's load is printed before and after.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

from google.protobuf.internal import api_implementation
from sentencepiece import sentencepiece_model_pb2 as pb2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import measure_turns, paired, paired_ratio, summary  # noqa: E402

import wvformats as wv


def trained(pieces: int) -> Path:
    """A BPE model of ``pieces`` pieces from sentencepiece's trainer on generated text (made once)."""
    path = Path(__file__).resolve().parent / "data" / f"spm-bpe-{pieces}.model"
    if path.exists():
        return path
    import numpy as np
    import sentencepiece as spm

    rng = np.random.default_rng(0)
    syllables = [a + b for a in "bcdfghjklmnprstvwz" for b in "aeiou"] + ["ng", "st", "er", "qu", "x", "th"]
    lexicon = ["".join(rng.choice(syllables, k)) for k in rng.integers(1, 5, 60000)]
    p = 1 / np.arange(1, len(lexicon) + 1) ** 1.05  # Zipf-like word frequencies
    words = rng.choice(len(lexicon), 1_500_000, p=p / p.sum())
    lines = [" ".join(lexicon[w] for w in words[i : i + 15]) for i in range(0, len(words), 15)]
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, vocab_size=pieces,
                                   model_type="bpe", num_threads=1, minloglevel=2)
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(out.getvalue())
    return path


def load() -> str:
    return "load average " + " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1 / 5 / 15 min)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", help="a tokenizer.model (default: a trained BPE model of --pieces)")
    ap.add_argument("--pieces", type=int, default=32000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--turns", type=int, default=7)
    args = ap.parse_args()
    assert api_implementation.Type() == "upb", api_implementation.Type()
    path = Path(args.model) if args.model else trained(args.pieces)
    data = path.read_bytes()
    fmt = wv.registry.get("sentencepiece")
    m = pb2.ModelProto()
    m.ParseFromString(data)
    parsed = fmt.parse(data)
    model = fmt.to_model(parsed)
    assert model.piece_strings == [p.piece for p in m.pieces]
    print(f"{path.name}: {len(model)} pieces, {len(data)} bytes; protobuf {api_implementation.Type()}; {load()}\n")

    def ours_build():
        out = io.BytesIO()
        fmt.build(parsed, out)
        return out.getvalue()

    assert ours_build() == data
    from wvformats.sentencepiece import set_piece

    def edit_and_build():
        out = io.BytesIO()
        fmt.build(fmt.from_model(set_piece(model, 5, score=-1.0)), out)
        return out.getvalue()

    assert len(edit_and_build()) == len(data)

    def upb_parse():
        pb2.ModelProto().ParseFromString(data)

    def upb_strings():
        msg = pb2.ModelProto()
        msg.ParseFromString(data)
        return [p.piece for p in msg.pieces]

    steps = [
        ("parse -> typed model (pieces' text decoded on first use)", lambda: fmt.to_model(fmt.parse(data)),
         "ParseFromString", upb_parse),
        ("parse -> typed model + every piece's text", lambda: fmt.to_model(fmt.parse(data)).piece_strings,
         "ParseFromString + [p.piece for p in pieces]", upb_strings),
        ("rebuild (unedited)", ours_build, "SerializeToString", m.SerializeToString),
        ("set_piece (re-score one piece) + rebuild", edit_and_build, "SerializeToString", m.SerializeToString),
    ]
    print(f"### In this process: each step and protobuf's in turn, {args.repeat} turns\n")
    print("| wvformats step | median ms | protobuf (upb) | median ms | ratio (median of turns) |\n|---|---|---|---|---|")
    for ours_name, ours, ref_name, ref in steps:
        a, b, ratio = paired(ours, ref, args.repeat)
        print(f"| {ours_name} | {1000 * a:.2f} | {ref_name} | {1000 * b:.2f} | **{ratio:.2f}x** |", flush=True)

    p = str(path)
    read = f"data = open({p!r}, 'rb').read()"
    rows = [
        ("python, nothing imported", "", "pass"),
        ("python: read the file's bytes (floor)", "", read),
        ("wvformats: import + wv.read -> typed model", "", f"import wvformats as wv\nm = wv.read({p!r})"),
        ("wvformats: import + read + every piece's text", "",
         f"import wvformats as wv\nm = wv.read({p!r})\ns = m.piece_strings"),
        ("protobuf: import sentencepiece_model_pb2 + ParseFromString", "",
         f"from sentencepiece import sentencepiece_model_pb2 as pb2\n{read}\nm = pb2.ModelProto()\n"
         "m.ParseFromString(data)"),
        ("protobuf: import + parse + every piece's text", "",
         f"from sentencepiece import sentencepiece_model_pb2 as pb2\n{read}\nm = pb2.ModelProto()\n"
         "m.ParseFromString(data)\ns = [x.piece for x in m.pieces]"),
        ("wvformats: only the import + wv.read's modules (nothing read)", "",
         "import wvformats as wv\nfrom wvformats.families.sentencepiece import codec"),
        ("protobuf: only the import", "", "from sentencepiece import sentencepiece_model_pb2 as pb2"),
        ("python: import numpy (what any numpy-based reader pays first)", "", "import numpy"),
    ]
    turns = measure_turns(rows, args.turns)
    base = "protobuf: import sentencepiece_model_pb2 + ParseFromString"
    print(f"\n### Fresh processes, imports counted: {args.turns} turns (one process of each row per turn)\n")
    print(f"| row | median ms | peak RSS MB | x {base} (median of turns) |\n|---|---|---|---|")
    for name, _, _ in rows:
        r = summary(turns[name])
        print(f"| {name} | {1000 * r['seconds']:.1f} | {r['maxrss_mb']:.0f} | "
              f"{paired_ratio(turns[name], turns[base]):.2f} |")
    ratio = paired_ratio(turns["wvformats: import + wv.read -> typed model"], turns[base])
    print(f"\nfresh process: wv.read {ratio:.2f}x protobuf; {load()}")


if __name__ == "__main__":
    main()
