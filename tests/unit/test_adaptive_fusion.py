"""The adaptive fusion (es_scm.fusion.AdaptiveFusion), its weight model (es_scm.fusion.weights)
and its fitting (es_scm.evaluation.adaptive): weights by hand, monotonicity, the bound, saving,
the fallback."""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from es_scm.evaluation.adaptive import (
    WeightTable,
    fit_weight_model,
    nearest_points,
    standardization,
)
from es_scm.evaluation.tuning import weight_grid
from es_scm.fusion import (
    AdaptiveFusion,
    MaxFusion,
    ZScoreFusion,
    candidate_signals,
    fusion_from,
    fusion_from_settings,
    hybrid_settings,
)
from es_scm.fusion.signals import QuerySignals
from es_scm.fusion.weights import MIN_WEIGHT, WeightModel, signal_phrase

BM25 = {"a": 10.0, "b": 5.0, "c": 1.0}
SCM = {"a": 0.2, "b": 0.8, "c": 0.4}
DENSE = {"a": 0.9, "b": 0.6, "c": 0.7}
CANDIDATES = ["a", "b", "c"]


def two_leg_model(coefficient: float = 1.0) -> WeightModel:
    """α = σ(ln(0.6/0.4) + coefficient · z), z = (scm.top − 0.5) / 0.25."""
    return WeightModel(
        legs=("bm25", "scm"),
        signals=("scm.top",),
        center=(0.5,),
        scale=(0.25,),
        intercepts=(math.log(0.6), math.log(0.4)),
        coefficients=((coefficient,), (0.0,)),
    )


def test_the_weights_are_a_softmax_of_the_standardized_signals_by_hand():
    model = two_leg_model(-1.0)
    fusion = AdaptiveFusion(alpha=0.6, model=model)
    signals = QuerySignals({"scm.top": 0.75})  # z = 1
    expected = 0.6 * math.exp(-1.0) / (0.6 * math.exp(-1.0) + 0.4)
    decision = fusion.decide(["bm25", "scm"], signals)
    assert decision.adapted
    assert decision.weights[0] == pytest.approx(expected)
    assert sum(decision.weights) == pytest.approx(1.0)
    fused = fusion.fuse(BM25, SCM, CANDIDATES, signals=signals)
    by_hand = MaxFusion(expected).fuse(BM25, SCM, CANDIDATES)
    assert fused == pytest.approx(by_hand)


def test_a_signal_far_out_moves_the_weights_no_further_than_the_clip():
    model = two_leg_model(-1.0)
    far = model.weights_of(model.standardized(QuerySignals({"scm.top": 100.0})))
    at_clip = model.weights_of(np.array([model.clip]))
    assert far == pytest.approx(at_clip)


def test_without_a_model_or_signals_the_fixed_weights_are_used_and_said():
    fixed = MaxFusion(0.6).fuse(BM25, SCM, CANDIDATES)
    assert AdaptiveFusion(alpha=0.6).fuse(BM25, SCM, CANDIDATES) == pytest.approx(fixed)
    fusion = AdaptiveFusion(alpha=0.6, model=two_leg_model())
    missing = QuerySignals({"bm25.top": 3.0})
    assert fusion.fuse(BM25, SCM, CANDIDATES, signals=missing) == pytest.approx(fixed)
    line = fusion.explain({"bm25": BM25, "scm": SCM}, CANDIDATES, missing)
    assert (
        line == "BM25 weight 0.60 (fixed 0.6): the fixed weights, as the signal scm.top is missing"
    )
    three = AdaptiveFusion(weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5}, model=two_leg_model())
    decision = three.decide(["bm25", "scm", "dense"], QuerySignals({"scm.top": 0.9}))
    assert not decision.adapted
    assert decision.weights == (0.4, 0.1, 0.5)
    assert "its model weighs bm25, scm" in decision.explanation()


