r"""Fit the ``adaptive`` fusion's weight model on judged queries.

The model (:class:`~es_scm.fusion.weights.WeightModel`) gives each query the leg weights
:math:`w(q) = \operatorname{softmax}(b + \Theta z(q))` of its standardized signals z. It is fitted
to what matters, the queries' measure, not to a proxy: for every query the measure of the fusion
with every weighting of a grid (:class:`WeightTable`: α in steps of 0.025 for two legs, every
weighting of three legs in steps of 0.05) is computed once; a model's objective is then a lookup
of each query's measure at the grid point nearest its weights,

.. math:: J(b, \Theta) = \frac{1}{|G|} \sum_{g \in G} \frac{1}{|g|} \sum_{q \in g}
    m_q\bigl(\operatorname{grid}(w(q))\bigr)
    \;-\; \lambda \Bigl(\lVert\Theta\rVert^2 + \lVert b - b_0\rVert^2\Bigr),

the mean over groups (collections: each counts the same, whatever its number of queries) of the
mean measure (× 100), less a ridge penalty that pulls the model to the constant weights
:math:`\operatorname{softmax}(b_0)` (the fixed fusion's). The measure is piecewise constant in the
weights, so :func:`fit_weight_model` maximizes J by coordinate search (each parameter in turn
moved by the step that raises J most, steps halving when none does): a dozen parameters, a few
thousand queries, well under a second.

Regularize hard: the signals are standardized with the training queries' mean and standard
deviation (z clipped to ±3) and one leg's row of Θ and b is held at its start (the softmax
needs one less), so a 2-leg model over F signals has F + 1 free numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from es_scm.fusion.weights import WeightModel

__all__ = [
    "PENALTY",
    "SIGNALS",
    "STEPS_OF_GRID",
    "WeightTable",
    "fit_weight_model",
    "nearest_points",
    "standardization",
]

logger = logging.getLogger(__name__)

#: The moves of one parameter tried by the coordinate search, largest first.
STEPS = (1.0, 0.5, 0.25, 0.1, 0.05)
#: The step of the weight grid by the number of legs: α in 0.025 steps for two legs, every
#: weighting of three legs in 0.05 steps (231).
STEPS_OF_GRID = {2: 0.025, 3: 0.05}
#: What ``es-scm tune`` fits an adaptive fusion with, by the legs (sorted): the signals read
#: and the penalty λ. Measured as tune fits it — 5-fold cross-validation within each of the six
#: training collections (``scripts/choose_fusion.py``, docs/QUALITY.md) — the signal set fixed
#: before any fit ("small": the SCM's best score, BM25's decay, the legs' agreement, the exact
#: share of the SCM's scores; with a dense leg its best score and its agreement with BM25) with
#: the λ of the best worst gain over the fixed fusion.
SIGNALS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("bm25", "scm"): (
        "scm.top",
        "bm25.ratio10",
        "agree.bm25.scm.overlap10",
        "scm.exact_share10",
    ),
    ("bm25", "dense", "scm"): (
        "scm.top",
        "bm25.ratio10",
        "agree.bm25.scm.overlap10",
        "scm.exact_share10",
        "dense.top",
        "agree.bm25.dense.overlap10",
    ),
}
PENALTY = {2: 3.0, 3: 1.0}


@dataclass
class WeightTable:
    """Every query's measure for every weighting of a grid.

    Parameters
    ----------
    legs : tuple of str
        The legs weighed, in the grid's column order.
    step : float
        The grid's step: ``grid`` holds every weighting of the legs in multiples of it summing
        to 1 (:func:`es_scm.evaluation.tuning.weight_grid`).
    grid : ndarray, shape (G, L)
    measures : ndarray, shape (Q, G)
        The measure of each query's fusion with each weighting.
    groups : ndarray of int, shape (Q,)
        Each query's group (collection); each group weighs the same in the objective.
    """

    legs: tuple[str, ...]
    step: float
    grid: np.ndarray
    measures: np.ndarray
    groups: np.ndarray

    def __post_init__(self) -> None:
        units = round(1.0 / self.step)
        keys = np.rint(self.grid * units).astype(np.int64) @ _powers(units, len(self.legs))
        self._index = dict(zip(keys.tolist(), range(len(self.grid)), strict=True))
        self._lookup = np.full(int(keys.max()) + 1, -1, dtype=np.int64)
        self._lookup[keys] = np.arange(len(self.grid))
        groups = np.unique(self.groups, return_inverse=True)[1]
        sizes = np.bincount(groups)
        self._query_weight = 1.0 / (len(sizes) * sizes[groups])

    def subset(self, rows: np.ndarray) -> WeightTable:
        """The table of the queries ``rows`` (a boolean mask or indices)."""
        return WeightTable(self.legs, self.step, self.grid, self.measures[rows], self.groups[rows])

    def points(self, weights: np.ndarray) -> np.ndarray:
        """The grid row nearest each row of ``weights`` (:func:`nearest_points`)."""
        units = round(1.0 / self.step)
        keys = nearest_points(weights, units) @ _powers(units, len(self.legs))
        return np.asarray(self._lookup[keys])

    def objective(self, weights: np.ndarray) -> float:
        """The mean over groups of the mean measure with these weights (a row per query)."""
        picked = self.measures[np.arange(len(self.measures)), self.points(weights)]
        return float(picked @ self._query_weight)

    def constant(self, point: int) -> float:
        """The objective of the grid's weighting ``point`` for every query."""
        return float(self.measures[:, point] @ self._query_weight)


