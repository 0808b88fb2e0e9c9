"""The only code written twice: the sync and the asyncio twin of each concurrency primitive.

Every operation is written once, in ``es_scm/elastic/_async/``, and its sync twin is generated
(``scripts/generate_sync.py``), which replaces each asyncio name below by its sync twin. These are
the few things that cannot be generated because the two sides do them differently:

:class:`AsyncStop` / :class:`Stop`
    A flag that ends a run, and the waits that it cuts short: an ``asyncio.Event``, or a
    condition that a signal handler may set too (re-entrant: the handler runs in the main thread,
    which may hold it).
:class:`AsyncWorkers` / :class:`Workers`
    The bulk requests of an ingestion in flight: asyncio tasks, or ``size`` daemon threads kept
    for the run (no thread per batch; daemon threads, so that a process that abandons its
    requests can exit). Each started request is recorded with its key (its batch) until it is
    joined and marked done, so that a run that is interrupted anywhere knows what it must wait
    for; a task is joined through a shield, so that cancelling the run never cancels a request
    that Elasticsearch may be applying.
:func:`async_compute` / :func:`compute`
    CPU work (vectorizing a batch): in a worker thread, so that the event loop keeps serving, or
    in place.
:func:`async_batches` / :func:`batches`
    The caller's documents in lists of ``size``: an async iterable, or an iterable read in a
    worker thread (asyncio); an iterable read in place (sync).
:func:`async_map_concurrently` / :func:`map_concurrently`
    A function over items, at most ``limit`` at once, the results in the items' order (batch
    search's queries after their first requests).
:class:`AsyncHeartbeat` / :class:`Heartbeat`
    A call repeated every ``interval`` seconds while a block runs (a swap's heartbeat in its
    new index's marker, :mod:`es_scm.index.swaps`): an asyncio task, or a daemon thread. A
    call that fails is logged, once, and the beats go on; the block's end waits for a call in
    flight, so that no beat lands after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import queue
import threading
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

__all__ = [
    "AsyncHeartbeat",
    "AsyncStop",
    "AsyncWorkers",
    "Heartbeat",
    "Stop",
    "Workers",
    "async_batches",
    "async_compute",
    "async_map_concurrently",
    "batches",
    "compute",
    "map_concurrently",
]

logger = logging.getLogger(__name__)

K = TypeVar("K")
T = TypeVar("T")
R = TypeVar("R")


class AsyncStop:
    """A flag that ends a run; :meth:`wait` gives up as soon as it is set."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        """Stop: every wait ends now."""
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self, seconds: float) -> bool:
        """Wait ``seconds``, or less if the flag is set meanwhile; return whether it is set."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._event.wait(), seconds)
        return self._event.is_set()


class Stop:
    """:class:`AsyncStop` for threads: a flag that ends a run and cuts its waits short.

    :meth:`set` may be called from a signal handler (``es-scm index`` does, on SIGINT and
    SIGTERM): the lock is re-entrant, so the handler cannot deadlock on the main thread that it
    interrupted.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.RLock())
        self._set = False

    def set(self) -> None:
        """Stop: every wait ends now."""
        with self._condition:
            self._set = True
            self._condition.notify_all()

    def is_set(self) -> bool:
        return self._set

    def wait(self, seconds: float) -> bool:
        """Wait ``seconds``, or less if the flag is set meanwhile; return whether it is set."""
        with self._condition:
            if not self._set:
                self._condition.wait(seconds)
            return self._set


class AsyncWorkers(Generic[K]):
    """Requests in flight as asyncio tasks, each recorded with its key until marked done.

    ``size`` is the most that the caller keeps in flight (the tasks themselves are not limited).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._running: dict[asyncio.Future[Any], K] = {}

    async def __aenter__(self) -> AsyncWorkers[K]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.abandon()

    def start(self, key: K, function: Callable[..., Awaitable[R]], *args: Any) -> asyncio.Future[R]:
        """Run ``function(*args)`` concurrently; the handle to join."""
        task = asyncio.ensure_future(function(*args))
        self._running[task] = key
        return task

    def running(self) -> list[tuple[asyncio.Future[Any], K]]:
        """The requests started and not marked done, oldest first, with their keys."""
        return list(self._running.items())

    def __len__(self) -> int:
        return len(self._running)

    async def join(self, handle: asyncio.Future[R]) -> R:
        """The result of a started request (its exception is raised); a cancellation of the
        caller meanwhile does not cancel the request."""
        return await asyncio.shield(handle)

    def done(self, handle: asyncio.Future[Any]) -> None:
        """The request's result is accounted for."""
        self._running.pop(handle, None)

    def abandon(self) -> list[K]:
        """Give up on the requests not done (cancelled: an answer may never come); their keys."""
        keys = list(self._running.values())
        for task in self._running:
            task.cancel()
        self._running.clear()
        return keys


