"""The options of the Elasticsearch side as typed values, each checked once, where it enters.

A public method takes its options as keyword arguments (explicit signatures); it turns them into
one of these frozen values at once, which says what is wrong with a bad one in one line, and the
layers below receive the value and check nothing again:

* :class:`SearchRequest` — one search: the method, the query text, the page, the filters,
  explanations, hybrid search's fusion and depth, and the dense leg's query;
* :class:`RescoreRequest` — which candidates a rescore reads;
* :class:`IndexLayout` — what a new index is made of (shards, replicas, analyzer, metadata
  mapping, the side of S, dense vectors);
* :class:`IngestOptions` — how documents are sent (batches, retries, requests in flight).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from es_scm.defaults import DENSE_DEFAULTS, EXPANSIONS
from es_scm.elastic.dense import MAX_KNN, DenseQuery
from es_scm.elastic.filters import Filter, filter_clauses
from es_scm.elastic.hybrid import hybrid_legs, resolve_fusion
from es_scm.elastic.query import query_text
from es_scm.fusion import Fusion
from es_scm.options import DenseOptions
from es_scm.validation import (
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    Boolean,
    Interval,
    Options,
    OrNone,
    check,
)

__all__ = [
    "MAX_REQUEST_BYTES",
    "Dense",
    "DenseQuery",
    "Filter",
    "IndexLayout",
    "IngestOptions",
    "Method",
    "RescoreRequest",
    "SearchRequest",
    "dense_option",
    "dense_options",
    "dense_per_query",
]

#: The search methods of a searcher that ``batch_search`` runs (``method=``); each is a plan of
#: :mod:`es_scm.elastic.plans` (``METHODS`` there: its ranking, its options).
Method = Literal["search", "native", "hybrid", "bm25", "dense"]
#: What ``dense=`` may be: None (no dense leg), True (the index's own vectors, the query
#: encoded by its encoder) or a :class:`~es_scm.elastic.dense.DenseQuery` (a field and a vector).
Dense = DenseQuery | bool | None
_SECONDS = Interval(float, 0.0, None)
#: The default largest bulk request, and so the largest document (encoded as JSON): half of
#: Elasticsearch's default ``http.max_content_length`` (100 MB).
MAX_REQUEST_BYTES = 50 * 2**20


@dataclass(frozen=True)
class SearchRequest:
    """One search, checked: the ``method`` (``"search"``: exact), the query ``text`` (as
    :func:`~es_scm.elastic.query.query_text` reads it) and its number of ``words``, the page
    (``k`` after ``from_``), the filter clauses, whether to explain the hits, hybrid search's
    ``fusion`` and ``depth`` (None for the other methods), and the ``dense`` leg's query (hybrid
    and dense search: True until the searcher encodes the query with the index's encoder, then
    a :class:`~es_scm.elastic.dense.DenseQuery`)."""

    method: str
    text: str
    words: int
    k: int
    from_: int
    filters: tuple[dict[str, Any], ...]
    explain: bool = False
    fusion: Fusion | None = None
    depth: int | None = None
    dense: DenseQuery | bool | None = None

    @classmethod
    def common(
        cls,
        method: str,
        query: Any,
        k: Any,
        *,
        from_: Any = 0,
        filter: Filter = None,
        max_words: int,
        filter_policy: str = "any",
    ) -> SearchRequest:
        """The options every method takes, checked: the query text (and its words), ``k``,
        ``from_`` and the filters (a method adds its own: :mod:`es_scm.elastic.plans`)."""
        k = check(k, "k", POSITIVE_INT)
        from_ = check(from_, "from_", NON_NEGATIVE_INT)
        filters = () if filter is None else filter_clauses(filter, filter_policy)
        if not isinstance(query, str):
            raise ValueError(f"query must be a str, got {type(query).__name__}")
        text, words = query_text(query, max_words)
        return cls(method, text, words, k, from_, filters)

    def explained(self, explain: Any) -> SearchRequest:
        """This request with ``explain`` checked."""
        return replace(self, explain=check(explain, "explain", Boolean()))

    def dense_search(self, dense: Any) -> SearchRequest:
        """This request as a dense search: its kNN query (``dense``: None for the index's own
        vectors) and ``from_ + k`` within Elasticsearch's largest kNN k."""
        if self.need > MAX_KNN:
            raise ValueError(
                f"from_ + k must be at most {MAX_KNN} for dense search (Elasticsearch's "
                f"largest kNN k), got {self.need}"
            )
        query = dense_option(dense)
        return replace(self, dense=True if query is None else query)

    def hybrid_search(
        self,
        fusion: Fusion | str | None,
        depth: Any,
        dense: Any,
        model_hybrid: Mapping[str, Any] | None,
    ) -> SearchRequest:
        """This request as a hybrid search: its fusion and depth (None: the model's own, else
        the defaults; ``depth`` at least ``from_ + k``) and its dense leg (``dense``)."""
        query = dense_option(dense)
        chosen, depth = resolve_fusion(
            fusion, check(depth, "depth", OrNone(POSITIVE_INT)), model_hybrid, query is not None
        )
        depth = max(depth, self.need)
        if query is not None and depth > MAX_KNN:
            raise ValueError(f"from_ + k must be at most {MAX_KNN} with a dense leg, got {depth}")
        return replace(self, fusion=chosen, depth=depth, dense=query)

    @property
    def legs(self) -> tuple[str, ...]:
        """The legs of a hybrid search (:func:`~es_scm.elastic.hybrid.hybrid_legs`)."""
        assert self.fusion is not None, "a hybrid search has a fusion"
        return hybrid_legs(self.fusion, self.dense is not None)

    @property
    def need(self) -> int:
        """How many of the best documents the page needs: ``from_ + k``."""
        return self.from_ + self.k


