"""The SemEval-2016 Task 3 official metrics (MAP, AvgRec, MRR), ranking ties, and fusion."""

from __future__ import annotations

import pytest

from es_scm.evaluation.metrics import (
    average_precision,
    average_recall,
    mean_average_precision,
    mean_reciprocal_rank,
    rank_candidates,
    reciprocal_rank,
    semeval_scores,
)
from es_scm.evaluation.trec import evaluate_runs
from es_scm.fusion import interpolate_scores, min_max

DEV_GOLD = "semeval2016-task3/SemEval2016-Task3-CQA-QL-dev.xml.subtaskB.relevancy"


def test_average_precision_by_hand():
    # relevant at ranks 2, 3 and 5: P@2 = 1/2, P@3 = 2/3, P@5 = 3/5
    ranking = [False, True, True, False, True, False]
    assert average_precision(ranking) == pytest.approx((1 / 2 + 2 / 3 + 3 / 5) / 3)
    assert reciprocal_rank(ranking) == pytest.approx(1 / 2)


def test_average_precision_is_zero_without_relevant_candidates():
    assert average_precision([False] * 10) == 0.0
    assert reciprocal_rank([False] * 10) == 0.0
    # the official MAP averages over every question, the empty one included
    rankings = {"a": [True, False], "b": [False, False]}
    assert mean_average_precision(rankings) == pytest.approx(0.5)
    assert mean_reciprocal_rank(rankings) == pytest.approx(0.5)


def test_average_precision_counts_only_the_top_ten():
    ranking = [False] * 10 + [True]
    assert average_precision(ranking) == 0.0
    assert average_precision(ranking, cutoff=11) == pytest.approx(1 / 11)


def test_average_recall_by_hand():
    # one question, R = 1 at rank 2: recall@1 = 0/1, recall@k = 1 for k >= 2
    assert average_recall({"q": [False, True, False]}, cutoff=3) == pytest.approx(2 / 3)
    # two questions: micro-averaged over the questions at every k
    rankings = {"a": [True, False], "b": [False, True]}
    # k=1: found 1 of min(1,1)+min(1,1)=2 → 0.5; k=2: 2 of 2 → 1
    assert average_recall(rankings, cutoff=2) == pytest.approx(0.75)


def test_rank_candidates_is_stable_on_ties_and_rounds_noise():
    ids = ["r3", "r1", "r2"]
    assert rank_candidates(ids, [0.5, 0.5, 0.9]) == ["r2", "r3", "r1"]
    assert rank_candidates(ids, {"r1": 0.5 + 1e-15, "r3": 0.5}) == ["r3", "r1", "r2"]
    assert rank_candidates(ids, {"r1": 0.5 + 1e-15, "r3": 0.5}, decimals=None)[0] == "r1"
    with pytest.raises(ValueError, match="1 scores for 3 candidates"):
        rank_candidates(ids, [1.0])


def test_official_ir_baseline_on_2016_dev(shared_data):
    from es_scm.evaluation.semeval_data import read_gold

    gold = read_gold(shared_data / DEV_GOLD)
    assert len(gold) == 50
    rankings = {}
    for qid, rows in gold.items():
        ranked = sorted(rows, key=lambda row: -row[2])  # by the baseline's score, stable
        rankings[qid] = [relevant for _, _, _, relevant in ranked]
    scores = semeval_scores(rankings)
    assert round(scores["MAP"], 2) == 71.35
    assert round(scores["AvgRec"], 2) == 86.11
    assert round(scores["MRR"], 2) == 76.67


def test_min_max_and_interpolation():
    assert min_max({"a": 2.0, "b": 4.0, "c": 3.0}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert min_max({"a": 1.0, "b": 1.0}) == {"a": 0.0, "b": 0.0}
    assert min_max({"a": 2.0}, ["a", "b"]) == {"a": 1.0, "b": 0.0}
    fused = interpolate_scores({"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 1.0}, 0.25)
    assert fused == pytest.approx({"a": 0.25, "b": 0.75})
    with pytest.raises(ValueError, match="alpha"):
        interpolate_scores({}, {}, 1.5)


def test_evaluate_runs_uses_ir_measures():
    qrels = {"1": {"a": 2, "b": 0, "c": 1}}
    run = {"1": {"a": 3.0, "b": 2.0, "c": 1.0}}
    aggregate, per_query = evaluate_runs(qrels, {"x": run})
    assert aggregate["x"]["AP"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert aggregate["x"]["R@100"] == pytest.approx(1.0)
    assert per_query["x"]["1"]["AP"] == pytest.approx(aggregate["x"]["AP"])
