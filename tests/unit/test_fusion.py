"""The fusions of BM25 and the SCM (es_scm.fusion): formulas by hand, bounds, settings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_scm.defaults import FUSIONS as FUSION_NAMES
from es_scm.defaults import HYBRID_DEFAULTS
from es_scm.fusion import (
    FUSIONS,
    LinearFusion,
    MaxFusion,
    ReciprocalRankFusion,
    ZScoreFusion,
    fusion_from,
    hybrid_settings,
)

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
