"""Codec modules: each registers its formats with :mod:`wvformats.registry` when imported."""