def test_the_explanation_names_the_signal_that_moved_the_weights():
    fusion = AdaptiveFusion(alpha=0.6, model=two_leg_model(-1.0))
    line = fusion.explain({"bm25": BM25, "scm": SCM}, CANDIDATES, QuerySignals({"scm.top": 1.0}))
    weight = fusion.decide(["bm25", "scm"], QuerySignals({"scm.top": 1.0})).weights[0]
    assert line == f"BM25 weight {weight:.2f} (fixed 0.6): {signal_phrase('scm.top', True)}"
    assert signal_phrase("scm.top", True) == "the SCM's best score is high"
    assert signal_phrase("agree.bm25.scm.overlap10", False) == (
        "BM25 and the SCM disagree on their top ten"
    )


def test_signals_not_given_are_read_from_the_candidates_scores():
    model = WeightModel(
        legs=("bm25", "scm"),
        signals=("agree.bm25.scm.overlap10",),
        center=(0.5,),
        scale=(0.2,),
        intercepts=(0.0, 0.0),
        coefficients=((2.0,), (0.0,)),
    )
    fusion = AdaptiveFusion(alpha=0.5, model=model)
    legs = {"bm25": BM25, "scm": SCM}
    signals = candidate_signals(legs, CANDIDATES)
    assert signals.get("agree.bm25.scm.overlap10") == pytest.approx(0.3)  # all three in both
    assert fusion.fuse_legs(legs, CANDIDATES) == pytest.approx(
        fusion.fuse_legs(legs, CANDIDATES, signals=signals)
    )


def test_a_three_leg_model_weighs_the_dense_leg_on_z_scores():
    model = WeightModel(
        legs=("bm25", "scm", "dense"),
        signals=("dense.top",),
        center=(0.7,),
        scale=(0.1,),
        intercepts=(math.log(0.4), math.log(0.1), math.log(0.5)),
        coefficients=((0.0,), (0.0,), (0.5,)),
    )
    weights = {"bm25": 0.4, "scm": 0.1, "dense": 0.5}
    fusion = AdaptiveFusion(weights=weights, base="zscore", model=model)
    signals = QuerySignals({"dense.top": 0.8})  # z = 1: the dense leg's score + 0.5
    raw = np.array([0.4, 0.1, 0.5 * math.exp(0.5)])
    expected = dict(zip(("bm25", "scm", "dense"), raw / raw.sum(), strict=True))
    legs = {"bm25": BM25, "scm": SCM, "dense": DENSE}
    fused = fusion.fuse_legs(legs, CANDIDATES, signals=signals)
    assert fused == pytest.approx(ZScoreFusion(weights=expected).fuse_legs(legs, CANDIDATES))


# -- exactness: increasing in every leg's score, and the bound ------------------------------------

SIGNAL_NAMES = ("bm25.ratio10", "scm.top", "agree.bm25.scm.overlap10")


@st.composite
def models(draw):
    coefficients = draw(
        st.lists(st.floats(-5, 5), min_size=len(SIGNAL_NAMES), max_size=len(SIGNAL_NAMES))
    )
    return WeightModel(
        legs=("bm25", "scm"),
        signals=SIGNAL_NAMES,
        center=(0.5, 0.5, 0.5),
        scale=(0.2, 0.2, 0.2),
        intercepts=(draw(st.floats(-3, 3)), 0.0),
        coefficients=(tuple(coefficients), (0.0,) * len(SIGNAL_NAMES)),
    )


@settings(max_examples=60, deadline=None)
@given(
    models(),
    st.lists(st.floats(0.0, 1.0), min_size=3, max_size=3),
    st.sampled_from(["max", "linear", "zscore"]),
    st.integers(0, 2**32 - 1),
)
def test_within_a_query_the_fusion_is_increasing_and_its_bound_holds(model, values, base, seed):
    rng = np.random.default_rng(seed)
    fusion = AdaptiveFusion(alpha=0.6, base=base, model=model)
    signals = QuerySignals(dict(zip(SIGNAL_NAMES, values, strict=True)))
    n = 25
    legs = {
        "bm25": {f"d{i}": float(v) for i, v in enumerate(rng.uniform(1, 10, n))},
        "scm": {f"d{i}": float(v) for i, v in enumerate(rng.uniform(0.1, 1, n))},
    }
    candidates = list(legs["bm25"])
    weights = fusion.decide(["bm25", "scm"], signals).weights
    assert all(w > 0 for w in weights)
    assert sum(weights) == pytest.approx(1.0)
    outside = {name: min(scores.values()) for name, scores in legs.items()}
    bound = fusion.bound_legs(legs, candidates, outside, signals=signals)
    for fractions in rng.uniform(0, 1, (50, 2)):
        below = {name: outside[name] * f for name, f in zip(legs, fractions, strict=True)}
        assert fusion.bound_legs(legs, candidates, below, signals=signals) <= bound + 1e-12
    # a document with each leg's lowest score fuses to the bound, one above it fuses higher
    for name, scores in legs.items():
        scores["low"] = outside[name]
    extended = [*candidates, "low"]
    fused = fusion.fuse_legs(legs, extended, signals=signals)
    assert fused["low"] == pytest.approx(
        fusion.bound_legs(legs, extended, outside, signals=signals)
    )
    higher = {name: outside[name] + 0.01 for name in legs}
    assert fusion.bound_legs(legs, extended, higher, signals=signals) > fused["low"]


