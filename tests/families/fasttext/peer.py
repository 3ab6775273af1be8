"""The fasttext module as the oracle, run in a subprocess by the tests (it is compiled and can crash).

``python peer.py train OUT NAME``: trains the small model NAME of MODELS into folder OUT (unsupervised
skipgram and cbow, supervised softmax, hs, ova and ns with word bigrams, quantized .ftz with pruning,
quantized norms and a quantized output) from a corpus made here.
``python peer.py ask MODEL QUERIES.json ANSWERS.json``: the peer's word vectors (of words, or of byte strings
given in hex as ``raw_words``), word ids, sentence vectors, predictions, nearest neighbours (``nn``: words) and
analogies (``analogies``: triplets) for the queries, as lists of numbers (float32 values written exactly via their
hex bits), and the model's words and labels.
"""

import json
import random
import sys

import numpy as np


def corpus(seed: int = 7) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    vocab = ["apple", "banana", "cherry", "day", "night", "sun", "moon", "été", "über", "naïve", "日本",
             "run", "running", "ran", "cat", "dog", "sky", "sea", "rain", "snow"] + [f"w{i}" for i in range(40)]
    labels = ["pos", "neg", "neu", "odd", "rare"]
    text, sup = [], []
    for i in range(600):
        words = [rng.choice(vocab[: 10 + i % 50]) for _ in range(rng.randint(3, 12))]
        text.append(" ".join(words))
        lab = labels[min(int(rng.expovariate(0.8)), 4)]
        sup.append(f"__label__{lab} " + " ".join(words + [lab + "ish"] * (i % 3)))
    return text, sup


COMMON = dict(dim=8, epoch=3, minCount=1, bucket=2000, thread=1, verbose=0)
# name -> (corpus, unsupervised model or supervised loss, training options, quantize options or None)
MODELS = {
    "skipgram.bin": ("text", "skipgram", dict(minn=2, maxn=4, lr=0.02), None),
    "cbow.bin": ("text", "cbow", dict(minn=2, maxn=4, lr=0.02), None),
    **{f"sup-{loss}.bin": ("sup", loss, dict(wordNgrams=2, minn=2, maxn=3, lr=0.1), None)
       for loss in ("softmax", "hs", "ova", "ns")},
    # pruned to 400 rows, norms quantized apart
    "sup-softmax.ftz": ("sup", "softmax", dict(wordNgrams=2, minn=2, maxn=3, lr=0.1),
                        dict(qout=False, cutoff=400, qnorm=True, dsub=3)),
    "sup-plain.ftz": ("sup", "softmax", dict(wordNgrams=2, lr=0.2), dict(qout=False, cutoff=0, dsub=2)),
    # quantized input as finalfusion storage: no character n-grams and a last sub-quantizer narrower than the
    # others (dim 8, dsub 3: lastdsub 2); character n-grams, not pruned (written dense)
    "sup-dsub3.ftz": ("sup", "softmax", dict(wordNgrams=2, lr=0.2), dict(qout=False, cutoff=0, qnorm=True, dsub=3)),
    "sup-ngrams.ftz": ("sup", "softmax", dict(wordNgrams=2, minn=2, maxn=3, lr=0.1),
                       dict(qout=False, cutoff=0, qnorm=True, dsub=2)),
    # a quantized output needs 256 rows or more: 300 labels
    "many-ova.ftz": ("many", "ova", dict(wordNgrams=3, lr=0.5), dict(qout=True, cutoff=0, qnorm=True, dsub=2)),
}


def train(out: str, name: str) -> None:
    """Train model ``name`` of MODELS into folder ``out`` (fastText's training now and then stops with
    "Encountered NaN" on these tiny corpora, at random: it is tried again)."""
    import fasttext

    text, sup = corpus()
    files = {"text": text, "sup": sup,
             "many": [f"__label__l{i % 300} " + line.split(" ", 1)[1] for i, line in enumerate(sup)]}
    kind, model, options, quantize = MODELS[name]
    with open(f"{out}/{kind}.txt", "w") as f:
        f.write("\n".join(files[kind]) + "\n")
    for attempt in range(12):
        try:
            if kind == "text":
                m = fasttext.train_unsupervised(f"{out}/{kind}.txt", model=model, **options, **COMMON)
            else:
                m = fasttext.train_supervised(f"{out}/{kind}.txt", loss=model, **options, **COMMON)
            break
        except RuntimeError:
            if attempt == 11:
                raise
            options = dict(options, lr=options["lr"] * 0.7)
    if quantize:
        m.quantize(input=None, retrain=False, **quantize)
    m.save_model(f"{out}/{name}")


def bits(a) -> list[int]:
    return np.asarray(a, np.float32).view(np.uint32).tolist()


def ask(model: str, queries: str, answers: str) -> None:
    import fasttext

    q = json.load(open(queries))
    m = fasttext.load_model(model)
    out = {"words": [bits(m.get_word_vector(w)) for w in q.get("words", [])],
           "ids": [m.get_word_id(w) for w in q.get("words", [])],
           "nn": [[[s, w] for s, w in m.get_nearest_neighbors(w, q.get("k", 10))] for w in q.get("nn", [])],
           "analogies": [[[s, w] for s, w in m.get_analogies(*abc, q.get("k", 10))] for abc in q.get("analogies", [])],
           "sentences": [bits(m.get_sentence_vector(t)) for t in q.get("sentences", [])],
           "subwords": [m.get_subwords(w)[1].tolist() for w in q.get("words", [])],
           # words given as their bytes (hex): a model whose words are in another encoding than UTF-8
           "raw_words": [bits(m.get_word_vector(bytes.fromhex(w))) for w in q.get("raw_words", [])],
           "labels": list(m.get_labels(on_unicode_error="replace")) if m.f.getArgs().model.name == "supervised" else [], "dictionary": list(m.get_words(on_unicode_error="replace"))}
    if q.get("lines"):
        preds = []
        for t in q["lines"]:
            labels, probs = m.predict(t, k=q.get("k", 1), threshold=q.get("threshold", 0.0))
            preds.append([list(labels), [float(p) for p in probs]])
        out["predictions"] = preds
    json.dump(out, open(answers, "w"))


if __name__ == "__main__":
    {"train": train, "ask": ask}[sys.argv[1]](*sys.argv[2:])
