"""fastText's ``predict`` at per-line speed: what a line costs is paid once per token, not per call.

With the compiled kernel (``_kernel.c``, the default install's), a hierarchical-softmax line is one C call
(``_kernel.hs_predict``: the hidden vector from the line's rows, then fastText's depth-first search with its heap),
a list of lines one such call a line, and a new token's n-grams one more (``_kernel.ngram_rows``). Without it
(``WVFORMATS_PURE_PYTHON``, or a kernel not built), the pure-Python twin below gives the same bits:

A line's input rows (``Dictionary::getLine``) are the rows of its tokens, and a token's rows never change:
they are kept per token (:class:`Lines`), computed on first sight by a scalar path for one line (fastText's
``computeSubwords`` on the token's bytes, each n-gram's hash carried on from its prefix's) or by the
vectorised one for the new tokens of a batch. The rows are summed in fastText's order from the input matrix
(a quantized one reconstructed once, when it is small: :data:`TABLE_BYTES`). Hierarchical softmax
(``lid.176.ftz``'s loss) runs fastText's depth-first search in Python floats rounded to float32 for one line
(:func:`hs_predict_one`) and evaluates every node of the tree at once for a batch (:func:`hs_predict`), the
search replayed only where its pruning or its heap could decide differently. One line pays four numpy calls
(its rows gathered, summed, scaled; the output layer's dot products in one ``matmul``) and the search's
Python floats, each rounded through a float32 memoryview. ``expf``, ``exp`` and ``log``
are the C library's, as fastText calls them (:func:`expf`, :func:`exp_to_float`, :func:`std_log`): the
labels and probabilities are the peer's to the bit.

Caches, each bounded: the token -> (rows, hash) dict (at most :data:`MAX_TOKENS` tokens, cleared when full;
about 0.3 KB a token of 20 rows: ~40 MB at most, 3 MB after 10,000 lines of text), a pruned model's
bucket -> row table (:meth:`.subwords.Buckets.table`: one int32 per bucket up to the last kept one, 8 MB for
``lid.176.ftz``'s 2M; at most 8 MB or 32 times the prune index's bytes, else the prune index as a dict) and the
reconstructed quantized input (rows x dim x 4 bytes, only when at most :data:`TABLE_BYTES`: 3.2 MB for
``lid.176.ftz``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from itertools import chain, compress, repeat
from operator import add, is_not, itemgetter, methodcaller
from typing import Any, NamedTuple

import numpy as np

from ...compiled import kernel
from ..finalfusion import as_row_items, composed_batch, sum_rows
from . import subwords
from .arithmetic import (
    SETTLED,
    SIGMOID_TABLE,
    expf,
    expf_c,
    expf_one,
    k_best_all,
    log32,
    r32,
    sigmoid_hs,
    std_log,
)
from .hashing import fasttext_hash_many
from .heap import pop_heap, push_heap, sort_heap
from .subwords import EOS, LABEL_PREFIX, WORD_NGRAM_PRIME
from .subwords import FNV_OFFSET as _FNV_OFFSET
from .subwords import FNV_PRIME as _FNV_PRIME
from .subwords import SIGNED as _SIGNED

_K = kernel(f"{__package__}._kernel")  # one line's predict in C (None: the numpy and Python floats below)
MAX_TOKENS = 1 << 17  # token -> rows entries kept
TABLE_BYTES = 16 << 20  # a quantized input matrix up to this size is reconstructed once, whole
_CHUNK = 128  # lines whose hierarchical-softmax products are made at once (lines x dim x nodes float32)
_MASK64 = (1 << 64) - 1
first = itemgetter(0)
_ZERO = np.float32(0)
_NEW = object()  # a token not kept yet
_INVERSES = [np.array(1.0 / n if n else 0.0, np.float32) for n in range(256)]  # float32(1 / n) as 0-d arrays


class Needs(NamedTuple):
    """What a fastText model hands its :class:`Predictor`: its args and matrices, and how it finds words and
    tokens (the model's own index and tokenizer: a predictor reads nothing else of it)."""

    args: Mapping[str, Any]  # the args as read (wordNgrams, bucket)
    minn: int  # the n-gram lengths fastText acts on (0 and 0 for a model without n-grams)
    maxn: int
    nwords: int  # words before the labels in the dictionary
    labels: Sequence[str]
    loss: str  # "hs", "ns", "softmax" or "ova"
    buckets: Any  # subwords.Buckets: n-gram bucket -> input row (through a pruned model's prune index)
    input: Any  # the model's Matrix of word and n-gram rows
    output: Any  # its Matrix of label rows (hierarchical softmax: the tree's inner nodes)
    words: Sequence[str]  # the dictionary's entries as read (their bytes; labels after the words)
    ids: Callable[[Sequence[str]], np.ndarray]  # entries -> their ids, -1 for none
    word_index: Callable[[], Mapping[str, int]]  # the index ids() looks in
    tokens: Callable[[str], list[str]]  # Dictionary::getLine's tokens of a line
    scores: Callable[[np.ndarray], np.ndarray]  # the output layer's probabilities of hidden vectors
    tree: Callable[[], list[tuple[int, int]]]  # the hierarchical softmax tree's children
    line_rows: Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]]  # lines' input rows, owner line each
    mean_rows: Callable[[np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]  # their means by owner


class Predictor:
    """fastText's ``predict`` of a model, with the caches that make a line cost once per token: its
    :class:`Lines` and, with hierarchical softmax, its :class:`Tree` (made by the model on its first
    prediction, from what it hands over: :class:`Needs`)."""

    def __init__(self, needs: Needs) -> None:
        self.m = needs
        self.rows = Lines(needs)
        self.tree = Tree(needs) if needs.loss == "hs" else None

    def lines(self, lines: Sequence[str], k: int, threshold: float) -> tuple[list[list[int]], list[np.ndarray]]:
        """fastText's ``predict`` of each line (k >= 0): label ids, best first, and their probabilities. A line
        without input rows predicts nothing (``FastText::predict`` returns at once)."""
        rows, tree = self.rows, self.tree
        if len(lines) == 1 or _K is not None and rows.table is not None:
            # one line at a time: in C, a line costs less than its share of the vectorised path's numpy calls
            got = [self.line(line, k, threshold) for line in lines]
            return [g[0] for g in got], [g[1] for g in got]
        hidden, found = rows.hidden(lines)
        ids, probs = hs_predict(tree, hidden, k, threshold) if tree else k_best_all(self.m.scores(hidden), k,
                                                                                     threshold)
        for i in np.flatnonzero(~found).tolist():
            ids[i], probs[i] = [], np.zeros(0)
        return ids, probs

    def line(self, text: str, k: int, threshold: float) -> tuple[list[int], np.ndarray]:
        """fastText's ``predict`` of one line: its rows (:meth:`Lines.rows`), then one call of the kernel (the
        hidden vector, the output layer and the search or the k best); without the kernel, as few numpy calls as
        its arithmetic allows: the line's rows gathered and summed (:meth:`Lines.hidden_one`), the output layer's
        dot products in one product and one reduction, then the search in Python floats (:func:`hs_predict_one`)."""
        lines, tree = self.rows, self.tree
        rows = lines.rows(self.m.tokens(text))
        if not rows:
            return [], np.zeros(0)
        if _K is not None:
            if k <= 0:
                return [], np.zeros(0)
            table = lines.table
            if table is None:  # a quantized input too big to keep reconstructed: the line's rows only, in order
                table, rows = self.m.input.few_rows(rows), range(len(rows))
            if tree is not None:
                lt = tree.log_of(threshold)
                if 0 < lt:
                    return [], np.zeros(0)
                found, p = _K.hs_predict(table, rows, tree.inner_rows, tree.norms, tree.nodes, tree.osz, k, lt)
            else:
                found, p = _K.flat_predict(table, rows, *lines.output(), k, threshold)
            return found, np.array(p, np.float64)
        hidden = lines.hidden_one(rows)
        if tree is None:
            ids, probs = k_best_all(self.m.scores(hidden[None]), k, threshold)
            return ids[0], probs[0]
        found, probs = hs_predict_one(tree, hidden, k, threshold)
        return found, np.array(probs, np.float64)


# -- a line's input rows -------------------------------------------------------------------------------------

class Lines:
    """Input rows of supervised lines as ``Dictionary::getLine`` makes them, kept per token."""

    def __init__(self, m: Needs) -> None:
        a = m.args
        self.m = m
        self.minn, self.maxn, self.wordngrams = m.minn, m.maxn, int(a["wordNgrams"])  # (n-grams as fastText acts)
        self.bucket, self.nwords = int(a["bucket"]), m.nwords
        b = m.buckets
        # a pruned model's bucket -> input row (-1: pruned away), one int32 per bucket; read one at a time
        # through a memoryview (a Python int, as fast as a dict's)
        self.kept: Any = b.table() if b.pruned else None  # (rows after the words, -1: pruned away)
        self.tokens: dict[str, tuple[tuple[int, ...], int] | None] = {}  # token -> (rows, hash); None: a label
        self._output: tuple | None = None  # (see output())
        inp = m.input
        self.table = inp.part["data"] if not inp.quantized else (
            inp.rows(np.arange(inp.shape[0])) if inp.shape[0] * inp.shape[1] * 4 <= TABLE_BYTES else None)
        # one line's rows gathered with np.take (a matrix read from the file may be unaligned: its rows are then
        # opaque items, which np.take copies as they are), summed down the rows (two columns or more: numpy adds
        # whole rows in order); else the batch path's sum_rows
        self._take: Any = None
        t = self.table
        if t is not None and t.ndim == 2 and t.shape[1] > 1 and t.dtype == np.float32:
            if t.flags.aligned and t.flags.c_contiguous:
                self._take = t.take
            else:
                items = as_row_items(t)[:, None]
                self._take = lambda at, axis: items.take(at, axis=axis).view(np.float32)
        m.ids([])  # the word index
        if self.maxn > 0 and self.bucket > 0 and m.nwords <= MAX_TOKENS // 4:
            # the vocabulary's rows at once (fastText's initNgrams does so at load): 7,235 words, ~30 ms
            self._prefetch(set(m.words[: m.nwords]))

    def output(self) -> tuple[np.ndarray, np.ndarray | None, bool, np.ndarray]:
        """For the kernel's softmax / one-vs-all / negative-sampling predict: the output rows (a quantized matrix's
        reconstructed from its centroids, unscaled), their norms (a quantized matrix's, else None), whether the
        loss is softmax, and fastText's sigmoid table. Made once (labels x dim float32)."""
        if self._output is None:
            rows, norms = self.m.output.dot_rows()
            self._output = np.asarray(rows, np.float32), norms, self.m.loss == "softmax", SIGMOID_TABLE
        return self._output


    def _ngram_rows(self, token: str) -> list[int]:
        """``computeSubwords("<" + token + ">")`` on the token's bytes, as fastText runs it (through the prune
        index of a pruned model): the input rows of its character n-grams."""
        return subwords.one_word_ngrams(token, self.minn, self.maxn, self.m.buckets, self.nwords)

    def _token(self, token: str) -> tuple[tuple[int, ...], int] | None:
        """A token's rows and hash (None for a label; the hash only with word n-grams), computed and kept."""
        m = self.m
        wid = m.word_index().get(token, -1)
        if wid >= m.nwords or wid < 0 and token.startswith(LABEL_PREFIX):
            got = None
        elif token == EOS or self.maxn <= 0 or self.bucket <= 0:  # a word's own row, no n-grams
            got = ((wid,) if wid >= 0 else (), self._hash(token))
        else:  # a word's own row (getSubwords), then its n-grams (computeSubwords)
            got = ((wid,) * (wid >= 0) + tuple(self._ngram_rows(token)), self._hash(token))
        if len(self.tokens) >= MAX_TOKENS:
            self.tokens.clear()
        self.tokens[token] = got
        return got

    def _hash(self, token: str) -> int:
        """``Dictionary::hash`` of a whole token (of the bytes it was read from), which only word n-grams use."""
        if self.wordngrams <= 1:
            return 0
        if _K is not None:
            return _K.fnv1a(token.encode("utf-8", subwords.BYTES))
        h = _FNV_OFFSET
        for byte in token.encode("utf-8", subwords.BYTES):
            h = ((h ^ _SIGNED[byte]) * _FNV_PRIME) & 0xFFFFFFFF
        return h

    def _prefetch(self, tokens: set[str]) -> None:
        """The rows (and hashes) of tokens not yet kept, vectorised over all of them at once (as many as the
        cache holds), or with the kernel, each by the scalar path."""
        m = self.m
        new = [t for t in tokens if t not in self.tokens]
        if len(new) < 64:
            return  # the scalar path costs less than the vectorised one's fixed cost
        if len(self.tokens) + len(new) > MAX_TOKENS:
            self.tokens.clear()
            new = new[:MAX_TOKENS]
        if _K is not None:  # in C one at a time: lid.176's 7,235 words in 13 ms against 30 vectorised
            for t in new:
                self._token(t)
            return
        ids = m.ids(new)
        starts_label = np.fromiter(map(methodcaller("startswith", LABEL_PREFIX), new), bool, len(new))
        label = (ids >= m.nwords) | (ids < 0) & starts_label
        self.tokens.update(dict.fromkeys(compress(new, label)))  # labels: None
        words = [t for t in compress(new, ~label) if t != EOS]  # (</s> has no n-grams: the scalar path)
        wids = m.ids(words).tolist()
        # every n-gram of every new word at once (computeSubwords), through the bucket table
        blob, starts, lengths, owner = subwords.char_ngrams(words, self.minn, self.maxn)
        rows, kept = m.buckets.rows(fasttext_hash_many(blob, starts, lengths) % np.uint32(self.bucket))
        flat = rows[kept].tolist()
        bounds = np.searchsorted(owner[kept], np.arange(len(words) + 1)).tolist()
        grams = [tuple(flat[i:j]) for i, j in zip(bounds[:-1], bounds[1:], strict=True)]
        own = [(w,) if w >= 0 else () for w in wids]  # a word's own row first (getSubwords)
        hashes = subwords.token_hashes(words).tolist() if self.wordngrams > 1 else [0] * len(words)
        self.tokens.update(zip(words, zip(map(add, own, grams), hashes, strict=True), strict=True))

    def rows(self, tokens: list[str]) -> list[int]:
        """The input rows of one line's tokens: each word's rows (labels left out), then the word n-grams
        (``addWordNgrams``: int32 token hashes sign-extended to u64, chained h * 116049371 + hash)."""
        get, new = self.tokens.get, _NEW
        out: list[int] = []
        n = self.wordngrams if self.bucket > 0 else 1
        hashes: list[int] = []
        for t in tokens:
            got = get(t, new)
            if got is new:
                got = self._token(t)
            if got is not None:
                out += got[0]
                if n > 1:
                    hashes.append(got[1])
        n = min(n, len(hashes))  # (an n-gram holds the line's tokens at most: a header's 2^31 - 1 asks no more)
        if n <= 1:
            return out
        kept = self.kept
        if _K is not None and not isinstance(kept, subwords.Kept):
            _K.word_ngram_rows(out, hashes, n, self.bucket, self.nwords, kept)
            return out
        ids: list[int] = []
        if _K is not None:
            _K.word_ngram_rows(ids, hashes, n, self.bucket, 0, None)
        else:
            signed = [h - (1 << 32) if h & 0x80000000 else h for h in hashes]
            for i in range(len(signed)):
                h = signed[i] & _MASK64
                for j in range(i + 1, min(len(signed), i + n)):
                    h = (h * WORD_NGRAM_PRIME + signed[j]) & _MASK64
                    ids.append(h % self.bucket)
        return out + (subwords.through(kept, ids, self.nwords) if kept is not None else
                      [self.nwords + i for i in ids])

    def hidden_one(self, rows: list[int]) -> np.ndarray:
        """One line's hidden vector from its input rows (at least one): their float32 sum in order onto +0.0,
        times float32(1 / count) (``Vector::mul``)."""
        if self._take is not None:
            s = np.add.reduce(self._take(rows, axis=0), axis=0, initial=_ZERO)
        else:
            s = sum_rows(self.input_rows(np.array(rows, np.intp)))
        n = len(rows)
        np.multiply(s, _INVERSES[n] if n < len(_INVERSES) else np.array(1.0 / n, np.float32), out=s)
        return s

    def input_rows(self, at: np.ndarray) -> np.ndarray:
        return self.table[at] if self.table is not None else self.m.input.rows(at)

    def hidden(self, lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Each line's hidden vector (the mean of its input rows, float32 as fastText sums it) and which
        lines have any row (one line: :meth:`hidden_one`)."""
        if self.maxn <= 0 or self.bucket <= 0:  # a word is its own row: the model's vectorised lookup is faster
            rows, owner = self.m.line_rows(lines)
            return self.m.mean_rows(rows, owner, len(lines))
        tokens = list(map(self.m.tokens, lines))
        flat_tokens = list(chain.from_iterable(tokens))
        self._prefetch(set(flat_tokens))
        got = list(map(self.tokens.get, flat_tokens, repeat(0)))  # (a C-level pass; 0: not kept yet)
        for i in [i for i, g in enumerate(got) if g == 0]:
            got[i] = self._token(flat_tokens[i])
        line_of = np.repeat(np.arange(len(lines)), np.fromiter(map(len, tokens), np.int64, len(tokens)))
        words = list(filter(None, got))  # (labels are None; C-level passes below)
        word_line = line_of[np.fromiter(map(is_not, got, repeat(None)), bool, len(got))]
        counts = np.fromiter(map(len, map(first, words)), np.int64, len(words))
        flat = np.fromiter(chain.from_iterable(map(first, words)), np.int64, int(counts.sum()))
        owner = np.repeat(word_line, counts)
        if self.wordngrams > 1 and self.bucket > 0:  # every line's word n-grams at once, after its words' rows
            hashes = np.fromiter(map(itemgetter(1), words), np.uint32, len(words))
            extra, extra_owner = subwords.word_ngram_rows(hashes, word_line, self.wordngrams, self.m.buckets)
            order = np.argsort(np.concatenate([owner, extra_owner]), kind="stable")
            flat, owner = np.concatenate([flat, extra])[order], np.concatenate([owner, extra_owner])[order]
        if self.table is not None:
            return composed_batch(flat, owner, len(lines), self.table, mean=True)
        needed, at = np.unique(flat, return_inverse=True)
        return composed_batch(at.reshape(-1), owner, len(lines), self.m.input.rows(needed), mean=True)


# -- hierarchical softmax ------------------------------------------------------------------------------------

class Tree:
    """The Huffman tree of a hierarchical-softmax model laid out for evaluating every node at once."""

    def __init__(self, m: Needs) -> None:
        tree = m.tree()
        self.children = tree
        osz = self.osz = len(m.labels)
        inner = osz - 1
        rows, self.norms = m.output.dot_rows(inner)
        self.wt = np.ascontiguousarray(rows.T, np.float32)  # dim x inner nodes
        # the same, its columns viewed in reverse: a matrix without a unit stride, which np.matmul multiplies in
        # its own loop (each product rounded, added down the dimensions in order: Matrix::dotRow's float32
        # arithmetic) where BLAS would sum in another order; its products come last node first
        self.wt_reversed = self.wt[:, ::-1]
        self.norms_reversed = self.norms[::-1] if self.norms is not None else None
        # each node's term: a left child takes its parent's log(1 - f), a right child its log(f); terms are
        # columns of [log(1 - f) of the inner nodes, log(f) of the inner nodes, 0]
        nodes = 2 * osz - 1
        parent, term = np.full(nodes, -1), np.full(nodes, 2 * inner)
        for node, (left, right) in enumerate(tree):
            if left >= 0:
                parent[left], term[left] = node, node - osz
                parent[right], term[right] = node, inner + node - osz
        depth = np.zeros(nodes, np.int64)
        root = nodes - 1
        for node in range(root - 1, -1, -1):  # parents come after their children
            depth[node] = depth[parent[node]] + 1
        self.depth = int(depth.max()) if nodes > 1 else 0
        # path[d, v]: the term of v's ancestor at depth d + 1 (v itself at its own depth), the zero column past
        path = np.full((max(self.depth, 1), nodes), 2 * inner)
        for v in range(nodes):
            u = v
            while u != root:
                path[depth[u] - 1, v] = term[u]
                u = parent[u]
        self.path = path
        self.levels = [np.flatnonzero(depth == d) for d in range(1, self.depth + 1)]
        self.parent, self.term = parent, term
        self.log_threshold = 0.0, r32(math.log(1e-5))  # the last threshold one line was predicted with, its log
        # for the kernel's search: the inner nodes' rows (node v's at v - osz), each node's (left, right)
        self.inner_rows = np.ascontiguousarray(rows, np.float32)
        self.nodes = np.array(tree, np.int32).reshape(-1, 2)

    def log_of(self, threshold: float) -> float:
        """:func:`log32` of a :func:`threshold32` value (the last one kept: lines are predicted with one
        threshold)."""
        last, lt = self.log_threshold  # (one tuple: threads see a threshold with its own log)
        if threshold != last:
            lt = log32(threshold)
            self.log_threshold = threshold, lt
        return lt

    def dots(self, hidden: np.ndarray) -> np.ndarray:
        """The inner nodes' ``dotRow`` with one hidden vector (float32 products summed in order, in one call), the
        last node's first: node ``v``'s at ``2 * osz - 2 - v``."""
        dots = np.matmul(hidden, self.wt_reversed)
        if self.norms_reversed is not None:
            dots *= self.norms_reversed
        return dots

    def terms(self, hidden: np.ndarray) -> np.ndarray:
        """Each line's node terms (lines x 2 * inner + 1): log(1 - f) and log(f) of each inner node, then 0."""
        # dotRow: a float32 running sum over the dimensions (numpy reduces a non-contiguous axis in order)
        dots = np.add.reduce(hidden[:, :, None] * self.wt[None], axis=1)
        if self.norms is not None:
            dots *= self.norms
        f = sigmoid_hs(dots)
        inner = dots.shape[1]
        both = np.empty((len(hidden), 2 * inner), np.float32)
        both[:, :inner] = 1.0 - f.astype(np.float64)  # std_log takes a float
        both[:, inner:] = f
        out = np.zeros((len(hidden), 2 * inner + 1), np.float32)
        out[:, :-1] = std_log(both)
        return out

    def scores(self, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each node's score (its path's terms summed from the root in float32) and the least score on the
        way to it, root excepted (lines x nodes)."""
        if len(terms) == 1:
            running = np.cumsum(terms[0][self.path], axis=0, dtype=np.float32)
            return running[-1:], running.min(axis=0)[None]
        # node-major while going down the levels: a level's parents and terms are whole rows
        by_node = np.ascontiguousarray(terms.T)
        score = np.zeros((len(self.parent), len(terms)), np.float32)
        least = np.full_like(score, np.inf)
        for nodes in self.levels:
            parents = self.parent[nodes]
            here = score[parents] + by_node[self.term[nodes]]
            score[nodes] = here
            least[nodes] = np.minimum(least[parents], here)
        return np.ascontiguousarray(score.T), np.ascontiguousarray(least.T)


def hs_predict(tree: Tree, hidden: np.ndarray, k: int, threshold: float) -> tuple[list[list[int]], list[np.ndarray]]:
    """``HierarchicalSoftmaxLoss::predict`` of each hidden vector: the label ids of each, best first, and
    their probabilities (``std::exp`` of the scores, as the Python module gives them)."""
    osz = tree.osz
    log_threshold = np.float32(tree.log_of(threshold))
    kk = min(k, osz)
    if 0 < log_threshold or kk <= 0:  # the root's score 0 is below the threshold: nothing
        return [[] for _ in range(len(hidden))], [np.zeros(0) for _ in range(len(hidden))]
    ids: list[list[int]] = []
    probs: list[np.ndarray] = []
    for at in range(0, len(hidden), _CHUNK):
        score, least = tree.scores(tree.terms(hidden[at : at + _CHUNK]))
        leaf, low = score[:, :osz], least[:, :osz]
        ranked = np.where(low >= log_threshold, leaf, -np.inf)  # a leaf is reached when no node on its way is below
        if kk == 1 and osz > 2:  # the best two: two passes of argmax
            first = np.argmax(ranked, axis=1)
            rest = ranked.copy()
            rest[np.arange(len(rest)), first] = -np.inf
            order = np.stack([first, np.argmax(rest, axis=1)], axis=1)
        elif kk + 1 < osz:  # the k + 1 best, then in order
            best = np.argpartition(-ranked, kk, axis=1)[:, : kk + 1]
            order = np.take_along_axis(best, np.argsort(-np.take_along_axis(ranked, best, axis=1), axis=1,
                                                        kind="stable"), axis=1)
        else:
            order = np.argsort(-ranked, axis=1, kind="stable")
        top = np.take_along_axis(ranked, order, axis=1)
        n = np.isfinite(top[:, :kk]).sum(axis=1)  # leaves found (fewer than k when the threshold cuts)
        kth = np.take_along_axis(top, np.maximum(n - 1, 0)[:, None], axis=1)
        chosen = np.arange(kk)[None] < n[:, None]
        # the depth-first search keeps these leaves when no ancestor of one is below the k-th best score (its
        # heap never prunes them) and no two of the k + 1 best tie (their order is then its heap's)
        pruned = (chosen & (np.take_along_axis(low, order[:, :kk], axis=1) < kth)).any(axis=1)
        tied = ((top[:, 1:] == top[:, :-1]) & np.isfinite(top[:, 1:])).any(axis=1)
        p = expf(np.where(chosen, top[:, :kk], 0)).astype(np.float64)
        first = len(ids)
        if (n == kk).all():
            ids += order[:, :kk].tolist()
            probs += list(p)
        else:
            ids += [row[:count] for row, count in zip(order[:, :kk].tolist(), n.tolist(), strict=True)]
            probs += [p[r, :count] for r, count in enumerate(n.tolist())]
        for r in np.flatnonzero(pruned | tied).tolist():
            found = _dfs(tree, score[r], kk, float(log_threshold))
            ids[first + r] = [i for i, _ in found]
            probs[first + r] = expf(np.array([s for _, s in found], np.float32)).astype(np.float64)
    return ids, probs


def hs_predict_one(tree: Tree, hidden: np.ndarray, k: int, threshold: float) -> tuple[list[int], list[float]]:
    """:func:`hs_predict` of one hidden vector, as ``HierarchicalSoftmaxLoss::dfs`` runs: only the nodes it
    visits are evaluated, in Python floats rounded to float32 after each operation as fastText's floats are
    (a float32 sum, product or quotient computed in double and rounded is the float32 one). A float is
    rounded by storing it into a float32 memoryview (a C cast) and reading it back: a tenth of a struct
    round trip's cost; the view is the call's own (threads share none)."""
    lt = tree.log_of(threshold)
    if 0 < lt or k <= 0:
        return [], []
    dot = tree.dots(hidden).item  # (a float32 item as a Python float: only the nodes the search visits)
    children, last, log, exp, ulp, expf1, settled = tree.children, 2 * tree.osz - 2, math.log, math.exp, math.ulp, \
        expf_c, SETTLED
    r = memoryview(bytearray(4)).cast("f")  # r[0] = x; r[0]: x rounded to float32
    best, best_score = -1, -math.inf  # k = 1: a heap of one (a tie goes to the leaf found later: the heap pops the top)
    heap: list[tuple[float, int]] = []
    stack: list[tuple[int, float]] = []  # right children to visit (the left one is visited at once)
    node, score = len(children) - 1, 0.0
    while True:
        if not (score < lt or (score < best_score if k == 1 else len(heap) == k and score < heap[0][0])):
            left, right = children[node]
            if left != -1:
                x = -dot(last - node)
                if -80.0 < x < 80.0:  # std::exp of a float: exp rounded, unless near a rounding boundary (expf_one)
                    r[0] = v = exp(x)
                    e = r[0]
                    if abs(v - e) > settled * ulp(v):
                        e = expf1(x)
                else:
                    e = expf1(x)
                r[0] = 1.0 + e
                r[0] = 1.0 / r[0]
                f = r[0]  # 1. / (1 + std::exp(-f)), stored as a float
                r[0] = log(f + 1e-5)  # std_log(f)
                r[0] = score + r[0]
                stack.append((right, r[0]))
                r[0] = 1.0 - f
                r[0] = log(r[0] + 1e-5)  # std_log(1.0 - f)
                r[0] = score + r[0]
                node, score = left, r[0]
                continue
            if k != 1:
                heap.append((score, node))
                push_heap(heap)
                if len(heap) > k:
                    pop_heap(heap, len(heap))
                    heap.pop()
            elif best < 0 or best_score <= score:
                best, best_score = node, score
        if not stack:
            break
        node, score = stack.pop()
    if k == 1:
        return ([best], [expf_one(best_score)]) if best >= 0 else ([], [])
    found = sort_heap(heap)
    return [i for _, i in found], [expf_one(s) for s, _ in found]


def _dfs(tree: Tree, score: np.ndarray, k: int, log_threshold: float) -> list[tuple[int, float]]:
    """``HierarchicalSoftmaxLoss::dfs`` over the nodes' scores: (leaf, score) of the k best it keeps, in the
    order its heap sorts them."""
    s = score.tolist()
    heap: list[tuple[float, int]] = []
    stack = [len(s) - 1]
    while stack:
        node = stack.pop()
        if s[node] < log_threshold or len(heap) == k and s[node] < heap[0][0]:
            continue
        left, right = tree.children[node]
        if left == -1 and right == -1:
            heap.append((s[node], node))
            push_heap(heap)
            if len(heap) > k:
                pop_heap(heap, len(heap))
                heap.pop()
            continue
        stack += [right, left]  # the left subtree first
    return [(i, sc) for sc, i in sort_heap(heap)]
