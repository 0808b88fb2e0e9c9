r"""Exact search's windows: which request comes next, what each answer proves, and why it is exact.

Exact search asks Elasticsearch for a *window* of candidates ranked by its native score, computes
their exact SCM from the float64 vectors y' kept in ``_source``, and grows the window until the
result provably equals the brute-force exact top k. :class:`ExactWindows` is that schedule as a
small state object without I/O: :meth:`~ExactWindows.next` says which request comes next (its
offset and size, in a point in time or read whole), :meth:`~ExactWindows.take` takes its answer.
The argument for it, in full:

The bound
    Let e_d = x'ᵀy'_d = (Wx)ᵀS(Wy_d)/‖Wy_d‖_S, so SCM(x, y_d) = e_d / ‖Wx‖_S. Elasticsearch scores
    a document by the sparse dot product s_d = Σ_j x'_j · q(y'_j) over the terms sent
    (:mod:`es_scm.search.query`). With S ≥ 0, W ≥ 0 and a unit diagonal,
    1 = y'ᵀSy' ≥ y'ᵀy', so ‖y'‖₂ ≤ 1. Lucene stores q(v) ≥ v·(1 − ε) with
    ε = :data:`~es_scm.index.schema.FEATURE_VALUE_ERROR` (9 significant bits, truncated).
    Query weights are rounded to float32 and the m clause scores summed in float32, a relative
    error below δ = (m + 2)·2⁻²⁴. Hence every document d satisfies

        e_d ≤ s_d / ((1 − ε)(1 − δ)) + P,

    where P = ‖x'_D‖₂ is the Euclidean norm of the expansion terms D left out of the query
    (the cluster's clause limit): Σ_{j∈D} x'_j y'_j ≤ ‖x'_D‖₂ ‖y'‖₂ by Cauchy–Schwarz. With
    document-side expansion the index holds Sy' and the query sends Wx: the same bound holds
    with P = ‖x_D‖₂ · ‖S‖₂ for the query terms D left out, since ‖Sy'‖₂ ≤ ‖S‖₂ ‖y'‖₂ ≤ ‖S‖₂
    (:meth:`~es_scm.similarity.TermSimilarityMatrix.spectral_norm_bound`).
    :meth:`~es_scm.search.query.ExpandedQuery.unseen_upper_bound` computes
    (s / ((1 − ε)(1 − δ)) + P) / ‖Wx‖_S.

The proof
    Elasticsearch returns documents by decreasing s_d; a document outside a window whose lowest
    score is s_min has s_d ≤ s_min, or s_d = 0 when the window holds every match (a short
    answer: the window is *exhausted*). So once the n-th best exact score in the window is
    strictly greater than the bound of s_min (of 0 when exhausted), no unseen document can enter
    the top n = ``from_ + k``, and the window's exact top n is the brute-force exact top n.
    An exhausted window with nothing left out (P = 0) holds every document that can score above
    0, and is proven whatever its scores. Otherwise the window doubles, up to ``max_window``;
    where that is not enough, the result is *unproven* (exact search then raises
    :class:`~es_scm.elastic.NotProvenError` with the window's exact scores). Filters only remove
    documents from the matches, so the argument holds over the filtered set. Negative
    similarities or weights void it (``sparse_vector`` keeps positive values only): the
    searcher then reports ``exact_guarantee=False``.

Ties
    Ranking ties are broken by document id (:func:`es_scm.similarity.scm.rank`, the brute
    force's rule too): an exact score has the same bits here and in the brute force, so equal
    scores are equal, with no rounding.

One state of the index
    One search request reads one state of every shard. Windows paged by offset over several
    requests would read several states: a document deleted between two of them moves the next
    ones up by one, and the one at the boundary is never fetched (while the proof says it was
    seen). So every window is read whole, from offset 0, in one request: the proof of a window
    reads one state, and its result is the brute-force top k of the index in that state. A
    later window fetches again the candidates of the one before; windows double, so what is
    fetched in all is less than twice the last window, and most searches are proven by their
    first (a point in time would save those fetches at the price of two more requests, opening
    and closing it, and of a context that a cancelled search could leave open).

Only what the proof needs is parsed
    A window's hits come best first by Elasticsearch's score s, and the bound above is
    increasing in s, so the bounds of the hits are decreasing: once n hits are scored exactly and
    the next hit's bound is below the n-th best exact score, neither it nor any hit after it can
    enter the top n, and their stored vectors are not parsed (:meth:`ExactWindows.take`). The
    proof itself reads only the lowest score of the window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from es_scm.options.validation import Boolean, check
from es_scm.search.filters import Filter
from es_scm.search.plan import Context, Page, Plan, RequestContext, page, search_method
from es_scm.search.query import ExpandedQuery, clause_budget
from es_scm.search.results import Hit, SearchResult, Stored, outranks
from es_scm.similarity.scm import rank

__all__ = ["FIRST_WINDOW", "Candidate", "ExactPlan", "ExactRequest", "ExactWindows", "search"]

#: The smallest first window (it is at least twice the hits asked for).
FIRST_WINDOW = 20


@dataclass(frozen=True)
class Candidate:
    """A document a window returned and scored exactly: its exact SCM ``score``,
    Elasticsearch's ``es_score`` and the document (its source and stored vector)."""

    stored: Stored
    score: float
    es_score: float


