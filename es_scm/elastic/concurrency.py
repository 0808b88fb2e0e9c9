"""The only code written twice, once for asyncio and once for threads: how work runs concurrently.

Every operation is written once, in ``es_scm/elastic/_async/``, and its sync twin is generated
(``scripts/generate_sync.py``). What cannot be generated — running several things at once — is
here, as pairs whose names the generator's table maps one to the other (``async_x`` → ``x``,
``AsyncX`` → ``X``): the asyncio one uses tasks, the sync one a pool of threads.

:func:`async_map_concurrently` / :func:`map_concurrently`
    A function over items, at most ``limit`` at once, the results in the items' order (batch
    search's queries after their first requests).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["async_map_concurrently", "map_concurrently"]

T = TypeVar("T")
R = TypeVar("R")


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
