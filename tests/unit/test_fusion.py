"""The fusions of BM25 and the SCM (es_scm.fusion): formulas by hand, bounds, settings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_scm.fusion import (
    FUSIONS,
    LinearFusion,
    MaxFusion,
    ReciprocalRankFusion,
    ZScoreFusion,
    fusion_from,
    hybrid_settings,
)
from es_scm.options.defaults import FUSIONS as FUSION_NAMES
from es_scm.options.defaults import HYBRID_DEFAULTS

BM25 = {"a": 10.0, "b": 5.0, "c": 0.0}
SCM = {"a": 0.2, "b": 0.8, "c": 0.4}
CANDIDATES = ["a", "b", "c"]


def test_the_registry_holds_the_names_the_options_offer():
    assert set(FUSIONS) == set(FUSION_NAMES)
    assert HYBRID_DEFAULTS.fusion in FUSIONS


def test_max_divides_each_side_by_its_largest_score():
    fused = MaxFusion(0.5).fuse(BM25, SCM, CANDIDATES)
    assert fused["a"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.25)
    assert fused["b"] == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    assert fused["c"] == pytest.approx(0.5 * 0.0 + 0.5 * 0.5)


def test_linear_is_min_max_and_zscore_standardizes():
    fused = LinearFusion(0.25).fuse(BM25, SCM, CANDIDATES)
    # BM25 min-max: a 1, b 0.5, c 0; SCM: a 0, b 1, c 1/3
    assert fused["a"] == pytest.approx(0.25)
    assert fused["b"] == pytest.approx(0.25 * 0.5 + 0.75)
    assert fused["c"] == pytest.approx(0.75 / 3)
    z = ZScoreFusion(0.5).fuse(BM25, SCM, CANDIDATES)
    b_sd = math.sqrt(((10 - 5) ** 2 + 0 + 5**2) / 3)
    s_mean = (0.2 + 0.8 + 0.4) / 3
    s_sd = math.sqrt(((0.2 - s_mean) ** 2 + (0.8 - s_mean) ** 2 + (0.4 - s_mean) ** 2) / 3)
    assert z["a"] == pytest.approx(0.5 * 5 / b_sd + 0.5 * (0.2 - s_mean) / s_sd)


def test_equal_scores_normalize_to_zero_not_to_nan():
    fused = MaxFusion(0.5).fuse({"a": 0.0, "b": 0.0}, {"a": 0.3, "b": 0.3}, ["a", "b"])
    assert fused == {"a": pytest.approx(0.5), "b": pytest.approx(0.5)}
    assert all(np.isfinite(list(LinearFusion(0.5).fuse({}, {}, ["a"]).values())))


def test_rrf_sums_reciprocal_ranks_of_the_lists_that_hold_a_document():
    fused = ReciprocalRankFusion(rrf_k=0).fuse({"a": 2.0, "b": 1.0}, {"b": 0.9}, ["a", "b"])
    assert fused == {"a": pytest.approx(1.0), "b": pytest.approx(1 / 2 + 1 / 1)}


@pytest.mark.parametrize("cls", [MaxFusion, LinearFusion, ZScoreFusion])
def test_the_bound_holds_for_every_document_below_both_lists(cls):
    rng = np.random.default_rng(3)
    fusion = cls(0.4)
    bm25 = {f"d{i}": float(v) for i, v in enumerate(rng.uniform(1, 10, 20))}
    scm = {f"d{i}": float(v) for i, v in enumerate(rng.uniform(0.1, 1, 20))}
    candidates = list(bm25)
    outside = (min(bm25.values()), min(scm.values()))
    bound = fusion.bound(bm25, scm, candidates, outside)
    for b, s in rng.uniform(0, 1, (100, 2)):
        # a document scoring at most each list's lowest, fused under the candidates' scaling
        below = (outside[0] * b, outside[1] * s)
        assert fusion.bound(bm25, scm, candidates, below) <= bound + 1e-12
    # a candidate with both lowest scores fuses to the bound exactly
    bm25["low"], scm["low"] = outside
    fused = fusion.fuse(bm25, scm, [*candidates, "low"])
    assert fused["low"] == pytest.approx(fusion.bound(bm25, scm, [*candidates, "low"], outside))


def test_fusion_from_ignores_what_a_fusion_does_not_take_and_checks_the_rest():
    assert fusion_from("rrf", alpha=0.3, rrf_k=10) == ReciprocalRankFusion(10)
    assert fusion_from("max", alpha=None) == MaxFusion(HYBRID_DEFAULTS.alpha)
    assert fusion_from().describe() == {
        "fusion": HYBRID_DEFAULTS.fusion,
        "alpha": HYBRID_DEFAULTS.alpha,
    }
    with pytest.raises(ValueError, match="fusion must be one of"):
        fusion_from("mean")
    with pytest.raises(ValueError, match="alpha"):
        fusion_from("max", alpha=1.5)


def test_a_models_hybrid_settings_are_checked():
    assert hybrid_settings(None) is None
    assert hybrid_settings({"fusion": "zscore", "alpha": 0.7}) == {"fusion": "zscore", "alpha": 0.7}
    with pytest.raises(ValueError, match="unknown hybrid setting 'beta'"):
        hybrid_settings({"beta": 1})
    with pytest.raises(ValueError, match="depth"):
        hybrid_settings({"depth": 0})


# -- three named legs: explicit weights ----------------------------------------------------------

DENSE = {"a": 0.9, "b": 0.6, "c": 0.7}
WEIGHTS = {"bm25": 0.4, "scm": 0.1, "dense": 0.5}


def test_a_score_fusion_weighs_each_named_leg_as_given():
    legs = {"bm25": BM25, "scm": SCM, "dense": DENSE}
    fused = MaxFusion(weights=WEIGHTS).fuse_legs(legs, CANDIDATES)
    # by hand: each leg divided by its largest score among the candidates
    assert fused["a"] == pytest.approx(0.4 * 10 / 10 + 0.1 * 0.2 / 0.8 + 0.5 * 0.9 / 0.9)
    assert fused["b"] == pytest.approx(0.4 * 5 / 10 + 0.1 * 0.8 / 0.8 + 0.5 * 0.6 / 0.9)
    assert fused["c"] == pytest.approx(0.4 * 0 / 10 + 0.1 * 0.4 / 0.8 + 0.5 * 0.7 / 0.9)
    # the order the legs come in does not change the weights they get
    reordered = {"dense": DENSE, "bm25": BM25, "scm": SCM}
    assert MaxFusion(weights=WEIGHTS).fuse_legs(reordered, CANDIDATES) == pytest.approx(fused)
    z = ZScoreFusion(weights=WEIGHTS).fuse_legs(legs, CANDIDATES)
    d_mean = (0.9 + 0.6 + 0.7) / 3
    d_sd = math.sqrt(((0.9 - d_mean) ** 2 + (0.6 - d_mean) ** 2 + (0.7 - d_mean) ** 2) / 3)
    b_sd = math.sqrt(((10 - 5) ** 2 + 0 + 5**2) / 3)
    s_mean = (0.2 + 0.8 + 0.4) / 3
    s_sd = math.sqrt(((0.2 - s_mean) ** 2 + (0.8 - s_mean) ** 2 + (0.4 - s_mean) ** 2) / 3)
    expected = 0.4 * 5 / b_sd + 0.1 * (0.2 - s_mean) / s_sd + 0.5 * (0.9 - d_mean) / d_sd
    assert z["a"] == pytest.approx(expected)


def test_two_leg_weights_equal_alpha_and_the_legs_are_the_weights_names():
    two = {"bm25": 0.3, "scm": 0.7}
    assert LinearFusion(weights=two).fuse(BM25, SCM, CANDIDATES) == pytest.approx(
        LinearFusion(0.3).fuse(BM25, SCM, CANDIDATES)
    )
    assert MaxFusion(weights=WEIGHTS).legs == ("bm25", "scm", "dense")
    assert MaxFusion(0.3).legs == ("bm25", "scm")
    with pytest.raises(ValueError, match="weighs the legs bm25, scm, dense, not bm25, scm"):
        MaxFusion(weights=WEIGHTS).fuse(BM25, SCM, CANDIDATES)
    with pytest.raises(ValueError, match="with alpha weighs two legs"):
        MaxFusion(0.5).fuse_legs({"bm25": BM25, "scm": SCM, "dense": DENSE}, CANDIDATES)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"bm25": 1.0}, "at least two legs"),
        ({"bm25": 0.0, "dense": 0.0}, "positive weight"),
        ({"bm25": -0.1, "dense": 1.0}, "weights >= 0"),
        ({"bm25": math.inf, "dense": 1.0}, "finite weights"),
        ({"bm25": 0.5, "splade": 0.5}, "leg names"),
    ],
)
def test_bad_weights_are_refused_in_one_line(weights, message):
    with pytest.raises(ValueError, match=message):
        fusion_from("zscore", weights=weights)


def test_a_fusion_describes_its_weights_and_rrf_takes_any_legs():
    assert fusion_from("zscore", weights=WEIGHTS).describe() == {
        "fusion": "zscore",
        "weights": WEIGHTS,
    }
    assert fusion_from("zscore", weights=WEIGHTS) == ZScoreFusion(weights=dict(WEIGHTS))
    assert fusion_from("rrf", weights=WEIGHTS) == ReciprocalRankFusion()  # not a parameter of it
    fused = ReciprocalRankFusion(rrf_k=0).fuse_legs(
        {"bm25": {"a": 2.0}, "scm": {"b": 1.0}, "dense": {"b": 0.9, "a": 0.5}}, ["a", "b"]
    )
    assert fused == {"a": pytest.approx(1 + 1 / 2), "b": pytest.approx(1 + 1)}


@pytest.mark.parametrize("cls", [MaxFusion, LinearFusion, ZScoreFusion])
def test_the_bound_of_three_legs_holds_for_every_document_below_every_list(cls):
    rng = np.random.default_rng(7)
    fusion = cls(weights=WEIGHTS)
    n = 30
    legs = {
        "bm25": {f"d{i}": float(v) for i, v in enumerate(rng.uniform(1, 10, n))},
        "scm": {f"d{i}": float(v) for i, v in enumerate(rng.uniform(0.1, 1, n))},
        "dense": {f"d{i}": float(v) for i, v in enumerate(rng.uniform(0.4, 0.9, n))},
    }
    candidates = [f"d{i}" for i in range(n)]
    outside = {name: min(scores.values()) for name, scores in legs.items()}
    bound = fusion.bound_legs(legs, candidates, outside)
    for fractions in rng.uniform(0, 1, (200, 3)):
        below = {name: outside[name] * f for name, f in zip(legs, fractions, strict=True)}
        assert fusion.bound_legs(legs, candidates, below) <= bound + 1e-12
    # a candidate with every leg's lowest score fuses to the bound exactly
    for name, scores in legs.items():
        scores["low"] = outside[name]
    fused = fusion.fuse_legs(legs, [*candidates, "low"])
    assert fused["low"] == pytest.approx(fusion.bound_legs(legs, [*candidates, "low"], outside))


def test_a_models_three_way_settings_go_under_dense():
    settings = {"fusion": "max", "alpha": 0.6, "dense": {"fusion": "zscore", "weights": WEIGHTS}}
    assert hybrid_settings(settings) == settings
    with pytest.raises(ValueError, match=r"goes under hybrid\['dense'\]"):
        hybrid_settings({"fusion": "zscore", "weights": WEIGHTS})
    with pytest.raises(ValueError, match="must name the dense leg"):
        hybrid_settings({"dense": {"fusion": "max", "weights": {"bm25": 0.5, "scm": 0.5}}})
    with pytest.raises(ValueError, match=r"unknown hybrid\['dense'\] setting 'alpha'"):
        hybrid_settings({"dense": {"alpha": 0.5}})
