"""What the infini-gram tests share: a real GPT-2 tokenizer small enough to build here, for the real
indexer's ``--tokenizer gpt2`` path offline."""

import json

import pytest

GPT2_MERGES = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("l", "l"), ("\u0120", "w"), ("o", "r"),
               ("e", "r"), ("\u0120", "a")]


def _bytes_to_unicode():
    """GPT-2's byte -> printable character table (the byte-level BPE alphabet)."""
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))


@pytest.fixture(scope="module")
def gpt2_cache(tmp_path_factory):
    """A Hugging Face cache whose ``gpt2`` is a small real GPT-2 byte-level BPE tokenizer (256 byte tokens
    and 8 merges, ids up to 264): the real indexer's ``--tokenizer gpt2`` path runs offline on it."""
    root = tmp_path_factory.mktemp("hub")
    b2u = _bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    for a, b in GPT2_MERGES:
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    snap = root / "models--gpt2" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (root / "models--gpt2" / "refs").mkdir()
    (root / "models--gpt2" / "refs" / "main").write_text("0" * 40)
    (snap / "vocab.json").write_text(json.dumps(vocab))
    (snap / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in GPT2_MERGES))
    (snap / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (snap / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer"}))
    return root
