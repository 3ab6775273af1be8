"""The public API: formats, sniff, read, write, convert, validate, inspect. The same for every format.

Light to import (the ``wvformats`` command starts with it): numpy, construct and a format's codec are
imported by the functions that need them, so that ``sniff`` imports none of them.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import compression, registry
from .errors import (
    BuildError,
    FormatError,
    MissingFileError,
    OptionError,
    UnknownFormatError,
    WrongFormatError,
)
from .fileio import Source, atomic_output, check_target, open_buffer, refuse_own_input

if TYPE_CHECKING:
    from .validation import ValidationReport

PathLike = str | os.PathLike[str]
# every function that reads a file takes its path or a Source (the path resolved once: kind, compression, first
# bytes, buffer), which is how they share one resolution of a file among themselves
Input = PathLike | Source


class _in_file:  # noqa: N801 - a context manager used as a function (a class: cheaper to enter than a generator)
    """A FormatError (or OptionError) raised in the block names the file ``path`` (:attr:`FormatError.file`),
    unless it names one already: the one home of the file an error is in."""

    def __init__(self, path: Input) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: object) -> None:
        if isinstance(e, (FormatError, OptionError)) and e.file is None:
            e.file = os.fsdecode(os.fspath(self.path))


class _source(_in_file):  # noqa: N801 - (as _in_file)
    """``path`` as a Source: the one given, or a new one closed at the end of the block (a FormatError raised
    in it naming the file, :class:`_in_file`)."""

    def __init__(self, path: Input) -> None:
        self.own = not isinstance(path, Source)
        self.path = Source(path) if self.own else path

    def __enter__(self) -> Source:  # type: ignore[override]
        return self.path  # type: ignore[return-value]

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: object) -> None:
        if self.own:
            self.path.close()  # type: ignore[union-attr]
            if e is not None:
                super().__exit__(kind, e, tb)


def formats() -> list[str]:
    """The names of all registered formats."""
    return sorted(registry.load())


def _refuse_missing_or_special(source: Source) -> None:
    """A path that names nothing, or neither a regular file nor a folder (a FIFO would block the open; a
    device or socket is no file of any format), is refused before anything opens it."""
    if source.is_special:
        raise FormatError(f"{source.file} is not a regular file (a pipe, device or socket): read it from a file")
    if not source.exists:
        raise MissingFileError(source.file)


def sniff(path: Input) -> str:
    """The format of ``path``, from magic bytes or content (the extension is not needed)."""
    with _source(path) as source:
        return _sniff(source)


def _sniff(source: Source) -> str:
    _refuse_missing_or_special(source)
    # (no codec imported for the families that declare their sniffers; of their sniff modules, only those of
    try:  # the families whose formats the head reaches)
        return _sniff_in(source, registry.sniff_order())
    except registry.StaleIndex:  # (the index of declared sniffers was out of date: asked of the modules)
        return _sniff_in(source, registry.sniff_order())


def _sniff_in(source: Source, order: registry.SniffOrder) -> str:
    if source.is_dir:
        for f in order.folders:
            if f.sniff(source.file):  # type: ignore[arg-type]
                return f.name
        raise UnknownFormatError(f"{source.file}: no registered format matches this directory"
                                 f"{registry.failed_note()}")
    name = source.file_name.lower()
    for f in order.entries:  # a folder format's own file (a sharded checkpoint's index) reads as the folder format
        if name.endswith(f.extensions) and f.sniff(source.file):  # type: ignore[arg-type]
            return f.name
    head = source.head()
    for test, name, magic in order.tests:  # an exact match first; else the format a damaged file is closest to
        try:
            if head.startswith(magic) and test(head):
                return name
        except registry.StaleIndex:
            raise
        except Exception:  # noqa: BLE001 - a sniffer that trips is a sniffer that says no
            continue
    p = source.file
    if not head:
        raise UnknownFormatError(f"{p} is empty: no format can be told from its content")
    inside = f"{kind}-compressed; decompressed, its " if (kind := source.compression) else "its "
    raise UnknownFormatError(f"{source}: no registered format matches its content ({inside}first bytes "
                             f"{head[:16].hex(' ')}){registry.failed_note()}")


def _resolve(path: Input, format: str | None) -> registry.Format:
    """The format of ``path`` (given or sniffed), once the path is of the kind it needs: a folder for a
    folder format (infini-gram), a regular file for the others."""
    with _source(path) as source:
        if not format:
            return registry.get(_sniff(source))
        fmt = registry.get(format)
        _check_kind(source, fmt)
        return fmt


def _check_kind(source: Source, fmt: registry.Format | registry.Sniffer) -> None:
    """Refuse a path that is not of the kind ``fmt`` reads: a folder for a folder format, else a file."""
    _refuse_missing_or_special(source)
    if fmt.is_directory and not source.is_dir and fmt.entry is None:
        raise FormatError(f"{source.file} is a file; {fmt.name} is a folder of files", format=fmt.name)
    if not fmt.is_directory and source.is_dir:
        raise FormatError(f"{source.file} is a directory; {fmt.name} is a single file", format=fmt.name)


def parse_file(path: Input, format: str | None = None, *, mmap: bool = True, **options: Any) -> Any:
    """The raw parsed form of a file (construct Containers), as the schema sees it."""
    with _source(path) as source:
        fmt = _resolve(source, format)
        if fmt.is_directory:
            return fmt.parse(Path(source.path), **options)
        try:
            return fmt.parse(source.buffer(use_mmap=mmap), **options)
        except FormatError as e:
            raise _explained(source, fmt, format, e) from None


def walk_file(path: Input, format: str | None = None) -> tuple[registry.Format, Any, list[Any]]:
    """The format of a file, its buffer and the spans of its fields (``framework.walk``), as ``dump`` shows
    them; a format named that the file is not says what the file is first."""
    from .framework.walk import walk

    with _source(path) as source:
        fmt = _resolve(source, format)
        if fmt.schema is None:
            what = "a folder of files" if fmt.is_directory else "read by a library, not by a schema"
            raise FormatError(f"{fmt.name} is {what}: it has no fields to dump (inspect and validate it "
                              "instead)", format=fmt.name)
        data = open_buffer(fmt.entry(Path(source.path))) if fmt.entry is not None else source.buffer()
        try:
            _, spans = walk(fmt.schema, data, format=fmt.name)
        except FormatError as e:
            raise _explained(source, fmt, format, e) from None
        return fmt, data, spans


def writable_formats() -> list[str]:
    """The formats ``write`` and ``convert`` can write (a folder format is built by its own command)."""
    return sorted(n for n, f in registry.load().items() if not f.is_directory or f.entry is not None)


def convert_targets(fmt: registry.Format) -> list[str]:
    """The formats a file of ``fmt`` can be converted to (those whose writer takes its model)."""
    if fmt.model is None:
        return []
    return sorted(f.name for f in _writers_of(fmt.model) if not f.is_directory or f.entry is not None)


def what_it_is(path: Input, fmt: registry.Format) -> str:
    """A sentence naming the format of the file at ``path`` and what can be done with it, for errors that
    meet a file of another kind than the one asked for."""
    from .embeddings import Embeddings

    targets = [t for t in convert_targets(fmt) if t != fmt.name]
    kind = f" ({fmt.model.__name__})" if fmt.model is not None else ""
    uses = [f"`wvformats convert FILE OUT --to {'|'.join(targets)}` converts it"] if targets else []
    uses.extend(fmt.commands)
    if not fmt.commands and isinstance(fmt.model, type) and issubclass(fmt.model, Embeddings):
        uses.append("`wvformats similar FILE WORD` looks words up")
    if not uses:  # (no other format takes its model, and no command of its own)
        uses.append("`wvformats inspect FILE` shows what it holds")
    return f"{path} is a {fmt.name} file{kind}; " + ", and ".join(uses)


def _explained(source: Source, fmt: registry.Format, named: str | None, error: FormatError) -> FormatError:
    """``error`` (from reading ``source`` as ``fmt``) with the read option that gets past it (:func:`hinted`);
    when the caller named ``fmt`` and the file's content says it is of another format, an error saying so
    first, and what can be done with it, then ``fmt``'s own error."""
    if named is None or isinstance(error, WrongFormatError):
        return hinted(error)
    try:
        actual = registry.get(_sniff(source))
    except FormatError:
        return hinted(error)
    if actual.name == fmt.name or actual.model is fmt.model:  # of the same kind: its own error says more
        return hinted(error)
    return WrongFormatError(f"not a {fmt.name} file: {what_it_is(source, actual)}; read as {fmt.name}: "
                            f"{error.detail()}", error, format=fmt.name)


