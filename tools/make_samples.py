"""Regenerate the word-vector samples bundled in wvformats/sample_files (deterministic), and the sharded
safetensors checkpoint made of the bundled safetensors sample."""

from pathlib import Path

import numpy as np

import wvformats as wv

OUT = Path(__file__).resolve().parent.parent / "wvformats" / "sample_files"

WORDS = ["</s>", "the", "of", "and", "in", "Daniël", "überspringen", "naïve", "日本", "東京", "Москва",
         "κόσμος", "नमस्ते", "🙂", "a\u00a0b", "e.g.", "--", "n't", "mammal.n.01", "x"]


def main() -> None:
    rng = np.random.default_rng(20261122)
    vectors = np.round(rng.normal(0, 0.4, (len(WORDS), 8)), 5).astype("<f4")
    emb = wv.Embeddings(WORDS, vectors)
    OUT.mkdir(exist_ok=True)
    wv.write(emb, OUT / "sample.leader", "leader")
    wv.write(emb, OUT / "sample.bin", "word2vec-binary")
    wv.write(emb, OUT / "sample-c-newlines.bin", "word2vec-binary", newline=True)
    wv.write(emb, OUT / "sample.txt", "word2vec-text")
    wv.write(emb, OUT / "sample-fasttext.vec", "word2vec-text", style="g5", trailing_space=True)
    wv.write(emb, OUT / "sample.glove", "glove")
    # sample-tiny.safetensors in two shards (huggingface_hub's split at 100 bytes: the 128-byte matrix alone)
    from wvformats.safetensors import write_sharded

    write_sharded(wv.read(OUT / "sample-tiny.safetensors", mmap=False), OUT / "sample-sharded", 100, overwrite=True)


if __name__ == "__main__":
    main()