# -- saving ---------------------------------------------------------------------------------------


def test_the_fusion_round_trips_through_its_description_and_a_models_settings(tmp_path):
    from es_scm.model import SoftCosineModel

    fusion = AdaptiveFusion(alpha=0.6, model=two_leg_model(-0.7))
    described = fusion.describe()
    assert described["fusion"] == "adaptive"
    assert "base" not in described  # the fixed fusion's of the legs fused: max for two
    assert fusion.base_of(["bm25", "scm"]) == "max"
    assert fusion.base_of(["bm25", "scm", "dense"]) == "zscore"
    settings_ = {k: v for k, v in described.items() if k != "fusion"}
    assert fusion_from("adaptive", **settings_) == fusion
    three = AdaptiveFusion(
        weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5},
        base="zscore",
        model=WeightModel.constant({"bm25": 0.3, "scm": 0.2, "dense": 0.5}),
    )
    hybrid = {**described, "dense": three.describe()}
    assert hybrid_settings(hybrid) == hybrid
    model = SoftCosineModel.build(["cats chase mice", "dogs chase cats"])
    model.hybrid = hybrid_settings(hybrid)
    loaded = SoftCosineModel.load(model.save(tmp_path / "model"))
    assert loaded.hybrid == hybrid
    assert fusion_from_settings(loaded.hybrid["dense"]) == three
    assert fusion_from_settings(loaded.hybrid) == fusion


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({"legs": ["bm25"]}, "missing"),
        ({**two_leg_model().to_dict(), "scale": [0.0]}, "scale must be positive"),
        ({**two_leg_model().to_dict(), "center": [math.nan]}, "must be finite"),
        ({**two_leg_model().to_dict(), "legs": ["bm25", "splade"]}, "distinct legs"),
        ({**two_leg_model().to_dict(), "extra": 1}, "unknown"),
    ],
)
def test_a_bad_weight_model_is_refused_in_one_line(model, message):
    with pytest.raises(ValueError, match=message):
        hybrid_settings({"fusion": "adaptive", "model": model})


# -- fitting -----------------------------------------------------------------------------------


def test_nearest_points_are_the_closest_composition():
    # 24.8 and 15.2 fortieths: the floors 24 and 15, one more to the larger remainder
    assert nearest_points(np.array([[0.62, 0.38], [0.5, 0.5]]), 40).tolist() == [
        [25, 15],
        [20, 20],
    ]
    assert nearest_points(np.array([[0.41, 0.13, 0.46]]), 20).tolist() == [[8, 3, 9]]


def test_standardization_weighs_each_group_the_same():
    signals = np.array([[0.0], [0.0], [0.0], [4.0]])
    center, scale = standardization(signals, np.array([0, 0, 0, 1]))
    assert center[0] == pytest.approx(2.0)  # the mean of the groups' means
    assert scale[0] == pytest.approx(2.0)


