"""The report of ``validate`` (:class:`ValidationReport`): its own module, so that ``import wvformats`` and a
read make no dataclass (``dataclasses`` imported and a class's methods made cost a fresh process ~1 ms).
``wvformats.ValidationReport`` and ``api.ValidationReport`` give it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from dataclasses import field as _field
from pathlib import Path
from typing import Any

from . import registry


@dataclass
class ValidationReport:
    """The result of a byte-exact round trip: parse, rebuild, compare."""

    path: str
    format: str
    ok: bool
    size: int = 0
    rebuilt_size: int = 0
    first_difference: int | None = None
    # where the file fails: the field path (``dictionary.entries[3].word``) and its byte offset, of the parse
    # error, else of the first difference of the rebuild
    field: str | None = None
    offset: int | None = None
    error: str | None = None
    notes: list[str] = _field(default_factory=list)
    problems: list[str] = _field(default_factory=list)
    # the file could not be checked at all (missing, unreadable, of no known format): an input error
    unreadable: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        if self.error:
            return f"FAIL  {self.path} [{self.format}]: {self.error}"
        problems = "; ".join(self.problems)
        if self.first_difference is not None:
            where = f"first difference at byte {self.first_difference}"
            if self.field:
                where += f" in {self.field}"
            return (f"FAIL  {self.path} [{self.format}]: rebuild differs ({where})"
                    + "".join(f"; {x}" for x in (*self.notes, *self.problems)))
        if not self.ok:
            return f"FAIL  {self.path} [{self.format}]: {problems}"
        if self.size == 0 and self.rebuilt_size == 0 and (Path(self.path).is_dir() or getattr(
                registry.sniffer(self.format), "is_directory", False)):
            return f"ok    {self.path} [{self.format}]: index files consistent"
        return (f"ok    {self.path} [{self.format}]: {self.size} bytes rebuilt byte-identical"
                + "".join(f"; {x}" for x in self.notes))
