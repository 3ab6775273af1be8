"""Codec of fastText binary models (``.bin``, quantized ``.ftz``): the file to and from :class:`FastText`."""

from __future__ import annotations

from typing import Any

import construct as cs

from ...embeddings import Embeddings
from ...errors import OptionError
from ...registry import Format, register, schema_io
from ...schemas import fasttext as schema
from ...schemas.fasttext import Loss, Model
from ...spelling import word_encoding
from ...words import repeats
from . import convert, edit
from .model import EOS, LOSSES, MODELS, FastText, hs_tree, named
from .sniff import FASTTEXT, sniff

NAME = FASTTEXT.name

parse, build = schema_io(NAME, schema.fasttext)  # lossless: unicode_errors applies to the model


def to_model(parsed: Any, *, unicode_errors: str | None = None, encoding: str | None = None,
             limit: int | None = None, **_: Any) -> FastText:
    """The model of a parsed file: its words decoded from ``encoding`` (default UTF-8; looked up by their
    bytes in it, as fastText looks them up), the first ``limit`` words only (:func:`.edit.first_words`:
    labels and n-gram rows kept)."""
    if limit is not None:
        parsed = edit.first_words(parsed, limit)
    return FastText(parsed, unicode_errors=unicode_errors, encoding=encoding)


def from_model(obj: Any, *, unnormalize: bool | None = None, upgrade: bool = False, deduplicate: bool = False,
               to_encoding: str | None = None) -> cs.Container:
    """A FastText model read from a file -> that file (byte-identical while it is unchanged: its words in the
    bytes read, whatever encoding shows them); any other Embeddings -> an unsupervised fastText model whose
    ``get_word_vector`` gives each word its vector back, with the subword vocabulary of finalfusion embeddings
    that have fastText's (:mod:`.convert`; rows times their stored norms unless ``unnormalize=False``).

    ``upgrade=True`` writes a model of an older release as the current one (:func:`.edit.upgraded`), which
    today's fastText loads; ``deduplicate=True`` keeps one row of each repeated word, the one lookups use (a
    fastText model's last, as fastText looks it up; the first of other Embeddings). Embeddings' words
    are written in ``to_encoding``, else in the encoding they were read in (a fastText model's are its bytes:
    another encoding is refused), else UTF-8."""
    if isinstance(obj, FastText):
        if to_encoding is not None and word_encoding(to_encoding) != obj.encoding:
            raise OptionError(f"a fastText model's words are written as read ({obj.encoding or 'utf-8'}): its n-gram "
                              f"rows are those of the hashes of their bytes, which {to_encoding} would change "
                              "(unknown words would look up other rows); convert it to a word-vector format to "
                              "write its words in another encoding")
        parsed = edit.last_of_each(obj.parsed, obj._raw) if deduplicate else obj.parsed
        return edit.upgraded(parsed) if upgrade else parsed
    if deduplicate and isinstance(obj, Embeddings) and obj.duplicates:
        kept = obj.deduplicated()
        kept.subwords = obj.subwords  # (its n-gram rows follow the words, whichever words are dropped)
        kept.encoding = obj.encoding
        obj = kept
    return convert.from_embeddings(obj, unnormalize, to_encoding)


def inspect(parsed: Any) -> dict[str, Any]:
    a, d = parsed["args"], parsed["dictionary"]
    info: dict[str, Any] = {"release": f"version {parsed['version']}" if parsed["new_format"] else "old (no magic)",
                            "model": MODELS.get(a["model"], a["model"]), "loss": LOSSES.get(a["loss"], a["loss"]),
                            "dim": int(a["dim"]), "words": int(d["nwords"]), "labels": int(d["nlabels"]),
                            "bucket": int(a["bucket"]), "minn": int(a["minn"]), "maxn": int(a["maxn"]),
                            "wordNgrams": int(a["wordNgrams"]),
                            "input": "quantized" if parsed["quant_input"] == 1 else "dense",
                            "output": "quantized" if parsed["qout"] == 1 else "dense"}
    if parsed["new_format"] and int(d["pruneidx_size"]) >= 0:
        info["pruned"] = int(d["pruneidx_size"])
    info.update(repeats(d["entries"]["words"], FastText.occurrence))  # (entries as read: found by their bytes)
    return info


