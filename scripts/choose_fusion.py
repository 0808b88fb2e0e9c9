#!/usr/bin/env python
"""Choose the ``adaptive`` fusion (issue 36) on the training collections, leave one collection out.

Hybrid search fuses its legs with weights fixed for every query (``max`` with BM25 at 0.6; with a
dense leg z-scores at 0.4/0.1/0.5). The ``adaptive`` fusion (:class:`es_scm.fusion.AdaptiveFusion`)
gives every query its own weights, from signals that cost nothing
(:mod:`es_scm.fusion.signals`), by a small model (:class:`es_scm.fusion.weights.WeightModel`).
This script measures whether that helps, honestly:

* the data (``scripts/fusion_lab.py``, cached): every judged query of the six training
  collections — SciFact train (nDCG@10), NFCorpus train (a fixed random 800 queries, nDCG@10),
  SemEval-2016 train-part2 (official MAP), Cranfield, CISI, CACM (AP over the top 100) — with
  each leg's top 100 (BM25 ``english`` from Elasticsearch; the exact SCM of the default model;
  MiniLM's exact cosine), the signals, and the measure of the fusion with every weighting of a
  grid;
* every model (a family × a set of signals × a penalty, :data:`CONFIGS`) is fitted on five
  collections and scored on the sixth (leave one collection out), so a collection's own queries
  never set its weights; the scores are exact (the fusion with the predicted weights, not a
  grid point);
* the choice among the models is itself cross-validated (``selected``: for each held-out
  collection, the model with the best worst gain over the fixed fusion in a leave-one-out over
  the other five, fitted on those five);
* NFCorpus dev and SemEval-2016 dev are scored once, with ``--checks``, by the models fitted on
  the six training collections (never fitted or chosen on them).

Families (two legs: BM25's α; three legs: every leg's weight):

``linear``
    :func:`es_scm.evaluation.adaptive.fit_weight_model`: softmax of linear scores of the
    standardized signals, fitted to maximize the mean over collections of the mean measure, with a
    ridge penalty towards the fixed weights (the form the library ships).
``regression``
    Ridge regression of each query's best weights (the middle of its best grid points; two legs:
    logit α, three: each weight) from its signals: a proxy target.
``classes``
    Choose among a few fixed weightings per query: a ridge regression per weighting of the
    query's gain over the fixed fusion; the largest predicted gain wins.
``stump``
    One split on one signal, the best weighting on each side (a depth-1 tree).

Usage (from the repository's root; Elasticsearch at ``$ES_URL`` for the BM25 runs not cached)::

    ES_URL=http://127.0.0.1:9800 HF_HUB_OFFLINE=1 python scripts/choose_fusion.py \\
        --cache /work/cache-research --json results/choose_fusion.json [--checks]
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from benchlib import provenance  # noqa: E402
from choose_sources import CHECKS, TRAINING, Cache, Encoder, load  # noqa: E402
from fusion_lab import (  # noqa: E402
    ALPHAS,
    SIMPLEX,
    CollectionData,
    QueryData,
    Tables,
    check_measures,
    collection_data,
    environment,
    grid_measures,
    leg_alone,
    normalized,
    ranking_measures,
)

from es_scm.evaluation.adaptive import WeightTable, fit_weight_model, standardization  # noqa: E402
from es_scm.evaluation.significance import paired_t_test, randomization_test  # noqa: E402
from es_scm.evaluation.tuning import folds_of  # noqa: E402
from es_scm.fusion.weights import WeightModel  # noqa: E402

logger = logging.getLogger("choose_fusion")

#: Bump when the tables computed from the data change.
TABLES_VERSION = 2
TWO, THREE = ("bm25", "scm"), ("bm25", "scm", "dense")
FIXED2 = {"bm25": 0.6, "scm": 0.4}
FIXED3 = {"bm25": 0.4, "scm": 0.1, "dense": 0.5}
#: The fusions of each kind: the legs, the normalization, the grid's step, the fixed weights.
KINDS: dict[str, tuple[tuple[str, ...], str, float, dict[str, float]]] = {
    "two": (TWO, "max", 0.025, FIXED2),
    "three": (THREE, "zscore", 0.05, FIXED3),
}
LEG_INDEX = {"bm25": 0, "scm": 1, "dense": 2}

# -- signal sets -------------------------------------------------------------------------------

SHAPE = ("top", "ratio2", "ratio10", "entropy10", "top_z")
AGREEMENT = ("overlap10", "overlap20", "top1", "spearman20")
QUERY = (
    "query.log_terms",
    "query.unseen_share",
    "query.idf_mean",
    "query.idf_max",
    "query.expansion_share",
    "query.soft_norm_ratio",
    "scm.exact_share1",
    "scm.exact_share10",
)


def shape(legs: Sequence[str]) -> tuple[str, ...]:
    names = [f"{leg}.{s}" for leg in legs for s in SHAPE if not (leg == "bm25" and s == "top")]
    return tuple(names + (["bm25.log_top"] if "bm25" in legs else []))


def agreement(legs: Sequence[str]) -> tuple[str, ...]:
    pairs = [(a, b) for i, a in enumerate(legs) for b in legs[i + 1 :]]
    return tuple(f"agree.{a}.{b}.{s}" for a, b in pairs for s in AGREEMENT)


def signal_sets(legs: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The sets of signals tried, by name (fixed before any model was fitted)."""
    small = ["scm.top", "bm25.ratio10", "agree.bm25.scm.overlap10", "scm.exact_share10"]
    if "dense" in legs:
        small += ["dense.top", "agree.bm25.dense.overlap10"]
    return {
        "none": (),
        "small": tuple(small),
        "shape": shape(legs),
        "agreement": agreement(legs),
        "shape+agreement": shape(legs) + agreement(legs),
        "query": QUERY,
        "lists+query": shape(legs) + agreement(legs) + QUERY,
    }


