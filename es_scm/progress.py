"""Progress of long work: the library reports it, whoever runs the library shows it.

A loop that can take more than a few seconds (reading a corpus, filling S's columns, finding the
neighbours of the unseen words, encoding a vocabulary, evaluating queries) wraps its steps in a
:class:`Progress`. By default a progress is a line logged at INFO on its logger at most every
:data:`INTERVAL` seconds, and one when it ends::

    es-scm: S: 12,000/35,715 terms (34%), 21s left
    es-scm: S: 35,715 terms in 32s

so that a command whose output is piped still says what it does (``es-scm model build`` shows
these lines unless ``--quiet``). A program on a terminal can show bars instead:
:func:`displayed_with` installs a factory of displays (the command line's draws tqdm bars), and
every progress made while it is installed updates its display instead of logging.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

__all__ = ["INTERVAL", "Display", "Progress", "displayed_with", "tracked"]

#: Seconds between two progress lines of one loop.
INTERVAL = 5.0

T = TypeVar("T")


class Display(Protocol):
    """What shows a progress instead of its log lines (a tqdm bar has these methods)."""

    def update(self, n: int) -> object: ...

    def close(self) -> object: ...


#: Makes the display of a progress: ``factory(what, total, unit)``.
DisplayFactory = Callable[[str, "int | None", str], Display]
_factory: DisplayFactory | None = None


@contextlib.contextmanager
def displayed_with(factory: DisplayFactory | None) -> Iterator[None]:
    """Show every progress made inside the ``with`` block with ``factory``'s displays (None:
    log lines)."""
    global _factory
    saved = _factory
    _factory = factory
    try:
        yield
    finally:
        _factory = saved


class Progress:
    """The progress of one long loop: ``update(n)`` after each step, ``close()`` at the end (or
    use it as a context manager).

    Parameters
    ----------
    logger : logging.Logger
        Where the lines go (INFO).
    what : str
        What is done, first on every line (``"S"``, ``"vocabulary"``, ``"cranfield"``).
    total : int, optional
        How many steps in all, if known: the lines then say the share done and the time left.
    unit : str
        The steps' name in the lines (``"terms"``, ``"documents"``, ``"queries"``).
    interval : float
        The fewest seconds between two lines.
    """

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        total: int | None = None,
        unit: str = "",
        interval: float = INTERVAL,
    ) -> None:
        self.logger = logger
        self.what = what
        self.total = total
        self.unit = unit
        self.interval = interval
        self.done = 0
        self.started = time.monotonic()
        self._last = self.started
        self._closed = False
        self._display = _factory(what, total, unit) if _factory is not None else None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        """``n`` more steps are done."""
        self.done += n
        if self._display is not None:
            self._display.update(n)
            return
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            self.logger.info("%s: %s", self.what, self._state(now))

    def close(self) -> None:
        """The loop ended: the last line (how many steps, in how long)."""
        if self._closed:
            return
        self._closed = True
        if self._display is not None:
            self._display.close()
            return
        seconds = time.monotonic() - self.started
        if seconds >= self.interval:  # a short loop says nothing
            self.logger.info("%s: %s in %.0fs", self.what, self._count(self.done), seconds)

    def _count(self, n: int) -> str:
        return f"{n:,} {self.unit}".rstrip()

    def _state(self, now: float) -> str:
        elapsed = now - self.started
        if not self.total:
            rate = self.done / elapsed if elapsed > 0 else 0.0
            return f"{self._count(self.done)} ({rate:,.0f}/s)"
        share = min(self.done / self.total, 1.0)
        left = elapsed * (1.0 - share) / share if share > 0 else float("nan")
        told = f", {left:.0f}s left" if share > 0 else ""
        return f"{self.done:,}/{self._count(self.total)} ({100 * share:.0f}%){told}"


def tracked(items: Iterable[T], progress: Progress) -> Iterator[T]:
    """``items``, one step of ``progress`` each, which is closed when they end."""
    try:
        for item in items:
            yield item
            progress.update()
    finally:
        progress.close()