def hinted(error: FormatError) -> FormatError:
    """``error``, with the read option that gets past it where its format takes one (invalid UTF-8)."""
    fmt = registry.load().get(error.format or "")
    if fmt is not None and "invalid UTF-8" in error.message and "unicode_errors" in (fmt.read_options or ()) \
            and "unicode_errors" not in error.message:
        also = "; encoding='cp852' (--encoding) reads words in another encoding" \
            if "encoding" in fmt.read_options else ""
        error.message += (" (unicode_errors='replace' or 'ignore' reads past it; on the command line "
                          f"--unicode-errors replace{also})")
    return error


def read(path: Input, format: str | None = None, **options: Any) -> Any:
    """Read a file into its format's model object (``Embeddings`` for embedding formats).

    Options common to the embedding formats: ``limit`` (first N rows), ``vocab`` (keep only these words),
    ``dtype`` (float32 default; text formats parse their numbers at float64 when it is wider),
    ``unicode_errors`` ("strict", "replace", "ignore"), ``encoding`` (of words that are not UTF-8: "cp852"; the
    model keeps it and is written in it again), ``mmap``.
    """
    with _source(path) as source:
        sniffed = None if format else _sniff(source)
        model = _fast_read(source, format or sniffed, options)
        if model is not None:
            return model
        fmt = registry.get(sniffed) if sniffed else _resolve(source, format)
        _check_options(fmt, options)
        use_mmap = options.pop("mmap", None)
        if fmt.is_directory:
            return fmt.to_model(fmt.parse(Path(source.path), **options), **options)
        try:
            kind = source.compression
            if kind and fmt.stream is not None:  # a compressed text file: read block by block
                parsed = fmt.stream(compression.line_blocks(source.path, kind), **options)
            elif use_mmap is False and fmt.array_views and not kind:
                parsed = _parse_beside_copy(fmt, source, options)
            elif use_mmap is None and (whole := source.whole()) is not None:  # a small file: the bytes its
                parsed = fmt.parse(whole, **options)  # first read holds (its arrays read-only, as a map's)
            else:
                parsed = fmt.parse(source.buffer(use_mmap=True if use_mmap is None else bool(use_mmap)), **options)
        except FormatError as e:
            raise _explained(source, fmt, format, e) from None
        return fmt.to_model(parsed, mmap=use_mmap, **options)


