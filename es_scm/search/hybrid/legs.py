r"""Hybrid search's legs, their fusion and its bound: pure code, no I/O.

Hybrid search fuses the top lists of several *legs*, each retrieving its own candidates over the
same (filtered) documents:

* **BM25** (:class:`BM25Leg`): Elasticsearch's ``match`` query on the ``text`` field (the
  index's analyzer), its top ``depth``;
* **SCM**: exact search's top ``depth``, provably the brute-force top ``depth`` of the SCM
  (:mod:`es_scm.search.exact`);
* **dense** (:class:`DenseLeg`, with ``dense=``): Elasticsearch's kNN search on a
  ``dense_vector`` field (es-scm's own vectors, or the caller's field and query vector:
  :mod:`es_scm.index.dense`), its top ``depth``.

Which legs a search fuses: BM25 and the SCM, and the dense leg when one is asked; a score fusion
with explicit ``weights`` fuses exactly the legs it weighs (``{"bm25": 0.5, "dense": 0.5}``:
BM25 and kNN alone, the baseline a user would otherwise configure) (:func:`hybrid_legs`).

``depth`` is at least ``from + k`` (default 100). The candidates (the union of the lists) are
fused by a fusion of :mod:`es_scm.fusion` (``max`` by default, ``linear``, ``zscore`` or
``rrf``; with a dense leg :data:`~es_scm.options.defaults.HYBRID_DENSE_DEFAULTS`; the model's own
when it has one, see :attr:`es_scm.model.SoftCosineModel.hybrid`):

reciprocal rank fusion (``rrf``)
    Σ over the lists that contain it of 1 / (``rrf_k`` + its rank in the list). A document in no
    list has no score by definition, so the result is exactly the top k of this fusion.
score fusions (``max``, ``linear``, ``zscore``)
    Σ_legs w · N(score), each leg's scores normalized over the candidates. Every candidate gets
    every leg's score: the SCM from its stored vector, BM25 from a ``match`` restricted to the
    candidates that BM25 did not return (0 if no term matches), the dense leg from the kNN
    query restricted to them (0 without a vector). A document outside every list scores at
    most each list's lowest (0 when a list holds every match: it is shorter than ``depth``),
    so, the fusion being increasing in every score, its fused score is at most
    :meth:`~es_scm.fusion.ScoreFusion.bound_legs` of those; the result is proven
    (``exact_guarantee``) when the k-th fused score exceeds that bound and every list is
    provably its leg's top (the SCM's by its windows, BM25's by Elasticsearch's ranking, the
    dense leg's when its field is indexed ``flat``: exact kNN), i.e. when it is the exact top
    k of the fusion over every (filtered) document with the candidates' normalization.
    Otherwise a note says so, and a larger ``depth`` (or a flat field) may prove it.

Each hit's ``components`` holds its score by leg (None where a leg did not score it, with RRF),
and ``score`` the fused one; with ``explain=True`` its explanation is of its exact SCM, from its
stored vector, whichever leg found it.

A leg is a small object: its name, the search of its top ``depth``, and the search of the scores
of given documents (:class:`Leg`); the fusion takes the legs by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from es_scm.fusion import Fusion, ScoreFusion
from es_scm.fusion.signals import QuerySignals
from es_scm.fusion.weights import WeightDecision
from es_scm.index.dense import MAX_KNN, DenseField, DenseQuery
from es_scm.options import LEGS
from es_scm.search.exact import FIRST_WINDOW, ExactWindows
from es_scm.search.plan import page
from es_scm.search.query import ExpandedQuery, bm25_query
from es_scm.search.results import Stored, distinct_hits
from es_scm.similarity.scm import rank

__all__ = [
    "BM25_NAME",
    "BM25Leg",
    "DenseLeg",
    "Fused",
    "Leg",
    "LegList",
    "SCMLeg",
    "candidates_of",
    "fuse",
    "named_scores",
    "reported",
]

#: The name under which BM25's score is reported beside the SCM's search.
BM25_NAME = "bm25"


@dataclass(frozen=True)
class LegList:
    """A leg's top list for one query: ``scores`` by id, best first; ``full`` when it holds every
    match (it is shorter than the depth asked); ``proven`` when it is provably the leg's top
    (exact SCM: the windows' proof; Elasticsearch's own ranking otherwise)."""

    name: str
    scores: dict[str, float]
    full: bool
    proven: bool = True

    @property
    def outside(self) -> float:
        """The highest score a document outside the list can have."""
        return 0.0 if self.full or not self.scores else min(self.scores.values())


class Leg:
    """A leg retrieved by one Elasticsearch search: its top ``depth`` and the scores of given
    documents. The plan sends what :meth:`top` and :meth:`scores_of` build (keyword arguments
    of ``search``, without the index) and hands the hits back; :meth:`scores_of` takes at most
    ``max_ids`` documents a search (None: any number)."""

    name: ClassVar[str]
    max_ids: ClassVar[int | None] = None

    def top(self, depth: int, filters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The search of the leg's top ``depth`` (with the documents' whole ``_source``)."""
        raise NotImplementedError

    def scores_of(self, ids: Sequence[str]) -> dict[str, Any]:
        """The search of the leg's scores of the documents ``ids`` (no ``_source``)."""
        raise NotImplementedError

    def read(self, hits: Sequence[Mapping[str, Any]], depth: int) -> LegList:
        """The top list of the answer to :meth:`top` (an id once, its best copy:
        :func:`~es_scm.search.results.distinct_hits`; full when the answer is short)."""
        scores = {hit["_id"]: float(hit["_score"]) for hit in distinct_hits(hits)}
        return LegList(self.name, scores, full=len(hits) < depth)

    def read_scores(self, hits: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """The scores of the answer to :meth:`scores_of` (a document the leg does not match is
        left out: its score is 0; an id held twice, its best copy's)."""
        return {hit["_id"]: float(hit["_score"]) for hit in distinct_hits(hits)}


@dataclass(frozen=True)
class BM25Leg(Leg):
    """BM25 of the query ``text`` (:func:`~es_scm.search.bm25.bm25_query`)."""

    text: str
    name: ClassVar[str] = "bm25"

    def top(self, depth: int, filters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        query = bm25_query(self.text, filters)
        return {"query": query, "size": depth, "source": True, "track_total_hits": False}

    def scores_of(self, ids: Sequence[str]) -> dict[str, Any]:
        query = bm25_query(self.text, ids=ids)
        return {"query": query, "size": len(ids), "source": False, "track_total_hits": False}

    def reporter(self) -> dict[str, Any]:
        """BM25's query named, to be reported beside another leg's search (:func:`reported`)."""
        return bm25_query(self.text, name=BM25_NAME)


@dataclass(frozen=True)
class DenseLeg(Leg):
    """Elasticsearch's kNN search of ``query`` (:class:`~es_scm.index.dense.DenseQuery`: a
    ``dense_vector`` field and the query's vector) on the field described by ``field``: its
    list is proven when the field is indexed for exact kNN (``flat``)."""

    query: DenseQuery
    field: DenseField
    name: ClassVar[str] = "dense"
    max_ids: ClassVar[int | None] = MAX_KNN

    def top(self, depth: int, filters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        knn = self.query.knn(depth, filters)
        return {"knn": knn, "size": depth, "source": True, "track_total_hits": False}

    def scores_of(self, ids: Sequence[str]) -> dict[str, Any]:
        knn = self.query.knn_of_ids(ids)
        return {"knn": knn, "size": len(ids), "source": False, "track_total_hits": False}

    def read(self, hits: Sequence[Mapping[str, Any]], depth: int) -> LegList:
        scores = {hit["_id"]: float(hit["_score"]) for hit in distinct_hits(hits)}
        return LegList(self.name, scores, full=len(hits) < depth, proven=self.field.exact)


class SCMLeg:
    r"""The SCM as a leg: its top list by the exact SCM, read in windows of the expanded query
    (:class:`~es_scm.search.exact.ExactWindows`), and the exact SCM of any other candidate from
    its stored vector (no request).

    Exact (``two_phase`` False): the windows grow until the list is provably the SCM's top
    ``reach`` — exact search's proof. Two phases (``two_phase``, a query whose clauses a
    :class:`~es_scm.search.query.Pruning` chose): exact search's first window alone (twice
    ``reach``, at least :data:`~es_scm.search.exact.FIRST_WINDOW`) of the first phase's
    candidates, each scored by the exact SCM of the whole S, its top ``reach`` the list; the list
    is proven when the first phase's bound proves it (the pruned terms' mass is in the query's
    bound), else it is the exact SCM's top of those candidates. With nothing pruned it is exact
    search's first round.
    """

    name: ClassVar[str] = "scm"

    def __init__(
        self, expanded: ExpandedQuery, query: dict[str, Any] | None, two_phase: bool
    ) -> None:
        self.expanded = expanded
        self.query = query  # None: the query has no vocabulary term (no search)
        self.two_phase = two_phase
        self.windows: ExactWindows | None = None

    def start(self, reach: int, max_window: int) -> None:
        """Read the list anew, to ``reach``: in windows that grow up to ``max_window``, or, in
        two phases, in exact search's first window alone."""
        if self.query is None:
            self.windows = None
            return
        if self.two_phase:
            max_window = min(max(2 * reach, FIRST_WINDOW), max_window)
        self.windows = ExactWindows(self.expanded, reach, max_window)

    def search(self, index: str, reporters: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The next window's search (None after the last), the ``reporters`` (other legs'
        named queries) scored on its hits (:func:`reported`)."""
        size = None if self.windows is None else self.windows.next()
        if size is None or self.query is None:
            return None
        search = page(index, self.query, size)
        if not reporters:
            return search
        return {**search, "post_filter": reported(reporters), "include_named_queries_score": True}

    def take(self, hits: Sequence[Mapping[str, Any]]) -> None:
        """A window's hits."""
        assert self.windows is not None
        self.windows.take(hits)

    @property
    def final(self) -> bool:
        """Whether the list is read (no window follows)."""
        return self.windows is None or self.windows.final

    def read(self, reach: int, stored: dict[str, Stored]) -> LegList:
        """The list read (its documents added to ``stored``)."""
        scores: dict[str, float] = {}
        if self.windows is not None:
            for candidate in self.windows.top():
                scores[candidate.stored.id] = candidate.score
                stored.setdefault(candidate.stored.id, candidate.stored)
        proven = self.windows is None or self.windows.proven
        return LegList(self.name, scores, full=len(scores) < reach, proven=proven)

    def scores_of(self, documents: Sequence[Stored]) -> dict[str, float]:
        """The exact SCM of other candidates, from their stored vectors."""
        exact = self.expanded.exact_scores([document.vector for document in documents])
        return {document.id: score for document, score in zip(documents, exact, strict=True)}

    def unproven(self, reach: int) -> str | None:
        """Why the list is not provably the SCM's top ``reach`` (None if it is)."""
        if self.windows is None:
            return None
        if self.two_phase:
            if self.windows.proven:
                return None
            sent = self.expanded.clause_count
            return (
                f"the SCM's list is the exact SCM of the first phase's top {self.windows.read} "
                f"candidates ({sent} of {sent + self.expanded.pruned_terms} expansion terms "
                "sent), not provably the SCM's own top"
            )
        return self.windows.unproven(reach, 0)


def reported(named: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``post_filter`` of a search whose hits report the scores of the ``named`` queries
    (with the search's ``include_named_queries_score``): it keeps every hit (``match_all``
    beside them), so neither the hits nor their order change, and Elasticsearch scores each
    named query on each hit it returns, on its own. As a clause of the query itself, even with
    a boost of 0, the named queries made the query's own evaluation twice as slow (Lucene
    skips less in a nested disjunction)."""
    return {"bool": {"should": [*(dict(q) for q in named), {"match_all": {}}]}}


def named_scores(hit: Mapping[str, Any], name: str) -> float:
    """The score of the named query ``name`` in a hit of a search with
    ``include_named_queries_score`` (0 where it does not match the hit)."""
    matched = hit.get("matched_queries")
    if isinstance(matched, Mapping):
        return float(matched.get(name, 0.0))
    return 0.0


@dataclass(frozen=True)
class Fused:
    """The fusion of one query's legs: the candidates ranked (id, fused score), each one's
    score by leg (``components``), whether the top ``need`` is proven (``proven``), and whether
    it is above the bound of every document outside the lists (``bounded``: with lists that
    are their legs' top, that proves it)."""

    ranked: list[tuple[str, float]]
    components: dict[str, dict[str, float | None]]
    proven: bool
    candidates: int
    bounded: bool = True
    #: The weight of each leg for this query (a score fusion), and the decision behind them.
    weights: dict[str, float] | None = None
    decision: WeightDecision | None = None

    @property
    def why(self) -> str | None:
        """Why the legs weigh what they weigh, in one line (a score fusion; None otherwise)."""
        return None if self.decision is None else self.decision.explanation()

    def note(self, need: int) -> str | None:
        """What a reader of a result unproven by the bound should know (None otherwise; a
        leg whose list is not provably its top says so itself)."""
        if self.bounded:
            return None
        return (
            f"the fusion's top {need} is exact over the {self.candidates} candidates; a "
            "document outside every list could still rank higher (raise depth to prove it)"
        )


def candidates_of(lists: Sequence[LegList]) -> list[str]:
    """The candidates of a hybrid search: the union of the legs' lists, in the legs' order."""
    return list(dict.fromkeys(doc_id for leg in lists for doc_id in leg.scores))


def fuse(
    fusion: Fusion,
    lists: Sequence[LegList],
    others: Mapping[str, Mapping[str, float]],
    need: int,
    signals: QuerySignals | None = None,
) -> Fused:
    """Fuse the legs' top ``lists`` (module docstring).

    ``others[leg]`` holds a score fusion's scores of the candidates outside the leg's own list
    (those missing score 0); reciprocal rank fusion reads the lists alone. The components of
    each candidate come in :data:`~es_scm.options.LEGS`' order. ``signals`` are the query's,
    for a fusion whose weights read them (:attr:`~es_scm.fusion.Fusion.reads_signals`).
    """
    lists = sorted(lists, key=lambda leg: LEGS.index(leg.name) if leg.name in LEGS else len(LEGS))
    candidates = candidates_of(lists)
    proven = all(leg.proven for leg in lists)
    if not isinstance(fusion, ScoreFusion):
        fused = fusion.fuse_legs({leg.name: leg.scores for leg in lists}, candidates)
        components: dict[str, dict[str, float | None]] = {
            c: {leg.name: leg.scores.get(c) for leg in lists} for c in candidates
        }
        return Fused(rank(fused.items()), components, proven, len(candidates))
    full = {
        leg.name: {**others.get(leg.name, {}), **leg.scores} for leg in lists
    }  # every candidate's score by leg
    outside = {leg.name: leg.outside for leg in lists}
    weighed = fusion.fuse_bounded(full, candidates, outside, signals)  # one choice of weights
    ranked = rank(weighed.scores.items())
    bounded = len(ranked) < need or ranked[need - 1][1] > weighed.bound
    components = {
        c: {name: scores.get(c, 0.0) for name, scores in full.items()} for c in candidates
    }
    return Fused(
        ranked,
        components,
        proven and bounded,
        len(candidates),
        bounded,
        weighed.weights,
        weighed.decision,
    )