def check(parsed: Any) -> list[str]:
    """What fastText (``args.cc``, ``fasttext.cc``, ``dictionary.cc``) refuses or misreads: values outside its
    enums, sizes its lookups cannot act on, and matrices whose rows do not fit the dictionary and args."""
    problems = _args_problems(parsed)
    d, a = parsed["dictionary"], parsed["args"]
    m_in, n_in = int(parsed["input"]["m"]), int(parsed["input"]["n"])
    if m_in < int(d["nwords"]):
        problems.append(f"input matrix has {m_in} rows for {d['nwords']} words")
    if n_in != int(a["dim"]):
        problems.append(f"input matrix has {n_in} columns, args.dim is {a['dim']}")
    out_rows = int(d["nlabels"]) if a["model"] == Model.supervised else int(d["nwords"])
    if int(parsed["output"]["m"]) != out_rows:
        problems.append(f"output matrix has {parsed['output']['m']} rows, the model needs {out_rows}")
    if int(a["model"]) == Model.supervised and int(a["loss"]) == Loss.hs and int(d["nlabels"]) > 0:
        tree = hs_tree(d["entries"]["counts"][int(d["nwords"]):])
        if isinstance(tree, str):
            problems.append(f"dictionary.entries.counts: {tree}")
    if parsed["new_format"] and int(d["pruneidx_size"]) >= 0 and parsed["quant_input"] != 1:
        problems.append(f"dictionary.pruneidx_size is {d['pruneidx_size']} (pruned) but the input matrix is not "
                        f"quantized: fastText refuses such a model (\"Invalid model file\")")
    if (rep := repeats(d["entries"]["words"], FastText.occurrence))["duplicates"]:  # loaded, but one row is dead
        first = rep["first_duplicate"]
        problems.append(f"note: {rep['duplicates']} dictionary entr{'y repeats' if rep['duplicates'] == 1 else 'ies repeat'}"
                        f" another's word (fastText never writes one; first {first['word']!r}, entries "
                        f"{first['rows']}): lookups use {rep['lookups_use']}")
    return problems


def _args_problems(parsed: Any) -> list[str]:
    """Each args field outside what fastText defines or can act on, named with its value."""
    a, problems = parsed["args"], []
    model, loss = int(a["model"]), int(a["loss"])
    if model not in MODELS:
        problems.append(f"args.model is {model}; fastText defines {named(Model)}")
    if loss not in LOSSES:
        problems.append(f"args.loss is {loss}; fastText defines {named(Loss)}, and "
                        f"refuses to load any other (\"Unknown loss\")")
    if int(a["dim"]) < 0:
        problems.append(f"args.dim is {a['dim']}: fastText makes its vectors of args.dim entries (a negative size)")
    bucket, minn, maxn = int(a["bucket"]), int(a["minn"]), int(a["maxn"])
    if bucket < 0:
        problems.append(f"args.bucket is {bucket}: fastText takes n-gram hashes modulo the bucket count as an "
                        f"unsigned number, to rows past its matrix")
    if minn < 0:
        problems.append(f"args.minn is {minn}: fastText compares n-gram lengths as unsigned numbers, so a "
                        f"negative minn means no n-grams at all")
    if maxn < 0:
        problems.append(f"args.maxn is {maxn}: fastText compares n-gram lengths as unsigned numbers, so a "
                        f"negative maxn means n-grams of every length")
    if bucket == 0 and maxn != 0 and minn >= 0:
        problems.append(f"args.bucket is 0 with args.maxn {maxn}: fastText divides each n-gram's hash by the "
                        f"bucket count (a division by zero when it cuts the words' n-grams at load)")
    if bucket == 0 and int(a["wordNgrams"]) > 1 and model == Model.supervised:
        problems.append(f"args.bucket is 0 with args.wordNgrams {a['wordNgrams']}: fastText divides each word "
                        f"n-gram's hash by the bucket count when it predicts (a division by zero)")
    return problems


_FORMAT = register(Format(
    **FASTTEXT._asdict(), description="fastText binary model: args, dictionary, input and "
    "output matrices (dense or product-quantized); older releases without the magic",
    schema=schema.fasttext, parse=parse, build=build, to_model=to_model,
    from_model=from_model, model=FastText, writes=(Embeddings,), inspect=inspect, check=check, array_views=True,
    read_options=("unicode_errors", "encoding", "limit"),
    schemas={"dense_matrix": schema.dense_matrix, "quant_matrix": schema.quant_matrix,
             "product_quantizer": schema.product_quantizer},
))

__all__ = ["EOS", "FastText", "build", "from_model", "parse", "sniff", "to_model"]
