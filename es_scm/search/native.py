"""``native``: Elasticsearch's own scores of the expanded query divided by ‖Wx‖_S — the SCM up
to the 9-bit precision of the stored values, in one request."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from es_scm.options.validation import Boolean, check
from es_scm.search.filters import Filter
from es_scm.search.plan import Context, Page, Plan, RequestContext, page, search_method
from es_scm.search.query import clause_budget
from es_scm.search.results import SearchResult, Stored, distinct_hits

__all__ = ["NativePlan", "NativeRequest", "native"]


@dataclass(frozen=True)
class NativeRequest(Page):
    """A native search: the page, its filters, and whether to explain the hits."""

    explain: bool = False


class NativePlan(Plan):
    """One page of Elasticsearch's scores divided by ‖Wx‖_S."""

    mode = "native"

    def __init__(self, request: NativeRequest, context: Context) -> None:
        super().__init__(request, context)
        self.expanded = self._expanded(clause_budget(context.clause_limit, request.filters))
        self.hits: list[Mapping[str, Any]] = []

    def next(self) -> list[dict[str, Any]] | None:
        if self.rounds or self.expanded.empty:
            return None
        request = self.request
        query = self.expanded.es_query(self.context.query_type, request.filters)
        return [page(self.target.name, query, request.k, request.from_)]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        self.hits = distinct_hits(self.target.hits(answers[0]))
        self.rounds += 1

    def result(self) -> SearchResult:
        expanded = self.expanded
        hits = []
        for hit, stored in zip(self.hits, Stored.many(self.hits), strict=True):
            score = expanded.native_score(hit["_score"])
            hits.append(self._hit(stored, score, expanded, native=score))
        return self._result(hits, candidates=len(hits), exact_guarantee=expanded.empty)


@search_method(NativePlan)
def native(
    context: RequestContext,
    query: str,
    k: int = 10,
    *,
    from_: int = 0,
    filter: Filter = None,
    explain: bool = False,
) -> NativeRequest:
    """The top ``k`` after ``from_`` by Elasticsearch's score divided by ‖Wx‖_S: the SCM up
    to the 9-bit precision of the stored values, in one request. ``filter`` and ``explain``
    as in :meth:`search` (the explanation is of the exact SCM)."""
    common = Page.of(context, query, k, from_, filter)
    return NativeRequest(**common, explain=check(explain, "explain", Boolean()))