def test_the_fit_finds_the_weights_a_signal_calls_for():
    """Queries whose signal is high are best served by α = 0.9, the others by α = 0.3: the
    model learns the sign, and beats every constant weighting."""
    rng = np.random.default_rng(0)
    grid = np.array([[w["bm25"], w["scm"]] for w in weight_grid(0.025, ("bm25", "scm"))])
    signal = rng.normal(size=400)
    best = np.where(signal > 0, 0.9, 0.3)
    measures = 100 - 100 * np.abs(grid[None, :, 0] - best[:, None])  # peaked at the best α
    groups = np.arange(400) % 4
    table = WeightTable(("bm25", "scm"), 0.025, grid, measures, groups)
    model = fit_weight_model(
        table, signal[:, None], ["bm25.ratio10"], {"bm25": 0.6, "scm": 0.4}, penalty=0.01
    )
    assert model.coefficients[0][0] > 0.5  # BM25's weight rises with the signal
    z = (signal[:, None] - model.center[0]) / model.scale[0]
    fitted = table.objective(model.weights_of(np.clip(z, -3, 3)))
    assert fitted > max(table.constant(point) for point in range(len(grid))) + 5
    unchanged = fit_weight_model(
        table, signal[:, None], ["bm25.ratio10"], {"bm25": 0.6, "scm": 0.4}, penalty=1e6
    )
    assert unchanged.signals == ()  # a huge penalty keeps the fixed weights, reading nothing
    assert unchanged.weights_of(np.zeros(0)) == pytest.approx([0.6, 0.4])


def test_fuse_bounded_is_fuse_and_bound_with_one_decision():
    legs = {"bm25": BM25, "scm": SCM}
    outside = {"bm25": 0.5, "scm": 0.1}
    signals = QuerySignals({"scm.top": 0.9})
    fusion = AdaptiveFusion(alpha=0.6, model=two_leg_model(-1.0))
    bounded = fusion.fuse_bounded(legs, CANDIDATES, outside, signals)
    assert bounded.scores == pytest.approx(fusion.fuse_legs(legs, CANDIDATES, signals))
    assert bounded.bound == pytest.approx(fusion.bound_legs(legs, CANDIDATES, outside, signals))
    assert bounded.weights == pytest.approx(fusion.decide(["bm25", "scm"], signals).as_dict())
    assert bounded.explanation().startswith(f"BM25 weight {bounded.weights['bm25']:.2f}")
    fixed = MaxFusion(0.6).fuse_bounded(legs, CANDIDATES, outside)
    assert fixed.weights == {"bm25": 0.6, "scm": pytest.approx(0.4)}
    assert fixed.explanation() == (
        "BM25 weight 0.60 (fixed 0.6): the fixed weights, as the max fusion does not adapt them"
    )


def test_a_pruned_model_gives_the_same_weights_without_the_signals_it_ignores():
    model = WeightModel(
        legs=("bm25", "scm"),
        signals=("scm.top", "bm25.ratio10"),
        center=(0.5, 0.5),
        scale=(0.25, 0.2),
        intercepts=(0.2, 0.0),
        coefficients=((-1.0, 0.0), (0.0, 0.0)),
    )
    pruned = model.pruned()
    assert pruned.signals == ("scm.top",)
    signals = QuerySignals({"scm.top": 0.8})  # bm25.ratio10 is not needed any more
    assert model.standardized(signals) is None
    with_both = QuerySignals({"scm.top": 0.8, "bm25.ratio10": 0.9})
    assert pruned.weights_of(pruned.standardized(signals)) == pytest.approx(
        model.weights_of(model.standardized(with_both))
    )


# -- hostile models: refused at load unless every weight is finite and positive (issue 42) -------

HOSTILE = {
    "coefficients that overflow b + θz": (
        {"coefficients": [[1e308, 1e308], [-1e308, -1e308]]},
        "coefficient 1e+308 of bm25.ratio10",
    ),
    "a clip that lets a tiny scale overflow": (
        {"clip": 1e308, "scale": [1e-308, 1e-308], "coefficients": [[2.0, 0.0], [0.0, 0.0]]},
        "clip 1e+308",
    ),
    "intercepts far apart: a weight of exactly 0": (
        {"intercepts": [1000.0, 0.0], "coefficients": [[0.0, 0.0], [0.0, 0.0]]},
        "intercepts 1000 and 0",
    ),
}


