"""Progress bars on stderr (tqdm when installed), silent when stderr is not a terminal or when disabled."""

from __future__ import annotations

import sys
from typing import Any


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def set_description(self, desc: str) -> None:
        pass

    def close(self) -> None:
        pass


def tqdm_class(enabled: bool) -> Any:
    """tqdm's class when a bar should show (enabled, stderr a terminal, tqdm installed), else None."""
    if not enabled or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def iterate(items: Any, enabled: bool, *, desc: str = "", unit: str = "it") -> Any:
    """``items`` wrapped in a bar on stderr when one should show (else ``items`` itself)."""
    tqdm = tqdm_class(enabled)
    return items if tqdm is None else tqdm(items, desc=desc, unit=unit, file=sys.stderr)


def bar(enabled: bool, *, total: int | None = None, desc: str = "", unit: str = "it",
        unit_scale: bool = False) -> Any:
    """A tqdm bar on stderr, or an object with the same ``update``/``set_description``/``close`` doing
    nothing (progress off, stderr not a terminal, or tqdm not installed)."""
    tqdm = tqdm_class(enabled)
    if tqdm is None:
        return _Silent()
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, file=sys.stderr, leave=False)
