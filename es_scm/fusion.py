r"""Fusion of BM25 and the SCM: what hybrid search computes, and what tuning compares.

One registry (:data:`FUSIONS`), one class per fusion, each declaring its parameters once; hybrid
search (:mod:`es_scm.elastic.hybrid`), the evaluations and ``es-scm tune`` all fuse through it.
Every fusion works on the candidates — the union of the legs' top lists — with the scores of
each candidate by leg, ``bm25[c]`` and ``scm[c]`` (0 where a leg does not match it).

The legs are named: :meth:`Fusion.fuse_legs` takes ``{leg name: scores}`` (hybrid search's
legs, :mod:`es_scm.elastic.hybrid`), and :meth:`Fusion.fuse` is its two-leg form
``fuse(bm25, scm, candidates)``. Reciprocal rank fusion takes any number of legs; a score fusion
weighs its legs (:meth:`ScoreFusion.weights`: α on ``bm25`` and 1 − α on ``scm``).

``max`` (the default)
    :math:`\alpha \cdot b/\max b + (1-\alpha) \cdot s/\max s`, each side divided by its largest
    score among the candidates. Both scores are ≥ 0 and 0 means "no match", so dividing by the
    maximum keeps that meaning and puts the best of each side at 1, whatever the query's length or
    the collection's idf scale.
``linear``
    :math:`\alpha \cdot \operatorname{minmax}(b) + (1-\alpha) \cdot \operatorname{minmax}(s)`,
    minmax(v) = (v − min) / (max − min) over the candidates.
``zscore``
    :math:`\alpha \cdot z(b) + (1-\alpha) \cdot z(s)`, z(v) = (v − mean) / standard deviation
    over the candidates.
``rrf``
    Reciprocal rank fusion, :math:`\sum_{\text{lists}} 1 / (k + \text{rank})` over the lists in
    which a document appears, ranks from 1 (Cormack, Clarke and Büttcher, SIGIR 2009).

Why ``max`` with α = 0.5 is the default: on the training collections (SemEval-2016 train-part2,
Cranfield, CISI, CACM, SciFact train) it was above BM25 on every one, with the largest worst-case
gain of the fusions compared (docs/QUALITY.md, ``scripts/choose_defaults.py``).

Bounds (exact hybrid search)
    Each score fusion is increasing in both scores, so a document outside both top lists, whose
    scores are at most each list's lowest (0 when the list holds every match), fuses to at most
    :meth:`ScoreFusion.bound`; a k-th fused score above it proves the top k.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from es_scm.defaults import HYBRID_DEFAULTS
from es_scm.validation import FRACTION, NON_NEGATIVE_INT, POSITIVE_INT, check

__all__ = [
    "FUSIONS",
    "Fusion",
    "LinearFusion",
    "MaxFusion",
    "ReciprocalRankFusion",
    "ScoreFusion",
    "ZScoreFusion",
    "fusion_from",
    "hybrid_settings",
    "interpolate_scores",
    "min_max",
    "reciprocal_rank_fusion",
]

Scores = Mapping[str, float]


class Fusion:
    """A fusion of BM25's and the SCM's results (see the module docstring)."""

    name: ClassVar[str]
    uses_scores: ClassVar[bool]

    def fuse(self, bm25: Scores, scm: Scores, candidates: Sequence[str]) -> dict[str, float]:
        """The fused score of every candidate (``bm25``/``scm``: ranked best first)."""
        return self.fuse_legs({"bm25": bm25, "scm": scm}, candidates)

    def fuse_legs(self, legs: Mapping[str, Scores], candidates: Sequence[str]) -> dict[str, float]:
        """The fused score of every candidate from the scores of each named leg (each ranked
        best first)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """``{"fusion": name, **parameters}``: what a model or a report records."""
        return {"fusion": self.name, **asdict(self)}  # type: ignore[call-overload]