_FAST_READERS: dict[str, Callable[[Any], Any]] = {}


def _fast_read(source: Source, name: str, options: dict[str, Any]) -> Any:
    """The model of a file read by its format's ``fast`` reader (no codec imported: a schema's cached plan), or
    None where the format has none, options are given (but ``mmap=True``), or the reader cannot read the file
    (then the codec reads it and says why)."""
    if options and (options.get("mmap") is False or any(v is not None for k, v in options.items() if k != "mmap")):
        return None
    registry.load_plugins()  # (as any read does first: a plugin may replace the format)
    sniffer = registry.sniffer(name)
    if sniffer is None or sniffer.fast is None or sniffer.is_directory or not source.is_file or source.compression:
        return None
    reader = _FAST_READERS.get(sniffer.fast)
    if reader is None:
        import importlib

        module, function = sniffer.fast.split(":")
        reader = _FAST_READERS[sniffer.fast] = getattr(importlib.import_module(module), function)
    whole = source.whole() if options.get("mmap") is None else None
    return reader(whole if whole is not None else source.buffer(use_mmap=True))


def _parse_beside_copy(fmt: registry.Format, source: Source, options: dict[str, Any]) -> Any:
    """The parse of an in-memory copy of the file, for a format whose bulk arrays are views of its buffer:
    the mapped file is parsed while a worker thread reads the file into memory (the words decode while
    the bytes are copied), the arrays are views of the copy, and the mapping is closed."""
    from . import framework

    mapping = source.buffer(use_mmap=True)
    if not isinstance(mapping, mmap.mmap):  # an empty file
        return fmt.parse(mapping, **options)
    stream = framework.BufferStream(mapping)
    stream.beside = framework.background(lambda: source.buffer(use_mmap=False))
    try:
        parsed = fmt.parse(stream, **options)
    finally:
        stream.beside.exception()  # the read ends before anything leaves here
        stream.let_go()
    data = stream.beside.result()
    try:
        if len(data) == len(mapping):
            mapping.close()
            return parsed
    except BufferError:  # a view of the mapping that the parse kept: parse the copy instead
        pass
    return fmt.parse(data, **options)  # (or the file changed size while it was read)