def dense_per_query(
    queries: Mapping[str, str] | Sequence[str], dense: Any
) -> list[DenseQuery | bool | None]:
    """``batch_search``'s ``dense=`` as one value per query: None, True or one
    :class:`DenseQuery` for every query, or the queries' own — a sequence in the order of a
    sequence of queries, a mapping by query id for a mapping of them.

    Raises
    ------
    ValueError
        A sequence of another length, a mapping that misses a query id (named).
    """
    n = len(queries)
    if dense is None or isinstance(dense, bool | DenseQuery):
        return [dense] * n
    if isinstance(dense, Mapping):
        if not isinstance(queries, Mapping):
            raise ValueError("dense= by query id goes with queries given by id (a mapping)")
        missing = [qid for qid in queries if qid not in dense]
        if missing:
            raise ValueError(f"dense= has no DenseQuery for the query {missing[0]!r}")
        return [dense[qid] for qid in queries]
    if isinstance(dense, Sequence) and not isinstance(dense, str):
        if len(dense) != n:
            raise ValueError(f"dense= holds {len(dense)} DenseQuery values for {n} queries")
        return list(dense)
    return [dense_option(dense)] * n  # a bad value: its own error


def dense_option(dense: Any) -> DenseQuery | bool | None:
    """``dense=`` checked: None (or False), True, or a :class:`DenseQuery`."""
    if dense is None or dense is False:
        return None
    if dense is True or isinstance(dense, DenseQuery):
        return dense
    raise ValueError(
        "dense must be None, True (the index's own vectors, the query encoded by its encoder) "
        f"or a DenseQuery(field, vector), got {type(dense).__name__}"
    )


@dataclass(frozen=True)
class RescoreRequest:
    """A rescore, checked: the query ``text``, the candidates (``ids``, or the top ``size`` of
    ``es_query``), the top ``k`` of them kept (all if None), explained or not."""

    text: str
    ids: tuple[str, ...] | None
    es_query: dict[str, Any] | None
    size: int
    k: int | None
    explain: bool

    @classmethod
    def of(
        cls,
        query: str,
        ids: Sequence[str] | None,
        es_query: Mapping[str, Any] | None,
        size: Any,
        k: Any,
        explain: Any,
        *,
        max_words: int,
    ) -> RescoreRequest:
        if (ids is None) == (es_query is None):
            raise ValueError("rescore needs exactly one of ids= or es_query=")
        text, _ = query_text(query, max_words)
        return cls(
            text,
            None if ids is None else tuple(ids),
            None if es_query is None else dict(es_query),
            check(size, "size", POSITIVE_INT),
            check(k, "k", OrNone(POSITIVE_INT)),
            check(explain, "explain", Boolean()),
        )


@dataclass(frozen=True)
class IndexLayout:
    """What a new index is made of (see :meth:`~es_scm.elastic.index.IndexOperations.create`)."""

    shards: int = 1
    replicas: int = 0
    text_analyzer: str | None = None
    metadata_mapping: Mapping[str, Any] | None = None
    expansion: str = "query"
    dense: DenseOptions | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dense", dense_options(self.dense))
        object.__setattr__(self, "shards", check(self.shards, "shards", POSITIVE_INT))
        object.__setattr__(self, "replicas", check(self.replicas, "replicas", NON_NEGATIVE_INT))
        object.__setattr__(
            self, "expansion", check(self.expansion, "expansion", Options(EXPANSIONS))
        )


def dense_options(dense: Any) -> DenseOptions | None:
    """``dense=`` of an index's creation: None (or False), True (:data:`~es_scm.defaults.
    DENSE_DEFAULTS`) or a :class:`~es_scm.options.DenseOptions`."""
    if dense is None or dense is False:
        return None
    if dense is True:
        return DENSE_DEFAULTS
    if isinstance(dense, DenseOptions):
        return dense
    raise ValueError(
        "dense must be None, True (the default encoder, a flat field) or a "
        f"DenseOptions(encoder=..., index_options=...), got {type(dense).__name__}"
    )


@dataclass(frozen=True)
class IngestOptions:
    """How documents are sent (see :meth:`~es_scm.elastic.aio.AsyncSCMIndex.index_documents`
    and :mod:`es_scm.elastic.bulk`)."""

    batch_size: int = 500
    max_retries: int = 5
    initial_backoff: float = 1.0
    retry_budget: float = 60.0
    concurrency: int = 2
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_backoff: float = 10.0

    def __post_init__(self) -> None:
        for name, constraint in (
            ("batch_size", POSITIVE_INT),
            ("max_retries", NON_NEGATIVE_INT),
            ("initial_backoff", _SECONDS),
            ("max_backoff", _SECONDS),
            ("retry_budget", _SECONDS),
            ("concurrency", POSITIVE_INT),
            ("max_request_bytes", POSITIVE_INT),
        ):
            object.__setattr__(self, name, check(getattr(self, name), name, constraint))
