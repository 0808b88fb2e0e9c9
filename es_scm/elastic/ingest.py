"""Ingestion: documents → weighted vectors → normalized vectors → bulk requests.

Documents stream in as :class:`~es_scm.documents.Document` records (or mappings checked once by
:meth:`~es_scm.documents.Document.from_mapping`) and are vectorized in batches: the model's
document weighting gives Wy, the term-similarity layer normalizes it to y' = Wy/‖Wy‖_S
(Theorem 4.2, :meth:`~es_scm.similarity.TermSimilarityMatrix.normalize`), and
:func:`~es_scm.elastic.schema.encode_documents` makes the ``_source`` of each.

Retries happen in one layer per kind of failure, both the official client's own: a connection
error or timeout is retried by the client's transport (its ``max_retries``), and a rejection with
a retryable status (429, 502, 503, 504) — of the whole request or of single documents — by
``helpers.streaming_bulk`` (``max_retries``, backoff doubling from ``initial_backoff`` up to
``max_backoff``). What still fails is counted and reported per document with its reason. Document
ids make writes idempotent: a rerun after a failure overwrites instead of duplicating.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from elasticsearch import ApiError, Elasticsearch, TransportError, helpers

from es_scm.documents import Document, as_document
from es_scm.elastic.schema import encode_documents
from es_scm.validation import NON_NEGATIVE_INT, POSITIVE_INT, Interval, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["RETRYABLE_STATUSES", "DocumentIngester", "IngestReport"]

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = (429, 502, 503, 504)
_SECONDS = Interval(float, 0.0, None)


@dataclass
class IngestReport:
    """What an ingestion did: counts and, for every failed document, its id and reason."""

    indexed: int = 0
    failed: int = 0
    empty: int = 0
    seconds: float = 0.0
    failures: list[tuple[str, str]] = field(default_factory=list)
    empty_ids: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def summary(self) -> str:
        rate = self.indexed / self.seconds if self.seconds else 0.0
        return (
            f"indexed {self.indexed}, failed {self.failed}, empty {self.empty} "
            f"in {self.seconds:.1f}s ({rate:.0f} docs/s)"
        )


@dataclass
class _Batch:
    """A batch's bulk actions and the ids of its documents without vocabulary terms."""

    actions: list[dict[str, Any]]
    empty_ids: list[str]


