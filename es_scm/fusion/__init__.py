r"""Fusion of hybrid search's legs: what hybrid search computes, and what tuning compares.

One registry (:data:`FUSIONS`), one class per fusion, each declaring its parameters once; hybrid
search (:mod:`es_scm.search.hybrid.legs`), the evaluations and ``es-scm tune`` all fuse through it.
Every fusion works on the candidates — the union of the legs' top lists — with the scores of
each candidate by leg: ``bm25[c]``, ``scm[c]`` and, with a dense kNN leg, ``dense[c]`` (0 where a
leg does not match it).

The legs are named (:data:`~es_scm.options.LEGS`: ``bm25``, ``scm``, ``dense``):
:meth:`Fusion.fuse_legs` takes ``{leg name: scores}`` (hybrid search's legs,
:mod:`es_scm.search.hybrid.legs`), and :meth:`Fusion.fuse` is its two-leg form
``fuse(bm25, scm, candidates)``. Reciprocal rank fusion takes any number of legs; a score fusion
weighs its legs (:meth:`ScoreFusion.weights_of`): α on ``bm25`` and 1 − α on ``scm`` (two legs,
``alpha``), or an explicit weight per leg (``weights``, e.g. ``fusion_from("zscore",
weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5})``), which also says which legs it fuses.

``max`` (the default)
    :math:`\sum_l w_l \cdot v_l/\max v_l` — two legs: :math:`\alpha \cdot b/\max b +
    (1-\alpha) \cdot s/\max s` — each leg divided by its largest score among the candidates.
    The scores are ≥ 0 and 0 means "no match", so dividing by the maximum keeps that meaning and
    puts the best of each leg at 1, whatever the query's length or the collection's idf scale.
``linear``
    :math:`\sum_l w_l \cdot \operatorname{minmax}(v_l)`, minmax(v) = (v − min) / (max − min)
    over the candidates.
``zscore``
    :math:`\sum_l w_l \cdot z(v_l)`, z(v) = (v − mean) / standard deviation over the candidates.
``rrf``
    Reciprocal rank fusion, :math:`\sum_{\text{lists}} 1 / (k + \text{rank})` over the lists in
    which a document appears, ranks from 1 (Cormack, Clarke and Büttcher, SIGIR 2009).
``adaptive``
    :math:`\sum_l w_l(q) \cdot N(v_l)`: the weights are the query's own, read from its signals
    (:mod:`es_scm.fusion.signals`: the lists' shapes and agreement, the query's words, the share
    of exact matches in the SCM's scores) by a small model (:mod:`es_scm.fusion.weights`), fixed
    for the query before any score is normalized; the fixed weights are its fallback
    (:class:`AdaptiveFusion`).

Why ``max`` with α = 0.5 is the default of two legs: on the training collections (SemEval-2016
train-part2, Cranfield, CISI, CACM, SciFact train) it was above BM25 on every one, with the
largest worst-case gain of the fusions compared (docs/QUALITY.md,
``scripts/choose_defaults.py``). Three legs: :data:`~es_scm.options.defaults.HYBRID_DENSE_DEFAULTS`.

Bounds (exact hybrid search)
    Every weight is ≥ 0 and every normalization increasing, so each score fusion is increasing
    in every leg's score: a document outside every top list, whose score by each leg is at most
    that list's lowest (0 when the list holds every match), fuses to at most
    :meth:`ScoreFusion.bound_legs`; a k-th fused score above it proves the top k. The
    ``adaptive`` fusion's weights are the query's, positive, and fixed before the scores are
    normalized, so the same holds within the query, with the same weights for the candidates
    and the bound: :meth:`ScoreFusion.fuse_bounded` computes both from one decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from es_scm.fusion.signals import QuerySignals, query_signals, top_lists
from es_scm.fusion.weights import WeightDecision, WeightModel, decide
from es_scm.options import HybridOptions, check_weights
from es_scm.options.defaults import HYBRID_DEFAULTS, HYBRID_DENSE_DEFAULTS
from es_scm.options.validation import FRACTION, NON_NEGATIVE_INT, POSITIVE_INT, check

__all__ = [
    "FUSIONS",
    "SCALINGS",
    "AdaptiveFusion",
    "BoundedFusion",
    "Fusion",
    "LinearFusion",
    "MaxFusion",
    "ReciprocalRankFusion",
    "ScoreFusion",
    "ZScoreFusion",
    "candidate_signals",
    "fusion_from",
    "fusion_from_options",
    "fusion_from_settings",
    "hybrid_settings",
    "interpolate_scores",
    "min_max",
    "reciprocal_rank_fusion",
]

Scores = Mapping[str, float]


class Fusion:
    """A fusion of hybrid search's legs, by name (see the module docstring)."""

    name: ClassVar[str]
    uses_scores: ClassVar[bool]
    #: Whether a candidate's fused score depends on the other candidates only through each
    #: leg's best score (``max``): then the fused top k of the legs' top ``depth`` lists is that
    #: of shorter lists whenever those prove it (hybrid search reads them first).
    reads_top_only: ClassVar[bool] = False
    #: Whether the fusion's weights read the query's signals (:mod:`es_scm.fusion.signals`),
    #: which hybrid search then computes from its lists and its query before it fuses.
    reads_signals: ClassVar[bool] = False

    def reads_top_only_for(self, legs: Sequence[str]) -> bool:
        """:attr:`reads_top_only` for a fusion of ``legs`` (a fusion whose normalization
        depends on the legs says so for them)."""
        return self.reads_top_only

    def fuse(
        self,
        bm25: Scores,
        scm: Scores,
        candidates: Sequence[str],
        signals: QuerySignals | None = None,
    ) -> dict[str, float]:
        """The fused score of every candidate (``bm25``/``scm``: ranked best first)."""
        return self.fuse_legs({"bm25": bm25, "scm": scm}, candidates, signals=signals)

    def fuse_legs(
        self,
        legs: Mapping[str, Scores],
        candidates: Sequence[str],
        signals: QuerySignals | None = None,
    ) -> dict[str, float]:
        """The fused score of every candidate from the scores of each named leg (each ranked
        best first). ``signals``: the query's (:mod:`es_scm.fusion.signals`), read by the
        ``adaptive`` fusion only."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """``{"fusion": name, **parameters}``: what a model or a report records."""
        return {"fusion": self.name, **asdict(self)}  # type: ignore[call-overload]


@dataclass(frozen=True)
class ScoreFusion(Fusion):
    """Σ over the legs of w · N(score), N a normalization over the candidates.

    Parameters
    ----------
    alpha : float in [0, 1]
        Two legs: the weight of BM25 (the SCM's is 1 − α).
    weights : mapping of leg name to float >= 0, optional
        The weight of each leg by name (:data:`~es_scm.options.LEGS`), instead of ``alpha``:
        the legs the fusion fuses, two or three (``{"bm25": 0.4, "scm": 0.1, "dense": 0.5}``).
    """

    alpha: float = HYBRID_DEFAULTS.alpha
    weights: Mapping[str, float] | None = None
    uses_scores: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", float(check(self.alpha, "alpha", FRACTION)))
        if self.weights is not None:
            object.__setattr__(self, "weights", check_weights(self.weights))

    def describe(self) -> dict[str, Any]:
        """``{"fusion": name, "alpha": α}``, or ``{"fusion": name, "weights": {...}}``."""
        if self.weights is not None:
            return {"fusion": self.name, "weights": dict(self.weights)}
        return {"fusion": self.name, "alpha": self.alpha}

    @property
    def legs(self) -> tuple[str, ...]:
        """The legs the fusion weighs: ``weights``' names, else ``bm25`` and ``scm``."""
        return ("bm25", "scm") if self.weights is None else tuple(self.weights)

    @staticmethod
    def scaling(values: np.ndarray) -> tuple[float, float]:
        """(shift, scale) of the normalization N(v) = (v − shift) / scale over ``values``."""
        raise NotImplementedError

    def weights_of(self, names: Sequence[str]) -> list[float]:
        """The weight of each leg, in the order of ``names``: ``weights``' own, else α on
        ``bm25`` and 1 − α on ``scm``.

        Raises
        ------
        ValueError
            For other legs than those the fusion weighs.
        """
        if self.weights is None:
            if sorted(names) != ["bm25", "scm"]:
                raise ValueError(
                    f"the {self.name} fusion with alpha weighs two legs, bm25 and scm, not "
                    f"{', '.join(names)}; give weights= for other legs (e.g. "
                    f"fusion_from({self.name!r}, weights={{'bm25': 0.4, 'scm': 0.1, "
                    "'dense': 0.5}))"
                )
            return [self.alpha if name == "bm25" else 1.0 - self.alpha for name in names]
        if sorted(names) != sorted(self.weights):
            raise ValueError(
                f"the {self.name} fusion weighs the legs {', '.join(self.weights)}, not "
                f"{', '.join(names)}"
            )
        return [self.weights[name] for name in names]

    def _scaling_of(self, legs: Sequence[str]) -> Any:
        """The normalization's (shift, scale) function for these legs."""
        return self.scaling

    def _normalizers(self, legs: Mapping[str, Scores], candidates: Sequence[str]) -> Any:
        scaling = self._scaling_of(list(legs))
        sides = []
        for scores in legs.values():
            values = np.array([float(scores.get(c, 0.0)) for c in candidates], dtype=np.float64)
            shift, scale = scaling(values) if len(values) else (0.0, 1.0)
            sides.append((values, shift, scale))
        return sides

    def decision(
        self,
        legs: Mapping[str, Scores],
        candidates: Sequence[str],
        signals: QuerySignals | None = None,
    ) -> WeightDecision:
        """The weights of ``legs`` (in their order) for this query, and why: the fixed ones
        (:meth:`weights_of`); the ``adaptive`` fusion reads the query's signals."""
        fixed = tuple(self.weights_of(list(legs)))
        return WeightDecision(
            tuple(legs), fixed, fixed, False, f"as the {self.name} fusion does not adapt them"
        )

    def query_weights(
        self,
        legs: Mapping[str, Scores],
        candidates: Sequence[str],
        signals: QuerySignals | None = None,
    ) -> list[float]:
        """The weight of each leg of ``legs`` (in its order) for this query (:meth:`decision`)."""
        return list(self.decision(legs, candidates, signals).weights)

    def fuse_bounded(
        self,
        legs: Mapping[str, Scores],
        candidates: Sequence[str],
        outside: Mapping[str, float],
        signals: QuerySignals | None = None,
    ) -> BoundedFusion:
        """:meth:`fuse_legs` and :meth:`bound_legs` with one decision of the query's weights:
        what hybrid search needs, in one call (module docstring, Bounds)."""
        decision = self.decision(legs, candidates, signals)
        sides = self._normalizers(legs, candidates)
        fused = self._weighted(decision.weights, [values for values, _, _ in sides], sides)
        outer = [np.array([outside[name]], dtype=np.float64) for name in legs]
        bound = float(self._weighted(decision.weights, outer, sides)[0])
        return BoundedFusion(dict(zip(candidates, fused.tolist(), strict=True)), bound, decision)

    @staticmethod
    def _weighted(weights: Sequence[float], values: list[Any], sides: Any) -> Any:
        total = None
        for weight, value, (_, shift, scale) in zip(weights, values, sides, strict=True):
            term = weight * _apply(value, shift, scale)
            total = term if total is None else total + term
        return total

    def fuse_legs(
        self,
        legs: Mapping[str, Scores],
        candidates: Sequence[str],
        signals: QuerySignals | None = None,
    ) -> dict[str, float]:
        weights = self.query_weights(legs, candidates, signals)
        sides = self._normalizers(legs, candidates)
        fused = self._weighted(weights, [values for values, _, _ in sides], sides)
        return dict(zip(candidates, fused.tolist(), strict=True))

    def bound(
        self,
        bm25: Scores,
        scm: Scores,
        candidates: Sequence[str],
        outside: tuple[float, float],
        signals: QuerySignals | None = None,
    ) -> float:
        """The largest fused score of a document whose scores are at most ``outside``."""
        return self.bound_legs(
            {"bm25": bm25, "scm": scm},
            candidates,
            dict(zip(("bm25", "scm"), outside, strict=True)),
            signals=signals,
        )

    def bound_legs(
        self,
        legs: Mapping[str, Scores],
        candidates: Sequence[str],
        outside: Mapping[str, float],
        signals: QuerySignals | None = None,
    ) -> float:
        """The largest fused score of a document whose score by each leg is at most
        ``outside[leg]`` (the fusion is increasing in every leg's score, with the query's
        weights: the same ``signals`` as :meth:`fuse_legs`)."""
        weights = self.query_weights(legs, candidates, signals)
        sides = self._normalizers(legs, candidates)
        values = [np.array([outside[name]], dtype=np.float64) for name in legs]
        return float(self._weighted(weights, values, sides)[0])


@dataclass(frozen=True)
class BoundedFusion:
    """A score fusion of one query (:meth:`ScoreFusion.fuse_bounded`): every candidate's fused
    score, the bound of a document outside every list, and the weights used and why."""

    scores: dict[str, float]
    bound: float
    decision: WeightDecision

    @property
    def weights(self) -> dict[str, float]:
        """The weight of each leg used for this query."""
        decision = self.decision
        return dict(zip(decision.legs, decision.weights, strict=True))

    def explanation(self) -> str:
        """Why the weights were what they were, in one line."""
        return self.decision.explanation()


def _apply(values: np.ndarray, shift: float, scale: float) -> np.ndarray:
    return (values - shift) / scale if scale > 0.0 else np.zeros_like(values)


@dataclass(frozen=True)
class MaxFusion(ScoreFusion):
    """``max``: each leg divided by its largest score among the candidates."""

    alpha: float = HYBRID_DEFAULTS.alpha
    name: ClassVar[str] = "max"
    reads_top_only: ClassVar[bool] = True

    @staticmethod
    def scaling(values: np.ndarray) -> tuple[float, float]:
        return 0.0, float(values.max())


@dataclass(frozen=True)
class LinearFusion(ScoreFusion):
    """``linear``: each leg min-max normalized over the candidates."""

    alpha: float = HYBRID_DEFAULTS.alpha
    name: ClassVar[str] = "linear"

    @staticmethod
    def scaling(values: np.ndarray) -> tuple[float, float]:
        low, high = float(values.min()), float(values.max())
        return low, high - low


@dataclass(frozen=True)
class ZScoreFusion(ScoreFusion):
    """``zscore``: each leg standardized over the candidates."""

    alpha: float = HYBRID_DEFAULTS.alpha
    name: ClassVar[str] = "zscore"

    @staticmethod
    def scaling(values: np.ndarray) -> tuple[float, float]:
        return float(values.mean()), float(values.std())


#: The normalization of each score fusion by name: (shift, scale) of N(v) = (v − shift) / scale.
SCALINGS = {cls.name: cls.scaling for cls in (MaxFusion, LinearFusion, ZScoreFusion)}


@dataclass(frozen=True)
class AdaptiveFusion(ScoreFusion):
    r"""``adaptive``: a score fusion whose weights are the query's, read from its signals.

    :math:`\sum_l w_l(q) \cdot N(v_l)`, N the normalization of ``base``, and :math:`w(q)` the
    weights that ``model`` (:class:`~es_scm.fusion.weights.WeightModel`) gives the query's
    signals (:mod:`es_scm.fusion.signals`: the legs' lists, the query, the SCM's best documents).
    The weights are fixed for the query before any score is normalized, positive and summing to
    1, so within a query the fusion is increasing in every leg's score and :meth:`bound_legs`
    (with the same signals) stays valid. Without a model for the legs fused, or with a signal
    missing, the fixed weights (``alpha``, or ``weights``) are the fallback.

    Signals not given to :meth:`fuse_legs` are computed from the legs' scores of the candidates
    (:func:`candidate_signals`): the lists' shapes and agreement, not the query's own signals.

    Parameters
    ----------
    alpha, weights
        The fixed weights (two legs: BM25's α; else by leg), the fallback.
    base : {"max", "linear", "zscore"}, optional
        The normalization of each leg over the candidates; None: the fixed fusion's of the legs
        fused (:data:`~es_scm.options.defaults.HYBRID_DEFAULTS`' ``max`` for BM25 and the SCM,
        :data:`~es_scm.options.defaults.HYBRID_DENSE_DEFAULTS`' ``zscore`` with a dense leg).
    model : WeightModel or its JSON, optional
        Per-query weights from signals, fitted on judged queries (``es-scm tune --fusions
        adaptive``, :mod:`es_scm.evaluation.adaptive`); None: the fixed weights. es-scm ships no
        fitted model: on its training collections, left out one at a time, no model beat the
        fixed weights reliably (docs/QUALITY.md).
    """

    alpha: float = HYBRID_DEFAULTS.alpha
    weights: Mapping[str, float] | None = None
    base: str | None = None
    model: WeightModel | None = None
    name: ClassVar[str] = "adaptive"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.base is not None and self.base not in SCALINGS:
            raise ValueError(f"base must be one of {sorted(SCALINGS)}, got {self.base!r}")
        if self.model is not None:
            object.__setattr__(self, "model", WeightModel.from_dict(self.model))

    reads_signals: ClassVar[bool] = True

    def reads_top_only_for(self, legs: Sequence[str]) -> bool:
        """With the ``max`` normalization the weights read only the lists' top
        :data:`~es_scm.fusion.signals.SHAPE_DEPTH` and the query: a candidate's fused score
        depends on the others only through each leg's best, as :class:`MaxFusion`'s."""
        return self.base_of(legs) == "max"

    def base_of(self, legs: Sequence[str]) -> str:
        """The normalization used for ``legs``: ``base``, else the fixed fusion's of those
        legs (``max`` if that is not a score fusion)."""
        if self.base is not None:
            return self.base
        fixed = HYBRID_DENSE_DEFAULTS.fusion if "dense" in legs else HYBRID_DEFAULTS.fusion
        return fixed if fixed in SCALINGS else "max"

    def _scaling_of(self, legs: Sequence[str]) -> Any:
        return SCALINGS[self.base_of(legs)]

    def decide(self, legs: Sequence[str], signals: QuerySignals | None) -> WeightDecision:
        """The weights of ``legs`` for a query with ``signals``, the fixed ones, and why."""
        legs = list(legs)
        return decide(self.model, legs, self.weights_of(legs), signals)

    def decision(
        self,
        legs: Mapping[str, Scores],
        candidates: Sequence[str],
        signals: QuerySignals | None = None,
    ) -> WeightDecision:
        """The query's weights from ``signals``, or, not given, from the signals of the legs'
        scores of the candidates (:func:`candidate_signals`)."""
        if signals is None:
            signals = candidate_signals(legs, candidates)
        return self.decide(list(legs), signals)

    def explain(
        self,
        legs: Mapping[str, Scores],
        candidates: Sequence[str],
        signals: QuerySignals | None = None,
    ) -> str:
        """One line: the weights this query got, and why (:meth:`WeightDecision.explanation`)."""
        return self.decision(legs, candidates, signals).explanation()

    def describe(self) -> dict[str, Any]:
        """``{"fusion": "adaptive", "alpha"|"weights": …, "base": …, "model": {...}}`` (the
        last two when given)."""
        described = super().describe()
        if self.base is not None:
            described["base"] = self.base
        if self.model is not None:
            described["model"] = self.model.to_dict()
        return described


def candidate_signals(legs: Mapping[str, Scores], candidates: Sequence[str]) -> QuerySignals:
    """The signals of the legs' lists, read from their scores of the candidates (the best
    :data:`~es_scm.fusion.signals.SHAPE_DEPTH` of each leg are its list's own:
    :func:`~es_scm.fusion.signals.top_lists`)."""
    tops = top_lists(legs, candidates)
    return query_signals({name: dict(pairs) for name, pairs in tops.items()})


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

    def fuse_legs(
        self,
        legs: Mapping[str, Scores],
        candidates: Sequence[str],
        signals: QuerySignals | None = None,
    ) -> dict[str, float]:
        fused = reciprocal_rank_fusion([list(scores) for scores in legs.values()], self.rrf_k)
        return {c: fused.get(c, 0.0) for c in candidates}


#: The fusions by name (``fusion=`` of hybrid search, ``--fusion``).
FUSIONS: dict[str, type[Fusion]] = {
    cls.name: cls
    for cls in (MaxFusion, LinearFusion, ZScoreFusion, ReciprocalRankFusion, AdaptiveFusion)
}


def fusion_from(
    name: str | None = None,
    *,
    alpha: float | None = None,
    rrf_k: int | None = None,
    weights: Mapping[str, float] | None = None,
    base: str | None = None,
    model: WeightModel | Mapping[str, Any] | None = None,
) -> Fusion:
    """The fusion ``name`` (default :data:`~es_scm.options.defaults.HYBRID_DEFAULTS`) from the
    registry, with its parameters: ``alpha`` (two legs) or ``weights`` (by leg) for a score fusion,
    ``rrf_k`` for reciprocal rank fusion, ``base`` and ``model`` for the ``adaptive`` one.

    A parameter that the fusion does not take (``alpha`` and ``weights`` for ``rrf``, ``rrf_k``
    for the score fusions) and ``None`` are ignored, so the options of a command line can be
    passed whole.
    """
    name = HYBRID_DEFAULTS.fusion if name is None else name
    if name not in FUSIONS:
        raise ValueError(f"fusion must be one of {sorted(FUSIONS)}, got {name!r}")
    cls = FUSIONS[name]
    fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
    given = {"alpha": alpha, "rrf_k": rrf_k, "weights": weights, "base": base, "model": model}
    return cls(**{k: v for k, v in given.items() if k in fields and v is not None})


def fusion_from_settings(settings: Mapping[str, Any]) -> Fusion:
    """The fusion of saved settings (:meth:`Fusion.describe`'s form, or a model's hybrid
    settings without ``depth``/``dense``): ``{"fusion": name, **parameters}``."""
    parameters = {k: v for k, v in settings.items() if k not in ("fusion", "depth", "dense")}
    return fusion_from(settings.get("fusion"), **parameters)


def fusion_from_options(options: HybridOptions) -> Fusion:
    """The fusion of hybrid options (:class:`~es_scm.options.HybridOptions`), every parameter
    passed: ``fusion``, ``alpha``, ``rrf_k``, ``weights``, and the ``adaptive`` fusion's
    ``base`` and ``model``."""
    return fusion_from(
        options.fusion,
        alpha=options.alpha,
        rrf_k=options.rrf_k,
        weights=options.weights,
        base=options.base,
        model=options.model,
    )


def hybrid_settings(settings: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Checked hybrid settings of a model, or None: ``fusion``, ``alpha``, ``rrf_k``, ``depth``
    and ``weights`` (any of them) of hybrid search's two legs, and under ``dense`` those of a
    search with a dense kNN leg (``fusion``, ``rrf_k``, ``depth``, ``weights``: the weights name
    the dense leg), e.g. ``{"fusion": "max", "alpha": 0.6, "dense": {"fusion": "zscore",
    "weights": {"bm25": 0.4, "scm": 0.1, "dense": 0.5}}}``.

    Raises
    ------
    ValueError
        Naming an unknown key or a bad value.
    """
    if settings is None:
        return None
    checked = _fusion_settings(settings, "hybrid", (*HYBRID_DEFAULTS.names(), "dense"))
    if "dense" in (checked.get("weights") or {}):
        raise ValueError(
            "hybrid weights name the dense leg: a fusion with a dense leg goes under "
            "hybrid['dense']"
        )
    if "dense" in checked:
        names = tuple(name for name in HYBRID_DENSE_DEFAULTS.names() if name != "alpha")
        dense = _fusion_settings(checked["dense"], "hybrid['dense']", names)
        if "dense" not in (dense.get("weights") or {"dense": 1.0}):
            raise ValueError(
                f"hybrid['dense'] weights must name the dense leg, got {dense['weights']!r}"
            )
        checked["dense"] = dense
    return checked


def _fusion_settings(settings: Any, what: str, known: Sequence[str]) -> dict[str, Any]:
    """``settings`` (a mapping of ``known`` keys) checked as a fusion's and a depth."""
    if not isinstance(settings, Mapping):
        raise ValueError(f"{what} settings must be a mapping, got {settings!r}")
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise ValueError(f"unknown {what} setting {unknown[0]!r}; known: {sorted(known)}")
    checked = dict(settings)
    fusion_from(
        checked.get("fusion"),
        alpha=checked.get("alpha"),
        rrf_k=checked.get("rrf_k"),
        weights=checked.get("weights"),
        base=checked.get("base"),
        model=checked.get("model"),
    )
    if checked.get("weights") is not None:
        checked["weights"] = check_weights(checked["weights"])
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
