"""Ingestion's pure core: documents → weighted vectors → normalized vectors → encoded actions, and
each batch's outcome settled into the report. Nothing lost, nothing counted twice.

Documents stream in as :class:`~es_scm.documents.Document` records (or mappings checked by
:meth:`~es_scm.documents.Document.from_mapping`) and are prepared in batches
(:class:`BatchPreparer`): the model's document weighting gives Wy, the term-similarity layer
normalizes it to y' = Wy/‖Wy‖_S (Theorem 4.2,
:meth:`~es_scm.similarity.TermSimilarityMatrix.normalize`), the index's sentence encoder (an
index with dense vectors) encodes the texts,
:func:`~es_scm.index.schema.encode_documents` makes the ``_source`` of each, and the client's
serializer encodes each action once (its size is then known before any request). The run
itself — batches read and prepared while others are in flight, the later duplicate written
last, interruption — is :class:`~es_scm.elastic._async.ingest.AsyncIngestion` (and its generated
sync twin); sending one batch is :mod:`es_scm.index.bulk`'s decisions.

Every document gets an outcome (:class:`IngestReport`):

* A document that cannot be indexed — not a valid record, a corpus record skipped as bad
  (:class:`~es_scm.documents.InvalidRecord`, named by its file and line), an id over
  Elasticsearch's 512 bytes, metadata that JSON cannot hold (NaN, ±Infinity, a set; named by
  its field, :func:`~es_scm.documents.metadata_problem`), a document larger than a bulk request
  may be (``max_request_bytes``, its size and the limit named), a field Elasticsearch rejects, a
  document over the node's indexing memory — fails alone, with its reason, and fast; the others
  of its batch are indexed.
* Ids make writes idempotent: a rerun overwrites (``updated``) instead of duplicating. A
  document is counted ``created`` when the index did not hold its id before this run wrote it.
* An id seen twice in one run is counted as a duplicate, and the later document wins, always: a
  batch that repeats an id of a batch still in flight is sent only once that batch is done
  (:func:`settle_first`; within a request, Elasticsearch applies the documents in order).
* A document is ``skipped`` when it was read but not confirmed written because the run stopped;
  a document that a request which returned wrote is indexed, whatever stopped the run.

The report also counts the documents' tokens that are terms (not stop words) and those of them
that the model does not know, and warns when that share is far above the share the model's own
corpus left out (:meth:`~es_scm.model.TokenCounts.drift`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from es_scm.documents import Document, InvalidRecord, as_document, metadata_problem
from es_scm.index.bulk import BatchOutcome, EncodedAction
from es_scm.index.dense import encode_texts
from es_scm.index.ingest_report import IngestError, IngestInterrupted, IngestReport
from es_scm.index.schema import encode_documents, feature_keys
from es_scm.model.soft_cosine import TokenCounts

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.encoder import SentenceEncoder
    from es_scm.model import SoftCosineModel

__all__ = [
    "MAX_ID_BYTES",
    "RETRYABLE_STATUSES",
    "SHOWN",
    "Batch",
    "BatchPreparer",
    "IngestError",
    "IngestInterrupted",
    "IngestReport",
    "SeenIds",
    "conclude",
    "settle",
    "settle_first",
    "skip",
]

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = (429, 502, 503, 504)  # what a deletion by id retries
MAX_ID_BYTES = 512  # Elasticsearch rejects longer _id values, and with them the whole request
SHOWN = 1000  # ids kept in a report's lists (the counts are always complete)

Dumps = Callable[[Any], bytes]


class SeenIds:
    """The 64-bit hashes of the ids written so far, to count duplicates in ~8 bytes per id.

    A ``set`` of Python ints costs ~70 bytes per id, enough to make an ingesting process grow
    with the corpus. The hashes are kept instead in sorted NumPy runs of decreasing sizes (a
    binary counter: a run merges into the one before it when it gets as large), so a batch is
    looked up in O(log² n) and each hash is merged O(log n) times.
    """

    def __init__(self) -> None:
        self._runs: list[np.ndarray] = []

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)

    def add(self, keys: list[int]) -> np.ndarray:
        """Add a batch's keys; True where a key was added before (earlier in ``keys`` too)."""
        hashes = np.asarray(keys, dtype=np.int64)
        repeated = np.zeros(len(hashes), dtype=bool)
        for run in self._runs:
            positions = np.minimum(np.searchsorted(run, hashes), len(run) - 1)
            repeated |= run[positions] == hashes
        order = np.argsort(hashes, kind="stable")  # equal keys keep their order: first one is new
        repeated[order[1:]] |= hashes[order[1:]] == hashes[order[:-1]]
        new = np.unique(hashes[~repeated])
        if len(new):
            self._runs.append(new)
        while len(self._runs) > 1 and len(self._runs[-1]) >= len(self._runs[-2]):
            last = self._runs.pop()
            self._runs[-1] = np.sort(np.concatenate([self._runs[-1], last]))
        return repeated


