"""Tokenize and count a corpus in worker processes, for :meth:`SoftCosineModel.build`.

Fitting a vocabulary is pure Python (tokenizing and counting), so threads would not help: the
corpus is cut into chunks of texts that worker processes tokenize and count
(:class:`~es_scm.model.text.TermCounts`), each accumulating its own counts until the corpus
ends; the parent reads the texts, hands out the chunks and merges the workers' counts. The
vocabulary is a function of the merged counts alone (ids by descending df, ties by term), so it is
the same as one fitted in-process, bit for bit.

Memory stays bounded for streamed corpora: at most two chunks per worker wait in the queue. The
parallel path is skipped, and the corpus counted in-process (logged), when one worker is asked
for, when the tokenizer cannot be pickled (e.g. a lambda as its callable), when the corpus is
small (``n_jobs=None`` only), or when the platform cannot fork (``n_jobs=None`` only: other
start methods import the main module again in every worker, which needs the
``if __name__ == "__main__":`` guard around the calling script).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import queue
import sys
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import Any

from es_scm.model.text import TermCounts, Tokenizer

__all__ = ["CHUNK_SIZE", "MIN_PARALLEL_DOCUMENTS", "count_texts", "resolve_n_jobs"]

logger = logging.getLogger(__name__)

#: Texts per task: ~1 MB of Wikipedia paragraphs, a few milliseconds of pickling.
CHUNK_SIZE = 2_000
#: With ``n_jobs=None``, corpora smaller than this are counted in-process: starting workers and
#: merging their counts would cost more than it saves.
MIN_PARALLEL_DOCUMENTS = 20_000
_POLL_SECONDS = 0.5  # how often a blocked parent checks that its workers are alive


class _Failure:
    """An exception raised in a worker, sent to the parent to be raised there."""

    def __init__(self, error: BaseException) -> None:
        try:
            pickle.dumps(error)
        except Exception:
            error = RuntimeError(f"a tokenizing worker failed: {error!r}")
        self.error = error


def _cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def resolve_n_jobs(n_jobs: int | None) -> int:
    """The number of worker processes that ``n_jobs`` asks for (scikit-learn's convention).

    ``None`` and ``-1`` are all CPUs, ``-2`` all but one, and so on; a positive int is itself.
    """
    if n_jobs is None:
        return _cpu_count()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero int or None, got {n_jobs!r}")
    return n_jobs if n_jobs > 0 else max(1, _cpu_count() + 1 + n_jobs)


def count_texts(
    texts: Iterable[str],
    tokenizer: Tokenizer,
    *,
    n_jobs: int | None = None,
    chunk_size: int = CHUNK_SIZE,
) -> TermCounts:
    """The term counts of ``texts`` tokenized by ``tokenizer``, in worker processes if it pays.

    Parameters
    ----------
    texts : iterable of str
        The corpus; may be a one-shot iterator (it is read exactly once).
    tokenizer : Tokenizer
        Sent to the workers by pickling; one that cannot be pickled is used in-process.
    n_jobs : int or None, default=None
        Worker processes: ``None`` uses every CPU, but only for a corpus of at least
        :data:`MIN_PARALLEL_DOCUMENTS` texts and where processes can be forked; ``1`` counts
        in-process; ``-1`` is every CPU, ``-2`` all but one, and so on, whatever the corpus.
    chunk_size : int, default=CHUNK_SIZE
        Texts per task sent to a worker.

    Returns
    -------
    TermCounts
        Equal to ``TermCounts().count(tokenizer.tokenize_many(texts))``.
    """
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    workers = resolve_n_jobs(n_jobs)
    iterator = iter(texts)
    head: list[str] = []
    context = _context(explicit=n_jobs is not None) if workers > 1 else None
    if context is not None and n_jobs is None:
        head = list(islice(iterator, MIN_PARALLEL_DOCUMENTS))
        if len(head) < MIN_PARALLEL_DOCUMENTS:
            context = None
    if context is not None and not _picklable(tokenizer):
        context = None
    if context is None:
        return TermCounts().count(tokenizer.tokenize_many(chain(head, iterator)))
    logger.info("tokenizing in %d worker processes, %d texts a chunk", workers, chunk_size)
    return _count_in_workers(chain(head, iterator), tokenizer, workers, chunk_size, context)


def _context(explicit: bool) -> Any:
    """The multiprocessing context: fork where it exists, else the default if asked explicitly."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    if explicit:
        return multiprocessing.get_context()
    logger.info("counting the corpus in-process: this platform cannot fork worker processes")
    return None


def _picklable(tokenizer: Tokenizer) -> bool:
    try:
        pickle.dumps(tokenizer)
    except Exception as error:
        logger.info("counting the corpus in-process: the tokenizer cannot be pickled (%s)", error)
        return False
    return True


def _chunks(texts: Iterator[str], size: int) -> Iterator[list[str]]:
    while chunk := list(islice(texts, size)):
        yield chunk


def _work(tokenizer: Tokenizer, tasks: Any, results: Any) -> None:
    """A worker: count every chunk until the ``None`` sentinel, then send the counts."""
    try:
        counts = TermCounts()
        while (chunk := tasks.get()) is not None:
            counts.count(map(tokenizer.tokenize, chunk))
        results.put(counts)
    except BaseException as error:
        results.put(_Failure(error))


def _count_in_workers(
    texts: Iterator[str], tokenizer: Tokenizer, workers: int, chunk_size: int, context: Any
) -> TermCounts:
    tasks = context.Queue(maxsize=2 * workers)
    results = context.Queue()
    processes = [
        context.Process(target=_work, args=(tokenizer, tasks, results), daemon=True)
        for _ in range(workers)
    ]
    received: list[TermCounts] = []
    try:
        for process in processes:
            process.start()
        for chunk in chain(_chunks(iter(texts), chunk_size), [None] * workers):
            while True:
                try:
                    tasks.put(chunk, timeout=_POLL_SECONDS)
                    break
                except queue.Full:
                    _check(processes, results, received)
        while len(received) < workers:
            try:
                received.append(_unwrap(results.get(timeout=_POLL_SECONDS)))
            except queue.Empty:
                _check(processes, results, received)
        for process in processes:
            process.join()
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join()
        tasks.cancel_join_thread()
        tasks.close()
        results.close()
    received.sort(key=lambda counts: len(counts.term_counts), reverse=True)
    merged = received[0]  # the largest: the others are added to it
    for counts in received[1:]:
        merged.merge(counts)
    return merged


def _unwrap(message: TermCounts | _Failure) -> TermCounts:
    if isinstance(message, _Failure):
        raise message.error
    return message


def _check(processes: list[Any], results: Any, received: list[TermCounts]) -> None:
    """Raise a worker's error, or an error for a worker that died without sending one."""
    try:
        while True:
            received.append(_unwrap(results.get_nowait()))
    except queue.Empty:
        pass
    dead = [p for p in processes if p.exitcode is not None and p.exitcode != 0]
    if dead:
        raise RuntimeError(
            f"a tokenizing worker process exited with code {dead[0].exitcode} (killed, e.g. out "
            "of memory?)"
        )