class ExactWindows:
    """The windows of one exact search, and what their answers prove (the module docstring).

    Parameters
    ----------
    expanded : ExpandedQuery
        The query: its exact scores of stored vectors and its bound.
    need : int
        The top ``from_ + k`` to prove.
    max_window : int
        The largest window.
    first : int, optional
        The first window (default: twice ``need``, at least :data:`FIRST_WINDOW`).

    Examples
    --------
    The searcher's loop::

        windows = ExactWindows(expanded, need, max_window)
        while (size := windows.next()) is not None:
            windows.take(hits(search(page(index, query, size))))
    """

    def __init__(
        self, expanded: ExpandedQuery, need: int, max_window: int, first: int | None = None
    ) -> None:
        self.expanded = expanded
        self.need = need
        self.max_window = max_window
        first = max(2 * need, FIRST_WINDOW) if first is None else first
        self.window = min(first, max_window)
        self.candidates: dict[str, Candidate] = {}  # the window's hits scored exactly
        self.read = 0  # the window's hits
        self.ranked: list[tuple[str, float]] = []
        self.exhausted = False
        self.proven = False
        self.rounds = 0  # answers taken

    @property
    def final(self) -> bool:
        """Whether no window follows: proven, exhausted, or the largest window read."""
        return self.rounds > 0 and (self.proven or self.exhausted or self.window >= self.max_window)

    def next(self) -> int | None:
        """The size of the next window (read whole, from offset 0), or None after the last."""
        if self.rounds > 0 and (self.proven or self.exhausted or self.window >= self.max_window):
            return None
        if self.rounds > 0:
            self.window = min(self.window * 2, self.max_window)
        return self.window

    def take(self, hits: Sequence[Mapping[str, Any]]) -> None:
        """The answer to the last :meth:`next`: the window's hits, best first (fewer than asked:
        Elasticsearch had no more matches). Only the hits that may enter the top ``need`` are
        parsed and scored (the module docstring): at most two sparse products."""
        expanded, need = self.expanded, self.need
        es_scores = np.fromiter((hit["_score"] for hit in hits), dtype=np.float64, count=len(hits))
        bounds = expanded.upper_bounds(es_scores)  # decreasing, as the hits' scores
        self.candidates = {}
        self._score(hits[:need], es_scores[:need])
        if len(hits) > need:
            beyond = len(hits) - need  # all, unless n distinct hits already bound the rest
            if len(self.candidates) >= need:
                nth = rank((i, c.score) for i, c in self.candidates.items())[need - 1][1]
                beyond = int(np.searchsorted(-bounds[need:], -nth, side="right"))
            self._score(hits[need : need + beyond], es_scores[need : need + beyond])
        self.read = len(hits)
        self.exhausted = len(hits) < self.window
        self.rounds += 1
        self.ranked = rank((doc_id, c.score) for doc_id, c in self.candidates.items())
        lowest = 0.0 if self.exhausted or not len(hits) else float(es_scores[-1])
        bound = expanded.unseen_upper_bound(lowest)
        self.proven = (self.exhausted and expanded.pruned_mass == 0.0) or (
            len(self.ranked) >= need and self.ranked[need - 1][1] > bound
        )

    def _score(self, hits: Sequence[Mapping[str, Any]], es_scores: np.ndarray) -> None:
        stored = Stored.many(hits)
        exact = self.expanded.exact_scores([document.vector for document in stored])
        for document, score, es_score in zip(stored, exact, es_scores.tolist(), strict=True):
            kept = self.candidates.get(document.id)  # an id held by two indices: its best copy
            if kept is None or outranks(score, document.index, kept.score, kept.stored.index):
                self.candidates[document.id] = Candidate(document, score, es_score)

    def top(self, from_: int = 0) -> list[Candidate]:
        """The candidates ranked ``from_`` to ``need`` (by exact score, then id)."""
        return [self.candidates[doc_id] for doc_id, _ in self.ranked[from_ : self.need]]

    def unproven(self, k: int, from_: int) -> str | None:
        """Why the top ``need`` is not proven (None if it is): one line with what to do."""
        if self.proven:
            return None
        reason = (
            "expansion terms left out (the cluster's clause limit)"
            if self.exhausted
            else f"a window of {self.read} candidates (max_window = {self.max_window})"
        )
        return (
            f"exact mode cannot prove the top {self.need} (from {from_} + k {k}) with {reason}; "
            "ask for fewer results, or use native mode"
        )


