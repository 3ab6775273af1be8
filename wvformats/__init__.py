"""wvformats: word-embedding and language-model file formats, written once as construct schemas.

Public API, the same for every format::

    formats()                      names of the registered formats
    sniff(path)                    the format of a file, from its content
    read(path, format=None, ...)   the format's model object (Embeddings for embedding formats)
    write(obj, path, format=None)  write a model object atomically
    convert(src, dst, to=None)     read and write in another format
    validate(path)                 parse, rebuild, compare bytes -> ValidationReport
    inspect(path)                  a structure summary as a dict
"""

try:
    from .api import convert, formats, inspect, parse_file, read, sniff, validate, write
except ModuleNotFoundError as e:  # a source folder never installed (no wvformats.schemas): say how to install
    if e.name != f"{__name__}.schemas":
        raise
    from ._installed import not_installed

    raise not_installed() from None
from .errors import (
    BuildError,
    FormatError,
    NoFinalNewlineWarning,
    OptionError,
    TruncatedError,
    UnknownFormatError,
    ValueMismatchError,
)
from .registry import register

__version__ = "0.1.0"


# the public module of each format family, imported when first asked for (each needs numpy)
_FAMILY_MODULES = ("fasttext", "finalfusion", "gguf", "infinigram", "npy", "rwkv", "safetensors", "sentencepiece",
                   "wordvec")


def __getattr__(name: str) -> object:
    """What needs numpy, imported when first asked for (``import wvformats`` and the command's start-up
    need none): the model classes of the embeddings and the public module of each format family
    (``from wvformats import gguf``)."""
    if name in ("Format", "ValidationReport"):  # (dataclasses: made when first asked for, as a read needs neither)
        from . import api, registry

        return getattr(registry if name == "Format" else api, name)
    if name in ("Embeddings", "DuplicateWordsWarning", "ValuesChangedWarning"):
        from . import embeddings

        return getattr(embeddings, name)
    if name in _FAMILY_MODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'wvformats' has no attribute {name!r}")

__all__ = [
    "BuildError",
    "DuplicateWordsWarning",
    "Embeddings",
    "Format",
    "FormatError",
    "NoFinalNewlineWarning",
    "OptionError",
    "TruncatedError",
    "UnknownFormatError",
    "ValidationReport",
    "ValueMismatchError",
    "ValuesChangedWarning",
    "convert",
    "formats",
    "inspect",
    "parse_file",
    "read",
    "register",
    "sniff",
    "validate",
    "write",
]
