"""The finalfusion codec under the import path of earlier releases (``docs/extending.md`` named it):
the codec is :mod:`wvformats.families.finalfusion.codec`."""

from ..families.finalfusion.codec import build, from_model, register_chunk, to_model

__all__ = ["build", "from_model", "register_chunk", "to_model"]
