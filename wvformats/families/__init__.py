"""One package per format family (``wvformats.families``). Each holds its codec (``codec.py``: the ``Format`` entries it registers,
from the schemas in ``wvformats.schemas``), its model objects and its helpers; the registry imports every
family's ``codec`` module, so a new family is a new package here and nothing else to edit."""
