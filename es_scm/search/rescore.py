"""``rescore``: the exact SCM of given candidates — ids (one ``mget``), or the top hits of a
query of the caller's — ranked by it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from es_scm.options.validation import POSITIVE_INT, Boolean, OrNone, check
from es_scm.search.plan import Context, Plan, RequestContext, search_method
from es_scm.search.query import expand_query, query_text
from es_scm.search.results import SearchResult, Stored
from es_scm.similarity.scm import rank

__all__ = ["RescorePlan", "RescoreRequest", "rescore"]


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


class RescorePlan(Plan):
    """The stored vectors of given ids (one ``mget``), or the top hits of a given query,
    rescored."""

    mode = "rescore"

    def __init__(self, request: RescoreRequest, context: Context) -> None:
        super().__init__(request, context)
        self.expanded = expand_query(
            context.model, request.text, context.clause_limit, context.checked.expansion
        )
        self.documents: dict[str, Stored] = {}
        self.missing: list[str] = []

    def next(self) -> list[dict[str, Any]] | None:
        request = self.request
        if self.rounds or (request.ids is not None and not request.ids):
            return None
        if request.ids is not None:
            return [{"api": "mget", "index": self.target.name, "ids": list(request.ids)}]
        query = {"query": request.es_query, "size": request.size, "source": True}
        return [{"index": self.target.name, **query}]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        request = self.request
        if request.ids is not None:
            self.documents, self.missing = self.target.documents(answers[0], request.ids)
        else:
            hits = self.target.hits(answers[0])
            self.documents = {stored.id: stored for stored in Stored.many(hits)}
        self.rounds += 1

    def result(self) -> SearchResult:
        request, expanded, documents = self.request, self.expanded, self.documents
        exact = expanded.exact_scores([document.vector for document in documents.values()])
        ranked = rank(zip(documents, exact, strict=True))[: request.k]
        hits = [self._hit(documents[doc_id], score, expanded) for doc_id, score in ranked]
        missing = self.missing
        return self._result(
            hits,
            candidates=len(documents),
            exact_guarantee=request.ids is not None and not expanded.has_negative,
            notes=(f"{len(missing)} candidate id(s) not found: {missing[:5]}",) if missing else (),
        )


@search_method(RescorePlan)
def rescore(
    context: RequestContext,
    query: str,
    *,
    ids: Sequence[str] | None = None,
    es_query: Mapping[str, Any] | None = None,
    size: int = 100,
    k: int | None = None,
    explain: bool = False,
) -> RescoreRequest:
    """The exact SCM of given candidates: ``ids``, or the top ``size`` hits of ``es_query``.

    Returns the candidates ranked by exact SCM (the top ``k`` if given); candidates that do
    not exist are reported in ``notes``. ``exact_guarantee`` holds for ``ids`` (the exact
    ranking of exactly those documents); for an arbitrary ``es_query`` nothing proves that
    its top ``size`` holds the best documents, so it is False. ``explain`` as in
    :meth:`search`.

    Raises
    ------
    PartialResultError
        When a shard could not serve some of the ``ids``: they are not known to be missing.
    """
    if (ids is None) == (es_query is None):
        raise ValueError("rescore needs exactly one of ids= or es_query=")
    if isinstance(ids, str):
        raise ValueError("ids must be a sequence of document ids, not one str")
    text, _ = query_text(query, context.max_words)
    return RescoreRequest(
        text,
        None if ids is None else tuple(ids),
        None if es_query is None else dict(es_query),
        check(size, "size", POSITIVE_INT),
        check(k, "k", OrNone(POSITIVE_INT)),
        check(explain, "explain", Boolean()),
    )