def _powers(units: int, legs: int) -> np.ndarray:
    return np.asarray((units + 1) ** np.arange(legs), dtype=np.int64)


def nearest_points(weights: np.ndarray, units: int) -> np.ndarray:
    """Each row of ``weights`` (non-negative, summing to 1) as integer counts of 1/``units``
    summing to ``units``: the floors, then one more to the largest remainders."""
    scaled = np.asarray(weights, dtype=np.float64) * units
    counts = np.floor(scaled).astype(np.int64)
    short = units - counts.sum(axis=1)
    order = np.argsort(-(scaled - counts), axis=1, kind="stable")
    ranks = np.argsort(order, axis=1, kind="stable")
    counts += ranks < short[:, None]
    return counts


def standardization(
    signals: np.ndarray, groups: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The centre and scale of each signal (columns; NaN: missing) over the queries, each group
    weighing the same; a constant signal gets scale 1."""
    weights = np.ones(len(signals))
    if groups is not None:
        inverse = np.unique(groups, return_inverse=True)[1]
        weights = 1.0 / np.bincount(inverse)[inverse]
    present = ~np.isnan(signals)
    total = (present * weights[:, None]).sum(axis=0)
    filled = np.where(present, signals, 0.0)
    center = (filled * weights[:, None]).sum(axis=0) / np.maximum(total, 1e-300)
    deviation = np.where(present, signals - center, 0.0)
    variance = (deviation**2 * weights[:, None]).sum(axis=0) / np.maximum(total, 1e-300)
    scale = np.sqrt(variance)
    return np.where(total > 0, center, 0.0), np.where(scale > 1e-12, scale, 1.0)


def fit_weight_model(
    table: WeightTable,
    signals: np.ndarray,
    names: Sequence[str],
    fixed: Mapping[str, float],
    *,
    penalty: float = 0.1,
    clip: float = 3.0,
    max_passes: int = 50,
) -> WeightModel:
    """The weight model that maximizes the objective J on ``table`` (module docstring).

    Parameters
    ----------
    table : WeightTable
    signals : ndarray, shape (Q, F)
        The queries' signals ``names`` (NaN where missing: the centre is used).
    names : sequence of str
    fixed : mapping of leg name to float > 0
        The fixed fusion's weights: the start and the anchor of the intercepts.
    penalty : float >= 0
        λ, in points of the measure (× 100) per unit of a coefficient squared.
    clip : float
        The largest |z|.
    max_passes : int
        The most passes over the parameters.

    Returns
    -------
    WeightModel
        Without the signals it gives no weight to (:meth:`WeightModel.pruned`).
    """
    legs = table.legs
    start = WeightModel.constant({leg: fixed[leg] for leg in legs})
    anchor = np.array([start.intercepts[start.legs.index(leg)] for leg in legs])
    center, scale = standardization(signals, table.groups)
    z = np.clip((np.where(np.isnan(signals), center, signals) - center) / scale, -clip, clip)
    n_legs, n_signals = len(legs), len(names)
    # free parameters: every leg but the last, its intercept then its coefficients
    params = np.zeros((n_legs - 1, 1 + n_signals))
    params[:, 0] = anchor[:-1]

    def model_of(values: np.ndarray) -> WeightModel:
        intercepts = (*values[:, 0], anchor[-1])
        rows = (*map(tuple, values[:, 1:]), (0.0,) * n_signals)
        return WeightModel(
            legs, tuple(names), tuple(center), tuple(scale), intercepts, rows, clip=clip
        )

    def score(values: np.ndarray) -> float:
        logits = np.zeros((len(z), n_legs))
        logits[:, :-1] = z @ values[:, 1:].T + values[:, 0]
        logits[:, -1] = anchor[-1]
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        weights /= weights.sum(axis=1, keepdims=True)
        cost = float((values[:, 1:] ** 2).sum() + ((values[:, 0] - anchor[:-1]) ** 2).sum())
        return table.objective(weights) - penalty * cost

    best = score(params)
    for _ in range(max_passes):
        improved = False
        for row in range(n_legs - 1):
            for column in range(1 + n_signals):
                trial_best, trial_value = best, params[row, column]
                for step in STEPS:
                    for move in (step, -step):
                        trial = params.copy()
                        trial[row, column] += move
                        value = score(trial)
                        if value > trial_best + 1e-9:
                            trial_best, trial_value = value, trial[row, column]
                if trial_best > best + 1e-9:
                    params[row, column], best, improved = trial_value, trial_best, True
        if not improved:
            break
    logger.info("weight model over %d signals: objective %.3f", n_signals, best)
    return model_of(params).pruned()