# -- tables --------------------------------------------------------------------------------------


def tables(cache: Cache, data: CollectionData) -> Tables:
    def compute() -> Tables:
        started = time.perf_counter()
        grids = {}
        for kind, (legs, base, step, _) in KINDS.items():
            grid = ALPHAS_GRID if kind == "two" else SIMPLEX
            assert step in (0.025, 0.05)
            index = [LEG_INDEX[leg] for leg in legs]
            grids[kind] = np.array(
                [
                    grid_measures(q, data.measure, data.depth, index, grid, base)
                    for q in data.queries
                ]
            )
        references = {
            "bm25": _each(data, lambda q: leg_alone(q, data.measure, data.depth, 0)),
            "scm": _each(data, lambda q: leg_alone(q, data.measure, data.depth, 1)),
            "dense": _each(data, lambda q: leg_alone(q, data.measure, data.depth, 2)),
            "bm25+dense": _each(
                data,
                lambda q: grid_measures(
                    q, data.measure, data.depth, [0, 2], np.array([[0.5, 0.5]]), "max"
                )[0],
            ),
        }
        names = sorted({name for q in data.queries for name in q.signals})
        signals = {
            name: np.array([q.signals.get(name, np.nan) for q in data.queries]) for name in names
        }
        logger.info("%s: tables in %.0fs", data.name, time.perf_counter() - started)
        return Tables(
            data.name, data.measure, [q.qid for q in data.queries], grids, references, signals
        )

    return cache.pickled(f"fusion/{data.name}-tables-{TABLES_VERSION}", compute)


ALPHAS_GRID = np.column_stack([ALPHAS, 1.0 - ALPHAS])


def _each(data: CollectionData, function: Callable[[QueryData], float]) -> np.ndarray:
    return np.array([function(q) for q in data.queries])


def grid_of(kind: str) -> np.ndarray:
    return ALPHAS_GRID if kind == "two" else SIMPLEX


def fixed_point(kind: str) -> int:
    legs, _, _, fixed = KINDS[kind]
    target = np.array([fixed[leg] for leg in legs])
    return int(np.argmin(np.abs(grid_of(kind) - target).sum(axis=1)))


def weight_table(kind: str, parts: Sequence[Tables]) -> WeightTable:
    legs, _, step, _ = KINDS[kind]
    measures = np.vstack([t.grids[kind] for t in parts])
    groups = np.concatenate([np.full(len(t.qids), n) for n, t in enumerate(parts)])
    return WeightTable(legs, step, grid_of(kind), measures, groups)


def signal_matrix(parts: Sequence[Tables], names: Sequence[str]) -> np.ndarray:
    if not names:
        return np.zeros((sum(len(t.qids) for t in parts), 0))
    return np.vstack(
        [
            np.column_stack([t.signals.get(n, np.full(len(t.qids), np.nan)) for n in names])
            for t in parts
        ]
    )


def exact_measures(data: CollectionData, kind: str, weights: np.ndarray) -> np.ndarray:
    """Each query's measure with its own weights (a row per query): the fusion exactly."""
    legs, base, _, _ = KINDS[kind]
    index = [LEG_INDEX[leg] for leg in legs]
    out = np.zeros(len(data.queries))
    for n, q in enumerate(data.queries):
        mask = q.listed[np.asarray(index)].any(axis=0)
        fused = weights[n] @ normalized(q, index, mask, base)
        out[n] = ranking_measures(q, data.measure, data.depth, fused[None, :], mask)[0]
    return out


# -- model families ------------------------------------------------------------------------------

