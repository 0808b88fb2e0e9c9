"""The options of the Elasticsearch side as typed values, each checked once, where it enters.

A public method takes its options as keyword arguments (explicit signatures); it turns them into
one of these frozen values at once, which says what is wrong with a bad one in one line, and the
layers below receive the value and check nothing again:

* :class:`SearchRequest` — a search's page, mode, filters, explanations and hybrid options;
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
from es_scm.elastic.hybrid import hybrid_options
from es_scm.options import HybridOptions
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
    "HYBRID_KEYS",
    "MAX_REQUEST_BYTES",
    "Filter",
    "IndexLayout",
    "IngestOptions",
    "Mode",
    "RescoreRequest",
    "SearchRequest",
]

#: The modes of :meth:`~es_scm.elastic.searcher.SearchOperations.search`.
Mode = Literal["native", "exact", "hybrid"]
#: An Elasticsearch query clause, or a list of them, that the documents must match.
Filter = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None
#: The options of hybrid search, which apply to ``mode="hybrid"`` only.
HYBRID_KEYS = ("fusion", "alpha", "rrf_k", "depth")
_MODES = Options(("native", "exact", "hybrid"))
_SECONDS = Interval(float, 0.0, None)
#: The default largest bulk request, and so the largest document (encoded as JSON): half of
#: Elasticsearch's default ``http.max_content_length`` (100 MB).
MAX_REQUEST_BYTES = 50 * 2**20


@dataclass(frozen=True)
class SearchRequest:
    """A search's options, checked: the page (``k`` after ``from_``), the mode, the filter
    clauses, whether to explain the hits, and the hybrid options (hybrid mode only)."""

    k: int
    from_: int
    mode: str
    filters: tuple[dict[str, Any], ...]
    explain: bool
    hybrid: HybridOptions | None

    @classmethod
    def of(
        cls,
        k: Any,
        from_: Any,
        mode: Any,
        filter: Filter,
        explain: Any,
        hybrid: Mapping[str, Any],
        model_hybrid: Mapping[str, Any] | None,
    ) -> SearchRequest:
        """Check the keyword arguments of a search (``hybrid``: the hybrid keywords given, None
        for those not given; ``model_hybrid``: the model's own hybrid settings)."""
        k = check(k, "k", POSITIVE_INT)
        from_ = check(from_, "from_", NON_NEGATIVE_INT)
        mode = check(mode, "mode", _MODES)
        explain = check(explain, "explain", Boolean())
        given = {key: hybrid.get(key) for key in HYBRID_KEYS}
        if mode != "hybrid":
            name = next((key for key, value in given.items() if value is not None), None)
            if name is not None:
                raise ValueError(f"{name} applies to mode='hybrid' only, not to mode={mode!r}")
        options = hybrid_options(model_hybrid, **given) if mode == "hybrid" else None
        return cls(k, from_, mode, filter_clauses(filter), explain, options)

    @property
    def page(self) -> tuple[int, int]:
        """``(k, from_)``."""
        return self.k, self.from_

    @property
    def need(self) -> int:
        """How many of the best documents the page needs: ``from_ + k``."""
        return self.from_ + self.k


@dataclass(frozen=True)
class RescoreRequest:
    """A rescore's candidates, checked: ``ids``, or the top ``size`` of ``es_query``; the top
    ``k`` of them kept (all if None), explained or not."""

    ids: tuple[str, ...] | None
    es_query: dict[str, Any] | None
    size: int
    k: int | None
    explain: bool

    @classmethod
    def of(
        cls,
        ids: Sequence[str] | None,
        es_query: Mapping[str, Any] | None,
        size: Any,
        k: Any,
        explain: Any,
    ) -> RescoreRequest:
        if (ids is None) == (es_query is None):
            raise ValueError("rescore needs exactly one of ids= or es_query=")
        return cls(
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


def filter_clauses(filter: Filter) -> tuple[dict[str, Any], ...]:
    """``filter`` as a tuple of query clauses (each a mapping)."""
    if filter is None:
        return ()
    clauses = [filter] if isinstance(filter, Mapping) else list(filter)
    for clause in clauses:
        if not isinstance(clause, Mapping) or not clause:
            raise ValueError(
                f"filter must be an Elasticsearch query clause or a list of them, got {clause!r}"
            )
    return tuple(dict(clause) for clause in clauses)