def _check_options(fmt: registry.Format, options: dict[str, Any]) -> None:
    """Refuse a read option the format does not take (a typo would otherwise be ignored) or a bad value."""
    given = {k for k, v in options.items() if v is not None}
    if fmt.read_options is not None and (unknown := sorted(given - set(fmt.read_options) - {"mmap"})):
        raise OptionError(f"{fmt.name} files take no read option {', '.join(map(repr, unknown))} "
                          f"(options: {', '.join(sorted({*fmt.read_options, 'mmap'}))})")
    if options.get("encoding") is not None and "encoding" not in (fmt.read_options or ()):  # (a format that
        # declares no options: its text is in the encoding its spec fixes)
        raise OptionError(f"{fmt.name} files take no read option 'encoding': the format fixes the encoding of its "
                          "text")
    _check_read_values(options.get("limit"), options.get("vocab"), options.get("unicode_errors"))


def _check_read_values(limit: Any = None, vocab: Any = None, unicode_errors: Any = None) -> None:
    """Refuse read options that would otherwise be misread (a negative limit reads nothing, a string as
    ``vocab`` would be a set of its letters); numpy's integers are Integral."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, Integral) or limit < 0):
        raise ValueError(f"limit must be a whole number >= 0, got {limit!r}")
    if vocab is not None and (isinstance(vocab, (str, bytes)) or not isinstance(vocab, Iterable)):
        raise ValueError(f"vocab must be a collection of words (a set or list of str), got {type(vocab).__name__}")
    if unicode_errors is not None and unicode_errors not in ("strict", "replace", "ignore"):
        raise ValueError(f"unicode_errors must be 'strict', 'replace' or 'ignore', got {unicode_errors!r}")


def _formats_for_output(path: PathLike, format: str | None) -> list[registry.Format]:
    """The formats ``path`` may be written as: the one named, else those its extension names (``.bin``:
    word2vec binary and rwkv.cpp); the object written then chooses (:func:`_format_for_output`)."""
    compression.for_output(path)  # (refuses a .zip, or a .zst without zstandard, before anything is read)
    if format:
        return [registry.get(format)]
    suffix = Path(compression.inner_name(path)).suffix.lower()
    found = registry.by_extension(suffix)
    if found:
        return found
    raise UnknownFormatError(
        f"cannot tell the output format from the extension {suffix!r} (matches: none); name it "
        f"(format= in Python, --to on the command line){registry.failed_note()}"
    )


def _fit(fmt: registry.Format, cls: type) -> tuple[int, int] | None:
    """How closely a format's writer takes objects of ``cls``: (0 by its model class, 1 by another type it
    writes; how far up ``cls``'s hierarchy that class is), None when it does not take them. No model: the
    writer judges."""
    mro = cls.__mro__
    if fmt.model is None:
        return (1, len(mro))
    for rank, types in enumerate(((fmt.model,), fmt.writes)):
        if (at := [i for i, c in enumerate(mro) if any(c is t or t == _type_name(c) for t in types)]):
            return (rank, min(at))
    return None


def _type_name(cls: type) -> str:
    """``cls`` as a format's ``writes`` may name it: "module:QualName"."""
    return f"{cls.__module__}:{cls.__qualname__}"


def _writers_of(cls: type) -> list[registry.Format]:
    """The formats with a model whose writer takes objects of ``cls``."""
    return [f for f in registry.load().values() if f.model is not None and _fit(f, cls) is not None]