Predictor = Callable[[Tables], np.ndarray]  # a collection's tables -> weights (Q, L)


@dataclass(frozen=True)
class Config:
    """A model: its kind (two or three legs), family, signal set and parameter."""

    kind: str
    family: str
    signals: str
    parameter: float

    def __str__(self) -> str:
        return f"{self.kind} {self.family}[{self.signals}, {self.parameter:g}]"


def fit(config: Config, parts: Sequence[Tables]) -> tuple[Predictor, Any]:
    """Fit ``config`` on the collections ``parts``: a predictor of weights from signals, and
    the fitted model (a WeightModel for the ``linear`` families).

    ``linear`` variants: ``/pooled`` weighs every query the same (not every collection);
    ``/smooth`` fits each query's measure averaged over the neighbouring grid points (less
    noise); ``/consistent`` keeps the signals whose rank correlation with the query's
    preference for BM25 has the same sign in every training collection (at most six, the
    strongest).
    """
    legs, _, _, fixed = KINDS[config.kind]
    names = signal_sets(legs)[config.signals]
    table = weight_table(config.kind, parts)
    family, *variants = config.family.split("/")
    if "consistent" in variants:
        names = consistent_signals(config.kind, parts, names)
    x = signal_matrix(parts, names)
    if "pooled" in variants:
        table = WeightTable(table.legs, table.step, table.grid, table.measures, table.groups * 0)
    if "smooth" in variants:
        table = WeightTable(table.legs, table.step, table.grid, smoothed(table), table.groups)
    predict: Callable[[np.ndarray], np.ndarray]
    fitted: WeightModel | None = None
    read = names
    if family == "linear":
        model = fit_weight_model(table, x, names, fixed, penalty=config.parameter)
        read = model.signals  # a fitted model keeps the signals it weighs

        def predict_linear(signals: np.ndarray) -> np.ndarray:
            return model.weights_of(_standardize(signals, model))

        predict, fitted = predict_linear, model
    elif family == "regression":
        predict, fitted = _fit_regression(table, x, config.parameter, fixed), None
    elif family == "classes":
        predict, fitted = _fit_classes(config.kind, table, x, config.parameter), None
    elif family == "stump":
        predict, fitted = _fit_stump(table, x), None
    else:
        raise ValueError(config.family)

    def of_tables(part: Tables) -> np.ndarray:
        return predict(signal_matrix([part], read))

    return of_tables, fitted


def smoothed(table: WeightTable) -> np.ndarray:
    """Each query's measure averaged over every grid point within 0.1 (L1/2) of each point."""
    distance = np.abs(table.grid[:, None, :] - table.grid[None, :, :]).sum(axis=2) / 2
    near = (distance <= 0.1 + 1e-9).astype(np.float64)
    near /= near.sum(axis=1, keepdims=True)
    return np.asarray(table.measures @ near.T)


def preference(kind: str, measures: np.ndarray) -> np.ndarray:
    """Each query's preference for BM25: the slope of its measure in BM25's weight (least
    squares over the grid; three legs: with the dense leg's weight as a second regressor)."""
    grid = grid_of(kind)
    design = np.column_stack(
        [np.ones(len(grid)), grid[:, 0]] + ([grid[:, 2]] if kind == "three" else [])
    )
    coefficients, *_ = np.linalg.lstsq(design, measures.T, rcond=None)
    return np.asarray(coefficients[1])


def consistent_signals(kind: str, parts: Sequence[Tables], names: Sequence[str]) -> tuple[str, ...]:
    """The signals of ``names`` whose Spearman correlation with :func:`preference` has one sign
    in every collection of ``parts``, the six with the largest mean |correlation|."""
    from scipy.stats import spearmanr

    kept = []
    for name in names:
        correlations = []
        for part in parts:
            x = part.signals.get(name)
            y = preference(kind, part.grids[kind])
            if x is None:
                break
            ok = ~np.isnan(x) & (np.abs(y) > 1e-9)
            if ok.sum() < 5 or np.std(x[ok]) == 0:
                break
            correlations.append(float(spearmanr(x[ok], y[ok]).statistic))
        else:
            signs = np.sign(correlations)
            if len(set(signs)) == 1 and signs[0] != 0:
                kept.append((abs(float(np.mean(correlations))), name))
    return tuple(name for _, name in sorted(kept, reverse=True)[:6])


def _standardize(signals: np.ndarray, model: WeightModel) -> np.ndarray:
    center, scale = np.array(model.center), np.array(model.scale)
    filled = np.where(np.isnan(signals), center, signals)
    return np.clip((filled - center) / scale, -model.clip, model.clip)


