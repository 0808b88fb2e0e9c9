r"""Hybrid search's legs, their fusion and its bound: pure code, no I/O.

Hybrid search fuses the top lists of several *legs*, each retrieving its own candidates over the
same (filtered) documents:

* **BM25** (:class:`BM25Leg`): Elasticsearch's ``match`` query on the ``text`` field (the
  index's analyzer), its top ``depth``;
* **SCM**: exact search's top ``depth``, provably the brute-force top ``depth`` of the SCM
  (:mod:`es_scm.elastic.windows`);
* **dense** (:class:`DenseLeg`, with ``dense=``): Elasticsearch's kNN search on a
  ``dense_vector`` field (es-scm's own vectors, or the caller's field and query vector:
  :mod:`es_scm.elastic.dense`), its top ``depth``.

Which legs a search fuses: BM25 and the SCM, and the dense leg when one is asked; a score fusion
with explicit ``weights`` fuses exactly the legs it weighs (``{"bm25": 0.5, "dense": 0.5}``:
BM25 and kNN alone, the baseline a user would otherwise configure) (:func:`hybrid_legs`).

``depth`` is at least ``from + k`` (default 100). The candidates (the union of the lists) are
fused by a fusion of :mod:`es_scm.fusion` (``max`` by default, ``linear``, ``zscore`` or
``rrf``; with a dense leg :data:`~es_scm.defaults.HYBRID_DENSE_DEFAULTS`; the model's own when it
has one, see :attr:`es_scm.model.SoftCosineModel.hybrid`):

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

from es_scm.defaults import HYBRID_DEFAULTS, HYBRID_DENSE_DEFAULTS
from es_scm.elastic.dense import MAX_KNN, DenseField, DenseQuery
from es_scm.elastic.query import bm25_query
from es_scm.elastic.results import distinct_hits
from es_scm.fusion import Fusion, ScoreFusion, fusion_from_options
from es_scm.options import LEGS, HybridOptions
from es_scm.query_signals import QuerySignals
from es_scm.similarity.scoring import rank

__all__ = [
    "BM25Leg",
    "DenseLeg",
    "Fused",
    "HybridOptions",
    "Leg",
    "LegList",
    "candidates_of",
    "fuse",
    "hybrid_legs",
    "hybrid_options",
    "make_fusion",
    "resolve_fusion",
    "scm_list",
]


def hybrid_options(
    model_defaults: Mapping[str, Any] | None = None,
    *,
    fusion: str | None = None,
    alpha: float | None = None,
    rrf_k: int | None = None,
    depth: int | None = None,
    weights: Mapping[str, float] | None = None,
    dense: bool = False,
) -> HybridOptions:
    """Hybrid options by name (:class:`~es_scm.options.HybridOptions`, checked): what a command
    line gives.

    A ``None`` takes the model's own (``model_defaults``, what ``es-scm tune`` saved: with
    ``dense``, its ``"dense"`` sub-key), else :data:`~es_scm.defaults.HYBRID_DEFAULTS` (with
    ``dense``, :data:`~es_scm.defaults.HYBRID_DENSE_DEFAULTS`); another fusion than the model's
    takes its own defaults. ``alpha`` (``rrf_k``, ``weights``) given for a fusion that does not
    use it is an error, so that a setting is never silently ignored; so is ``alpha`` with a
    dense leg (three legs are weighed by ``weights``).
    """
    given = {"fusion": fusion, "alpha": alpha, "rrf_k": rrf_k, "depth": depth, "weights": weights}
    saved = dict(model_defaults or {})
    if dense:
        if alpha is not None:
            raise ValueError(
                "alpha weighs BM25 against the SCM (two legs); with a dense leg give weights, "
                "e.g. {'bm25': 0.4, 'scm': 0.1, 'dense': 0.5}"
            )
        defaults, own = HYBRID_DENSE_DEFAULTS.as_dict(), dict(saved.get("dense") or {})
    else:
        defaults = HYBRID_DEFAULTS.as_dict()
        own = {key: value for key, value in saved.items() if key != "dense"}
    base = {**defaults, **own}
    if fusion is not None and fusion != base["fusion"]:  # another fusion: its own defaults
        base = {**defaults, "depth": base["depth"]}
    if alpha is not None:  # α given: the two legs weighed by it, not by saved weights
        base["weights"] = None
    options = HybridOptions(**{**base, **{k: v for k, v in given.items() if v is not None}})
    unused = ("rrf_k",) if options.fusion != "rrf" else ("alpha", "weights")
    for name in unused:
        if given[name] is not None:
            raise ValueError(f"{name} does not apply to fusion={options.fusion!r}")
    return options


def make_fusion(options: HybridOptions) -> Fusion:
    """The :class:`~es_scm.fusion.Fusion` of hybrid options (from the registry, by name, every
    parameter passed: the adaptive fusion's ``base`` and fitted ``model`` too)."""
    return fusion_from_options(options)


def resolve_fusion(
    fusion: Fusion | str | None,
    depth: int | None,
    model_defaults: Mapping[str, Any] | None,
    dense: bool = False,
) -> tuple[Fusion, int]:
    """The fusion and depth of a hybrid search (``dense``: with a dense leg): a
    :class:`~es_scm.fusion.Fusion` as given; a name, or None, as :func:`hybrid_options` reads
    it (the model's own settings, else the defaults); ``depth`` None: the model's, else the
    default. The fusion is checked against the legs (:func:`hybrid_legs`)."""
    if isinstance(fusion, Fusion):
        options = hybrid_options(model_defaults, depth=depth, dense=dense)
        chosen = fusion
    elif fusion is not None and not isinstance(fusion, str):
        raise ValueError(f"fusion must be a Fusion or the name of one, got {fusion!r}")
    else:
        options = hybrid_options(model_defaults, fusion=fusion, depth=depth, dense=dense)
        chosen = make_fusion(options)
    hybrid_legs(chosen, dense)
    if dense and options.depth > MAX_KNN:
        raise ValueError(
            f"depth must be at most {MAX_KNN} with a dense leg (Elasticsearch's largest kNN k), "
            f"got {options.depth}"
        )
    return chosen, options.depth


def hybrid_legs(fusion: Fusion, dense: bool) -> tuple[str, ...]:
    """The legs a hybrid search fuses, in :data:`~es_scm.options.LEGS`' order: those a score
    fusion's ``weights`` name, else BM25 and the SCM, and the dense leg when ``dense``.

    Raises
    ------
    ValueError
        A fusion that cannot fuse those legs: weights that name the dense leg without
        ``dense``, or leave it out with it; ``alpha`` (two legs) with ``dense``.
    """
    if isinstance(fusion, ScoreFusion) and fusion.weights is not None:
        named = set(fusion.weights)
        if ("dense" in named) != dense:
            raise ValueError(
                f"the fusion's weights name the legs {', '.join(fusion.weights)}: "
                + ("give dense= for its dense leg" if not dense else "weigh the dense leg too")
            )
        return tuple(leg for leg in LEGS if leg in named)
    if dense and isinstance(fusion, ScoreFusion):
        raise ValueError(
            f"{fusion.name} with alpha fuses two legs, BM25 and the SCM; with a dense leg give it "
            "weights, e.g. fusion_from('zscore', weights={'bm25': 0.4, 'scm': 0.1, "
            "'dense': 0.5})"
        )
    return ("bm25", "scm", "dense") if dense else ("bm25", "scm")


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
    documents. The searcher sends what :meth:`top` and :meth:`scores_of` build (keyword arguments
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
        :func:`~es_scm.elastic.results.distinct_hits`; full when the answer is short)."""
        scores = {hit["_id"]: float(hit["_score"]) for hit in distinct_hits(hits)}
        return LegList(self.name, scores, full=len(hits) < depth)

    def read_scores(self, hits: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """The scores of the answer to :meth:`scores_of` (a document the leg does not match is
        left out: its score is 0; an id held twice, its best copy's)."""
        return {hit["_id"]: float(hit["_score"]) for hit in distinct_hits(hits)}


@dataclass(frozen=True)
class BM25Leg(Leg):
    """BM25 of the query ``text`` (:func:`~es_scm.elastic.query.bm25_query`)."""

    text: str
    name: ClassVar[str] = "bm25"

    def top(self, depth: int, filters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        query = bm25_query(self.text, filters)
        return {"query": query, "size": depth, "source": True, "track_total_hits": False}

    def scores_of(self, ids: Sequence[str]) -> dict[str, Any]:
        query = bm25_query(self.text, ids=ids)
        return {"query": query, "size": len(ids), "source": False, "track_total_hits": False}


@dataclass(frozen=True)
class DenseLeg(Leg):
    """Elasticsearch's kNN search of ``query`` (:class:`~es_scm.elastic.dense.DenseQuery`: a
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
    #: The weight of each leg for this query (a score fusion), and why (one line).
    weights: dict[str, float] | None = None
    why: str | None = None

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
        weighed.explanation(),
    )


def scm_list(scores: Mapping[str, float], depth: int, proven: bool) -> LegList:
    """The SCM leg's top list: exact search's top ``depth`` (``proven`` by its windows)."""
    return LegList("scm", dict(scores), full=len(scores) < depth, proven=proven)
