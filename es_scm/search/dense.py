"""``dense``: Elasticsearch's kNN search alone (the dense leg of hybrid search), scores as
Elasticsearch gives them — the dense baseline on the same index (:mod:`es_scm.index.dense`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from es_scm.index.dense import MAX_KNN, DenseQuery, field_for
from es_scm.search.filters import Filter
from es_scm.search.plan import Context, Page, Plan, RequestContext, search_method
from es_scm.search.results import Hit, SearchResult, Stored, distinct_hits

__all__ = ["Dense", "DensePlan", "DenseRequest", "dense", "dense_option", "dense_per_query"]

#: What ``dense=`` may be: None (no dense leg), True (the index's own vectors, the query
#: encoded by its encoder) or a :class:`~es_scm.index.dense.DenseQuery` (a field and a vector).
Dense = DenseQuery | bool | None


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


@dataclass(frozen=True)
class DenseRequest(Page):
    """A kNN search: the page, its filters, and its query (True until the searcher encodes the
    text with the index's encoder, then a :class:`DenseQuery`)."""

    dense: DenseQuery | bool = True


class DensePlan(Plan):
    """One page of Elasticsearch's kNN search."""

    mode = "dense"

    def __init__(self, request: DenseRequest, context: Context) -> None:
        super().__init__(request, context)
        query = request.dense
        assert isinstance(query, DenseQuery), "the query's vector is known (the searcher's)"
        self.query = query
        self.field = field_for(self.target.name, context.checked.dense_fields, query)
        self.hits: list[Mapping[str, Any]] = []

    def next(self) -> list[dict[str, Any]] | None:
        if self.rounds:
            return None
        request = self.request
        knn = self.query.knn(request.need, request.filters)
        return [
            {
                "index": self.target.name,
                "knn": knn,
                "from_": request.from_,
                "size": request.k,
                "source": True,
                "track_total_hits": False,
            }
        ]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        self.hits = distinct_hits(self.target.hits(answers[0]))
        self.rounds += 1

    def result(self) -> SearchResult:
        hits = [Hit.of(Stored.of(hit), float(hit["_score"])) for hit in self.hits]
        field = self.field
        notes = () if field.exact else (field.approximate_note(),)
        return self._result(hits, candidates=len(hits), exact_guarantee=field.exact, notes=notes)


@search_method(DensePlan)
def dense(
    context: RequestContext,
    query: str,
    k: int = 10,
    *,
    from_: int = 0,
    filter: Filter = None,
    dense: Dense = None,
) -> DenseRequest:
    """The top ``k`` after ``from_`` by Elasticsearch's kNN search alone (the dense leg of
    :meth:`hybrid`), scores as Elasticsearch gives them ((1 + cos) / 2 for cosine): the
    dense baseline on the same index.

    ``dense`` None (or True) searches the index's own dense vectors with ``query`` encoded
    by its encoder; a :class:`~es_scm.index.dense.DenseQuery` searches its field with its
    vector (``query`` is then not read but by the length check). ``filter`` as in
    :meth:`search`. ``exact_guarantee`` holds when the field is indexed ``flat`` (exact
    kNN).
    """
    common = Page.of(context, query, k, from_, filter)
    if common["from_"] + common["k"] > MAX_KNN:
        raise ValueError(
            f"from_ + k must be at most {MAX_KNN} for dense search (Elasticsearch's "
            f"largest kNN k), got {common['from_'] + common['k']}"
        )
    query_vector = dense_option(dense)
    return DenseRequest(**common, dense=True if query_vector is None else query_vector)
