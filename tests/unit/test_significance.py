"""Paired comparisons (es_scm.evaluation.significance), checked against independent computations:
the randomization test against every one of the 2ⁿ sign assignments of a small sample, the
t-test against Student's t distribution by its formula, wins/ties/losses counted by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from es_scm.evaluation.significance import (
    compare,
    comparison_table,
    paired_t_test,
    randomization_test,
)


def exact_randomization_p(a, b):
    """The sign-flip test with all 2ⁿ assignments: the share whose |Σ ±d| ≥ |Σ d|."""
    differences = [x - y for x, y in zip(a, b, strict=True)]
    observed = abs(sum(differences))
    assignments = list(itertools.product((1, -1), repeat=len(differences)))
    at_least = sum(
        1
        for signs in assignments
        if abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-12
    )
    return at_least / len(assignments)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_randomization_test_approaches_the_exact_test(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(12)
    b = a - rng.normal(0.05, 0.1, 12)
    exact = exact_randomization_p(a, b)
    estimate = randomization_test(a, b, permutations=20_000, seed=seed)
    # the Monte Carlo estimate's standard error is at most 0.5/sqrt(20,000) ≈ 0.0035
    assert abs(estimate - exact) < 0.02


def test_randomization_test_is_reproducible_and_bounded():
    a = [0.9, 0.8, 0.7, 0.95, 0.85]
    b = [0.1, 0.2, 0.3, 0.15, 0.25]
    p = randomization_test(a, b, permutations=999, seed=3)
    assert p == randomization_test(a, b, permutations=999, seed=3)
    # every difference positive: only the observed signs and their mirror reach it (2/32)
    assert abs(p - 2 / 32) < 0.03
    assert p >= 1 / 1000


def test_equal_samples_give_p_one():
    a = [0.5, 0.25, 1.0]
    assert randomization_test(a, a) == 1.0
    assert paired_t_test(a, a) == 1.0


def test_paired_t_test_matches_the_t_distribution():
    a = np.array([0.61, 0.72, 0.55, 0.80, 0.67, 0.59, 0.74])
    b = np.array([0.58, 0.70, 0.57, 0.71, 0.60, 0.55, 0.73])
    d = a - b
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    expected = 2 * stats.t.sf(abs(t), df=len(d) - 1)
    assert paired_t_test(a, b) == pytest.approx(expected, rel=1e-9)


def test_compare_counts_wins_ties_losses_and_reads_missing_queries_as_zero():
    per_query = {
        "bm25": {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 0.2},
        "scm": {"q1": 0.7, "q2": 0.5, "q3": 0.1},  # nothing for q4: 0
    }
    (comparison,) = compare(per_query, "bm25", measure="nDCG@10")
    assert (comparison.wins, comparison.ties, comparison.losses) == (1, 1, 2)
    assert comparison.queries == 4
    assert comparison.mean == pytest.approx((0.7 + 0.5 + 0.1 + 0.0) / 4)
    assert comparison.baseline_mean == pytest.approx(1.7 / 4)
    assert comparison.delta == pytest.approx(comparison.mean - comparison.baseline_mean)
    row = comparison_table([comparison], "toy")
    assert "| toy | scm vs bm25 | nDCG@10 |" in row
    assert "1/1/2" in row


def test_compare_names_a_missing_baseline():
    with pytest.raises(ValueError, match="baseline 'bm25' is not one of the methods"):
        compare({"scm": {"q": 1.0}}, "bm25")


def test_unpaired_samples_are_refused():
    with pytest.raises(ValueError, match="one length"):
        randomization_test([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="must not be empty"):
        paired_t_test([], [])
