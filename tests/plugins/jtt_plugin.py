"""The module a WVFORMATS_PLUGINS variable (or a wvformats.plugins entry point) names: it registers jtt."""

from jtt import FORMAT

from wvformats import registry

registry.register(FORMAT)
