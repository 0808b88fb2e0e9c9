"""The Elasticsearch index owned by es-scm: its schema and the ingestion of documents.

Each document ``y`` is stored three ways (paper §4, Theorems 4.1–4.3):

``text``
    The text, stored in ``_source`` and analyzed for BM25 (``match`` queries keep working).
``scm.vector``
    A ``sparse_vector`` holding the normalized vector y' = Wy / √((Wy)ᵀS(Wy)) keyed by term id.
    A query expanded to x' = SᵀWx scores x'ᵀy' = (Wx)ᵀS(Wy)/‖Wy‖_S by a plain sparse dot product
    (Theorem 4.1 with the document-side normalization of Theorem 4.2), so Elasticsearch ranks by
    the SCM up to the query's constant norm. Lucene keeps only the 9 most significant bits of each
    stored value (truncating), which the exact mode accounts for (see :mod:`es_scm.search`).
``scm.exact``
    The exact weighted vector Wy (base64 of int32 term ids and float64 weights: exact, compact and
    fast to decode) and its soft norm ‖Wy‖_S, in ``_source`` only (an ``enabled: false`` object:
    neither parsed nor indexed), for the exact rescoring.
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

import base64
import itertools
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from elasticsearch import ApiError, ConnectionError, ConnectionTimeout, Elasticsearch, helpers

from ._version import __version__

if TYPE_CHECKING:
    from .model import SoftCosineModel

SCHEMA_VERSION = 1
TEXT_FIELD = "text"
VECTOR_FIELD = "scm.vector"
EXACT_FIELD = "scm.exact"
METADATA_FIELD = "metadata"
RETRYABLE_STATUSES = (429, 500, 502, 503, 504)


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
                    "exact": {"type": "object", "enabled": False},
                    "empty": {"type": "boolean"},
                }
            },
            METADATA_FIELD: {"type": "object", "dynamic": True},
        },
    }


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
        if meta.get("model_id") != model.model_id:
            raise ModelMismatchError(
                f"index {concrete!r} was built with model {meta.get('model_id', '?')[:12]}, "
                f"not with this model {model.model_id[:12]}; use the same model or reindex"
            )
    return meta


def document_source(
    text: str,
    weights: Any,
    norm: float,
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The ``_source`` of one document from its weighted vector Wy (a 1-row CSR) and ‖Wy‖_S."""
    ids = weights.indices.astype("<i4")
    values = weights.data.astype("<f8")
    source: dict[str, Any] = {
        TEXT_FIELD: text,
        "scm": {"exact": encode_exact(ids, values, norm), "empty": bool(norm <= 0.0)},
    }
    if norm > 0.0:
        normalized = values / norm
        positive = normalized > 0.0  # sparse_vector holds positive values only
        source["scm"]["vector"] = dict(
            zip(map(str, ids[positive].tolist()), normalized[positive].tolist(), strict=True)
        )
    if metadata:
        source[METADATA_FIELD] = dict(metadata)
    return source


def encode_exact(ids: np.ndarray, weights: np.ndarray, norm: float) -> dict[str, Any]:
    """The exact vector Wy for ``_source``: base64 of little-endian int32 ids / float64 weights.

    Binary is exact and compact: 16 base64 characters per term (4 + 8 bytes), where JSON would
    write an id and up to 17 significant digits of a float; decoding is one ``numpy.frombuffer``.
    """
    return {
        "terms": base64.b64encode(ids.astype("<i4").tobytes()).decode("ascii"),
        "weights": base64.b64encode(weights.astype("<f8").tobytes()).decode("ascii"),
        "norm": float(norm),
    }


def decode_exact(exact: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, float]:
    """Inverse of :func:`encode_exact`: (term ids, weights, soft norm ‖Wy‖_S)."""
    ids = np.frombuffer(base64.b64decode(exact.get("terms", "")), dtype="<i4")
    weights = np.frombuffer(base64.b64decode(exact.get("weights", "")), dtype="<f8")
    return ids, weights, float(exact.get("norm", 0.0))


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
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be non-negative, got {max_retries}")
        self.client = client
        self.index = index
        self.model = model
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff

    def run(self, documents: Iterable[Mapping[str, Any]], progress: Any = None) -> IngestReport:
        """Ingest a stream of ``{"id", "text", ...}`` documents; return the report.

        ``progress`` is an object with ``update(n)`` (e.g. a tqdm bar), or None. The next batch is
        vectorized while the previous one is in flight, so Python and Elasticsearch work at the
        same time; at most two batches are held in memory.
        """
        report = IngestReport()
        started = time.perf_counter()
        positions = itertools.count()
        stream = iter(documents)
        in_flight: tuple[Future, list[dict], list[str]] | None = None
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="es-scm-bulk") as sender:
            while batch := list(itertools.islice(stream, self.batch_size)):
                actions, empty_ids = self._prepare(batch, positions)
                if in_flight is not None:
                    self._account(*in_flight, report, progress)
                in_flight = (sender.submit(self._send, actions), actions, empty_ids)
            if in_flight is not None:
                self._account(*in_flight, report, progress)
        report.seconds = time.perf_counter() - started
        return report

    def _prepare(self, batch: list, positions: Iterator[int]) -> tuple[list[dict], list[str]]:
        """Vectorize a batch: its bulk actions and the ids of its empty documents."""
        parsed = [_split_document(next(positions), document) for document in batch]
        weights = self.model.vectorize_many([text for _, text, _ in parsed], role="document")
        norms = np.atleast_1d(self.model.similarity_matrix.soft_norm(weights))
        actions, empty_ids = [], []
        for row, (doc_id, text, metadata) in enumerate(parsed):
            source = document_source(text, weights[row], norms[row], metadata)
            if source["scm"]["empty"]:
                empty_ids.append(doc_id)
            actions.append({"_index": self.index, "_id": doc_id, "_source": source})
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
    query_type : {"bool", "sparse_vector"}
        How the expanded query is sent: a bool of boosted ``term`` queries (default) or a
        ``sparse_vector`` query; both score alike, the second is a smaller request.

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
        query_type: str = "bool",
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
            settings={"number_of_shards": shards, "number_of_replicas": replicas},
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
    ) -> IngestReport:
        """Vectorize and bulk-index ``{"id", "text", ...}`` documents (see :class:`IngestReport`).

        The index is created if missing (``create=True``) and checked against the model first.
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
