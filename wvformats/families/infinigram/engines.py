"""Where the part sorts and shard merges of an out-of-core build run: this process, a pool of local
processes, or a Dask distributed cluster (the optional ``cluster`` extra). Each task reads and writes files
by path, so a cluster's workers must see the output folder (a shared file system).

Dask rather than Ray: it is pure Python (a few MB, no daemon to install), a ``LocalCluster`` runs inside
the test process, and its scheduler is a plain ``tcp://`` address that the command line can take; the
tasks here are coarse (seconds to minutes each, files in and out) and need nothing Ray adds.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
from collections.abc import Iterator
from typing import Any

# The environment a local worker starts with: one thread each for OpenBLAS, which numpy's import otherwise starts
# on every core to spin there (~0.1 s of CPU per worker, measured), and for OpenMP (libdivsufsort sorts a part on
# one thread anyway): a worker is one of the processes the budget counts, on one core.
WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` while inside (what a process started there inherits), as it was after."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Local:
    """``workers`` processes (spawned: no inherited state; started with :data:`WORKER_ENV`), or this process when
    ``workers`` is 1 (then each task runs when it is waited for, in the order submitted)."""

    def __init__(self, workers: int) -> None:
        self.pool = (cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
                     if workers > 1 else None)
        self.slots = workers  # tasks that run at once (a shard's merge is split into as many ranges)
        self.queue: dict[cf.Future, tuple[Any, tuple[Any, ...]]] = {}

    def submit(self, fn: Any, *args: Any) -> cf.Future:
        if self.pool is not None:
            if len(getattr(self.pool, "_processes", None) or ()) >= self.slots:
                return self.pool.submit(fn, *args)
            with _environ(WORKER_ENV):  # (a submit may start a worker: the pool starts them as tasks come)
                return self.pool.submit(fn, *args)
        fut: cf.Future = cf.Future()
        self.queue[fut] = (fn, args)
        return fut

    def wait_any(self, futures: set[Any]) -> tuple[set[Any], set[Any]]:
        if self.pool is None:
            fut = next(f for f in self.queue if f in futures)
            fn, args = self.queue.pop(fut)
            fut.set_result(fn(*args))  # an error propagates at once
            return {fut}, set(futures) - {fut}
        done, pending = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
        return set(done), set(pending)

    def close(self, interrupted: bool = False) -> None:
        if self.pool is None:
            return
        if interrupted:  # stop the running sorts too: their files are written atomically, none is half there
            for p in list(getattr(self.pool, "_processes", {}).values()):
                p.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)


class Dask:
    """Tasks submitted to a Dask distributed scheduler (an address such as ``tcp://host:8786``, or a
    ``distributed.Client`` / ``LocalCluster`` object)."""

    def __init__(self, scheduler: Any) -> None:
        try:
            import distributed
        except ImportError as e:  # pragma: no cover - the extra is installed in CI
            raise ImportError("--engine dask needs Dask distributed: pip install 'wvformats[cluster]'") from e
        self.distributed = distributed
        self.own = not isinstance(scheduler, distributed.Client)
        self.client = distributed.Client(scheduler) if self.own else scheduler
        self.slots = max(1, sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values()))

    def submit(self, fn: Any, *args: Any) -> Any:
        return self.client.submit(fn, *args, pure=False)

    def wait_any(self, futures: set[Any]) -> tuple[set[Any], set[Any]]:
        done, pending = self.distributed.wait(list(futures), return_when="FIRST_COMPLETED")
        return set(done), set(pending)

    def close(self, interrupted: bool = False) -> None:
        if self.own:
            self.client.close()


def engine(name: str, workers: int, scheduler: Any) -> Local | Dask:
    if name == "local":
        if scheduler is not None:
            raise ValueError("a scheduler goes with engine='dask'")
        return Local(workers)
    if name == "dask":
        if scheduler is None:
            raise ValueError("engine='dask' needs scheduler= (e.g. tcp://host:8786, or a distributed.Client)")
        return Dask(scheduler)
    raise ValueError(f"engine is 'local' or 'dask', not {name!r}")