class DocumentIngester:
    """Vectorize documents with a model and bulk them into an index.

    Parameters
    ----------
    client : Elasticsearch
    index : str
        The index (or write alias).
    model : SoftCosineModel
    batch_size : int
        Documents per vectorization batch and bulk request.
    max_retries : int
        Retries of documents rejected with a retryable status (see the module docstring)
        before they are reported as failed; the wait doubles from ``initial_backoff`` up to
        ``max_backoff`` seconds.
    concurrency : int
        Bulk requests in flight at once (2): Elasticsearch indexes each on a thread of its
        own while Python vectorizes the next batch.
    """

    def __init__(
        self,
        client: Elasticsearch,
        index: str,
        model: SoftCosineModel,
        *,
        batch_size: int = 500,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        max_backoff: float = 30.0,
        concurrency: int = 2,
    ) -> None:
        self.client = client
        self.index = index
        self.model = model
        self.batch_size = check(batch_size, "batch_size", POSITIVE_INT)
        self.max_retries = check(max_retries, "max_retries", NON_NEGATIVE_INT)
        self.initial_backoff = check(initial_backoff, "initial_backoff", _SECONDS)
        self.max_backoff = check(max_backoff, "max_backoff", _SECONDS)
        self.concurrency = check(concurrency, "concurrency", POSITIVE_INT)
        self._term_keys = np.array([str(i) for i in range(len(model.terms))], dtype=object)

    def run(
        self, documents: Iterable[Document | Mapping[str, Any]], progress: Any = None
    ) -> IngestReport:
        """Ingest a stream of documents; return the report.

        ``progress`` is an object with ``update(n)`` (e.g. a tqdm bar), or None. Batches are
        vectorized while up to ``concurrency`` earlier ones are in flight, so Python and
        Elasticsearch work at the same time; at most ``concurrency + 1`` batches are held in
        memory.
        """
        report = IngestReport()
        started = time.perf_counter()
        positions = itertools.count()
        stream = iter(documents)
        in_flight: deque[tuple[Future, _Batch]] = deque()
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="es-scm-bulk") as sender:
            while batch := list(itertools.islice(stream, self.batch_size)):
                prepared = self._prepare(batch, positions)
                while len(in_flight) >= self.concurrency:
                    self._account(*in_flight.popleft(), report, progress)
                in_flight.append((sender.submit(self._send, prepared.actions), prepared))
            while in_flight:
                self._account(*in_flight.popleft(), report, progress)
        report.seconds = time.perf_counter() - started
        logger.info("%s: %s", self.index, report.summary())
        return report

    def _prepare(self, batch: list, positions: Iterator[int]) -> _Batch:
        """Vectorize a batch: y' = Wy/‖Wy‖_S, encoded as bulk actions."""
        documents = [as_document(item, next(positions)) for item in batch]
        texts = [document.text for document in documents]
        weights = self.model.vectorize_many(texts, role="document")
        normalized = self.model.similarity_matrix.normalize(weights)
        sources = encode_documents(
            texts, normalized, [document.metadata for document in documents], self._term_keys
        )
        actions = [
            {"_index": self.index, "_id": document.id, "_source": source}
            for document, source in zip(documents, sources, strict=True)
        ]
        empty_ids = [d.id for d, s in zip(documents, sources, strict=True) if s["scm"]["empty"]]
        return _Batch(actions, empty_ids)

    @staticmethod
    def _account(sending: Future, batch: _Batch, report: IngestReport, progress: Any) -> None:
        failures = sending.result()
        failed_ids = {doc_id for doc_id, _ in failures}
        report.failed += len(failures)
        report.indexed += len(batch.actions) - len(failures)
        report.failures.extend(failures)
        stored_empty = [doc_id for doc_id in batch.empty_ids if doc_id not in failed_ids]
        report.empty += len(stored_empty)
        report.empty_ids.extend(stored_empty)
        if failures:
            logger.debug(
                "%d of %d documents failed: %s", len(failures), len(batch.actions), failures[0]
            )
        if progress is not None:
            progress.update(len(batch.actions))

    def _send(self, actions: list[dict]) -> list[tuple[str, str]]:
        """Bulk ``actions``; return (id, reason) of every document that failed."""
        # The transport retries connection errors; statuses are left to streaming_bulk alone.
        client = self.client.options(retry_on_status=())
        failures = []
        try:
            for ok, item in helpers.streaming_bulk(
                client,
                actions,
                chunk_size=len(actions),
                max_chunk_bytes=50 * 1024 * 1024,
                raise_on_error=False,
                raise_on_exception=True,
                max_retries=self.max_retries,
                initial_backoff=self.initial_backoff,
                max_backoff=self.max_backoff,
                retry_on_status=RETRYABLE_STATUSES,
            ):
                if not ok:
                    result = next(iter(item.values()))
                    failures.append((str(result.get("_id")), _reason(result)))
        except ApiError as error:
            reason = f"HTTP {error.meta.status}: {error}"
            return [(action["_id"], reason) for action in actions]
        except TransportError as error:  # the connection failed after the transport's retries
            reason = f"connection error: {error}"
            return [(action["_id"], reason) for action in actions]
        return failures


def _reason(result: Mapping[str, Any]) -> str:
    error = result.get("error")
    if isinstance(error, Mapping):
        return f"HTTP {result.get('status')}: {error.get('type')}: {error.get('reason')}"
    return f"HTTP {result.get('status')}: {error}"