def _format_for_output(path: PathLike, format: str | None, obj: Any) -> registry.Format:
    """The format to write ``obj`` as: among those ``path`` may be written as, the one whose writer takes its
    type most closely (a FastText model, an Embeddings, writes fastText to .bin; a plain Embeddings word2vec)."""
    found = _formats_for_output(path, format)
    fitting = sorted((fit, f.name, f) for f in found if (fit := _fit(f, type(obj))) is not None)
    if len(fitting) == 1 or len(fitting) > 1 and fitting[0][0] < fitting[1][0]:
        return fitting[0][2]
    if not fitting:
        kind = type(obj).__name__
        names = ", ".join(sorted(f.name for f in _writers_of(type(obj))))
        raise BuildError(f"cannot write a {kind} as {' or '.join(f.name for f in found)}; a {kind} can be "
                         f"written as{': ' + names if names else ' no format'}",
                         format=found[0].name if len(found) == 1 else None)
    suffix = Path(compression.inner_name(path)).suffix.lower()
    raise UnknownFormatError(
        f"cannot tell the output format from the extension {suffix!r} (matches: "
        f"{', '.join(name for _, name, _ in fitting)}); name it (format= in Python, --to on the command line)"
    )


def _output_path(path: PathLike) -> PathLike:
    """An output path as given; a bytes path (as open() takes one) decoded as the file system does."""
    return os.fsdecode(path) if isinstance(path, bytes) else path


def write(obj: Any, path: PathLike, format: str | None = None, *, overwrite: bool = True,
          durable: bool = True, progress: Callable[[int], Any] | None = None, **options: Any) -> None:
    """Write a model object to ``path`` atomically (temporary file in the same folder, then rename).

    ``durable``: fsync the file before the rename, so that a crash never leaves a renamed but empty file
    (the default); ``durable=False`` skips it (scratch output, or when the caller syncs itself).
    ``progress``: called with the number of bytes the file has grown by, as it grows (a bar's ``update``)."""
    path = _output_path(path)
    if isinstance(obj, tuple) and len(obj) == 2:  # (words, vectors): embeddings, as the word-vector writers take
        from .embeddings import Embeddings

        obj = Embeddings(*obj)
    with _in_file(path):
        fmt = _format_for_output(path, format, obj)
        options = _norm_options(fmt, options)
        _check_write_options(fmt, options)
        obj, options = _deduplicated(fmt, obj, options)
        try:
            parsed = fmt.from_model(obj, **options)
        except FormatError as e:  # (a writer's refusal names the format it writes)
            raise e.located(format=fmt.name) from None
        _build(fmt, parsed, path, overwrite, durable, progress)


def _build(fmt: registry.Format, parsed: Any, path: PathLike, overwrite: bool, durable: bool,
           progress: Callable[[int], Any] | None) -> None:
    """``parsed`` built into ``path``, atomically (a compressed output built whole first, then compressed)."""
    if fmt.is_directory:
        fmt.build(parsed, Path(path))
        return
    try:
        with atomic_output(path, overwrite=overwrite, fsync=durable) as out:
            fmt.build(parsed, out if progress is None else _Growing(out, progress))
    except compression.ForwardOnly:  # a compressed output, from a writer that seeks back: built, then compressed
        import tempfile

        with tempfile.TemporaryFile(dir=Path(path).parent) as plain:
            fmt.build(parsed, plain if progress is None else _Growing(plain, progress))
            with atomic_output(path, overwrite=overwrite, fsync=durable) as out:
                compression.copy_into(plain, out)


def _check_write_options(fmt: registry.Format, options: dict[str, Any]) -> None:
    """Refuse an option the format's writer does not take (``newline`` for GloVe, ``style`` for Leader)."""
    import inspect as inspect_module

    params = inspect_module.signature(fmt.from_model).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    takes = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]
    if "deduplicate" not in takes and _holds_words(fmt):
        takes.append("deduplicate")
    if unknown := sorted(k for k in options if k not in takes):
        raise OptionError(f"{fmt.name} files take no write option {', '.join(map(repr, unknown))} "
                          f"(options: {', '.join(takes) or 'none'})")


