"""Edits of a parsed fastText model that keep what fastText looks up: fewer words (``limit``, ``deduplicate``)
and the upgrade of a file of an older release to the current one (``upgrade``).

A word's lookups depend on its own input row and on the n-gram bucket rows after the words; dropping words
drops their own rows (and, in an unsupervised model, their output rows) and keeps every bucket row, the labels
and their output rows, so every kept word, label and unknown word has the vector it had, and a supervised
model predicts as before but for lines whose words were dropped (fastText skips a word it does not know when
the model has no character n-grams, and composes it from them otherwise).
"""

from __future__ import annotations

from typing import Any

import construct as cs
import numpy as np

from ...errors import BuildError
from ...schemas import fasttext as schema
from ...schemas.fasttext import Model
from ...schemas.identity import FASTTEXT_VERSIONS
from ...words import word_rows

CURRENT = FASTTEXT_VERSIONS[-1]  # fastText's FASTTEXT_VERSION: the version it writes


def keep_words(parsed: Any, keep: np.ndarray) -> cs.Container:
    """``parsed`` with only the words at ``keep`` (increasing dictionary ids): their entries, their own input
    rows and (unsupervised) their output rows. The labels, the bucket rows and the prune index are kept. The
    kept rows are copied (a memory-mapped matrix stays in the file otherwise)."""
    d = parsed["dictionary"]
    nwords, size = int(d["nwords"]), int(d["size"])
    keep = np.asarray(keep, np.int64)
    if len(keep) == nwords:
        return parsed
    entries = np.concatenate([keep, np.arange(nwords, size)])  # the words kept, then every label
    e = d["entries"]
    words = [e["words"][i] for i in entries.tolist()]
    was_escaped = set(e.get("_escaped") or ())
    escaped = [j for j, i in enumerate(entries.tolist()) if i in was_escaped]
    new_entries = cs.Container(words=words, counts=np.ascontiguousarray(e["counts"][entries]),
                               types=np.ascontiguousarray(e["types"][entries]), _escaped=escaped, _start=None)
    # (size as a parse gives it, which the model reads; the builder derives it again; the labels are all kept)
    dictionary = cs.Container(d, size=len(entries), nwords=len(keep), entries=new_entries)
    rows = np.concatenate([keep, np.arange(nwords, int(parsed["input"]["m"]))])
    out = cs.Container(parsed, dictionary=dictionary, input=_rows(parsed["input"], rows, parsed["quant_input"] == 1))
    if int(parsed["args"]["model"]) != Model.supervised:  # one output row per word
        out.output = _rows(parsed["output"], keep, parsed["qout"] == 1)
    return out


def _rows(part: Any, rows: np.ndarray, quantized: bool) -> cs.Container:
    """A matrix part (dense or product-quantized) with only ``rows``, in that order."""
    m = len(rows)
    if not quantized:
        return cs.Container(part, m=m, data=np.ascontiguousarray(part["data"][rows]))
    nsubq = int(part["pq"]["nsubq"])
    codes = part["codes"].reshape(int(part["m"]), nsubq)[rows].reshape(-1)
    norm_codes = None if part["norm_codes"] is None else np.ascontiguousarray(part["norm_codes"][rows])
    return cs.Container(part, m=m, codesize=len(codes), codes=codes, norm_codes=norm_codes)


def first_words(parsed: Any, limit: int) -> cs.Container:
    """``parsed`` with its first ``limit`` words only (:func:`keep_words`)."""
    return keep_words(parsed, np.arange(min(limit, int(parsed["dictionary"]["nwords"]))))


def last_of_each(parsed: Any, raw: list[str]) -> cs.Container:
    """``parsed`` with the last entry of each repeated word only (``raw``: the entries as read), in file order.
    fastText's dictionary holds each word once; of a file that repeats one, fastText looks up the last entry
    (``Dictionary::load`` fills its hash table entry after entry, a later id replacing an earlier one), and so
    does wvformats: the entries kept are those lookups use, and every lookup gives what it gave."""
    nwords = int(parsed["dictionary"]["nwords"])
    last = word_rows(raw[:nwords], "last")
    return keep_words(parsed, np.array(sorted(last.values()), np.int64))


def upgraded(parsed: Any) -> cs.Container:
    """``parsed`` as fastText writes it today (the magic and version 12), looking up what it looked up before.

    A file of a release before the magic (2017) has no prune index and no quantization flags: they are added
    as "not pruned" and "dense". A supervised model of those releases, and of version 11, has no character
    n-grams (fastText's ``loadModel`` sets ``maxn`` to 0 for version 11): ``maxn`` is written 0. One of the
    releases before the magic with word n-grams (``wordNgrams`` > 1) hashed the words' ids where fastText
    hashes their bytes today: no version-12 file predicts as it did, and it is refused."""
    version = parsed["version"] if parsed["new_format"] else None
    if version == CURRENT:
        return parsed
    args = cs.Container(parsed["args"])
    if int(args["model"]) == Model.supervised:
        if version is None and int(args["wordNgrams"]) > 1:
            raise BuildError(f"a supervised model of a release before the magic (2017) with word n-grams "
                             f"(wordNgrams {args['wordNgrams']}) hashes word ids where fastText now hashes their "
                             "bytes: no current file predicts as it does", format="fasttext", path="args.wordNgrams")
        args.maxn = 0
    d = parsed["dictionary"]
    dictionary = d if parsed["new_format"] else cs.Container(d, pruneidx_size=-1, pruneidx=np.zeros((0, 2), "<i4"))
    return cs.Container(parsed, head=schema.MAGIC, new_format=True, magic=schema.MAGIC, version=CURRENT, args=args,
                        dictionary=dictionary, quant_input=parsed["quant_input"] or 0, qout=parsed["qout"] or 0)
