"""The Elasticsearch index owned by es-scm: its schema and the ingestion of documents.

Each document ``y`` is stored as (paper §4, Theorems 4.1–4.3):

``text``
    The text, stored in ``_source`` and analyzed for BM25 (``match`` queries keep working).
``scm.vector``
    A ``sparse_vector`` holding the normalized vector y' = Wy / √((Wy)ᵀS(Wy)) keyed by term id.
    A query expanded to x' = SᵀWx scores x'ᵀy' = (Wx)ᵀS(Wy)/‖Wy‖_S by a plain sparse dot product
    (Theorem 4.1 with the document-side normalization of Theorem 4.2), so Elasticsearch ranks by
    the SCM up to the query's constant norm. Lucene's postings keep only the 9 most significant
    bits of each value (truncating), which the exact mode accounts for (see :mod:`es_scm.search`);
    ``_source`` keeps the float64 values as sent, which the exact rescoring reads: one copy of
    the vector serves both (the index keeps vectors in ``_source``, see :func:`index_settings`).
``scm.empty``
    True when y has no term of the vocabulary: such documents are stored and counted.
``metadata``
    The caller's other fields, passed through unchanged.

The index ``_meta`` records the model's ``model_id`` and parameters. Writing to or searching an
index built with another model raises :class:`ModelMismatchError`: scores would be silently wrong.

Ingestion is a stream: documents are vectorized in batches and sent with the official client's
``helpers.streaming_bulk`` (429s retried with backoff by the helper); a batch that fails on a
connection error or a 5xx is retried with exponential backoff, and what still fails is counted
and reported per document with its reason. Document ids make writes idempotent: a rerun after a
failure overwrites instead of duplicating.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from elasticsearch import ApiError, ConnectionError, ConnectionTimeout, Elasticsearch, helpers

from ._version import __version__
from .connection import cluster_version

if TYPE_CHECKING:
    from .model import SoftCosineModel

SCHEMA_VERSION = 2  # 1 kept the exact vector in a separate base64 object
TEXT_FIELD = "text"
VECTOR_FIELD = "scm.vector"
METADATA_FIELD = "metadata"
RETRYABLE_STATUSES = (429, 500, 502, 503, 504)
# Lucene's FeatureField stores float32(v) truncated to 9 significant bits:
# v·(1 − 2⁻²⁴)(1 − 2⁻⁸) < stored ≤ v·(1 + 2⁻²⁴), so stored ≥ v·(1 − FEATURE_VALUE_ERROR).
FEATURE_VALUE_ERROR = 2.0**-8 + 2.0**-23


class ModelMismatchError(ValueError):
    """The index was built with a different model (or is not an es-scm index)."""


class IndexNotFoundError(LookupError):
    """The index does not exist."""


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


def index_mapping(model: SoftCosineModel) -> dict[str, Any]:
    """The index mapping for documents vectorized by ``model``, with the model in ``_meta``."""
    return {
        "_meta": {
            "es_scm": {
                "schema_version": SCHEMA_VERSION,
                "model_id": model.model_id,
                "n_terms": len(model.terms),
                "similarity_nnz": int(model.similarity_matrix.nnz),
                "model": model.get_config(),
                "created_with": f"es-scm {__version__}",
            }
        },
        "dynamic": "strict",
        "properties": {
            TEXT_FIELD: {"type": "text"},
            "scm": {
                "properties": {
                    "vector": {"type": "sparse_vector", "index_options": {"prune": False}},
                    "empty": {"type": "boolean"},
                }
            },
            METADATA_FIELD: {"type": "object", "dynamic": True},
        },
    }


def index_settings(client: Elasticsearch, *, shards: int = 1, replicas: int = 0) -> dict[str, Any]:
    """The index settings: shards, replicas, and ``_source`` that keeps the vectors (9.2+).

    Since 9.2 Elasticsearch leaves ``sparse_vector`` values out of the stored ``_source``
    (``index.mapping.exclude_source_vectors``) and rebuilds them from the index when asked, with
    the index's 9-bit precision. es-scm needs the exact values the rescorer reads, and cutting
    the vector out also means parsing every document a second time: for vectors of ~60
    features it made Elasticsearch's indexing of a document 1.4 times as costly
    (``scripts/bench_ingest.py``).
    """
    settings: dict[str, Any] = {"number_of_shards": shards, "number_of_replicas": replicas}
    if _version_tuple(cluster_version(client)) >= (9, 2):
        settings["index.mapping.exclude_source_vectors"] = False
    return settings


def _version_tuple(version: str) -> tuple[int, ...]:
    numbers = []
    for part in version.split("-")[0].split(".")[:3]:
        numbers.append(int(part) if part.isdigit() else 0)
    return tuple(numbers)


def check_model(client: Elasticsearch, index: str, model: SoftCosineModel) -> dict[str, Any]:
    """Check that ``index`` (an index, alias or pattern) was built with ``model``.

    Returns
    -------
    dict
        The ``_meta.es_scm`` of the index.

    Raises
    ------
    IndexNotFoundError
        If nothing matches ``index``.
    ModelMismatchError
        If a matching index is not an es-scm index or records another ``model_id``.
    """
    response = client.options(ignore_status=404).indices.get_mapping(index=index)
    if response.meta.status == 404 or not response.body:
        raise IndexNotFoundError(f"index {index!r} does not exist")
    meta: dict[str, Any] = {}
    for concrete, body in response.body.items():
        meta = body.get("mappings", {}).get("_meta", {}).get("es_scm", {})
        if not meta:
            raise ModelMismatchError(f"index {concrete!r} was not created by es-scm")
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise ModelMismatchError(
                f"index {concrete!r} has es-scm schema version {meta.get('schema_version')}, "
                f"this es-scm reads version {SCHEMA_VERSION}; reindex the documents"
            )
        if meta.get("model_id") != model.model_id:
            raise ModelMismatchError(
                f"index {concrete!r} was built with model {meta.get('model_id', '?')[:12]}, "
                f"not with this model {model.model_id[:12]}; use the same model or reindex"
            )
    return meta


def document_sources(
    texts: Sequence[str],
    weights: Any,
    norms: np.ndarray,
    metadata: Sequence[Mapping[str, Any] | None],
    term_keys: np.ndarray,
) -> list[dict[str, Any]]:
    """The ``_source`` of a batch of documents from their weighted vectors Wy (CSR rows).

    ``norms`` are the soft norms ‖Wy‖_S and ``term_keys[i]`` (an object array of str) the feature
    key of term ``i``. The
    normalization y' = Wy/‖Wy‖_S runs on the whole batch at once; only the assembly of each
    document's dictionaries is per document.
    """
    indptr, indices, data = weights.indptr, weights.indices, weights.data
    rows = np.repeat(np.arange(len(texts)), np.diff(indptr))
    with np.errstate(divide="ignore", invalid="ignore"):
        normalized = data / norms[rows]
    # sparse_vector holds positive values only (all of them with S ≥ 0 and W ≥ 0)
    positive = (norms[rows] > 0.0) & (normalized > 0.0)
    keys = term_keys[indices[positive]].tolist()
    values = normalized[positive].tolist()
    bounds = np.concatenate([[0], np.cumsum(np.bincount(rows[positive], minlength=len(texts)))])
    sources = []
    for row, text in enumerate(texts):
        first, last = int(bounds[row]), int(bounds[row + 1])
        scm: dict[str, Any] = {"empty": last == first}
        if last > first:
            scm["vector"] = dict(zip(keys[first:last], values[first:last], strict=True))
        source: dict[str, Any] = {TEXT_FIELD: text, "scm": scm}
        if metadata[row]:
            source[METADATA_FIELD] = dict(metadata[row])
        sources.append(source)
    return sources


def stored_vector(source: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """A document's normalized vector y' from its ``_source``: (term ids, float64 values)."""
    vector = source.get("scm", {}).get("vector") or {}
    ids = np.fromiter(map(int, vector.keys()), dtype=np.int64, count=len(vector))
    values = np.fromiter(vector.values(), dtype=np.float64, count=len(vector))
    return ids, values


def _split_document(position: int, document: Mapping[str, Any]) -> tuple[str, str, dict]:
    if not isinstance(document, Mapping):
        raise ValueError(f"document #{position} must be a mapping with 'id' and 'text'")
    doc_id, text = document.get("id"), document.get("text")
    if doc_id is None or (isinstance(doc_id, str) and not doc_id):
        raise ValueError(f"document #{position} has no 'id'")
    if not isinstance(text, str):
        raise ValueError(f"document {doc_id!r} has no 'text' string")
    metadata = {k: v for k, v in document.items() if k not in ("id", "text")}
    return str(doc_id), text, metadata


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
        Retries of a failed bulk request (connection error, 429 or 5xx) before its documents
        are reported as failed; the wait doubles from ``initial_backoff`` up to ``max_backoff``.
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
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be non-negative, got {max_retries}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.client = client
        self.index = index
        self.model = model
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.concurrency = concurrency
        self._term_keys = np.array([str(i) for i in range(len(model.terms))], dtype=object)

    def run(self, documents: Iterable[Mapping[str, Any]], progress: Any = None) -> IngestReport:
        """Ingest a stream of ``{"id", "text", ...}`` documents; return the report.

        ``progress`` is an object with ``update(n)`` (e.g. a tqdm bar), or None. Batches are
        vectorized while up to ``concurrency`` earlier ones are in flight, so Python and
        Elasticsearch work at the same time; at most ``concurrency + 1`` batches are held in
        memory.
        """
        report = IngestReport()
        started = time.perf_counter()
        positions = itertools.count()
        stream = iter(documents)
        in_flight: deque[tuple[Future, list[dict], list[str]]] = deque()
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="es-scm-bulk") as sender:
            while batch := list(itertools.islice(stream, self.batch_size)):
                actions, empty_ids = self._prepare(batch, positions)
                while len(in_flight) >= self.concurrency:
                    self._account(*in_flight.popleft(), report, progress)
                in_flight.append((sender.submit(self._send, actions), actions, empty_ids))
            while in_flight:
                self._account(*in_flight.popleft(), report, progress)
        report.seconds = time.perf_counter() - started
        return report

    def _prepare(self, batch: list, positions: Iterator[int]) -> tuple[list[dict], list[str]]:
        """Vectorize a batch: its bulk actions and the ids of its empty documents."""
        parsed = [_split_document(next(positions), document) for document in batch]
        texts = [text for _, text, _ in parsed]
        weights = self.model.vectorize_many(texts, role="document")
        norms = np.atleast_1d(self.model.similarity_matrix.soft_norm(weights))
        sources = document_sources(
            texts, weights, norms, [metadata for _, _, metadata in parsed], self._term_keys
        )
        actions = [
            {"_index": self.index, "_id": doc_id, "_source": source}
            for (doc_id, _, _), source in zip(parsed, sources, strict=True)
        ]
        empty_ids = [
            doc_id for (doc_id, _, _), s in zip(parsed, sources, strict=True) if s["scm"]["empty"]
        ]
        return actions, empty_ids

    @staticmethod
    def _account(
        sending: Future, actions: list[dict], empty_ids: list[str], report: IngestReport, progress
    ) -> None:
        failures = sending.result()
        failed_ids = {doc_id for doc_id, _ in failures}
        report.failed += len(failures)
        report.indexed += len(actions) - len(failures)
        report.failures.extend(failures)
        stored_empty = [doc_id for doc_id in empty_ids if doc_id not in failed_ids]
        report.empty += len(stored_empty)
        report.empty_ids.extend(stored_empty)
        if progress is not None:
            progress.update(len(actions))

    def _send(self, actions: list[dict]) -> list[tuple[str, str]]:
        """Bulk ``actions``, retrying the request; return (id, reason) of what failed."""
        delay = self.initial_backoff
        for attempt in range(self.max_retries + 1):
            try:
                return self._bulk(actions)
            except (ConnectionError, ConnectionTimeout) as error:
                reason = f"connection error: {error}"
            except ApiError as error:
                reason = f"HTTP {error.meta.status}: {error}"
                if error.meta.status not in RETRYABLE_STATUSES:
                    break
            if attempt < self.max_retries:
                time.sleep(delay)
                delay = min(delay * 2, self.max_backoff)
        return [(action["_id"], reason) for action in actions]

    def _bulk(self, actions: list[dict]) -> list[tuple[str, str]]:
        failures = []
        for ok, item in helpers.streaming_bulk(
            self.client,
            actions,
            chunk_size=len(actions),
            max_chunk_bytes=50 * 1024 * 1024,
            raise_on_error=False,
            raise_on_exception=True,
            max_retries=self.max_retries,
            initial_backoff=self.initial_backoff,
            max_backoff=self.max_backoff,
        ):
            if not ok:
                result = next(iter(item.values()))
                failures.append((str(result.get("_id")), _reason(result)))
        return failures


def _reason(result: Mapping[str, Any]) -> str:
    error = result.get("error")
    if isinstance(error, Mapping):
        return f"HTTP {result.get('status')}: {error.get('type')}: {error.get('reason')}"
    return f"HTTP {result.get('status')}: {error}"


class SCMIndex:
    """An Elasticsearch index of soft cosine vectors: create, ingest, search, delete.

    Parameters
    ----------
    client : Elasticsearch
        An official client, e.g. from :func:`es_scm.client_from_env`.
    name : str
        The index name (or, for searching, an alias or pattern).
    model : SoftCosineModel
        The model that vectorizes documents and queries; the index records its ``model_id``.
    max_clauses : int, optional
        The most query clauses to send (default: the cluster's limit).
    query_type : {"sparse_vector", "bool"}
        How the expanded query is sent: a ``sparse_vector`` query (default) or a bool of boosted
        ``term`` queries; both score alike, the first is the smaller and faster request.

    Examples
    --------
    >>> index = SCMIndex(client, "news", model)            # doctest: +SKIP
    >>> index.create()                                     # doctest: +SKIP
    >>> report = index.index_documents([{"id": "1", "text": "Obama speaks to the media"}])
    ... # doctest: +SKIP
    >>> index.search("president greets the press", k=10)  # doctest: +SKIP
    """

    def __init__(
        self,
        client: Elasticsearch,
        name: str,
        model: SoftCosineModel,
        *,
        max_clauses: int | None = None,
        query_type: str = "sparse_vector",
    ) -> None:
        if not name or name != name.lower() or any(c in name for c in ' "\\/,|<>?'):
            raise ValueError(f'invalid index name {name!r} (lower case, no spaces or ,/\\|<>?")')
        from .search import Searcher  # search builds on index; import here to avoid a cycle

        self.client = client
        self.name = name
        self.model = model
        # Built now so that bad search options fail here; it does no I/O until the first search.
        self.searcher = Searcher(
            client, name, model, max_clauses=max_clauses, query_type=query_type
        )

    def exists(self) -> bool:
        return bool(self.client.indices.exists(index=self.name))

    def create(self, *, shards: int = 1, replicas: int = 0, exist_ok: bool = False) -> bool:
        """Create the index with es-scm's mapping; return False if it existed (and matches)."""
        if self.exists():
            if not exist_ok:
                raise ValueError(f"index {self.name!r} exists already (pass exist_ok=True)")
            check_model(self.client, self.name, self.model)
            return False
        self.client.indices.create(
            index=self.name,
            settings=index_settings(self.client, shards=shards, replicas=replicas),
            mappings=index_mapping(self.model),
        )
        return True

    def delete(self) -> bool:
        """Delete the index; return False if it did not exist."""
        response = self.client.options(ignore_status=404).indices.delete(index=self.name)
        return response.meta.status != 404

    def check(self) -> dict[str, Any]:
        """Raise unless the index was built with this model; return its ``_meta.es_scm``."""
        return check_model(self.client, self.name, self.model)

    def count(self) -> int:
        return int(self.client.count(index=self.name)["count"])

    def optimize(self, max_num_segments: int = 1) -> None:
        """Force-merge the index into ``max_num_segments`` segments (waits until done).

        An expanded query has hundreds of terms, and Lucene looks each one up and builds a
        scorer for it in every segment: on 100,000 paragraphs, one segment instead of twelve took
        ``exact`` searches from 21.9 to 15.2 ms at p50 (``scripts/bench_search.py``). Worth it
        for a corpus that no longer changes; merging a large index takes a while and needs
        temporary disk space.
        """
        if max_num_segments < 1:
            raise ValueError(f"max_num_segments must be at least 1, got {max_num_segments}")
        self.client.options(request_timeout=3600).indices.forcemerge(
            index=self.name, max_num_segments=max_num_segments, wait_for_completion=True
        )
        self.client.indices.refresh(index=self.name)

    def index_documents(
        self,
        documents: Iterable[Mapping[str, Any]],
        *,
        batch_size: int = 500,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        create: bool = True,
        refresh: bool = True,
        progress: Any = None,
        concurrency: int = 2,
    ) -> IngestReport:
        """Vectorize and bulk-index ``{"id", "text", ...}`` documents (see :class:`IngestReport`).

        The index is created if missing (``create=True``) and checked against the model first.
        ``concurrency`` bulk requests are in flight at once (see :class:`DocumentIngester`).
        """
        if create and not self.exists():
            self.create()
        self.check()
        ingester = DocumentIngester(
            self.client,
            self.name,
            self.model,
            batch_size=batch_size,
            max_retries=max_retries,
            initial_backoff=initial_backoff,
            concurrency=concurrency,
        )
        report = ingester.run(documents, progress=progress)
        if refresh:
            self.client.options(ignore_status=(404, 503)).indices.refresh(index=self.name)
        return report

    def search(self, query: str, k: int = 10, *, mode: str = "exact", from_: int = 0):
        """Search with :meth:`es_scm.search.Searcher.search`."""
        return self.searcher.search(query, k, mode=mode, from_=from_)

    def rescore(self, query: str, **kwargs: Any):
        """Rescore candidates with :meth:`es_scm.search.Searcher.rescore`."""
        return self.searcher.rescore(query, **kwargs)