def hostile_model(change: dict) -> dict:
    base = {
        "legs": ["bm25", "scm"],
        "signals": ["bm25.ratio10", "scm.top"],
        "center": [0.5, 0.5],
        "scale": [0.2, 0.2],
        "intercepts": [0.0, 0.0],
        "coefficients": [[1.0, 0.0], [0.0, 0.0]],
        "clip": 3.0,
    }
    return {**base, **change}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_finite_model_whose_weights_can_be_nan_or_zero_is_refused_at_load(case, tmp_path):
    """Each of these loaded before and fused to NaN (or gave a leg the weight 0.0): now its
    construction, fusion_from, a model's hybrid settings and a saved model.json refuse it in
    one line naming the value."""
    from es_scm.model import SoftCosineModel

    change, named = HOSTILE[case]
    data = hostile_model(change)
    attempts = [
        lambda: WeightModel.from_dict(data),
        lambda: fusion_from("adaptive", model=data),
        lambda: hybrid_settings({"fusion": "adaptive", "model": data}),
    ]
    for attempt in attempts:
        with pytest.raises(ValueError, match=re.escape(named)) as refused:
            attempt()
        assert "\n" not in str(refused.value)
    saved = SoftCosineModel.build(["cats chase mice", "dogs chase cats"]).save(tmp_path / "m")
    config = json.loads((saved / "model.json").read_text())
    config["hybrid"] = {"fusion": "adaptive", "model": data}  # not part of the model_id
    (saved / "model.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=re.escape(named)):
        SoftCosineModel.load(saved)


# finite floats of every magnitude, small ones more often (a fitted model's are a few units;
# hundreds set legs' scores far apart, larger ones overflow)
ANY_FLOAT = st.one_of(
    st.floats(-10, 10),
    st.floats(-1e4, 1e4),
    st.floats(allow_nan=False, allow_infinity=False),
)
POSITIVE = st.one_of(
    st.floats(1e-3, 10),
    st.floats(min_value=0.0, exclude_min=True, allow_infinity=False),
)


@st.composite
def any_models(draw):
    legs = draw(st.sampled_from([("bm25", "scm"), ("bm25", "scm", "dense")]))
    n = draw(st.integers(0, 3))
    return {
        "legs": list(legs),
        "signals": list(SIGNAL_NAMES[:n]),
        "center": draw(st.lists(ANY_FLOAT, min_size=n, max_size=n)),
        "scale": draw(st.lists(POSITIVE, min_size=n, max_size=n)),
        "intercepts": draw(st.lists(ANY_FLOAT, min_size=len(legs), max_size=len(legs))),
        "coefficients": [draw(st.lists(ANY_FLOAT, min_size=n, max_size=n)) for _ in legs],
        "clip": draw(POSITIVE),
    }


@settings(max_examples=400, deadline=None)
@given(any_models(), st.lists(ANY_FLOAT, min_size=3, max_size=3))
def test_every_model_that_loads_gives_finite_positive_weights_and_the_others_are_named(
    data, values
):
    """Over random models of every magnitude: a model that loads gives every leg a finite weight
    of at least MIN_WEIGHT, the weights summing to 1, on any finite signals (without a numpy
    warning); a model that cannot is refused in one line naming one of its numbers."""
    try:
        model = WeightModel.from_dict(data)
    except ValueError as refused:
        message = str(refused)
        assert "\n" not in message
        assert message.startswith("a weight model's ")
        numbers = [
            *data["intercepts"],
            *(x for row in data["coefficients"] for x in row),
            data["clip"],
        ]
        assert any(f"{x:.4g}" in message for x in numbers), message
        return
    signals = QuerySignals(dict(zip(SIGNAL_NAMES, values, strict=True)))
    fusion = AdaptiveFusion(weights=dict.fromkeys(model.legs, 1.0), model=model)
    scores = dict(zip(("bm25", "scm", "dense"), (BM25, SCM, DENSE), strict=True))
    legs = {leg: scores[leg] for leg in model.legs}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow or an invalid value would be an error
        decision = fusion.decide(list(model.legs), signals)
        fused = fusion.fuse_legs(legs, CANDIDATES, signals)
    weights = np.array(decision.weights)
    assert decision.adapted
    assert np.isfinite(weights).all(), weights
    assert (weights >= MIN_WEIGHT).all(), weights
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert all(math.isfinite(score) for score in fused.values()), fused