def _z(x: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    center, scale = standardization(x, groups)

    def transform(signals: np.ndarray) -> np.ndarray:
        filled = np.where(np.isnan(signals), center, signals)
        return np.clip((filled - center) / scale, -3.0, 3.0)

    return transform(x), transform


def _ridge(z: np.ndarray, y: np.ndarray, weights: np.ndarray, penalty: float) -> np.ndarray:
    """Weighted ridge regression with an unpenalized intercept: coefficients (1 + F, targets)."""
    design = np.column_stack([np.ones(len(z)), z])
    w = weights / weights.sum()
    gram = design.T @ (design * w[:, None])
    reg = penalty * np.eye(design.shape[1])
    reg[0, 0] = 0.0
    return np.linalg.solve(gram + reg, design.T @ (y * w[:, None] if y.ndim == 2 else y * w))


def _group_weights(groups: np.ndarray) -> np.ndarray:
    inverse = np.unique(groups, return_inverse=True)[1]
    return 1.0 / np.bincount(inverse)[inverse]


def _best_weights(table: WeightTable) -> np.ndarray:
    """Each query's best weighting: the mean of its best grid points."""
    best = table.measures >= table.measures.max(axis=1, keepdims=True) - 1e-9
    return (best[:, :, None] * table.grid[None, :, :]).sum(axis=1) / best.sum(axis=1)[:, None]


def _fit_regression(
    table: WeightTable, x: np.ndarray, penalty: float, fixed: Mapping[str, float]
) -> Callable[[np.ndarray], np.ndarray]:
    z, transform = _z(x, table.groups)
    weights = _group_weights(table.groups)
    best = np.clip(_best_weights(table), 0.02, 0.98)
    if len(table.legs) == 2:
        target = np.log(best[:, 0] / best[:, 1])
        coef = _ridge(z, target, weights, penalty)

        def predict(signals: np.ndarray) -> np.ndarray:
            logit = np.column_stack([np.ones(len(signals)), transform(signals)]) @ coef
            alpha = 1.0 / (1.0 + np.exp(-logit))
            return np.column_stack([alpha, 1.0 - alpha])

        return predict
    coef = _ridge(z, best, weights, penalty)

    def predict3(signals: np.ndarray) -> np.ndarray:
        raw = np.column_stack([np.ones(len(signals)), transform(signals)]) @ coef
        raw = np.clip(raw, 0.01, None)
        return np.asarray(raw / raw.sum(axis=1, keepdims=True))

    return predict3


#: The weightings ``classes`` chooses among (the fixed one first).
CLASSES = {
    "two": [(0.6, 0.4), (0.4, 0.6), (0.8, 0.2)],
    "three": [(0.4, 0.1, 0.5), (0.55, 0.1, 0.35), (0.3, 0.3, 0.4), (0.3, 0.05, 0.65)],
}


def _fit_classes(
    kind: str, table: WeightTable, x: np.ndarray, penalty: float
) -> Callable[[np.ndarray], np.ndarray]:
    z, transform = _z(x, table.groups)
    weights = _group_weights(table.groups)
    classes = np.array(CLASSES[kind])
    points = table.points(classes)
    gains = table.measures[:, points] - table.measures[:, points[:1]]
    coef = _ridge(z, gains, weights, penalty)

    def predict(signals: np.ndarray) -> np.ndarray:
        predicted = np.column_stack([np.ones(len(signals)), transform(signals)]) @ coef
        predicted[:, 0] = 0.0  # the fixed weighting: no gain over itself
        return np.asarray(classes[np.argmax(predicted, axis=1)])

    return predict


def _fit_stump(table: WeightTable, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """One signal, one threshold (its deciles), the best grid point on each side."""
    weights = _group_weights(table.groups)
    weights = weights / weights.sum()
    weighted = table.measures * weights[:, None]
    best_value = float(weighted.sum(axis=0).max())
    best_rule: tuple[int, float, int, int] | None = None
    for j in range(x.shape[1]):
        column = np.where(np.isnan(x[:, j]), np.nanmedian(x[:, j]), x[:, j])
        for threshold in np.unique(np.quantile(column, np.linspace(0.1, 0.9, 9))):
            low = column <= threshold
            left = weighted[low].sum(axis=0)
            right = weighted[~low].sum(axis=0)
            value = float(left.max() + right.max())
            if value > best_value + 1e-9:
                best_value = value
                best_rule = (j, float(threshold), int(left.argmax()), int(right.argmax()))
    constant = int(weighted.sum(axis=0).argmax())

    def predict(signals: np.ndarray) -> np.ndarray:
        if best_rule is None:
            return np.repeat(table.grid[constant][None, :], len(signals), axis=0)
        j, threshold, left, right = best_rule
        column = signals[:, j]
        low = np.where(np.isnan(column), True, column <= threshold)
        return np.where(low[:, None], table.grid[left], table.grid[right])

    return predict


def configs() -> list[Config]:
    """Every model tried. The first round (``linear`` with λ up to 1, ``regression``,
    ``classes``, ``stump``) was fixed before the first fit; the ``linear`` variants and λ = 3
    were added after it, on four collections, had every linear model below the fixed fusion on
    one collection at least."""
    out = []
    for kind in KINDS:
        legs = KINDS[kind][0]
        for signals in signal_sets(legs):
            for penalty in (0.03, 0.1, 0.3, 1.0, 3.0):
                out.append(Config(kind, "linear", signals, penalty))
            if signals != "none":
                for penalty in (1.0, 10.0):
                    out.append(Config(kind, "regression", signals, penalty))
                for penalty in (1.0, 10.0):
                    out.append(Config(kind, "classes", signals, penalty))
        for signals in ("small", "shape+agreement", "lists+query"):
            out.append(Config(kind, "stump", signals, 0.0))
        for family in (
            "linear/pooled",
            "linear/smooth",
            "linear/consistent",
            "linear/smooth/consistent",
        ):
            for signals in ("small", "lists+query"):
                for penalty in (0.1, 1.0, 3.0):
                    out.append(Config(kind, family, signals, penalty))
    return out


# -- leave one collection out --------------------------------------------------------------------


def loco(
    config: Config,
    tables_: Mapping[str, Tables],
    data: Mapping[str, CollectionData],
    names: Sequence[str],
) -> dict[str, np.ndarray]:
    """Each collection's per-query measure with ``config`` fitted on the other collections."""
    out = {}
    for held in names:
        predict, _ = fit(config, [tables_[n] for n in names if n != held])
        out[held] = exact_measures(data[held], config.kind, predict(tables_[held]))
    return out


def subset(t: Tables, rows: np.ndarray) -> Tables:
    """The tables of the queries ``rows`` (indices) of a collection."""
    return Tables(
        t.name,
        t.measure,
        [t.qids[i] for i in rows],
        {kind: grid[rows] for kind, grid in t.grids.items()},
        {row: values[rows] for row, values in t.references.items()},
        {name: values[rows] for name, values in t.signals.items()},
    )


def within(config: Config, t: Tables, data: CollectionData, folds: int = 5) -> np.ndarray:
    """``config`` fitted as ``es-scm tune --fusions adaptive`` fits it on a user's judged
    topics: each fold of the collection's queries (round robin over the sorted ids) scored by
    the model fitted on the other folds. Returns each query's measure."""
    parts = folds_of(t.qids, folds)
    position = {qid: n for n, qid in enumerate(t.qids)}
    out = np.zeros(len(t.qids))
    for part in parts:
        held = np.array(sorted(position[q] for q in part))
        rest = np.setdiff1d(np.arange(len(t.qids)), held)
        predict, _ = fit(config, [subset(t, rest)])
        weights = predict(subset(t, held))
        queries = CollectionData(
            data.name, data.measure, data.depth, [data.queries[i] for i in held]
        )
        out[held] = exact_measures(queries, config.kind, weights)
    return out


def gains_over_fixed(
    values: Mapping[str, np.ndarray], tables_: Mapping[str, Tables], kind: str
) -> dict[str, float]:
    point = fixed_point(kind)
    return {n: float(v.mean() - tables_[n].grids[kind][:, point].mean()) for n, v in values.items()}


def inner_choice(
    candidates: Sequence[Config],
    tables_: Mapping[str, Tables],
    data: Mapping[str, CollectionData],
    names: Sequence[str],
) -> Config:
    """The config with the best worst gain over the fixed fusion (ties: the mean) in a leave-one-
    collection-out over ``names``."""
    best: tuple[float, float] | None = None
    chosen = candidates[0]
    for config in candidates:
        gains = gains_over_fixed(loco(config, tables_, data, names), tables_, config.kind)
        key = (min(gains.values()), float(np.mean(list(gains.values()))))
        if best is None or key > best:
            best, chosen = key, config
    return chosen


# -- reporting ----------------------------------------------------------------------------------


def significance(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """a against b, query by query: the gain, both p-values, wins/ties/losses."""
    difference = a - b
    return {
        "gain": float(difference.mean()),
        "p_randomization": randomization_test(a, b),
        "p_t": paired_t_test(a, b),
        "wins": int((difference > 1e-9).sum()),
        "ties": int((np.abs(difference) <= 1e-9).sum()),
        "losses": int((difference < -1e-9).sum()),
    }


def summary_row(values: Mapping[str, float]) -> str:
    cells = " | ".join(f"{v:+.2f}" for v in values.values())
    return f"{cells} | {np.mean(list(values.values())):+.2f} | {min(values.values()):+.2f}"


#: Bump when the fitting or the families change (the cached leave-one-out results are keyed by it).
FIT_VERSION = 1


def loco_cached(
    cache: Cache,
    config: Config,
    tables_: Mapping[str, Tables],
    data: Mapping[str, CollectionData],
    names: Sequence[str],
) -> dict[str, np.ndarray]:
    key = f"fusion/loco-{TABLES_VERSION}-{FIT_VERSION}/{'+'.join(names)}/{config}".replace(" ", "_")
    return cache.pickled(key, lambda: loco(config, tables_, data, names))


def choose(
    results: Mapping[Config, Mapping[str, float]], kind: str, families: Sequence[str]
) -> Config:
    """The config of ``kind`` among ``families`` with the best worst gain over the fixed fusion
    across the collections (ties: the best mean)."""
    pool = [c for c in results if c.kind == kind and c.family in families]
    return max(
        pool,
        key=lambda c: (min(results[c].values()), float(np.mean(list(results[c].values())))),
    )


def nested(
    cache: Cache,
    pool: Sequence[Config],
    tables_: Mapping[str, Tables],
    data: Mapping[str, CollectionData],
    names: Sequence[str],
) -> dict[str, Any]:
    """The choice among ``pool`` cross-validated: for each collection, the config with the best
    worst gain in a leave-one-collection-out over the other five, fitted on those five and scored
    on it."""
    chosen, scores = {}, {}
    kind = pool[0].kind
    for held in names:
        others = [n for n in names if n != held]
        inner = {
            c: gains_over_fixed(loco_cached(cache, c, tables_, data, others), tables_, kind)
            for c in pool
        }
        best = choose(inner, kind, sorted({c.family for c in pool}))
        chosen[held] = str(best)
        predict, _ = fit(best, [tables_[n] for n in others])
        scores[held] = exact_measures(data[held], kind, predict(tables_[held]))
    gains = gains_over_fixed(scores, tables_, kind)
    return {
        "chosen": chosen,
        "scores": {n: float(v.mean()) for n, v in scores.items()},
        "gains_over_fixed": gains,
        "mean_gain": float(np.mean(list(gains.values()))),
        "worst_gain": min(gains.values()),
    }


#: The models ``es-scm tune --fusions adaptive`` could fit on a user's topics, measured as it
#: fits them: 5-fold cross-validation within each collection (:func:`within`).
WITHIN_SIGNALS = ("none", "small", "shape+agreement", "lists+query")
WITHIN_PENALTIES = (0.3, 1.0, 3.0)


def within_report(
    cache: Cache,
    tabs: Mapping[str, Tables],
    data: Mapping[str, CollectionData],
    names: Sequence[str],
) -> dict[str, Any]:
    """Each tune-style model's 5-fold gain over the fixed fusion within each collection."""
    out: dict[str, Any] = {}
    for kind in KINDS:
        for signals in WITHIN_SIGNALS:
            for penalty in WITHIN_PENALTIES:
                config = Config(kind, "linear", signals, penalty)
                key = f"fusion/within-{TABLES_VERSION}-{FIT_VERSION}/{config}".replace(" ", "_")
                values = cache.pickled(key, functools.partial(_within_all, config, tabs, data))
                gains = gains_over_fixed(values, tabs, kind)
                out[str(config)] = {
                    "gains_over_fixed": gains,
                    "mean_gain": float(np.mean(list(gains.values()))),
                    "worst_gain": min(gains.values()),
                }
                logger.info("within %s: %s", config, summary_row(gains))
    return out


def _within_all(
    config: Config, tabs: Mapping[str, Tables], data: Mapping[str, CollectionData]
) -> dict[str, np.ndarray]:
    return {name: within(config, tabs[name], data[name]) for name in tabs}


def collection_table(
    tabs: Mapping[str, Tables], adaptive: Mapping[str, Mapping[str, np.ndarray]]
) -> dict[str, Any]:
    """Each collection's scores and comparisons: the legs, the fixed and the adaptive fusions,
    BM25 + dense; the goals of issue 36."""
    out: dict[str, Any] = {}
    for name, t in tabs.items():
        rows = {
            "bm25": t.references["bm25"],
            "scm": t.references["scm"],
            "dense": t.references["dense"],
            "fixed two-way": t.grids["two"][:, fixed_point("two")],
            "adaptive two-way": adaptive["two"][name],
            "fixed three-way": t.grids["three"][:, fixed_point("three")],
            "adaptive three-way": adaptive["three"][name],
            "bm25+dense": t.references["bm25+dense"],
        }
        means = {row: float(v.mean()) for row, v in rows.items()}
        pairs = {
            "adaptive two-way vs fixed two-way": ("adaptive two-way", "fixed two-way"),
            "adaptive two-way vs bm25": ("adaptive two-way", "bm25"),
            "fixed two-way vs bm25": ("fixed two-way", "bm25"),
            "adaptive three-way vs fixed three-way": ("adaptive three-way", "fixed three-way"),
            "adaptive three-way vs bm25+dense": ("adaptive three-way", "bm25+dense"),
            "fixed three-way vs bm25+dense": ("fixed three-way", "bm25+dense"),
            "adaptive three-way vs bm25": ("adaptive three-way", "bm25"),
        }
        tests = {label: significance(rows[a], rows[b]) for label, (a, b) in pairs.items()}
        best_two = max(means["bm25"], means["scm"])
        best_leg = max(means["bm25"], means["scm"], means["dense"])
        goals = {
            "two-way >= bm25 + 1.5": means["adaptive two-way"] - means["bm25"],
            "two-way >= max(bm25, scm) - 0.5": means["adaptive two-way"] - best_two,
            "three-way >= bm25+dense + 1.0": means["adaptive three-way"] - means["bm25+dense"],
            "three-way >= best single leg": means["adaptive three-way"] - best_leg,
            "two-way >= fixed - 0.3": means["adaptive two-way"] - means["fixed two-way"],
            "three-way >= fixed - 0.3": means["adaptive three-way"] - means["fixed three-way"],
        }
        thresholds = {
            "two-way >= bm25 + 1.5": 1.5,
            "two-way >= max(bm25, scm) - 0.5": -0.5,
            "three-way >= bm25+dense + 1.0": 1.0,
            "three-way >= best single leg": 0.0,
            "two-way >= fixed - 0.3": -0.3,
            "three-way >= fixed - 0.3": -0.3,
        }
        out[name] = {
            "measure": t.measure,
            "queries": len(t.qids),
            "scores": means,
            "oracle": {
                "two-way": float(t.grids["two"].max(axis=1).mean()),
                "three-way": float(t.grids["three"].max(axis=1).mean()),
            },
            "significance": tests,
            "goals": {
                goal: {"margin": value, "met": bool(value >= thresholds[goal] - 1e-9)}
                for goal, value in goals.items()
            },
        }
    return out


def markdown_table(table: Mapping[str, Any]) -> str:
    """The per-collection table (× 100) with the worst and the mean of each column."""
    columns = list(next(iter(table.values()))["scores"])
    head = "| collection (measure, queries) | " + " | ".join(columns) + " |"
    lines = [head, "|:---|" + "---:|" * len(columns)]
    for name, row in table.items():
        cells = " | ".join(f"{row['scores'][c]:.2f}" for c in columns)
        lines.append(f"| {name} ({row['measure']}, {row['queries']}) | {cells} |")
    lines.append("")
    lines.append("| collection | comparison | Δ | p (randomization) | p (t) | W/T/L |")
    lines.append("|:---|:---|---:|---:|---:|:---:|")
    for name, row in table.items():
        for label, sig in row["significance"].items():
            lines.append(
                f"| {name} | {label} | {sig['gain']:+.2f} | {sig['p_randomization']:.4f} | "
                f"{sig['p_t']:.4f} | {sig['wins']}/{sig['ties']}/{sig['losses']} |"
            )
    lines.append("")
    goals = list(next(iter(table.values()))["goals"])
    lines.append("| goal | " + " | ".join(table) + " | worst | mean | met |")
    lines.append("|:---|" + "---:|" * (len(table) + 3))
    for goal in goals:
        margins = [row["goals"][goal]["margin"] for row in table.values()]
        met = all(row["goals"][goal]["met"] for row in table.values())
        cells = " | ".join(f"{m:+.2f}" for m in margins)
        lines.append(
            f"| {goal} | {cells} | {min(margins):+.2f} | {np.mean(margins):+.2f} | "
            f"{'yes' if met else 'no'} |"
        )
    return "\n".join(lines)


def configs_markdown(results: Mapping[str, Any], names: Sequence[str]) -> str:
    """Every config's leave-one-collection-out gain over the fixed fusion, by collection, the
    mean and the worst (best worst first within each kind)."""
    lines = ["| model | " + " | ".join(names) + " | mean | worst |"]
    lines.append("|:---|" + "---:|" * (len(names) + 2))
    ordered = sorted(results.items(), key=lambda item: (item[0].split()[0], -item[1]["worst_gain"]))
    for config, row in ordered:
        cells = " | ".join(f"{row['gains_over_fixed'][n]:+.2f}" for n in names)
        lines.append(f"| {config} | {cells} | {row['mean_gain']:+.2f} | {row['worst_gain']:+.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=str(REPO.parent / "cache-research"))
    parser.add_argument("--json", default=str(REPO / "results" / "choose_fusion.json"))
    parser.add_argument("--checks", action="store_true", help="also score NFCorpus/SemEval dev")
    parser.add_argument("--no-nested", action="store_true", help="skip the nested choice")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("es_scm", "gensim", "elastic_transport", "sentence_transformers", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    cache = Cache(Path(args.cache))
    environment(cache.root)
    from es_scm.elastic import client_from_env

    client = client_from_env(request_timeout=300)
    encoder = Encoder(cache)
    started = time.perf_counter()
    names = list(TRAINING)
    data = {name: collection_data(cache, client, encoder, name) for name in names}
    tabs = {name: tables(cache, data[name]) for name in names}
    report: dict[str, Any] = {"configs": {}}
    # this script's measures against ir_measures and SemEval's official AP (0: they agree)
    report["measure_check"] = {name: check_measures(data[name], load(name)) for name in names}
    logger.info("measures against ir_measures / official AP: %s", report["measure_check"])
    per_config: dict[Config, dict[str, np.ndarray]] = {}
    gains: dict[Config, dict[str, float]] = {}
    for number, config in enumerate(configs(), start=1):
        per_config[config] = loco_cached(cache, config, tabs, data, names)
        gains[config] = gains_over_fixed(per_config[config], tabs, config.kind)
        report["configs"][str(config)] = {
            "scores": {n: float(v.mean()) for n, v in per_config[config].items()},
            "gains_over_fixed": gains[config],
            "mean_gain": float(np.mean(list(gains[config].values()))),
            "worst_gain": min(gains[config].values()),
        }
        logger.info("%d %s: %s", number, config, summary_row(gains[config]))
    linear = sorted({c.family for c in gains if c.family.startswith("linear")})
    chosen = {kind: choose(gains, kind, linear) for kind in KINDS}
    report["chosen"] = {kind: str(c) for kind, c in chosen.items()}
    report["best_of_any_family"] = {
        kind: str(choose(gains, kind, sorted({c.family for c in gains}))) for kind in KINDS
    }
    report["table"] = collection_table(tabs, {kind: per_config[c] for kind, c in chosen.items()})
    if not args.no_nested:
        report["nested"] = {
            kind: nested(
                cache,
                [c for c in gains if c.kind == kind and c.family in linear],
                tabs,
                data,
                names,
            )
            for kind in KINDS
        }
    report["within"] = within_report(cache, tabs, data, names)
    final = {}
    for kind, config in chosen.items():
        _, model = fit(config, [tabs[n] for n in names])
        final[kind] = model
    report["final_models"] = {kind: m.to_dict() for kind, m in final.items()}
    if args.checks:
        report["checks"] = run_checks(cache, client, encoder, final, chosen)
    report["seconds"] = round(time.perf_counter() - started)
    report["provenance"] = provenance(sys.argv, client)
    report["protocol"] = {
        "training": names,
        "checks": list(CHECKS),
        "fixed": {"two": FIXED2, "three": FIXED3},
        "normalization": {kind: KINDS[kind][1] for kind in KINDS},
        "grid_steps": {kind: KINDS[kind][2] for kind in KINDS},
        "choice": "among the linear families (the form es-scm ships), the model with the best "
        "worst leave-one-collection-out gain over the fixed fusion, ties by the mean",
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    print("\n## every model: leave-one-collection-out gain over the fixed fusion\n")
    print(configs_markdown(report["configs"], names))
    print(f"\n## chosen: {report['chosen']}\n")
    print(markdown_table(report["table"]))
    if "nested" in report:
        print("\n## the choice cross-validated (nested)\n")
        print(json.dumps(report["nested"], indent=1))
    print("\n## as tune fits it: 5-fold cross-validation within each collection\n")
    print(configs_markdown(report["within"], names))
    if "checks" in report:
        print("\n## checks (once)\n")
        print(markdown_table(report["checks"]))


def run_checks(
    cache: Cache,
    client: Any,
    encoder: Encoder,
    final: Mapping[str, WeightModel],
    chosen: Mapping[str, Config],
) -> dict[str, Any]:
    """NFCorpus dev and SemEval-2016 dev, scored once by the models fitted on the six training
    collections."""
    data = {name: collection_data(cache, client, encoder, name) for name in CHECKS}
    tabs = {name: tables(cache, data[name]) for name in CHECKS}
    adaptive: dict[str, dict[str, np.ndarray]] = {}
    for kind, model in final.items():
        adaptive[kind] = {}
        for name in CHECKS:
            x = signal_matrix([tabs[name]], model.signals)
            weights = model.weights_of(_standardize(x, model))
            adaptive[kind][name] = exact_measures(data[name], kind, weights)
    return collection_table(tabs, adaptive)


if __name__ == "__main__":
    main()
