"""``es-scm tune --fusions adaptive`` without a server: the adaptive fusion fitted on judged
topics, cross-validated over the folds, saved with the model; ``eval --adaptive``'s report
(on a real Elasticsearch: tests/integration/test_tune_es.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_scm.evaluation.trec import TrecReport, method_fusion
from es_scm.evaluation.tuning import adaptive_runs, folds_of, fused_run
from es_scm.fusion import AdaptiveFusion, MaxFusion, fusion_from_options, hybrid_settings
from es_scm.fusion.signals import QuerySignals
from es_scm.fusion.weights import WeightModel
from es_scm.search.hybrid.config import hybrid_options


def _topics(n: int = 40) -> tuple[dict, dict]:
    """Topics whose relevant document BM25 ranks first when the lists agree, the SCM
    otherwise: the agreement of the lists says which leg to trust."""
    rng = np.random.default_rng(5)
    legs, qrels = {}, {}
    for t in range(n):
        agree = t % 2 == 0
        ids = [f"t{t}d{i}" for i in range(12)]
        bm25 = {
            d: float(s) for d, s in zip(ids, np.sort(rng.uniform(1, 10, 12))[::-1], strict=True)
        }
        order = ids if agree else ids[::-1]
        scm = {
            d: float(s)
            for d, s in zip(order, np.sort(rng.uniform(0.1, 0.9, 12))[::-1], strict=True)
        }
        relevant = ids[0] if agree else ids[-1]
        qrels[f"q{t}"] = {relevant: 1}
        legs[f"q{t}"] = ({"bm25": bm25, "scm": scm}, {"bm25": dict(bm25), "scm": dict(scm)})
    return legs, qrels


def test_the_adaptive_row_is_cross_validated_and_its_fitted_model_is_saved():
    legs, qrels = _topics()
    folds = folds_of(list(legs), 4)
    fusion = AdaptiveFusion(alpha=0.6)
    held_out, fitted = adaptive_runs(fusion, legs, {}, qrels, folds, "AP", depth=12)
    assert set(held_out) == set(legs)
    assert fitted.model is not None
    assert fitted.model.legs == ("bm25", "scm")
    assert fitted.alpha == 0.6  # the fixed weights stay the fallback
    # what --out saves, a model's hybrid settings take as they are, and search rebuilds it
    saved = hybrid_settings(fitted.describe())
    assert fusion_from_options(hybrid_options(saved)) == fitted
    # every held-out run is the fusion of the topic's own lists, ranked best first
    for topic, run in held_out.items():
        assert set(run) <= set(legs[topic][1]["bm25"]) | set(legs[topic][1]["scm"])
        assert list(run.values()) == sorted(run.values(), reverse=True)


def test_eval_compares_an_adaptive_fusion_with_its_fixed_one_too():
    per_query = {
        "bm25": {"1": {"AP": 0.2}, "2": {"AP": 0.4}},
        "bm25+scm": {"1": {"AP": 0.3}, "2": {"AP": 0.5}},
        "bm25+scm adaptive": {"1": {"AP": 0.4}, "2": {"AP": 0.5}},
    }
    report = TrecReport(
        "c",
        {m: {"AP": 0.0} for m in per_query},
        per_query,
        measures=["AP"],
        pairs={"bm25+scm adaptive": "bm25+scm"},
    )
    (pair,) = report.pair_comparisons()
    assert (pair.method, pair.baseline) == ("bm25+scm adaptive", "bm25+scm")
    assert pair.delta == pytest.approx(0.05)
    assert (pair.wins, pair.ties, pair.losses) == (1, 1, 0)
    table = report.significance_markdown()
    assert "BM25 + SCM (adaptive fusion) vs BM25 + SCM (hybrid search)" in table
    assert "pair_comparisons" in report.to_dict()


def test_an_adaptive_method_falls_back_on_the_models_fixed_weights():
    saved = {"fusion": "max", "alpha": 0.6}
    fusion = method_fusion(saved, {"fusion": "adaptive"})
    assert isinstance(fusion, AdaptiveFusion)
    assert fusion.alpha == 0.6
    three = method_fusion(saved, {"fusion": "adaptive", "dense": True})
    assert three.weights == {"bm25": 0.4, "scm": 0.1, "dense": 0.5}
    assert method_fusion(saved, {}) == MaxFusion(0.6)


def test_the_lists_signals_and_the_queries_own_are_both_read():
    legs, _ = _topics(1)
    scores, tops = legs["q0"]
    model = WeightModel(
        legs=("bm25", "scm"),
        signals=("query.terms", "agree.bm25.scm.overlap10"),
        center=(2.0, 0.5),
        scale=(1.0, 0.25),
        intercepts=(0.0, 0.0),
        coefficients=((0.5, 1.0), (0.0, 0.0)),
    )
    fusion = AdaptiveFusion(alpha=0.6, model=model)
    own = QuerySignals({"query.terms": 3.0})
    # z = (1, 2): α = σ(0.5 + 2) (the lists agree on their whole top ten: overlap 1)
    alpha = 1 / (1 + math.exp(-2.5))
    assert fused_run(scores, tops, fusion, 12, own) == pytest.approx(
        fused_run(scores, tops, MaxFusion(alpha), 12)
    )
    # without the query's own signal: the fixed weights
    assert fused_run(scores, tops, fusion, 12) == pytest.approx(
        fused_run(scores, tops, MaxFusion(0.6), 12)
    )