@dataclass(frozen=True)
class ScoreFusion(Fusion):
    """α · N(BM25) + (1 − α) · N(SCM), N a normalization over the candidates.

    Parameters
    ----------
    alpha : float in [0, 1]
        The weight of BM25.
    """

    alpha: float = HYBRID_DEFAULTS.alpha
    uses_scores: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", float(check(self.alpha, "alpha", FRACTION)))

    @staticmethod
    def scaling(values: np.ndarray) -> tuple[float, float]:
        """(shift, scale) of the normalization N(v) = (v − shift) / scale over ``values``."""
        raise NotImplementedError

    def weights(self, names: Sequence[str]) -> list[float]:
        """The weight of each leg, in the order of ``names``: α on ``bm25``, 1 − α on ``scm``.

        Raises
        ------
        ValueError
            For other legs than ``bm25`` and ``scm``.
        """
        if tuple(names) != ("bm25", "scm"):
            raise ValueError(
                f"the {self.name} fusion weighs two legs, bm25 and scm (alpha on bm25), not "
                f"{', '.join(names)}"
            )
        return [self.alpha, 1.0 - self.alpha]

    def _normalizers(self, legs: Mapping[str, Scores], candidates: Sequence[str]) -> Any:
        sides = []
        for scores in legs.values():
            values = np.array([float(scores.get(c, 0.0)) for c in candidates], dtype=np.float64)
            shift, scale = self.scaling(values) if len(values) else (0.0, 1.0)
            sides.append((values, shift, scale))
        return sides

    def _weighted(self, legs: Mapping[str, Scores], values: list[Any], sides: Any) -> Any:
        total = None
        for weight, value, (_, shift, scale) in zip(
            self.weights(list(legs)), values, sides, strict=True
        ):
            term = weight * _apply(value, shift, scale)
            total = term if total is None else total + term
        return total

    def fuse_legs(self, legs: Mapping[str, Scores], candidates: Sequence[str]) -> dict[str, float]:
        sides = self._normalizers(legs, candidates)
        fused = self._weighted(legs, [values for values, _, _ in sides], sides)
        return dict(zip(candidates, fused.tolist(), strict=True))

    def bound(
        self, bm25: Scores, scm: Scores, candidates: Sequence[str], outside: tuple[float, float]
    ) -> float:
        """The largest fused score of a document whose scores are at most ``outside``."""
        return self.bound_legs(
            {"bm25": bm25, "scm": scm}, candidates, dict(zip(("bm25", "scm"), outside, strict=True))
        )

    def bound_legs(
        self, legs: Mapping[str, Scores], candidates: Sequence[str], outside: Mapping[str, float]
    ) -> float:
        """The largest fused score of a document whose score by each leg is at most
        ``outside[leg]`` (the fusion is increasing in every leg's score)."""
        sides = self._normalizers(legs, candidates)
        values = [np.array([outside[name]], dtype=np.float64) for name in legs]
        return float(self._weighted(legs, values, sides)[0])


def _apply(values: np.ndarray, shift: float, scale: float) -> np.ndarray:
    return (values - shift) / scale if scale > 0.0 else np.zeros_like(values)


@dataclass(frozen=True)
class MaxFusion(ScoreFusion):
    """``max``: each side divided by its largest score among the candidates."""

    alpha: float = HYBRID_DEFAULTS.alpha
    name: ClassVar[str] = "max"

    @staticmethod
    def scaling(values: np.ndarray) -> tuple[float, float]:
        return 0.0, float(values.max())


@dataclass(frozen=True)
class LinearFusion(ScoreFusion):
    """``linear``: each side min-max normalized over the candidates."""

    alpha: float = HYBRID_DEFAULTS.alpha
    name: ClassVar[str] = "linear"

    @staticmethod
    def scaling(values: np.ndarray) -> tuple[float, float]:
        low, high = float(values.min()), float(values.max())
        return low, high - low


@dataclass(frozen=True)
class ZScoreFusion(ScoreFusion):
    """``zscore``: each side standardized over the candidates."""

    alpha: float = HYBRID_DEFAULTS.alpha
    name: ClassVar[str] = "zscore"

    @staticmethod
    def scaling(values: np.ndarray) -> tuple[float, float]:
        return float(values.mean()), float(values.std())


