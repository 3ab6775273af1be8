"""The declarative format definitions of wvformats, one module per format family.

Installed as ``wvformats.schemas``. Modules here hold construct schemas only: no file handling, no numpy
arithmetic, no CLI. Each field carries a short doc that the generated pages under ``docs/formats`` show.
"""
