r"""``fast``: the SCM in two phases — a pruned first phase retrieves the candidates, the exact
SCM ranks them — in one round trip.

The first phase sends only the query's terms and each one's ``neighbours`` strongest neighbours
in S (:class:`~es_scm.search.query.Pruning`): a fraction of the whole expansion's clauses, and of
the node's time. Its top ``window`` candidates are scored by the exact SCM of the whole S from
their stored vectors (the scores of :meth:`~es_scm.search.query.ExpandedQuery.exact_scores`,
bit for bit those of exact search and the brute force), and ranked by it. The result is **the
exact SCM's top k of the first phase's top ``window`` candidates**: every score exact, the
ranking that of exact search wherever the first phase returned exact search's top k.

When the first phase's bound proves it — the k-th exact score above the largest SCM a document
outside the window can have, the terms left out included (their mass ‖x'_T‖₂:
:mod:`es_scm.search.exact`) — the top k is provably exact search's, and ``exact_guarantee`` says
so; otherwise a note says what the top k is. How often the two agree, by collection, is measured
in docs/QUALITY.md; :meth:`~es_scm.elastic.Searcher.search` stays exact and certified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from es_scm.options.defaults import FAST_DEFAULTS
from es_scm.options.validation import NON_NEGATIVE_INT, POSITIVE_INT, Boolean, OrNone, check
from es_scm.search.exact import ExactWindows, window_hits
from es_scm.search.filters import Filter
from es_scm.search.plan import Context, Page, Plan, RequestContext, page, search_method
from es_scm.search.query import Pruning, clause_budget
from es_scm.search.results import SearchResult

__all__ = ["FastPlan", "FastRequest", "fast"]


@dataclass(frozen=True)
class FastRequest(Page):
    """A two-phase SCM search: the page, its filters, explanations, the first phase's pruning
    (``neighbours``) and its number of candidates (``window``)."""

    explain: bool = False
    neighbours: int = FAST_DEFAULTS.neighbours
    window: int = 50


class FastPlan(Plan):
    """One window of the first phase, scored by the exact SCM."""

    mode = "fast"

    def __init__(self, request: FastRequest, context: Context) -> None:
        super().__init__(request, context)
        budget = clause_budget(context.clause_limit, request.filters)
        self.expanded = self._expanded(budget, Pruning(request.neighbours))
        self.query = self.expanded.es_query(context.query_type, request.filters)
        window = request.window
        self.windows = ExactWindows(self.expanded, request.need, window, first=window)

    def next(self) -> list[dict[str, Any]] | None:
        if self.rounds or self.expanded.empty:
            return None
        size = self.windows.next()
        return None if size is None else [page(self.target.name, self.query, size)]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        self.windows.take(self.target.hits(answers[0]))
        self.rounds += 1

    def result(self) -> SearchResult:
        request, expanded, windows = self.request, self.expanded, self.windows
        if expanded.empty:
            return self._result([], exact_guarantee=True)
        hits = window_hits(self, expanded, windows, request.from_)
        proven = windows.proven and not expanded.has_negative
        notes = []
        if not proven:
            sent = expanded.clause_count
            notes.append(
                f"the exact SCM's top {request.need} of the first phase's {windows.read} "
                f"candidates ({sent} of {sent + expanded.pruned_terms} expansion terms sent); "
                "search() proves the exact top k"
            )
        return self._result(hits, candidates=windows.read, exact_guarantee=proven, notes=notes)


@search_method(FastPlan)
def fast(
    context: RequestContext,
    query: str,
    k: int = 10,
    *,
    from_: int = 0,
    filter: Filter = None,
    explain: bool = False,
    neighbours: int | None = None,
    window: int | None = None,
) -> FastRequest:
    """The top ``k`` after ``from_`` by the exact SCM among the candidates of a pruned first
    phase, in one request (:mod:`es_scm.search.fast`): every score exact, the ranking exact
    search's wherever the first phase found its top k (``exact_guarantee`` when its bound
    proves it).

    ``neighbours``: the first phase sends each query term and its ``neighbours`` strongest
    neighbours in S (default :data:`es_scm.options.defaults.FAST_DEFAULTS`); ``window``: how many
    candidates it retrieves (default five times ``from_ + k``, at least
    :data:`~es_scm.options.defaults.FAST_DEFAULTS`' ``window``). ``filter`` and ``explain`` as in
    :meth:`search`.
    """
    common = Page.of(context, query, k, from_, filter)
    need = common["from_"] + common["k"]
    neighbours = check(neighbours, "neighbours", OrNone(NON_NEGATIVE_INT))
    window = check(window, "window", OrNone(POSITIVE_INT))
    if window is None:
        window = max(FAST_DEFAULTS.window, 5 * need)
    if window < need:
        raise ValueError(f"window must be at least from_ + k = {need}, got {window}")
    return FastRequest(
        **common,
        explain=check(explain, "explain", Boolean()),
        neighbours=FAST_DEFAULTS.neighbours if neighbours is None else neighbours,
        window=window,
    )
