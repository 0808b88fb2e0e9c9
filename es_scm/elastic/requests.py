"""The options of the Elasticsearch side as typed values, each checked once, where it enters.

A public method takes its options as keyword arguments (explicit signatures); it turns them into
one of these frozen values at once, which says what is wrong with a bad one in one line, and the
layers below receive the value and check nothing again:

* :class:`SearchRequest` — one search: the method, the query text, the page, the filters,
  explanations, and hybrid search's fusion and depth;
* :class:`RescoreRequest` — which candidates a rescore reads;
* :class:`IndexLayout` — what a new index is made of (shards, replicas, analyzer, metadata
  mapping, the side of S);
* :class:`IngestOptions` — how documents are sent (batches, retries, requests in flight).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from es_scm.defaults import EXPANSIONS
from es_scm.elastic.filters import Filter, filter_clauses
from es_scm.elastic.hybrid import resolve_fusion
from es_scm.elastic.query import query_text
from es_scm.fusion import Fusion
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
    "METHODS",
    "METHOD_OPTIONS",
    "Filter",
    "IndexLayout",
    "IngestOptions",
    "Method",
    "RescoreRequest",
    "SearchRequest",
    "check_method_options",
]

#: The search methods of a searcher that ``batch_search`` runs (``method=``).
Method = Literal["search", "native", "hybrid", "bm25"]
METHODS = ("search", "native", "hybrid", "bm25")
#: The ranking each method's hits follow (``SearchResult.mode``).
MODES = {"search": "exact", "native": "native", "hybrid": "hybrid", "bm25": "bm25"}
#: The keyword arguments of each method that ``batch_search`` passes on.
METHOD_OPTIONS = {
    "search": ("from_", "filter", "explain"),
    "native": ("from_", "filter", "explain"),
    "hybrid": ("from_", "filter", "explain", "fusion", "depth"),
    "bm25": ("from_", "filter"),
}
_METHODS = Options(METHODS)
_SECONDS = Interval(float, 0.0, None)
#: The default largest bulk request, and so the largest document (encoded as JSON): half of
#: Elasticsearch's default ``http.max_content_length`` (100 MB).
MAX_REQUEST_BYTES = 50 * 2**20


def check_method_options(method: str, options: Mapping[str, Any]) -> None:
    """Refuse a ``method`` that is not a search method, or an option it does not take."""
    check(method, "method", _METHODS)
    unknown = sorted(set(options) - set(METHOD_OPTIONS[method]))
    if unknown:
        raise ValueError(
            f"{unknown[0]} is not an option of method={method!r}; its options are "
            f"{', '.join(METHOD_OPTIONS[method])}"
        )


@dataclass(frozen=True)
class SearchRequest:
    """One search, checked: the ``method`` (``"search"``: exact), the query ``text`` (as
    :func:`~es_scm.elastic.query.query_text` reads it) and its number of ``words``, the page
    (``k`` after ``from_``), the filter clauses, whether to explain the hits, and hybrid
    search's ``fusion`` and ``depth`` (None for the other methods)."""

    method: str
    text: str
    words: int
    k: int
    from_: int
    filters: tuple[dict[str, Any], ...]
    explain: bool = False
    fusion: Fusion | None = None
    depth: int | None = None

    @classmethod
    def of(
        cls,
        method: str,
        query: str,
        k: Any,
        *,
        from_: Any = 0,
        filter: Filter = None,
        explain: Any = False,
        fusion: Fusion | str | None = None,
        depth: Any = None,
        max_words: int,
        filter_policy: str = "any",
        model_hybrid: Mapping[str, Any] | None = None,
    ) -> SearchRequest:
        """Check the keyword arguments of a search (``model_hybrid``: the model's own hybrid
        settings, read by hybrid search when ``fusion`` or ``depth`` is None)."""
        method = check(method, "method", _METHODS)
        k = check(k, "k", POSITIVE_INT)
        from_ = check(from_, "from_", NON_NEGATIVE_INT)
        explain = check(explain, "explain", Boolean())
        filters = filter_clauses(filter, filter_policy)
        if not isinstance(query, str):
            raise ValueError(f"query must be a str, got {type(query).__name__}")
        text, words = query_text(query, max_words)
        if method != "hybrid":
            return cls(method, text, words, k, from_, filters, explain)
        chosen, depth = resolve_fusion(
            fusion, check(depth, "depth", OrNone(POSITIVE_INT)), model_hybrid
        )
        return cls(method, text, words, k, from_, filters, explain, chosen, max(depth, from_ + k))

    @property
    def mode(self) -> str:
        """The ranking the hits follow: ``"exact"``, ``"native"``, ``"hybrid"`` or ``"bm25"``."""
        return MODES[self.method]

    @property
    def need(self) -> int:
        """How many of the best documents the page needs: ``from_ + k``."""
        return self.from_ + self.k


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "shards", check(self.shards, "shards", POSITIVE_INT))
        object.__setattr__(self, "replicas", check(self.replicas, "replicas", NON_NEGATIVE_INT))
        object.__setattr__(
            self, "expansion", check(self.expansion, "expansion", Options(EXPANSIONS))
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
