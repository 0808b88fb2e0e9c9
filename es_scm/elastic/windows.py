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
    (:mod:`es_scm.elastic.query`). With S ≥ 0, W ≥ 0 and a unit diagonal,
    1 = y'ᵀSy' ≥ y'ᵀy', so ‖y'‖₂ ≤ 1. Lucene stores q(v) ≥ v·(1 − ε) with
    ε = :data:`~es_scm.elastic.schema.FEATURE_VALUE_ERROR` (9 significant bits, truncated).
    Query weights are rounded to float32 and the m clause scores summed in float32, a relative
    error below δ = (m + 2)·2⁻²⁴. Hence every document d satisfies

        e_d ≤ s_d / ((1 − ε)(1 − δ)) + P,

    where P = ‖x'_D‖₂ is the Euclidean norm of the expansion terms D left out of the query
    (the cluster's clause limit): Σ_{j∈D} x'_j y'_j ≤ ‖x'_D‖₂ ‖y'‖₂ by Cauchy–Schwarz. With
    document-side expansion the index holds Sy' and the query sends Wx: the same bound holds
    with P = ‖x_D‖₂ · ‖S‖₂ for the query terms D left out, since ‖Sy'‖₂ ≤ ‖S‖₂ ‖y'‖₂ ≤ ‖S‖₂
    (:meth:`~es_scm.similarity.TermSimilarityMatrix.spectral_norm_bound`).
    :meth:`~es_scm.elastic.query.ExpandedQuery.unseen_upper_bound` computes
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
    Ranking ties are broken by document id (:func:`es_scm.similarity.scoring.rank`, the brute
    force's rule too): an exact score has the same bits here and in the brute force, so equal
    scores are equal, with no rounding.

One state of the index
    One search request reads one state of every shard. Windows paged by offset over several
    requests would read several states: a document deleted between two of them moves the next
    ones up by one, and the one at the boundary is never fetched (while the proof says it was
    seen). So the first window is one request, and the windows after it are read in a point in
    time opened then, from offset 0 again (the first window's state may be older than the point
    in time's). Where the cluster refuses a point in time (:func:`point_in_time_refused`: HTTP
    4xx but 404 — a proxy, a role without the privilege, ``search.max_keep_alive`` below
    :data:`KEEP_ALIVE`, too many open), each window is read whole in one request instead, from
    offset 0: the same proof over one state, for up to twice the candidates fetched.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from es_scm.elastic.query import ExpandedQuery
from es_scm.elastic.results import Stored
from es_scm.similarity.scoring import rank

__all__ = [
    "FIRST_WINDOW",
    "KEEP_ALIVE",
    "Candidate",
    "ExactWindows",
    "Window",
    "msearch_lines",
    "point_in_time_refused",
]

#: How long a point in time of exact search's windows lives between two of its requests.
KEEP_ALIVE = "1m"
#: The smallest first window (it is at least twice the hits asked for).
FIRST_WINDOW = 20


@dataclass(frozen=True)
class Window:
    """One request of exact search: ``size`` native hits from ``offset``, in the point in time
    (``in_point_in_time``) or from the index."""

    offset: int
    size: int
    in_point_in_time: bool = False

    def search(
        self, index: str, query: Mapping[str, Any], pit: str | None = None
    ) -> dict[str, Any]:
        """The keyword arguments of the window's ``search`` of ``query``: of ``index``, or of the
        point in time ``pit``. The hits come with their whole ``_source`` (text, ``scm.vector``,
        metadata): filtering it would make Elasticsearch parse and rewrite every hit's source,
        which costs more than sending it whole."""
        kwargs: dict[str, Any] = {
            "query": query,
            "from_": self.offset,
            "size": max(self.size, 0),
            "source": True,
            # Counting every match would disable Lucene's block-max WAND skipping; exhaustion
            # is detected by a short page instead.
            "track_total_hits": False,
        }
        if pit is None:
            kwargs["index"] = index
        else:
            kwargs["pit"] = {"id": pit, "keep_alive": KEEP_ALIVE}
        return kwargs


@dataclass(frozen=True)
class Candidate:
    """A document a window returned: its exact SCM ``score``, Elasticsearch's ``es_score`` and
    the document (its source and stored vector)."""

    stored: Stored
    score: float
    es_score: float


def msearch_lines(searches: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The header and body lines of one ``_msearch`` of searches given as keyword arguments of
    ``search`` (``index``, ``query``, ``from_``, ``size``, ``source``...), each refusing a partial
    answer as every search of es-scm does."""
    lines: list[dict[str, Any]] = []
    for search in searches:
        body = {_BODY_KEYS.get(key, key): value for key, value in search.items() if key != "index"}
        lines += [{"index": search["index"], "allow_partial_search_results": False}, body]
    return lines


_BODY_KEYS = {"from_": "from", "source": "_source"}  # keyword argument → JSON body key


def point_in_time_refused(status: int) -> bool:
    """Whether a refusal to open a point in time (HTTP ``status``) means reading each window
    whole instead: a 4xx but 404 (a missing index fails the search too; a 5xx is a cluster in
    trouble)."""
    return 400 <= status < 500 and status != 404


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

    Examples
    --------
    The searcher's loop::

        windows = ExactWindows(expanded, need, max_window)
        windows.take(hits(search(windows.next())))         # the first window, from the index
        if not windows.final:
            windows.reread(point_in_time=opened)           # after opening one, or not
            while (window := windows.next()) is not None:
                windows.take(hits(search(window)))
    """

    def __init__(self, expanded: ExpandedQuery, need: int, max_window: int) -> None:
        self.expanded = expanded
        self.need = need
        self.max_window = max_window
        self.window = min(max(2 * need, FIRST_WINDOW), max_window)
        self.candidates: dict[str, Candidate] = {}
        self.ranked: list[tuple[str, float]] = []
        self.lowest = math.inf  # the lowest native score of the candidates
        self.exhausted = False
        self.proven = False
        self.rounds = 0  # answers taken
        self.point_in_time = False
        self._asked: Window | None = None
        self._fresh = True  # nothing read since the start, or since reread(): next() must ask

    @property
    def final(self) -> bool:
        """Whether no window follows: proven, exhausted, or the largest window read."""
        return self.proven or self.exhausted or self.window >= self.max_window

    def first(self) -> Window:
        """The first request: :meth:`next` at the start, which always asks."""
        window = self.next()
        assert window is not None, "the first window is always asked"
        return window

    def next(self) -> Window | None:
        """The next request, or None when the last answer was final."""
        if not self._fresh and self.final:
            return None
        if self.rounds > 0:
            self.window = min(self.window * 2, self.max_window)
        if self.rounds > 0 and not self.point_in_time:
            self._forget()  # a window read whole, from one state
        offset = len(self.candidates)
        self._fresh = False
        self._asked = Window(offset, self.window - offset, self.point_in_time)
        return self._asked

    def reread(self, *, point_in_time: bool) -> None:
        """The windows after the first are read from another state of the index: in a point in
        time (opened after the first answer), else each whole; the candidates so far are
        forgotten either way."""
        self.point_in_time = point_in_time
        self._forget()
        self._fresh = True

    def take(self, hits: Sequence[Mapping[str, Any]]) -> None:
        """The answer to the last :meth:`next`: its native hits, best first (fewer than asked:
        Elasticsearch had no more matches), each vector parsed and scored once."""
        if self._asked is None:
            raise RuntimeError("take() answers next(): ask first")
        stored = [Stored.of(hit) for hit in hits]
        exact = self.expanded.exact_scores([document.vector for document in stored])
        for hit, document, score in zip(hits, stored, exact, strict=True):
            self.candidates[document.id] = Candidate(document, score, hit["_score"])
            self.lowest = min(self.lowest, hit["_score"])
        self.exhausted = len(hits) < self._asked.size
        self.rounds += 1
        self._asked = None
        self.ranked = rank((doc_id, c.score) for doc_id, c in self.candidates.items())
        bound = self.expanded.unseen_upper_bound(0.0 if self.exhausted else self.lowest)
        self.proven = (self.exhausted and self.expanded.pruned_mass == 0.0) or (
            len(self.ranked) >= self.need and self.ranked[self.need - 1][1] > bound
        )

    def top(self, from_: int = 0) -> list[Candidate]:
        """The candidates ranked ``from_`` to ``need`` (by exact score, then id)."""
        return [self.candidates[doc_id] for doc_id, _ in self.ranked[from_ : self.need]]

    def unproven(self, k: int, from_: int) -> str | None:
        """Why the top ``need`` is not proven (None if it is): one line with what to do."""
        if self.proven:
            return None
        reason = (
            "leaving out expansion terms (the cluster's clause limit)"
            if self.exhausted
            else f"a window of {len(self.candidates)} candidates (max_window = {self.max_window})"
        )
        return (
            f"exact mode cannot prove the top {self.need} (from {from_} + k {k}) with {reason}; "
            "ask for fewer results, or use native mode"
        )

    def _forget(self) -> None:
        self.candidates = {}
        self.lowest = math.inf