@dataclass(frozen=True)
class ExactRequest(Page):
    """An exact search: the page, its filters, and whether to explain the hits."""

    explain: bool = False


class ExactPlan(Plan):
    """Exact search's windows until the top ``from_ + k`` is proven (the module docstring)."""

    mode = "exact"
    raises_unproven = True

    def __init__(self, request: ExactRequest, context: Context) -> None:
        super().__init__(request, context)
        self.expanded = self._expanded(clause_budget(context.clause_limit, request.filters))
        self.query = self.expanded.es_query(context.query_type, request.filters)
        self.windows = ExactWindows(self.expanded, request.need, context.max_window)

    def next(self) -> list[dict[str, Any]] | None:
        if self.expanded.empty:  # no vocabulary terms: nothing can score above 0
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
        return self._result(
            window_hits(self, expanded, windows, request.from_),
            candidates=windows.read,
            exact_guarantee=windows.proven and not expanded.has_negative,
            unproven=None if windows.proven else windows.unproven(request.k, request.from_),
        )


def window_hits(
    plan: Plan, expanded: ExpandedQuery, windows: ExactWindows, from_: int
) -> list[Hit]:
    """The hits of a window's exact top after ``from_``, each with its exact and its native
    score (exact search's and ``fast``'s results)."""
    return [
        plan._hit(c.stored, c.score, expanded, native=expanded.native_score(c.es_score))
        for c in windows.top(from_)
    ]


@search_method(ExactPlan)
def search(
    context: RequestContext,
    query: str,
    k: int = 10,
    *,
    from_: int = 0,
    filter: Filter = None,
    explain: bool = False,
) -> ExactRequest:
    """The top ``k`` documents by the SCM after skipping ``from_``: provably the brute-force
    top k (:mod:`es_scm.search.exact`).

    ``filter`` is an Elasticsearch query clause, or a list of them, that the documents must
    match (e.g. ``{"term": {"metadata.topic": "sports"}}``): it changes no score, and the
    result is the exact top k among the matching documents. With ``explain``, every hit
    gets an ``explanation`` of its SCM term pair by term pair, whose contributions sum to
    ``hit.score`` (:mod:`es_scm.search.explain`).

    Raises
    ------
    NotProvenError
        When the top ``from_ + k`` cannot be proven within ``max_window`` candidates (deep
        pages), or when the cluster's clause limit left out too much of the expansion;
        ``error.result`` holds the window's exact scores.
    QueryTooLongError
        When the query has more than ``max_query_words`` words.
    """
    common = Page.of(context, query, k, from_, filter)
    return ExactRequest(**common, explain=check(explain, "explain", Boolean()))
