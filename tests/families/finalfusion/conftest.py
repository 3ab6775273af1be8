import importlib

import pytest

from wvformats.families.finalfusion import lookups


@pytest.fixture(params=["compiled", "python"])
def ff_kernel(request, monkeypatch):
    """Run a lookup test on finalfusion's compiled kernel and on its pure-Python twin: the module global the
    lookups read when a file is opened (a kernel that is not built fails the "compiled" run, it does not skip).
    Returns the kernel module, or None."""
    module = importlib.import_module("wvformats.families.finalfusion._kernel") if request.param == "compiled" else None
    monkeypatch.setattr(lookups, "_K", module)
    return module