def _holds_words(fmt: registry.Format) -> bool:
    """The format's writer takes embeddings (words and their rows)."""
    from .embeddings import Embeddings

    return fmt.model is not None and _fit(fmt, Embeddings) is not None


def _deduplicated(fmt: registry.Format, obj: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``deduplicate=True`` (``--dedupe``), an option of every format that holds words: embeddings with one row
    of each repeated word, the one lookups use (:meth:`Embeddings.deduplicated`), made here for every writer.
    A writer that takes the option itself is given it (fastText: a fastText model's own entries dropped as
    fastText looks them up, the rest of the file byte for byte)."""
    import inspect as inspect_module

    from .embeddings import Embeddings

    if "deduplicate" not in options or "deduplicate" in inspect_module.signature(fmt.from_model).parameters:
        return obj, options
    options = dict(options)
    if options.pop("deduplicate") and isinstance(obj, Embeddings):
        obj = obj.deduplicated()
    return obj, options


def _norm_options(fmt: registry.Format, options: dict[str, Any]) -> dict[str, Any]:
    """``normalize=False`` (keep the numbers as stored, bit for bit) to a writer of a format without norms is
    its ``unnormalize=False``: finalfusion rows are written as stored, not multiplied by their norms."""
    if options.get("normalize") is not False:
        return options
    import inspect as inspect_module

    takes = inspect_module.signature(fmt.from_model).parameters
    if "normalize" in takes or "unnormalize" not in takes:
        return options
    if options.get("unnormalize"):
        raise OptionError("normalize=False (--no-normalize) keeps the rows as stored; unnormalize=True "
                          "(--unnormalize) multiplies them by their norms: give one of them")
    return {**{k: v for k, v in options.items() if k != "normalize"}, "unnormalize": False}


class _Growing:
    """A file object that reports how far its furthest write has grown the file."""

    def __init__(self, file: Any, report: Callable[[int], Any]) -> None:
        self._file, self._report, self._end = file, report, 0

    def write(self, data: Any) -> int:
        n = self._file.write(data)
        end = self._file.tell()
        if end > self._end:
            self._report(end - self._end)
            self._end = end
        return n

    def __getattr__(self, name: str) -> Any:  # tell, seek, flush, ... are the file's
        return getattr(self._file, name)


def convert(src: Input, dst: PathLike, to: str | None = None, *, from_format: str | None = None,
            overwrite: bool = False, **options: Any) -> str:
    """Read ``src`` and write it to ``dst`` in format ``to`` (or the format ``dst``'s extension names);
    returns the name of the format written.

    Never writes over ``src``, and never over an existing ``dst`` unless ``overwrite=True``. Everything that
    can be checked before reading (the output format, its folder, the options) is checked first.
    """
    dst = _output_path(dst)
    refuse_own_input(dst, src)
    read_opts = {k: v for k, v in options.items() if k in ("limit", "vocab", "unicode_errors", "encoding", "dtype")}
    write_opts = {k: v for k, v in options.items() if k not in read_opts}
    own = {k: write_opts.pop(k) for k in ("progress", "durable") if k in write_opts}  # write()'s, not the format's
    with _in_file(dst):
        candidates = _formats_for_output(dst, to)  # several for a shared extension: the model read chooses
        check_target(dst, overwrite=overwrite)
        if len(candidates) == 1:
            _check_write_options(candidates[0], _norm_options(candidates[0], write_opts))
    with _source(src) as source:
        model = read(source, from_format, **read_opts)
        try:
            fmt = _format_for_output(dst, to, model)
        except BuildError as e:  # a target the model cannot become: say what the source is and what it can become
            of = registry.get(from_format or _sniff(source))
            raise BuildError(f"cannot convert to {' or '.join(f.name for f in candidates)}: "
                             f"{what_it_is(src, of)}", format=e.format) from None
    write(model, dst, fmt.name, overwrite=overwrite, **own, **write_opts)
    return fmt.name


def __getattr__(name: str) -> Any:
    if name == "ValidationReport":  # (its module, made when first asked for: a read makes no dataclass)
        from .validation import ValidationReport

        globals()[name] = ValidationReport
        return ValidationReport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def validate(path: Input, format: str | None = None, *, full: bool = False,
             progress: Callable[[int], Any] | None = None, **options: Any) -> ValidationReport:
    """Parse ``path``, rebuild it from the parsed form and compare bytes; ``.ok`` only when identical.

    Directory formats (infini-gram) have no single byte stream: their consistency check runs instead,
    on a sample of the suffix order unless ``full``, calling ``progress`` with the number of suffix pairs
    about to be compared (a bar's ``update``). ``options`` go to the format's parse, as in ``read``
    (infini-gram: ``token_width``, ``version``)."""
    with _source(path) as source:
        return _validate(source, format, full=full, progress=progress, **options)


def _validate(source: Source, format: str | None, *, full: bool, progress: Callable[[int], Any] | None,
              **options: Any) -> ValidationReport:
    from .validation import ValidationReport

    p = str(source)
    if not os.access(source.file, os.R_OK):
        return ValidationReport(p, format or "?", False, error=f"cannot read {p}", unreadable=True)
    try:
        fmt = _resolve(source, format)
    except FormatError as e:
        return ValidationReport(p, format or "?", False, error=str(e), unreadable=True)
    _check_options(fmt, options)
    report = ValidationReport(p, fmt.name, False)
    try:
        if fmt.is_directory:
            extra = {} if progress is None else {"progress": progress}
            problems = fmt.check(fmt.parse(Path(source.path), **options), full=full, **extra) if fmt.check else []
            report.problems = problems
            report.ok = not problems
            return report
        from . import framework

        data = source.buffer()
        report.size = len(data)
        parsed = fmt.parse(data, **options)
        out = framework.CompareStream(data)  # compared as it is written: the rebuild is never held
        fmt.build(parsed, out)
        report.rebuilt_size = out.size
        if fmt.check:  # a "note: " is said, not failed (a file the format's tools read as they do)
            for problem in fmt.check(parsed):
                note = problem.removeprefix("note: ")
                (report.problems if note == problem else report.notes).append(note)
        first = out.first_difference()
        if first is not None:
            report.first_difference = report.offset = first
            report.field = _field_at(fmt, data, first)
            if "dtype" in (fmt.read_options or ()) and (note := _lost_precision(data, first)):
                report.notes.append(note)
        report.ok = first is None and not report.problems
    except FormatError as e:
        error = _explained(source, fmt, format, e)
        report.error = str(error)
        at = error.within if isinstance(error, WrongFormatError) else error
        report.field, report.offset = at.path, at.offset
    return report


def _lost_precision(data: Any, offset: int) -> str | None:
    """For a text file whose rebuild differs at ``offset``: a sentence saying so when the number there is one
    float32 cannot hold (the text writers spell float32 values), with its line; None otherwise."""
    import numpy as np

    window = bytes(data[max(0, offset - 64) : offset + 64])
    at = offset - max(0, offset - 64)
    start = max(window.rfind(b" ", 0, at), window.rfind(b"\n", 0, at)) + 1
    ends = [i for i in (window.find(b" ", at), window.find(b"\n", at)) if i >= 0]
    token = window[start : min(ends) if ends else len(window)].strip(b"\r\t")
    try:
        value = float(token)
    except ValueError:
        return None
    single = str(np.float32(value))
    if float(single) == value:  # the same number spelt another way ("2" written "2.0"): not a loss of precision
        return None
    line = int(np.count_nonzero(np.frombuffer(data, np.uint8, count=offset) == 10)) + 1
    return (f"line {line}: {token.decode()} does not survive float32 (it is written back as {single}); "
            "read(..., dtype='float64') keeps such numbers in Python, but every writer writes float32")


def _field_at(fmt: registry.Format, data: Any, offset: int) -> str | None:
    if fmt.schema is None:
        return None
    from .framework.walk import covering, walk

    try:
        _, spans = walk(fmt.schema, data, format=fmt.name)
    except FormatError:
        return None
    return covering(spans, offset) or None


# what a quick inspect of a compressed file reads: its first decompressed bytes
INSPECT_HEAD = 8 << 20


def inspect(path: Input, format: str | None = None, *, full: bool = False, **options: Any) -> dict[str, Any]:
    """A structure summary: format, size, counts, dimension, first words, the major parts.

    Read from the header and a sample of records, in well under a second and bounded memory whatever the
    file's size (a count the file does not state is an estimate, and named so); ``full=True`` parses the
    whole file and adds the offsets of the parts and the statistics that need every record. ``options`` go
    to the format's parse, as in ``read`` (infini-gram: ``token_width``, ``version``)."""
    with _source(path) as source:
        if format:  # (a path of the wrong kind is refused before any format's error)
            _check_kind(source, registry.sniffer(format) or registry.get(format))
        try:
            return _inspect(source, format or _sniff(source), full, options)
        except FormatError as e:
            if format is None:
                raise
            raise _explained(source, registry.get(format), format, e) from None


def _inspect(source: Source, name: str, full: bool, options: dict[str, Any]) -> dict[str, Any]:
    path = source.path
    if not full and (quick := _quick_inspect(source, name, options)) is not None:
        return quick
    fmt = _resolve(source, name)
    _check_options(fmt, options)
    info: dict[str, Any] = {"path": str(path), "format": fmt.name}
    if not full and fmt.inspect_head is not None:
        quick = _inspect_head(fmt, source, info, options)
        if quick is not None:
            info.update(quick)
            return info
    if fmt.is_directory:
        parsed = fmt.parse(Path(path), **options)
    else:
        data = source.buffer()
        info["size"] = len(data)
        if kind := source.compression:
            info["compression"] = kind  # (the size and offsets are those of the decompressed bytes)
        parsed = fmt.parse(data, **options)
        if fmt.schema is not None:
            from .framework.walk import walk

            read_params = {k: v for k, v in options.items()  # (as parsed)
                           if k in ("unicode_errors", "max_header_size") and v}
            if options.get("encoding"):  # (words in another encoding are walked as their bytes)
                read_params["unicode_errors"] = "surrogateescape"
            _, spans = walk(fmt.schema, data, format=fmt.name, **read_params)
            top = [s for s in spans if s.path and "." not in s.path and "[" not in s.path]
            info["parts"] = [{"field": s.path, "offset": s.start, "size": s.end - s.start} for s in top]
    if fmt.inspect:
        info.update(fmt.inspect(parsed))
    return info


def _quick_inspect(source: Source, name: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of a format whose sniffer makes one without the codec (no numpy, no construct imported),
    for an uncompressed file and no read option but ``unicode_errors``; None otherwise, or where the sniffer
    leaves the file to the codec."""
    found = registry.sniffer(name)
    given = {k for k, v in options.items() if v is not None}
    if found is None or found.quick_inspect is None or given - {"unicode_errors"} or \
            options.get("unicode_errors") not in (None, "strict", "replace", "ignore"):
        return None
    _check_kind(source, found)
    if source.compression:
        return None
    data = source.buffer()
    quick = found.quick_inspect(data, **options)
    return None if quick is None else {"path": str(source), "format": name, "size": len(data), **quick}


def _inspect_head(fmt: registry.Format, source: Source, info: dict[str, Any],
                  options: dict[str, Any]) -> dict[str, Any] | None:
    """The format's quick summary; None when it cannot be told from the first bytes of a compressed file
    (the caller then reads it all)."""
    assert fmt.inspect_head is not None
    if fmt.is_directory:
        return fmt.inspect_head(Path(source.path), complete=True, **options)
    if kind := source.compression:
        info["compression"] = kind
        try:
            return fmt.inspect_head(source.head(INSPECT_HEAD), complete=False, **options)
        except FormatError:  # (the head cut inside what the summary needs; a real fault shows in the full parse)
            return None
    data = source.buffer()
    info["size"] = len(data)
    return fmt.inspect_head(data, complete=True, **options)


def write_docs(outdir: PathLike) -> list[Path]:
    """Write the generated page of every registered format, ``<format>.md``, into ``outdir``; returns the
    paths (``wvformats docs OUTDIR``)."""
    from .framework.docs import page

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    out = []
    for name, fmt in sorted(registry.load().items()):
        path = outdir / f"{name}.md"
        path.write_text(page(fmt), encoding="utf-8")
        out.append(path)
    return out