@dataclass
class Batch:
    """A prepared batch: its encoded actions, the documents that failed before any request (id or
    where it was read, reason), its empty documents' ids, the ids that earlier batches of the run
    wrote already, its duplicate ids and its tokens (known and unknown to the model)."""

    actions: list[EncodedAction]
    invalid: list[tuple[str, str]] = field(default_factory=list)
    empty_ids: list[str] = field(default_factory=list)
    written_before: frozenset[str] = frozenset()
    duplicates: list[str] = field(default_factory=list)
    tokens: int = 0
    unknown_tokens: int = 0
    settled: bool = False  # counted into the report (once)
    ids: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.ids = frozenset(action.doc_id for action in self.actions)

    @property
    def read(self) -> int:
        """The documents read into this batch."""
        return len(self.actions) + len(self.invalid)


class BatchPreparer:
    """Check, vectorize and encode batches of one run: y' = Wy/‖Wy‖_S as bulk actions.

    CPU work only (the asyncio API runs it in a worker thread). It keeps the ids seen so far in
    the run, and each document's position (to name a document without an id).

    Parameters
    ----------
    model : SoftCosineModel
    target : str
        The ``_index`` of the actions: the index's write alias (or the index).
    expansion : {"query", "documents"}
        The index's side of S: with ``"documents"`` each document carries Sy' too.
    dumps : callable
        The client's JSON serializer (value → bytes).
    max_request_bytes : int
        The largest encoded document (action and source lines) that may be sent.
    encoder : SentenceEncoder, optional
        For an index with dense vectors (:mod:`es_scm.index.dense`): the encoder of the
        documents' texts, whose vectors each document carries in ``scm.dense``.
    """

    def __init__(
        self,
        model: SoftCosineModel,
        target: str,
        *,
        expansion: str,
        dumps: Dumps,
        max_request_bytes: int,
        encoder: SentenceEncoder | None = None,
    ) -> None:
        self.model = model
        self.encoder = encoder
        self.target = target
        self.expansion = expansion
        self.dumps = dumps
        self.max_request_bytes = max_request_bytes
        self._term_keys = feature_keys(len(model.terms))
        self._seen = SeenIds()
        self._positions = itertools.count()

    def prepare(self, items: Sequence[Any]) -> Batch:
        """The batch of ``items`` (documents, mappings, or records the corpus could not read)."""
        documents: list[Document] = []
        invalid = []
        for item in items:
            checked = self._checked(item, next(self._positions))
            if isinstance(checked, Document):
                documents.append(checked)
            else:
                invalid.append(checked)
        duplicates, written_before = self._duplicates(documents)
        texts = [document.text for document in documents]
        tokens = TokenCounts()
        weights = self.model.vectorize_many(texts, role="document", tokens=tokens)
        matrix = self.model.similarity_matrix
        normalized = matrix.normalize(weights)
        expanded = matrix.expand_documents(normalized) if self.expansion == "documents" else None
        metadata = [document.metadata for document in documents]
        dense = encode_texts(self.encoder, texts) if self.encoder is not None and texts else None
        sources = encode_documents(texts, normalized, metadata, self._term_keys, expanded, dense)
        actions, empty_ids = [], []
        for document, source in zip(documents, sources, strict=True):
            action, problem = self._encoded(document.id, source)
            if problem is not None:
                invalid.append((document.id, problem))
                continue
            actions.append(action)
            if source["scm"]["empty"]:
                empty_ids.append(document.id)
        return Batch(
            actions, invalid, empty_ids, written_before, duplicates, tokens.tokens, tokens.unknown
        )

    def _checked(self, item: Any, position: int) -> Document | tuple[str, str]:
        """The document, or its name (its id, where it was read, or ``#position``) and why it
        cannot be indexed."""
        if isinstance(item, InvalidRecord):
            return item.where, item.reason
        try:
            document = as_document(item, position)
        except ValueError as error:
            doc_id = item.get("id") if isinstance(item, Mapping) else None
            name = doc_id if isinstance(doc_id, str) and doc_id else f"#{position}"
            return name, f"invalid document: {error}"
        size = len(document.id.encode("utf-8"))
        if size > MAX_ID_BYTES:
            return document.id, f"the id is {size} bytes; Elasticsearch allows {MAX_ID_BYTES}"
        problem = metadata_problem(document.metadata, self._serializable)
        if problem is not None:
            return document.id, problem
        return document

    def _serializable(self, value: Any) -> bool:
        """Whether the client's serializer writes ``value`` (dates, UUIDs, NumPy values...)."""
        try:
            self.dumps(value)
        except Exception:  # the serializer's own error, or a TypeError of the value
            return False
        return True

    def _encoded(self, doc_id: str, source: Mapping[str, Any]) -> tuple[EncodedAction, str | None]:
        """The document's two lines, or why it cannot be sent."""
        try:
            lines = b"%b\n%b\n" % (
                self.dumps({"index": {"_index": self.target, "_id": doc_id}}),
                self.dumps(source),
            )
        except Exception as error:  # the serializer's own error
            causes = getattr(error, "errors", ()) or (error,)
            reason = f"cannot be serialized as JSON ({type(causes[0]).__name__})"
            return EncodedAction(doc_id, b""), reason
        action = EncodedAction(doc_id, lines)
        if action.size > self.max_request_bytes:
            return action, (
                f"the document is {action.size:,} bytes as JSON, over the "
                f"{self.max_request_bytes:,} bytes a bulk request may carry (max_request_bytes; "
                "Elasticsearch refuses a request over its http.max_content_length, 100 MB by "
                "default): it was not sent"
            )
        return action, None

    def _duplicates(self, documents: list[Document]) -> tuple[list[str], frozenset[str]]:
        """The ids seen before in the run (earlier in the batch too), and those of them that
        earlier batches wrote."""
        repeated = self._seen.add([hash(document.id) for document in documents])
        ids = [document.id for document in documents]
        first_here = {doc_id for doc_id, again in zip(ids, repeated, strict=True) if not again}
        duplicates = list(itertools.compress(ids, repeated))
        return duplicates, frozenset(duplicates) - first_here


