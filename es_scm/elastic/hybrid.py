r"""Hybrid search's legs, their fusion and its bound: pure code, no I/O.

Hybrid search fuses the top lists of several *legs*, each retrieving its own candidates over the
same (filtered) documents:

* **BM25** (:class:`BM25Leg`): Elasticsearch's ``match`` query on the ``text`` field (the
  index's analyzer), its top ``depth``;
* **SCM**: exact search's top ``depth``, provably the brute-force top ``depth`` of the SCM
  (:mod:`es_scm.elastic.windows`).

``depth`` is at least ``from + k`` (default 100). The candidates (the union of the lists) are
fused by a fusion of :mod:`es_scm.fusion` (``max`` by default, ``linear``, ``zscore`` or
``rrf``; the model's own when it has one, see :attr:`es_scm.model.SoftCosineModel.hybrid`):

reciprocal rank fusion (``rrf``)
    Σ over the lists that contain it of 1 / (``rrf_k`` + its rank in the list). A document in no
    list has no score by definition, so the result is exactly the top k of this fusion.
score fusions (``max``, ``linear``, ``zscore``)
    Σ_legs w · N(score), each leg's scores normalized over the candidates. Every candidate gets
    every leg's score: the SCM from its stored vector, BM25 from a ``match`` restricted to the
    candidates that BM25 did not return (0 if no term matches). A document outside every list
    scores at most each list's lowest (0 when a list holds every match: it is shorter than
    ``depth``), so, the fusion being increasing in every score, its fused score is at most
    :meth:`~es_scm.fusion.ScoreFusion.bound_legs` of those; the result is proven
    (``exact_guarantee``) when the k-th fused score exceeds that bound, i.e. when it is the
    exact top k of the fusion over every (filtered) document with the candidates'
    normalization. Otherwise a note says so, and a larger ``depth`` may prove it.

Each hit's ``components`` holds its score by leg (None where a leg did not score it, with RRF),
and ``score`` the fused one; with ``explain=True`` its explanation is of its exact SCM, from its
stored vector, whichever leg found it.

A leg is a small object: its name, the search of its top ``depth``, and the search of the scores
of given documents (:class:`Leg`); a new kind of leg (dense vectors) is one more class, and the
fusion takes the legs by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from es_scm.defaults import HYBRID_DEFAULTS
from es_scm.elastic.query import bm25_query
from es_scm.fusion import Fusion, ScoreFusion, fusion_from
from es_scm.options import HybridOptions
from es_scm.similarity.scoring import rank

__all__ = [
    "BM25Leg",
    "Fused",
    "HybridOptions",
    "Leg",
    "LegList",
    "candidates_of",
    "fuse",
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
) -> HybridOptions:
    """Hybrid options by name (:class:`~es_scm.options.HybridOptions`, checked): what a command
    line gives.

    A ``None`` takes the model's own (``model_defaults``, what ``es-scm tune`` saved), else
    :data:`~es_scm.defaults.HYBRID_DEFAULTS`; another fusion than the model's takes its own
    defaults. ``alpha`` (``rrf_k``) given for a fusion that does not use it is an error, so that
    a setting is never silently ignored.
    """
    given = {"fusion": fusion, "alpha": alpha, "rrf_k": rrf_k, "depth": depth}
    base = {**HYBRID_DEFAULTS.as_dict(), **(model_defaults or {})}
    if fusion is not None and fusion != base["fusion"]:  # another fusion: its own defaults
        base = {**HYBRID_DEFAULTS.as_dict(), "depth": base["depth"]}
    options = HybridOptions(**{**base, **{k: v for k, v in given.items() if v is not None}})
    unused = "rrf_k" if options.fusion != "rrf" else "alpha"
    if given[unused] is not None:
        raise ValueError(f"{unused} does not apply to fusion={options.fusion!r}")
    return options


def make_fusion(options: HybridOptions) -> Fusion:
    """The :class:`~es_scm.fusion.Fusion` of hybrid options (from the registry, by name)."""
    return fusion_from(options.fusion, alpha=options.alpha, rrf_k=options.rrf_k)


def resolve_fusion(
    fusion: Fusion | str | None, depth: int | None, model_defaults: Mapping[str, Any] | None
) -> tuple[Fusion, int]:
    """The fusion and depth of a hybrid search: a :class:`~es_scm.fusion.Fusion` as given; a
    name, or None, as :func:`hybrid_options` reads it (the model's own settings, else the
    defaults); ``depth`` None: the model's, else the default."""
    if isinstance(fusion, Fusion):
        options = hybrid_options(model_defaults, depth=depth)
        return fusion, options.depth
    if fusion is not None and not isinstance(fusion, str):
        raise ValueError(f"fusion must be a Fusion or the name of one, got {fusion!r}")
    options = hybrid_options(model_defaults, fusion=fusion, depth=depth)
    return make_fusion(options), options.depth


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
    of ``search``, without the index) and hands the hits back."""

    name: ClassVar[str]

    def top(self, depth: int, filters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The search of the leg's top ``depth`` (with the documents' whole ``_source``)."""
        raise NotImplementedError

    def scores_of(self, ids: Sequence[str]) -> dict[str, Any]:
        """The search of the leg's scores of the documents ``ids`` (no ``_source``)."""
        raise NotImplementedError

    def read(self, hits: Sequence[Mapping[str, Any]], depth: int) -> LegList:
        """The top list of the answer to :meth:`top`."""
        scores = {hit["_id"]: float(hit["_score"]) for hit in hits}
        return LegList(self.name, scores, full=len(hits) < depth)

    def read_scores(self, hits: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """The scores of the answer to :meth:`scores_of` (a document the leg does not match is
        left out: its score is 0)."""
        return {hit["_id"]: float(hit["_score"]) for hit in hits}


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
class Fused:
    """The fusion of one query's legs: the candidates ranked (id, fused score), each one's
    score by leg (``components``), and whether the top ``need`` is proven (``proven``)."""

    ranked: list[tuple[str, float]]
    components: dict[str, dict[str, float | None]]
    proven: bool
    candidates: int

    def note(self, need: int) -> str | None:
        """What a reader of an unproven result should know (None when proven)."""
        if self.proven:
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
) -> Fused:
    """Fuse the legs' top ``lists`` (module docstring).

    ``others[leg]`` holds a score fusion's scores of the candidates outside the leg's own list
    (those missing score 0); reciprocal rank fusion reads the lists alone.
    """
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
    fused = fusion.fuse_legs(full, candidates)
    bound = fusion.bound_legs(full, candidates, {leg.name: leg.outside for leg in lists})
    ranked = rank(fused.items())
    proven = proven and (len(ranked) < need or ranked[need - 1][1] > bound)
    components = {
        c: {name: scores.get(c, 0.0) for name, scores in full.items()} for c in candidates
    }
    return Fused(ranked, components, proven, len(candidates))


def scm_list(scores: Mapping[str, float], depth: int, proven: bool) -> LegList:
    """The SCM leg's top list: exact search's top ``depth`` (``proven`` by its windows)."""
    return LegList("scm", dict(scores), full=len(scores) < depth, proven=proven)
