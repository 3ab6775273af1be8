"""The fastText model: an :class:`~wvformats.embeddings.Embeddings` of the composed word vectors, with
fastText's lookups for any word, sentence vectors and supervised prediction, computed as fastText computes
them (float32 sums in fastText's order, means as ``Vector::mul(1.0 / n)``)."""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import Any

import numpy as np

from ...compiled import kernel
from ...embeddings import Embeddings, LazyRows, Storage, Subwords
from ...errors import FormatError
from ...framework import reinterpret, release
from ...schemas import fasttext as schema
from ...schemas.constructs.fasttext import entry_offset
from ...schemas.fasttext import KSUB, Loss, Model
from ...spelling import as_read, decoded_all, word_encoding
from ...words import WordIndex, word_rows
from ..finalfusion import as_row_items, composed_batch
from . import subwords
from .arithmetic import exp_to_float, sigmoid, threshold32
from .composed import CHUNK_BITS, MADE, READ_ONLY, ComposedTable
from .filerows import FileRows, file_rows, mapping
from .neighbors import vector_norm
from .predict import Needs, Predictor
from .quantized import finalfusion_quantized
from .subwords import EOS, LABEL_PREFIX, Buckets

_K = kernel(f"{__package__}._kernel")  # a word's vector in C (None: numpy's calls in FastText._one)

NAME = "fasttext"
# fastText's loss and model names by number (the schema's enums: the one home of these numbers)
LOSSES = {int(x): x.name for x in Loss}
MODELS = {int(x): x.name for x in Model}


def named(enum: Any) -> str:
    """``1 cbow, 2 skipgram, 3 supervised``: an enum's numbers and names, for messages."""
    return ", ".join(f"{int(x)} {x.name}" for x in enum)


_TOKEN = re.compile("[^ \n\r\t\v\f\0]+")  # between Dictionary::readWord's separators



def examples(lines: Iterable[str]) -> Iterator[str]:
    """The examples fastText's program reads from lines of input (``predict``, and ``print-sentence-vectors``
    of a supervised model): it reads one stream, and an example ends at a newline or at a token ``</s>``, so a
    line holding that token is several examples, the rest of the line the next one (checked on fastText
    0.9.2's program: ``a </s> b`` is predicted as ``a </s>``, then as ``b``)."""
    for line in lines:
        tokens = _TOKEN.findall(line) if EOS in line else ()
        if EOS not in tokens:
            yield line
            continue
        start = 0
        for i, token in enumerate(tokens):
            if token == EOS:
                yield " ".join(tokens[start : i + 1])
                start = i + 1
        yield " ".join(tokens[start:])