@dataclass(frozen=True)
class ReciprocalRankFusion(Fusion):
    """``rrf``: Σ over the lists of 1 / (k + rank), ranks from 1.

    Parameters
    ----------
    rrf_k : int >= 0
        The constant of Cormack et al.: a larger k flattens the weight of the top ranks.
    """

    rrf_k: int = HYBRID_DEFAULTS.rrf_k
    name: ClassVar[str] = "rrf"
    uses_scores: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check(self.rrf_k, "rrf_k", NON_NEGATIVE_INT)

    def fuse_legs(self, legs: Mapping[str, Scores], candidates: Sequence[str]) -> dict[str, float]:
        fused = reciprocal_rank_fusion([list(scores) for scores in legs.values()], self.rrf_k)
        return {c: fused.get(c, 0.0) for c in candidates}


#: The fusions by name (``fusion=`` of hybrid search, ``--fusion``).
FUSIONS: dict[str, type[Fusion]] = {
    cls.name: cls for cls in (MaxFusion, LinearFusion, ZScoreFusion, ReciprocalRankFusion)
}


def fusion_from(
    name: str | None = None, *, alpha: float | None = None, rrf_k: int | None = None
) -> Fusion:
    """The fusion ``name`` (default :data:`~es_scm.defaults.HYBRID_DEFAULTS`) from the registry,
    with its parameters.

    A parameter that the fusion does not take (``alpha`` for ``rrf``, ``rrf_k`` for the score
    fusions) and ``None`` are ignored, so the options of a command line can be passed whole.
    """
    name = HYBRID_DEFAULTS.fusion if name is None else name
    if name not in FUSIONS:
        raise ValueError(f"fusion must be one of {sorted(FUSIONS)}, got {name!r}")
    cls = FUSIONS[name]
    fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
    given = {"alpha": alpha, "rrf_k": rrf_k}
    return cls(**{k: v for k, v in given.items() if k in fields and v is not None})


def hybrid_settings(settings: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Checked hybrid settings of a model (``fusion``, ``alpha``, ``rrf_k``, ``depth``; any of
    them), or None.

    Raises
    ------
    ValueError
        Naming an unknown key or a bad value.
    """
    if settings is None:
        return None
    if not isinstance(settings, Mapping):
        raise ValueError(f"hybrid settings must be a mapping, got {settings!r}")
    known = HYBRID_DEFAULTS.names()
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise ValueError(f"unknown hybrid setting {unknown[0]!r}; known: {sorted(known)}")
    checked = dict(settings)
    fusion_from(checked.get("fusion"), alpha=checked.get("alpha"), rrf_k=checked.get("rrf_k"))
    if "depth" in checked:
        check(checked["depth"], "depth", POSITIVE_INT)
    return checked


# -- functions over score mappings -------------------------------------------------------------


def min_max(scores: Scores, candidates: Iterable[str] | None = None) -> dict[str, float]:
    """Min-max normalization (s − min) / (max − min) over ``candidates`` (missing ones score 0).

    When every score is equal, every normalized score is 0.
    """
    ids = list(scores) if candidates is None else list(candidates)
    values = np.array([float(scores.get(c, 0.0)) for c in ids], dtype=np.float64)
    if not len(values):
        return {}
    shift, scale = LinearFusion.scaling(values)
    return dict(zip(ids, _apply(values, shift, scale).tolist(), strict=True))


def interpolate_scores(
    first: Scores, second: Scores, alpha: float, candidates: Iterable[str] | None = None
) -> dict[str, float]:
    """α · minmax(first) + (1 − α) · minmax(second) (the ``linear`` fusion)."""
    ids = list(dict.fromkeys([*first, *second])) if candidates is None else list(candidates)
    return LinearFusion(alpha).fuse(first, second, ids)


def reciprocal_rank_fusion(rankings: Iterable[Sequence[str]], k: int = 60) -> dict[str, float]:
    """RRF: Σ over the ranked lists of 1 / (k + rank of the document), ranks from 1."""
    k = check(k, "k", NON_NEGATIVE_INT)
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k + rank)
    return fused