class Workers(Generic[K]):
    """:class:`AsyncWorkers` on ``size`` daemon threads, started with the run and kept for it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._running: dict[Future[Any], K] = {}
        self._tasks: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple] | None]
        self._tasks = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> Workers[K]:
        for number in range(self.size):
            thread = threading.Thread(target=self._work, name=f"es-scm-bulk-{number}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.abandon()
        for _ in self._threads:
            self._tasks.put(None)  # each thread ends once its current request does

    def _work(self) -> None:
        while (task := self._tasks.get()) is not None:
            future, function, args = task
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function(*args))
                except BaseException as error:  # handed to the joiner, whatever it is
                    future.set_exception(error)

    def start(self, key: K, function: Callable[..., R], *args: Any) -> Future[R]:
        """Run ``function(*args)`` on a worker thread; the handle to join."""
        future: Future[R] = Future()
        self._running[future] = key
        self._tasks.put((future, function, args))
        return future

    def running(self) -> list[tuple[Future[Any], K]]:
        """The requests started and not marked done, oldest first, with their keys."""
        return list(self._running.items())

    def __len__(self) -> int:
        return len(self._running)

    def join(self, handle: Future[R]) -> R:
        """The result of a started request (its exception is raised)."""
        return handle.result()

    def done(self, handle: Future[Any]) -> None:
        """The request's result is accounted for."""
        self._running.pop(handle, None)

    def abandon(self) -> list[K]:
        """Give up on the requests not done (one not started yet never will be); their keys."""
        keys = list(self._running.values())
        for future in self._running:
            future.cancel()
        self._running.clear()
        return keys


async def async_compute(function: Callable[..., R], *args: Any) -> R:
    """``function(*args)`` in a worker thread: the event loop keeps serving meanwhile."""
    return await asyncio.to_thread(function, *args)


def compute(function: Callable[..., R], *args: Any) -> R:
    """``function(*args)``, in place."""
    return function(*args)


async def async_batches(
    documents: Iterable[Any] | AsyncIterable[Any], size: int
) -> AsyncIterator[list[Any]]:
    """``documents`` in lists of ``size`` (the last one shorter): an async iterable read in place,
    an iterable read in a worker thread (it may block on a file or a database)."""
    if isinstance(documents, AsyncIterable):
        batch = []
        async for document in documents:
            batch.append(document)
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch
        return
    iterator = iter(documents)
    while batch := await asyncio.to_thread(lambda: list(itertools.islice(iterator, size))):
        yield batch


def batches(documents: Iterable[Any] | AsyncIterable[Any], size: int) -> Iterator[list[Any]]:
    """``documents`` in lists of ``size`` (the last one shorter), read in place."""
    if isinstance(documents, AsyncIterable):
        raise TypeError("an async iterable of documents needs the asyncio API (AsyncSCMIndex)")
    iterator = iter(documents)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


async def async_map_concurrently(
    function: Callable[[T], Awaitable[R]], items: Iterable[T], limit: int
) -> list[R]:
    """``[await function(item) for item in items]`` with at most ``limit`` awaited at once, as
    tasks; the first error cancels the others and is raised."""
    semaphore = asyncio.Semaphore(limit)

    async def one(item: T) -> R:
        async with semaphore:
            return await function(item)

    tasks = [asyncio.ensure_future(one(item)) for item in items]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        raise


def map_concurrently(function: Callable[[T], R], items: Iterable[T], limit: int) -> list[R]:
    """``[function(item) for item in items]`` on a pool of at most ``limit`` threads (in place
    for one item or one thread); the first error cancels the items not started and is raised,
    without waiting for those running (Ctrl-C returns at once)."""
    work = list(items)
    if limit <= 1 or len(work) <= 1:
        return [function(item) for item in work]
    pool = ThreadPoolExecutor(min(limit, len(work)), thread_name_prefix="es-scm")
    futures: list[Future[R]] = [pool.submit(function, item) for item in work]
    try:
        results = [future.result() for future in futures]
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results


class AsyncHeartbeat:
    """``async with AsyncHeartbeat(interval, beat):`` awaits ``beat()`` every ``interval``
    seconds while the block runs (first after ``interval``), in a task of its own."""

    def __init__(self, interval: float, beat: Callable[[], Awaitable[Any]]) -> None:
        self.interval, self.beat = interval, beat
        self._stop = AsyncStop()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> AsyncHeartbeat:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._task is not None:  # a beat in flight ends first: none lands after the block
            await asyncio.shield(self._task)

    async def _run(self) -> None:
        failed = False
        while not await self._stop.wait(self.interval):
            try:
                await self.beat()
            except Exception as error:  # the work goes on; the lease may run out (logged)
                if not failed:
                    logger.warning("a heartbeat failed (%s); retrying every beat", error)
                failed = True


class Heartbeat:
    """:class:`AsyncHeartbeat` for threads: ``beat()`` every ``interval`` seconds while the
    ``with`` block runs, in a daemon thread."""

    def __init__(self, interval: float, beat: Callable[[], Any]) -> None:
        self.interval, self.beat = interval, beat
        self._stop = Stop()
        self._thread = threading.Thread(target=self._run, name="es-scm-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()  # a beat in flight ends first: none lands after the block

    def _run(self) -> None:
        failed = False
        while not self._stop.wait(self.interval):
            try:
                self.beat()
            except Exception as error:  # the work goes on; the lease may run out (logged)
                if not failed:
                    logger.warning("a heartbeat failed (%s); retrying every beat", error)
                failed = True
