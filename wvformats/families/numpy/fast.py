"""An .npy read through its schema's cached plan (``framework.plans``): what ``wv.read`` of an .npy runs first,
importing neither construct nor the codec. The header and the array are read by the readers the schema's own
fields parse with (``schemas/constructs/npyheader.py``)."""

from __future__ import annotations

from typing import Any

from ... import framework
from ...schemas.constructs.npyheader import read_data, read_header

SCHEMA = "wvformats.schemas.npy:npy"


def _header(stream: Any, context: dict[str, Any], path: str, params: dict[str, Any]) -> Any:
    return read_header(stream, context[params["major"]], params["limit"], path)


def _data(stream: Any, context: dict[str, Any], path: str, params: dict[str, Any]) -> Any:
    return read_data(stream, context[params["header"]], path)


READERS = {"npy-header": _header, "npy-data": _data}  # (the steps of NpyHeader and NpyData)


def fast_read(buffer: Any) -> Any:
    """The array of an .npy read through the schema's cached plan; None where the plan does not read it (the
    codec's parse then says why)."""
    plan = framework.cached_plan(SCHEMA)
    parsed = framework.run_plan(plan, buffer, READERS) if plan is not None else None
    return None if parsed is None else parsed["data"]