class Matrix:
    """fastText's input or output matrix, dense (a view of the file) or product-quantized, as rows."""

    def __init__(self, part: Any, quantized: bool) -> None:
        self.part, self.quantized = part, quantized
        self.shape = (int(part["m"]), int(part["n"]))
        if quantized:
            pq = part["pq"]
            self.nsubq, self.dsub, self.lastdsub = int(pq["nsubq"]), int(pq["dsub"]), int(pq["lastdsub"])
            self.codes = part["codes"].reshape(self.shape[0], self.nsubq) if self.shape[0] else \
                np.zeros((0, self.nsubq), np.uint8)
            # each sub-quantizer's 256 centroids as rows of a (256 * subquantizers, width) table: a row's
            # part j is the table's row 256 * j + code, gathered whole (the last part apart when narrower)
            self.centroids = c = pq["centroids"]
            lead = (self.nsubq - 1) * KSUB * self.dsub
            self._tables = [(0, c.reshape(-1, self.dsub))] if self.lastdsub == self.dsub else [
                (0, c[:lead].reshape(-1, self.dsub)), (self.nsubq - 1, c[lead:].reshape(KSUB, self.lastdsub))]
            self._norms = part["npq"]["centroids"] if part["qnorm"] else None

    def rows(self, at: np.ndarray, scaled: bool = True) -> np.ndarray:
        """float32 rows at an index array, C-contiguous (quantized rows as ``ProductQuantizer::addcode``
        adds them: each centroid times the row's norm when the norms are quantized, unless ``scaled=False``)."""
        if not self.quantized:
            return self.part["data"][at]  # (np.take would copy an unaligned matrix whole first)
        codes = self.codes[at]
        parts = []
        for first, table in self._tables:
            k = table.shape[0] // KSUB  # sub-quantizers in this table
            at_table = codes[:, first : first + k].astype(np.intp)
            at_table += np.arange(k) * KSUB
            parts.append(np.take(table, at_table, axis=0).reshape(len(codes), k * table.shape[1]))
        x = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        if self._norms is not None and scaled:
            x *= self._norms[self.part["norm_codes"][at]][:, None]
        return x

    def all(self) -> np.ndarray:
        return self.part["data"] if not self.quantized else self.rows(np.arange(self.shape[0]))

    def dot_rows(self, n: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """The first ``n`` rows (all by default) as ``Matrix::dotRow`` multiplies with them: float32 rows (a
        quantized matrix's reconstructed without its norms, as ``mulcode`` sums with the raw centroids) and the
        norm each row's dot product is then scaled by (None: none)."""
        n = self.shape[0] if n is None else n
        if not self.quantized:
            return np.asarray(self.part["data"][:n]), None
        norms = self._norms[self.part["norm_codes"][:n]].astype(np.float32) if self._norms is not None else None
        return self.rows(np.arange(n), scaled=False), norms

    def few_rows(self, rows: list[int]) -> np.ndarray:
        """:meth:`rows` of a short list (one word's, one line's): a quantized matrix's in C when the kernel is
        built (numpy's fixed costs would be most of the call)."""
        if _K is None or not self.quantized:
            return self.rows(np.array(rows, np.intp))
        out = np.empty((len(rows), self.shape[1]), np.float32)
        scaled = self._norms is not None
        _K.pq_rows(self.codes, self.centroids, self.shape[1], self.dsub, self.lastdsub,
                   self.part["norm_codes"] if scaled else None, self._norms if scaled else None, rows, out)
        return out


class FastText(Embeddings):
    """A fastText model: words in dictionary order with their composed vectors (``.vectors``, as fastText's
    ``.vec`` export writes them), and for any word, line or text what fastText's own functions give.

    ``args`` holds the training arguments as the file has them; ``labels`` the labels of a supervised model.

    A word has one vector, fastText's ``get_word_vector``: ``m[w]``, ``m.embedding(w)``, ``embedding_batch``,
    ``most_similar`` and ``.vectors`` give the same bits. As in gensim's ``FastTextKeyedVectors``, a model
    with character n-grams has a vector for every word (``w in m`` is True for any str, ``m["nightt"]`` is its
    n-grams' mean); one without has vectors for its dictionary's entries only (``m[w]`` raises KeyError and
    ``m.embedding(w)`` is None for others; ``get_word_vector`` gives fastText's zeros). The composed vectors
    are read-only (an edit raises ValueError saying why): they are means of the input matrix's rows, which
    the file holds and writing gives back, so an edit could not be written. The input and output matrices are
    read-only too. Vectors of the vocabulary are composed once and kept (:class:`.composed.ComposedTable`: 4096
    words at a time, at most ``nwords * dim`` float32 in all); other words are composed at each lookup.

    A dictionary that lists a word twice (fastText never writes one; an edited file may) is looked up as
    fastText looks it up: ``Dictionary::load`` fills its hash table entry after entry, the later entry's id
    replacing the earlier's, so every lookup by word (``m[w]``, ``get_word_vector``, ``get_subwords``,
    ``predict``, sentence vectors, neighbours) uses the LAST entry and its input row (:attr:`occurrence`).
    ``.words`` and ``.vectors`` keep every entry in file order, each row composed from its own input row.
    """

    occurrence = "last"  # Dictionary::load: word2int_[find(w)] = i, entry after entry

    def __init__(self, parsed: Any, *, unicode_errors: str | None = None, encoding: str | None = None) -> None:
        d, a = parsed["dictionary"], parsed["args"]
        entries = d["entries"]
        nwords, size = int(d["nwords"]), int(d["size"])
        types = entries["types"]
        if size and (types[:nwords] != 0).any() or (types[nwords:] != 1).any():
            bad = int(np.flatnonzero(np.concatenate([types[:nwords] != 0, types[nwords:] != 1]))[0])
            raise FormatError(f"entry {bad} has type {int(types[bad])}: the first nwords entries are words "
                              f"(type 0), the rest labels (type 1)", format=NAME,
                              path=f"dictionary.entries.types[{bad}]", offset=entry_offset(entries, bad))
        raw = entries["words"]  # as fastText sees them: surrogate escapes are the file's bytes
        # words shown in ``encoding`` and looked up by their bytes in it (None: UTF-8)
        self.encoding = word_encoding(encoding)
        shown = _shown(entries, raw, unicode_errors, self.encoding)
        words = shown if nwords == len(shown) else shown[:nwords]
        self.args = a
        self.version = parsed["version"]
        self.input = Matrix(parsed["input"], parsed["quant_input"] == 1)
        self.output = Matrix(parsed["output"], parsed["qout"] == 1)
        self.labels = shown[nwords:]
        self.label_counts = entries["counts"][nwords:]
        self.word_counts = entries["counts"][:nwords]
        self.nwords = nwords
        self.parsed = parsed
        self._raw = raw
        self._raw_index: dict[str, int] | None = None
        self._same: bool | None = None  # (_raw_is_words)
        self._word_index: WordIndex | None = None
        prune = d["pruneidx"] if parsed["new_format"] and int(d["pruneidx_size"]) >= 0 else None
        self.buckets = Buckets(nwords, int(a["bucket"]), prune)
        self.minn, self.maxn = ngram_lengths(a, parsed["version"])
        dim = self.input.shape[1]
        _check_rows(self, nwords, int(a["bucket"]), self.maxn > 0 or int(a["wordNgrams"]) > 1)
        for matrix in (self.input, self.output):  # the composed vectors are made from them
            for part in ("data", "codes", "norm_codes"):
                if matrix.part.get(part) is not None:
                    matrix.part[part].flags.writeable = False
        self._composes = self.maxn > 0 and int(a["bucket"]) > 0  # any word has n-grams
        self._table = ComposedTable(nwords, dim, self._compose_ids)
        self._items: np.ndarray | None = None  # the input rows as opaque items, made by _one when first needed
        self._reads: FileRows | None | bool = False  # (False: not looked for yet; _file_rows)
        # the declared parts a writer reads, made when first asked for: quantized input as a quantized array
        # where that maps (quantized.py says when); with n-grams, a fastText subword vocabulary (the same n-grams
        # and hash) whose rows are the buckets after the words (a pruned model's pruned buckets as zero rows)
        storage = Storage(quantized=lambda: finalfusion_quantized(self)) if self.input.quantized else None
        subwords = None
        if int(a["maxn"]) > 0 and int(a["bucket"]) > 0:
            from .convert import bucket_rows

            subwords = Subwords("fasttext_subword_vocab",
                                {"min_n": int(a["minn"]), "max_n": int(a["maxn"]), "buckets": int(a["bucket"])},
                                rows=lambda: bucket_rows(self), indices=self.subword_rows, lookup=self._unknown,
                                lookup_batch=self._unknown_batch)
        super().__init__(words, LazyRows((nwords, dim), self._word_rows),
                         metadata={"args": args_metadata(a)},
                         subwords=subwords, storage=storage)
        self.words = words  # one list of the words (the entries' own when they are all words, shown as read)
        # what the parse read through the map (the dictionary, the matrices' headers) is the model's objects now:
        # the map lets go of the pages it made the process hold (up to 2 MB a fault, see .filerows)
        if (buf := mapping(self.input.codes if self.input.quantized else self.input.part["data"])) is not None:
            release(buf, len(buf))

    # -- words -------------------------------------------------------------------------------------------

    @property
    def loss(self) -> str:
        return LOSSES.get(int(self.args["loss"]), str(self.args["loss"]))

    @property
    def model(self) -> str:
        return MODELS.get(int(self.args["model"]), str(self.args["model"]))

    def _ids(self, raw: Sequence[str]) -> np.ndarray:
        """Dictionary ids of words as fastText finds them (by their bytes); -1 for none. Labels count too."""
        if self._raw_index is None:
            if self._raw_is_words():
                self._raw_index = self.vocab  # the words as shown are the bytes: one index serves both
            else:
                self._raw_index = word_rows(self._raw, self.occurrence)  # (labels too: find compares strings)
        return np.fromiter(map(self._raw_index.get, raw, repeat(-1)), np.int64, len(raw))

    def _rows_of(self, raw: Sequence[str], ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Input rows of each word (``Dictionary::getSubwords``): its own id if it is an entry (a word or a
        label), then its character n-grams (none for ``</s>``); (rows, owner) grouped by word, in fastText's order."""
        rows, owner = subwords.subword_rows(raw, self.minn, self.maxn, self.buckets)
        if EOS in raw:
            keep = ~np.isin(owner, [i for i, w in enumerate(raw) if w == EOS])
            rows, owner = rows[keep], owner[keep]
        own = np.flatnonzero(ids >= 0)  # labels too: fastText looks a label up as a word, by its own id
        if len(own) and int(ids[own].max()) >= self.input.shape[0]:
            i = int(own[np.argmax(ids[own])])
            raise self._past_matrix(raw[i], int(ids[i]))
        if not len(own):  # unknown words only: their n-grams are in order already
            return rows, owner
        rows = np.concatenate([ids[own], rows])
        owner = np.concatenate([own, owner])
        order = np.argsort(owner, kind="stable")  # each word's own row first, then its n-grams
        return rows[order], owner[order]

    def _mean_rows(self, rows: np.ndarray, owner: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        if self.input.quantized:  # each row the batch needs made once
            needed, at = np.unique(rows, return_inverse=True)
            return composed_batch(at.reshape(-1), owner, n, self.input.rows(needed), mean=True)
        return composed_batch(rows, owner, n, self.input.part["data"], mean=True)

    def _compose_ids(self, idx: np.ndarray) -> np.ndarray:
        """The composed vectors of word ids, made now (the batch path)."""
        raw = [self._raw[i] for i in idx.tolist()]
        rows, owner = self._rows_of(raw, idx)
        return self._mean_rows(rows, owner, len(raw))[0]

    def _word_rows(self, at: Any) -> np.ndarray:
        """Rows of word ids (``embedding_batch``'s known words): kept ones from the table, others made."""
        idx = np.arange(self.nwords)[at] if isinstance(at, slice) else np.asarray(at, np.int64)
        table = self._table
        if table.rows is None:
            return self._compose_ids(idx)
        made = table.made(idx)
        out = np.asarray(table.rows[idx])  # (a copy)
        if not made.all():
            out[~made] = self._compose_ids(idx[~made])
        return out

    # the one notion of a word's vector: every lookup below comes here, or to the batch path of the same bits

    def _known(self, i: int) -> np.ndarray:
        """Word ``i``'s composed vector (read-only): its chunk's row once made, or made alone the first time."""
        table = self._table
        if table.state[i >> CHUNK_BITS] == MADE:
            return table.rows[i]  # type: ignore[index]
        if table.seen(i):
            return table.make([i >> CHUNK_BITS])[i]
        v = self._one(self._raw[i], i)
        v.flags.writeable = False
        return v

    def _one(self, raw: str, own: int) -> np.ndarray:
        """``get_word_vector`` of one word (its bytes as fastText sees them; ``own``: its dictionary id or -1)
        without the batch path's numpy calls: the same float32 sums in the same order."""
        rows = subwords.one_word_ngrams(raw, self.minn, self.maxn, self.buckets, self.nwords) \
            if raw != EOS and self._composes else []
        if own >= 0:
            rows.insert(0, own)
        if not rows or not self.dim:
            return np.zeros(self.dim, np.float32)
        if own >= self.input.shape[0]:
            raise self._past_matrix(raw, own)
        # (every row is inside the matrix: _check_rows saw to it at open, and to the word's own above)
        reads = self._reads
        if reads is False:
            reads = self._file_rows()
        if _K is not None:  # the mean in C: the sums below, in the same order
            if self.input.quantized:
                matrix, rows = self.input.few_rows(rows), range(len(rows))
            elif reads is not None:  # rows in regions of the file not read before: with pread (.filerows)
                v = _K.mean_file_rows(self.input.part["data"], rows, np.empty(self.dim, np.float32), reads.fd,
                                      reads.first, reads.regions)
                if reads.all_read():
                    self._reads = None
                return v
            else:
                matrix = self.input.part["data"]
            return _K.mean_rows(matrix, rows, np.empty(self.dim, np.float32))
        if self.input.quantized:
            x = self.input.rows(np.array(rows, np.intp))
        elif reads is not None:
            x = reads.rows(self.input.part["data"], rows)
            if reads.all_read():
                self._reads = None
        else:
            if self._items is None:  # the rows as opaque items (lookups.as_row_items: np.take copies them as they
                self._items = as_row_items(self.input.part["data"])[:, None]  # are, unaligned), one a row
            x = np.take(self._items, rows, axis=0, mode="clip").view(np.float32)
        # float32 sums row after row (a reduction down the rows of a matrix of 2 columns or more adds row by
        # row; of one column it would sum pairwise) onto +0.0, times float32(1 / count) (Vector::mul; a Python
        # float meets a float32 array as a float32)
        s = np.add.reduce(x, axis=0, initial=0) if self.dim > 1 else np.cumsum(x, axis=0, dtype=np.float32)[-1] + 0
        s *= 1.0 / len(rows)
        return s

    def _file_rows(self) -> FileRows | None:
        """The file of a dense input matrix mapped from it, open for :meth:`_one`'s reads (:mod:`.filerows`), or
        None; looked for at the first lookup of one word."""
        self._reads = None if self.input.quantized else file_rows(self.input.part["data"])
        return self._reads

    def _past_matrix(self, raw: str, own: int) -> FormatError:
        return FormatError(f"entry {own} ({raw!r}) is looked up by its own input row, {own}, past the input "
                           f"matrix's {self.input.shape[0]} rows (fastText would read past its matrix)",
                           format=NAME, path="input.m")

    def _raw_words(self, words: Sequence[str]) -> list[str]:
        """Words or lines as fastText sees them: their bytes in the model's encoding, as the entries are read
        (UTF-8 with surrogate escapes); the words themselves when the model is UTF-8. Once per query: a word in
        this form is not one to encode again."""
        return as_read(words, self.encoding)

    def _unknown(self, word: str) -> np.ndarray | None:
        """The vector of a word that is not in ``vocab``: a label or an entry whose bytes are not UTF-8 (by its
        own row and n-grams, as fastText finds it), else its n-grams' mean; None when it has none to compose."""
        if not isinstance(word, str):
            return None
        try:
            (word,) = self._raw_words([word])
        except UnicodeEncodeError:  # a word the model's encoding cannot spell is none of its words
            return None
        i = -1 if self._raw_is_words() else self._raw_id(word)  # (a word of the vocabulary is not asked here)
        if 0 <= i < self.nwords:
            return self._known(i)
        if i < 0 and not self._composes:
            return None
        return self._one(word, i)

    def _unknown_batch(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_unknown` of many words: their vectors and which have one (zeros where not)."""
        words = self._raw_words(words)
        found = np.ones(len(words), bool) if self._composes else self._ids(words) >= 0
        return self._raw_vectors(words), found

    def _raw_id(self, word: str) -> int:
        if self._raw_index is None:
            if self._raw_is_words():  # (one word: the compact index will do)
                i = self._word_id(word)
                return -1 if i is None else i
            self._ids([])
        return self._raw_index.get(word, -1)  # type: ignore[union-attr]

    def _raw_is_words(self) -> bool:
        """Whether the entries are the words as shown (no labels, every word UTF-8): one index serves both."""
        if self._same is None:
            self._same = not self.labels and (self._raw is self.words or self._raw == self.words)
        return self._same

    def _word_id(self, word: str) -> int | None:
        """``vocab.get(word)`` without making ``vocab`` (a dict of every word and its int: 16 MB for 200k words)
        for a lookup of one word: a :class:`~wvformats.words.WordIndex` (2 MB) until ``vocab`` is made."""
        if self._index is not None:
            return self._index.get(word)
        index = self._word_index
        if index is None:
            index = self._word_index = WordIndex(self.words, self.occurrence)
        return index.get(word)

    def embedding(self, word: str) -> np.ndarray | None:
        """``get_word_vector(word)`` for a word of the vocabulary or any word the model composes (a model with
        character n-grams composes every str); None otherwise. Read-only for a word of the vocabulary."""
        i = self._word_id(word)
        if i is not None:
            table = self._table
            if table.state[i >> CHUNK_BITS] == MADE:  # (the hot path: _known's first line, inlined)
                return table.rows[i]  # type: ignore[index]
            return self._known(i)
        return self._unknown(word)

    def get(self, word: str, default: Any = None) -> Any:
        v = self.embedding(word)
        return default if v is None else v

    def __contains__(self, word: object) -> bool:
        """True for a word ``m[word]`` gives a vector: any str when the model has character n-grams (as
        gensim's ``FastTextKeyedVectors``), else the dictionary's entries; an int key, a row number."""
        if not isinstance(word, str):
            return self.has_index_for(word)
        if self._composes or self._word_id(word) is not None:
            return True
        try:
            return self._raw_id(self._raw_words([word])[0]) >= 0
        except UnicodeEncodeError:
            return False

    def _row(self, i: int) -> np.ndarray:
        return self._known(i)

    @property
    def vectors(self) -> np.ndarray:
        """Every word's composed vector (read-only :class:`.composed.ComposedVectors`), made when first asked
        for, 4096 words at a time: one row per entry, from its own input row (an entry a later one of the same
        word shadows too, which fastText's ``.vec`` export writes with the later entry's vector)."""
        if self._vectors is None:
            self._vectors = self._table.whole()
        return self._vectors

    @vectors.setter
    def vectors(self, value: Any) -> None:
        raise AttributeError(READ_ONLY)

    def _word_row(self, word: str) -> int | None:
        """gensim's ``get_index`` and ``has_index_for`` find a word as every lookup of one word does."""
        return self._word_id(word)

    def _check_editable(self) -> None:
        """gensim's ``add_vectors`` and ``kv[w] = v`` are refused: the composed vectors are read-only."""
        raise ValueError(READ_ONLY)

    def _counts(self) -> np.ndarray:
        """The words' counts (gensim's ``count`` attribute of a fastText model's words)."""
        return np.asarray(self.word_counts, np.int64)

    def word_vectors(self, words: Sequence[str]) -> np.ndarray:
        """``get_word_vector`` of each word, in or out of vocabulary: the mean of its input rows (zeros for
        a word with none), to the bits of fastText's float32 sums."""
        return self._raw_vectors(self._raw_words(words))

    def _raw_vectors(self, raw: list[str]) -> np.ndarray:
        """:meth:`word_vectors` of words as fastText sees them (:meth:`_raw_words`)."""
        rows, owner = self._rows_of(raw, self._ids(raw))
        return self._mean_rows(rows, owner, len(raw))[0]

    def _unknown_lookups(self) -> tuple[Any, Any]:
        """fastText finds a word by its bytes, a label by its own row, others by their n-grams."""
        return self._unknown, self._unknown_batch

    def subword_indices(self, word: str) -> list[int]:
        """The input rows ``get_word_vector(word)`` averages (:meth:`subword_rows`), for any model."""
        return self.subword_rows(word)

    def subword_rows(self, word: str) -> list[int]:
        """The input rows ``get_word_vector(word)`` averages: the word's own row if it is a word, then its
        n-grams' (fastText's ``get_subwords`` ids)."""
        raw = self._raw_words([word])
        return self._rows_of(raw, self._ids(raw))[0].tolist()

    def get_word_vector(self, word: str) -> np.ndarray:
        """fastText's ``get_word_vector``: the word found by its bytes, as fastText finds it (zeros for a word
        that is not in the dictionary and has no n-gram)."""
        (word,) = self._raw_words([word])
        i = self._raw_id(word)
        return self._known(i) if 0 <= i < self.nwords else self._one(word, i)

    # -- fastText's Python names ---------------------------------------------------------------------------

    def get_word_id(self, word: str) -> int:
        """fastText's ``get_word_id``: the dictionary id of ``word`` found by its bytes (a label's too; of a
        word listed twice, the last entry's), -1 when the dictionary lacks it."""
        try:
            (raw,) = self._raw_words([word])
        except UnicodeEncodeError:  # a word the model's encoding cannot spell is none of its entries
            return -1
        return self._raw_id(raw)

    def get_subwords(self, word: str) -> tuple[list[str], np.ndarray]:
        """fastText's ``get_subwords``: the word itself when the dictionary has it, then the character n-grams
        of ``<word>`` as fastText cuts them; and their input rows (a pruned model keeps some n-grams' rows
        only, and lists only those, as fastText does)."""
        shown, (word,) = word, self._raw_words([word])
        own = self._raw_id(word)
        strings = [shown] if own >= 0 else []
        if word != EOS and self._composes:
            b = f"<{word}>".encode("utf-8", subwords.BYTES)
            n = len(b)
            for i in range(n):
                if b[i] & 0xC0 == 0x80:
                    continue
                j, k = i, 0
                while j < n and k < self.maxn:
                    j += 1
                    while j < n and b[j] & 0xC0 == 0x80:
                        j += 1
                    k += 1
                    if k >= self.minn and not (k == 1 and (i == 0 or j == n)):
                        strings.append(b[i:j].decode(self.encoding or "utf-8", "surrogateescape"))
        return strings, np.array(self.subword_rows(shown), np.int64)

    def get_nearest_neighbors(self, word: str, k: int = 10) -> list[tuple[float, str]]:
        """fastText's ``get_nearest_neighbors``: (similarity, word) pairs of the ``k`` words nearest to
        ``word``, computed as fastText computes them (:mod:`.neighbors`)."""
        from .neighbors import nearest_neighbors

        return nearest_neighbors(self, word, k)

    def get_analogies(self, a: str, b: str, c: str, k: int = 10) -> list[tuple[float, str]]:
        """fastText's ``get_analogies``: the words nearest to ``a - b + c`` (fastText's order; gensim's
        ``most_similar(positive=[b, c], negative=[a])`` ranks by ``b - a + c``)."""
        from .neighbors import analogies

        return analogies(self, a, b, c, k)

    def get_words(self, include_freq: bool = False) -> Any:
        """fastText's ``get_words``: the words in dictionary order, and their counts with ``include_freq``."""
        return (list(self.words), np.asarray(self.word_counts, np.int64)) if include_freq else list(self.words)

    def get_labels(self, include_freq: bool = False) -> Any:
        """fastText's ``get_labels``: the labels of a supervised model (the words of another), with their counts
        when ``include_freq``."""
        if int(self.args["model"]) != Model.supervised:
            return self.get_words(include_freq)
        return (list(self.labels), np.asarray(self.label_counts, np.int64)) if include_freq else list(self.labels)

    def get_input_matrix(self) -> np.ndarray:
        """fastText's ``get_input_matrix``: the words' and n-gram buckets' rows (read-only); a quantized model
        has none (fastText raises), ``input.rows`` reconstructs its rows."""
        if self.input.quantized:
            raise ValueError("can't get quantized Matrix: the model is product-quantized "
                             "(model.input.rows(ids) reconstructs rows)")
        return self.input.part["data"]

    def get_output_matrix(self) -> np.ndarray:
        """fastText's ``get_output_matrix``: the output rows (labels of a supervised model, words otherwise);
        refused for a quantized model, as fastText refuses it, even where the output matrix is dense."""
        if self.input.quantized or self.output.quantized:
            raise ValueError("can't get quantized Matrix: the model is product-quantized "
                             "(model.output.rows(ids) gives its rows)")
        return self.output.part["data"]

    # -- lines -------------------------------------------------------------------------------------------

    def _tokens(self, text: str) -> list[str]:
        """``Dictionary::getLine`` over one line: its whitespace-separated tokens, then ``</s>``; a token
        ``</s>`` in the line ends it there, as fastText stops at the first ``</s>`` it reads (the rest of the
        line is not read: see :func:`examples` for fastText's program, which reads it as the next example).
        (Printable ASCII holds no separator of fastText's but the space, nor any other that ``str.split``
        splits at.)"""
        tokens = text.split() if text.isascii() and text.isprintable() else _TOKEN.findall(text)
        if EOS in tokens:
            return tokens[: tokens.index(EOS) + 1]
        tokens.append(EOS)
        return tokens

    def _line_rows(self, lines: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Input rows of supervised lines (``Dictionary::getLine``): each word's subwords (labels left
        out), then the line's word n-grams; (rows, owner)."""
        toks = [self._tokens(t) for t in lines]
        flat = [t for ts in toks for t in ts]
        line_of = np.repeat(np.arange(len(toks)), np.fromiter(map(len, toks), np.int64, len(toks)))
        ids = self._ids(flat)
        is_label = ids >= self.nwords
        unknown = np.flatnonzero(ids < 0)  # a label the model has not seen is still a label
        is_label[unknown] = [flat[i].startswith(LABEL_PREFIX) for i in unknown.tolist()]
        words_at = np.flatnonzero(~is_label)
        words = [flat[i] for i in words_at.tolist()]
        maxn = int(self.args["maxn"])
        wids = ids[words_at]
        if maxn <= 0:  # in vocabulary: the id only; out of it: nothing (no n-grams)
            own = np.flatnonzero(wids >= 0)
            rows, tok_owner = wids[own], own
        else:
            rows, tok_owner = self._rows_of(words, wids)
        owner = line_of[words_at][tok_owner]
        n = int(self.args["wordNgrams"])
        if n > 1:
            hashes = subwords.token_hashes(words)
            extra_r, extra_o = subwords.word_ngram_rows(hashes, line_of[words_at], n, self.buckets)
            rows = np.concatenate([rows, extra_r])
            owner = np.concatenate([owner, extra_o])
            order = np.argsort(owner, kind="stable")
            rows, owner = rows[order], owner[order]
        return rows, owner

    def sentence_vectors(self, lines: Sequence[str]) -> np.ndarray:
        """fastText's ``get_sentence_vector`` of each line: supervised, the mean of the line's input rows
        (as prediction sees it); otherwise the mean of its words' unit-normalised word vectors."""
        lines = self._raw_words(lines)
        if int(self.args["model"]) == Model.supervised:
            rows, owner = self._line_rows(lines)
            return self._mean_rows(rows, owner, len(lines))[0]
        out = np.zeros((len(lines), self.dim), np.float32)
        for i, text in enumerate(lines):
            toks = _TOKEN.findall(text)  # std::getline, then every word: a token </s> ends nothing here
            if not toks:
                continue
            vecs = self._raw_vectors(toks)
            count = 0
            for v in vecs:
                norm = vector_norm(v)
                if norm > 0:
                    out[i] += v * np.float32(1.0 / float(norm))  # 1.0 / norm in double, as C++ does
                    count += 1
            if count:
                out[i] *= np.float32(1.0 / count)
        return out

    def get_sentence_vector(self, text: str) -> np.ndarray:
        """fastText's ``get_sentence_vector``."""
        return self.sentence_vectors([text])[0]

    def predict(self, text: str | Sequence[str], k: int = 1,
                threshold: float = 0.0) -> tuple[Any, Any]:
        """fastText's ``predict``: the ``k`` most likely labels of a line (all when ``k < 0``) whose
        probability is at least ``threshold`` (any float: below -1e-5 or NaN keeps every label, as in
        fastText), and their probabilities; for a list of lines, a list of each."""
        if "_predict" not in self.__dict__:  # (checked until the first prediction makes the model's caches)
            if (error := self._undefined_args()) is not None:
                raise error
            if (problem := self._not_predictable()) is not None:
                raise ValueError(problem)
        labels = self.labels
        k = operator.index(k)
        k = len(labels) if k < 0 else min(k, len(labels))
        threshold = threshold32(threshold)
        predictor = self.__dict__.get("_predict") or self._predictor()
        if isinstance(text, str):
            line = text if self.encoding is None else self._raw_words([text])[0]
            ids, probs = predictor.line(line, k, threshold)
            return tuple([labels[i] for i in ids]), probs
        ids, found_p = predictor.lines(self._raw_words(text), k, threshold)
        return [tuple([labels[i] for i in row]) for row in ids], found_p

    def _predictor(self) -> Predictor:
        """The model's :class:`~.predict.Predictor`, made on the first prediction from what it needs."""
        self._predict = Predictor(Needs(
            args=self.args, minn=self.minn, maxn=self.maxn, nwords=self.nwords, labels=self.labels, loss=self.loss,
            buckets=self.buckets, input=self.input, output=self.output, words=self._raw, ids=self._ids,
            word_index=lambda: self._raw_index, tokens=self._tokens, scores=self._scores, tree=self._tree,
            line_rows=self._line_rows, mean_rows=self._mean_rows))
        return self._predict

    def _undefined_args(self) -> FormatError | None:
        """A FormatError naming the args field (model or loss) whose value fastText does not define, which predict
        needs, or None. (fastText refuses a loss it does not define at load, in createLoss; the word vectors do
        not depend on it: only predict refuses it here.)"""
        for field, enum, known in (("model", Model, MODELS), ("loss", Loss, LOSSES)):
            value = int(self.args[field])
            if value not in known:
                why = ("predict needs a supervised model" if field == "model" else
                       "fastText refuses to load the model (\"Unknown loss\")")
                return FormatError(f"args.{field} is {value}, which fastText does not define ({named(enum)}): {why}",
                                   format=NAME, path=f"args.{field}", offset=schema.args_offset(self.parsed["new_format"], field))
        return None

    def _not_predictable(self) -> str | None:
        """Why ``predict`` cannot answer for this model whose args fastText defines (fastText's own refusals),
        or None."""
        if int(self.args["model"]) != Model.supervised:
            return f"predict needs a supervised model: args.model is {self.model}"
        if not self.labels:
            return "predict needs labels: the dictionary holds none (nlabels 0)"
        if self.version is None and int(self.args["wordNgrams"]) > 1:
            return (f"a supervised model of a release before the magic (2017) with word n-grams (wordNgrams "
                    f"{self.args['wordNgrams']}) hashes word ids where fastText now hashes their bytes: its "
                    "predictions are not computed")
        return None

    def _dot(self, hidden: np.ndarray) -> np.ndarray:
        """``output @ hidden`` for each hidden vector as ``Matrix::dotRow`` sums it: product by product in
        float32, column after column (the same bits for one line or a batch, unlike a BLAS product)."""
        rows, norms = self.output.dot_rows()
        out = np.zeros((len(hidden), rows.shape[0]), np.float32)
        for j in range(rows.shape[1]):
            out += hidden[:, j : j + 1] * rows[:, j]
        if norms is not None:  # mulcode sums with the raw centroids, then scales by the norm
            out *= norms[None, :]
        return out

    def _scores(self, hidden: np.ndarray) -> np.ndarray:
        out = self._dot(hidden).astype(np.float32)
        if self.loss == "softmax":  # SoftmaxLoss::computeOutput: exp in double, the sum label after label
            out = exp_to_float(out - out.max(axis=1, keepdims=True))
            return out / np.cumsum(out, axis=1, dtype=np.float32)[:, -1:]
        return sigmoid(out)  # ns and ova: one sigmoid per label (BinaryLogisticLoss)

    def _tree(self) -> list[tuple[int, int]]:
        """The Huffman tree of the label counts (``HierarchicalSoftmaxLoss::buildTree``): (left, right)."""
        if getattr(self, "_tree_cache", None) is None:
            tree = hs_tree(self.label_counts)
            if isinstance(tree, str):
                raise FormatError(tree, format=NAME, path="dictionary.entries.counts")
            self._tree_cache = tree
        return self._tree_cache


def hs_tree(label_counts: Any) -> list[tuple[int, int]] | str:
    """``HierarchicalSoftmaxLoss::buildTree`` of the label counts: each node's (left, right), or why fastText's
    build reads past its tree (counts that are not in decreasing order below its sentinel of 1e15, as fastText
    writes them, can make it take a node it has not made; fastText then reads past its vector)."""
    count = [int(c) for c in label_counts]
    osz = len(count)
    count += [int(1e15)] * (osz - 1)
    left, right = [-1] * (2 * osz - 1), [-1] * (2 * osz - 1)
    leaf, node = osz - 1, osz
    for i in range(osz, 2 * osz - 1):
        mini = [0, 0]
        for j in range(2):
            if node >= i or node >= len(count):  # a node not made yet (or past the tree)
                if leaf < 0 or node >= len(count) or count[leaf] >= count[node]:
                    return (f"the label counts make fastText's hs tree take node {node} before it is made "
                            f"(counts {count[:min(osz, 8)]}{'...' if osz > 8 else ''}: fastText writes them in "
                            f"decreasing order, below 1e15)")
            if leaf >= 0 and count[leaf] < count[node]:
                mini[j], leaf = leaf, leaf - 1
            else:
                mini[j], node = node, node + 1
        left[i], right[i] = mini
        count[i] = count[mini[0]] + count[mini[1]]
    return list(zip(left, right, strict=True))


def args_metadata(args: Any) -> dict[str, Any]:
    """The args as metadata (what a finalfusion file's metadata chunk keeps): each value as fastText holds it,
    the doubles (``t``, which the schema keeps as its bits) as floats."""
    return {k: reinterpret(v, schema.DOUBLE_BITS, schema.DOUBLE) if k in schema.DOUBLE_ARGS else v
            for k, v in args.items() if not k.startswith("_")}


def ngram_lengths(args: Any, version: Any) -> tuple[int, int]:
    """(minn, maxn) as fastText's lookups act on them: no n-grams when maxn is 0 or minn is negative, and of any
    length when maxn is negative (``computeSubwords`` compares lengths as ``size_t``); a supervised model of
    version 11 has none (``FastText::loadModel``: "old supervised models do not use char ngrams"), nor one of the
    releases before the magic (None), whose ``Dictionary::getLine`` looked a supervised line's words up by id only."""
    minn, maxn = int(args["minn"]), int(args["maxn"])
    if minn < 0 or (version in (None, 11) and int(args["model"]) == Model.supervised):
        return minn, 0
    return minn, (1 << 31 if maxn < 0 else maxn)


def _check_rows(m: FastText, nwords: int, bucket: int, hashed: bool) -> None:
    """Every row a lookup can reach is in the matrices (else a lookup would index past them)."""
    rows = m.input.shape[0]
    need = nwords
    if hashed and m.buckets.pruned:
        need = nwords + int(m.buckets.values.max()) + 1 if len(m.buckets.values) else nwords
        if len(m.buckets.values) and int(m.buckets.values.min()) < 0:
            raise FormatError("a prune index entry points before the n-gram rows", format=NAME,
                              path="dictionary.pruneidx")
    elif hashed:
        need = nwords + bucket
    if rows < need:
        raise FormatError(f"the input matrix has {rows} rows; the dictionary and args address {need}",
                          format=NAME, path="input.m")
    if m.output.shape[1] != m.input.shape[1]:
        raise FormatError(f"the output matrix has {m.output.shape[1]} columns, the input {m.input.shape[1]}",
                          format=NAME, path="output.n")
    labels = int(m.parsed["dictionary"]["nlabels"])
    if int(m.args["model"]) == Model.supervised and m.output.shape[0] != labels:
        raise FormatError(f"the output matrix has {m.output.shape[0]} rows for {labels} labels", format=NAME,
                          path="output.m")


def _shown(entries: Any, raw: list[str], unicode_errors: str | None, encoding: str | None = None) -> list[str]:
    """The entries as the model shows them: words that are not UTF-8 (or not of ``encoding``) are refused (the
    default, naming the entry and its byte offset), or decoded with ``unicode_errors`` ("replace", "ignore")."""
    if encoding is not None:
        def fail(i: int, e: UnicodeDecodeError) -> FormatError:
            return FormatError(f"entry {i} is not {encoding} ({e.reason}); read with unicode_errors='replace' or "
                               f"'ignore'", format=NAME, path=f"dictionary.entries.words[{i}]",
                               offset=entry_offset(entries, i))

        return decoded_all(raw, encoding, unicode_errors or "strict", fail)
    escaped = entries.get("_escaped") or []
    if not escaped:
        return raw
    if unicode_errors in (None, "strict"):
        i = escaped[0]
        raise FormatError(f"entry {i} is not UTF-8 ({len(escaped)} entries are not); read with its encoding "
                          f"(encoding='cp852', ...), or with unicode_errors='replace' or 'ignore'", format=NAME,
                          path=f"dictionary.entries.words[{i}]", offset=entry_offset(entries, i))
    shown = list(raw)
    for i in escaped:
        shown[i] = raw[i].encode("utf-8", "surrogateescape").decode("utf-8", unicode_errors)
    return shown