def settle_first(in_flight: Iterable[Batch], batch: Batch) -> int:
    """How many of the batches in flight (oldest first) must be done before ``batch`` is sent:
    up to the last that shares an id with it, so that the later copy of a document is written
    last."""
    sharing = [n for n, earlier in enumerate(in_flight) if not earlier.ids.isdisjoint(batch.ids)]
    return sharing[-1] + 1 if sharing else 0


def settle(report: IngestReport, batch: Batch, outcome: BatchOutcome) -> None:
    """Count what became of ``batch`` into ``report`` (once): what ``outcome`` says was written
    or failed, and its other documents as skipped."""
    if batch.settled:
        return
    batch.settled = True
    _count_read(report, batch)
    report.created += outcome.created
    report.updated += outcome.updated
    report.skipped += len(batch.actions) - outcome.done
    for doc_id, reason in outcome.failures:
        _fail(report, doc_id, reason)
    failed_ids = {doc_id for doc_id, _ in outcome.failures}
    stored_empty = [doc_id for doc_id in batch.empty_ids if doc_id not in failed_ids]
    report.empty += len(stored_empty)
    report.empty_ids.extend(stored_empty[: max(0, SHOWN - len(report.empty_ids))])


def skip(report: IngestReport, batch: Batch | None = None, unread: Sequence[Any] = ()) -> None:
    """Count documents that were never sent: a prepared ``batch`` (its documents skipped, those
    that failed its checks failed) and ``unread`` ones, read but not prepared."""
    report.skipped += len(unread)
    if batch is not None and not batch.settled:
        settle(report, batch, BatchOutcome())


def conclude(report: IngestReport, model: SoftCosineModel, index: str) -> None:
    """Warn of drift (documents far less known to the model than its own corpus) and log."""
    drift = TokenCounts(report.tokens, report.unknown_tokens).drift(model.vocabulary)
    if drift is not None:
        report.warnings.append(drift)
    logger.info("%s: %s", index, report.summary())


def _count_read(report: IngestReport, batch: Batch) -> None:
    report.tokens += batch.tokens
    report.unknown_tokens += batch.unknown_tokens
    report.duplicates += len(batch.duplicates)
    room = max(0, SHOWN - len(report.duplicate_ids))
    report.duplicate_ids.extend(batch.duplicates[:room])
    for doc_id, reason in batch.invalid:
        _fail(report, doc_id, reason)


def _fail(report: IngestReport, doc_id: str, reason: str) -> None:
    report.failed += 1
    if len(report.failures) < SHOWN:
        report.failures.append((doc_id, reason))
