"""SIGINT and SIGTERM end a command the same way: Ctrl-C, ``kill``, a container stopping.

While ``es-scm`` runs (:func:`handled_signals`, installed by ``main`` before anything heavy is
imported), either signal raises :class:`Interrupted` in the main thread, which ``main`` turns
into one line and the exit code 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM.

Two places handle a signal otherwise:

* while an ingestion runs (:meth:`Signals.stopping`), the first signal only sets the run's stop:
  the run reads nothing more, waits for its requests in flight (bounded by the client's request
  timeout), counts what they wrote, refreshes and counts the index, and raises
  ``IngestInterrupted`` with its report, which ``es-scm index`` prints before it exits. A second
  signal raises :class:`Interrupted` at once: the run abandons its requests in flight and its
  report says how many documents they may still write;
* while a request that changes the cluster is made from the main thread (:meth:`Signals.deferred`:
  creating or deleting an index), a signal waits until it has returned, so that the command knows
  whether it was done.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Protocol

__all__ = ["Interrupted", "Signals", "handled_signals"]

HANDLED = (signal.SIGINT, signal.SIGTERM)


class _Stop(Protocol):
    def set(self) -> None: ...

    def is_set(self) -> bool: ...


class Interrupted(KeyboardInterrupt):
    """A signal ended the command; ``exit_code`` is 128 + its number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class Signals:
    """What SIGINT and SIGTERM do while a command runs (module docstring)."""

    def __init__(self) -> None:
        self.received: int | None = None  # the last signal received
        self._stop: _Stop | None = None
        self._deferring = False
        self._pending: int | None = None

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The handler of both signals."""
        self.received = signum
        if self._stop is not None and not self._stop.is_set():
            self._stop.set()  # the run ends at its next step, counting what it did
            return
        if self._deferring:
            self._pending = signum
            return
        raise Interrupted(signum)

    @contextlib.contextmanager
    def stopping(self, stop: _Stop) -> Iterator[None]:
        """While inside, the first signal sets ``stop`` (an ingestion's) instead of raising."""
        self._stop = stop
        try:
            yield
        finally:
            self._stop = None

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """While inside, a signal waits; it is raised on leaving."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
            pending, self._pending = self._pending, None
            if pending is not None:
                raise Interrupted(pending)

    def interruption(self) -> Interrupted | None:
        """The signal received, as the exception that it raises (None if there was none)."""
        return None if self.received is None else Interrupted(self.received)


@contextlib.contextmanager
def handled_signals() -> Iterator[Signals]:
    """Handle SIGINT and SIGTERM as the module docstring says while inside; the handlers before
    are put back after (``main`` may run in a process that goes on, such as a test session).

    Outside the main thread, where Python cannot install handlers, nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield Signals()
        return
    signals = Signals()
    previous = {handled: signal.signal(handled, signals.handle) for handled in HANDLED}
    try:
        yield signals
    finally:
        for handled, handler in previous.items():
            signal.signal(handled, handler)
