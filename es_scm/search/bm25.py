"""``bm25``: Elasticsearch's BM25 on the text field, as it scores it — the baseline on the same
index (:func:`~es_scm.search.query.bm25_query`, the query of hybrid search's BM25 leg too)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from es_scm.search.exact import page
from es_scm.search.filters import Filter
from es_scm.search.plan import Context, Page, Plan, RequestContext, search_method
from es_scm.search.query import bm25_query, clause_budget
from es_scm.search.results import Hit, SearchResult, Stored, distinct_hits

__all__ = ["BM25Plan", "BM25Request", "bm25"]


@dataclass(frozen=True)
class BM25Request(Page):
    """A BM25 search: the page and its filters."""


class BM25Plan(Plan):
    """One page of Elasticsearch's BM25 (``match`` on the text field)."""

    mode = "bm25"

    def __init__(self, request: BM25Request, context: Context) -> None:
        super().__init__(request, context)
        clause_budget(context.clause_limit, request.filters, request.words)  # fits the limit
        self.hits: list[Mapping[str, Any]] = []

    def next(self) -> list[dict[str, Any]] | None:
        if self.rounds:
            return None
        request = self.request
        query = bm25_query(request.text, request.filters)
        return [page(self.target.name, query, request.k, request.from_)]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        self.hits = distinct_hits(self.target.hits(answers[0]))
        self.rounds += 1

    def result(self) -> SearchResult:
        hits = [Hit.of(Stored.of(hit), float(hit["_score"])) for hit in self.hits]
        return self._result(hits, candidates=len(hits))


@search_method(BM25Plan)
def bm25(
    context: RequestContext, query: str, k: int = 10, *, from_: int = 0, filter: Filter = None
) -> BM25Request:
    """The top ``k`` after ``from_`` by Elasticsearch's BM25 (a ``match`` query on the text
    field, analyzed by the index's analyzer), scores as Elasticsearch gives them: the
    baseline on the same index. ``filter`` as in :meth:`search`."""
    return BM25Request(**Page.of(context, query, k, from_, filter))
