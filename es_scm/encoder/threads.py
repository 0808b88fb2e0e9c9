"""The numpy backend's threads: BLAS held to one thread, and a team that shares one forward pass.

Two ways the numpy backend (:mod:`es_scm.encoder.numpy_backend`) puts every core to work, both
with BLAS held to one thread (:data:`serial_blas`), because BLAS's own threads synchronise at
every product by spinning: on a machine where other processes take the cores, one query took
1.1 s with them and 0.13 s without (the same machine, in one run).

* Many batches: a thread per core, each encoding whole batches of its own (a thread pool).
* One batch (a query): :class:`Team` — the calling thread and a helper per other core take
  turns at the shares of each step (the heads of the attention, the columns of the feed-forward
  layer). A share is taken by whichever thread comes first, so a helper that a busy machine
  wakes late leaves its share to the caller instead of making it wait.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["Team", "cores", "serial_blas"]

logger = logging.getLogger(__name__)


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # not Linux
        return max(os.cpu_count() or 1, 1)


class _SerialBlas:
    """BLAS held to one thread while any caller encodes on threads of its own (a count, so that
    callers in several threads restore BLAS's threads once, after the last one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._libraries: list[Any] | None = None
        self._saved: list[int] = []

    def available(self) -> bool:
        """Whether BLAS's threads can be set (``threadpoolctl`` finds the BLAS; looked up once)."""
        with self._lock:
            if self._libraries is None:
                try:
                    import threadpoolctl

                    found = threadpoolctl.ThreadpoolController().select(user_api="blas")
                    self._libraries = list(found.lib_controllers)
                except Exception as error:  # missing, or a BLAS it cannot drive
                    logger.info("the encoder runs on one core: no threadpoolctl (%s)", error)
                    self._libraries = []
            return bool(self._libraries)

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                libraries = self._libraries or []
                self._saved = [library.get_num_threads() for library in libraries]
                for library in libraries:
                    library.set_num_threads(1)
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    for library, threads in zip(self._libraries or [], self._saved, strict=True):
                        library.set_num_threads(threads)


#: BLAS held to one thread, as a context (``with serial_blas(): …``); ``serial_blas.available()``
#: says whether it can be (without threadpoolctl the encoder uses one core).
serial_blas = _SerialBlas()


class _Job:
    """One list of tasks, each run once, by whichever thread takes it first."""

    def __init__(self, tasks: Sequence[Callable[[], None]]) -> None:
        self.tasks = tasks
        self.next = 0
        self.pending = len(tasks)
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.error: BaseException | None = None
        if not tasks:
            self.finished.set()

    def work(self) -> None:
        while True:
            with self.lock:
                if self.next >= len(self.tasks):
                    return
                task = self.tasks[self.next]
                self.next += 1
            try:
                task()
            except BaseException as error:  # re-raised in the calling thread
                self.error = self.error or error
            with self.lock:
                self.pending -= 1
                if self.pending == 0:
                    self.finished.set()


class Team:
    """The calling thread and ``helpers`` daemon threads, working through lists of tasks.

    :meth:`run` returns when every task has run; the helpers wait (blocked, not spinning)
    between runs. One run at a time: :meth:`try_run` returns False, running nothing, while
    another thread's run is going on.
    """

    def __init__(self, helpers: int) -> None:
        self.helpers = helpers
        self._condition = threading.Condition()
        self._job: _Job | None = None
        self._generation = 0
        self._threads: list[threading.Thread] = []
        self._running = threading.Lock()

    @contextlib.contextmanager
    def session(self) -> Iterator[bool]:
        """Hold the team for a series of runs: yields whether it was free (else run nothing
        on it: another thread holds it)."""
        free = self._running.acquire(blocking=False)
        try:
            yield free
        finally:
            if free:
                self._running.release()

    def run(self, tasks: Sequence[Callable[[], None]]) -> None:
        """Run ``tasks``, the calling thread taking its turns with the helpers (inside a
        :meth:`session` that was free)."""
        job = _Job(tasks)
        with self._condition:
            # a forked child inherits the list but not the threads (and the caller would do
            # every task itself): it starts its own
            self._threads = [thread for thread in self._threads if thread.is_alive()]
            while len(self._threads) < self.helpers:
                thread = threading.Thread(
                    target=self._help, name="es-scm-encoder-team", daemon=True
                )
                thread.start()
                self._threads.append(thread)
            self._job = job
            self._generation += 1
            self._condition.notify_all()
        job.work()
        job.finished.wait()
        if job.error is not None:
            raise job.error

    def _help(self) -> None:
        seen = 0
        while True:
            with self._condition:
                while self._generation == seen:
                    self._condition.wait()
                seen, job = self._generation, self._job
            if job is not None:
                job.work()
