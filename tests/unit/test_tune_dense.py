"""The pure parts of ``es-scm tune --dense`` and of the dense options of ``search`` and ``eval``:
the weight grid, the fusions of the command line, the rows of the report and what ``--out``
saves (on a real Elasticsearch with the packaged MiniLM: tests/integration/test_dense_cli_es.py).

Every expected value is written out by hand here.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pytest

from es_scm.cli import main
from es_scm.cli.errors import CLIError
from es_scm.cli.options import leg_weights
from es_scm.cli.tune import dense_fusions_from_args
from es_scm.evaluation.tuning import (
    DenseScores,
    TuningReport,
    fused_run,
    fusion_row,
    weight_grid,
)
from es_scm.fusion import MaxFusion, ReciprocalRankFusion, ZScoreFusion, hybrid_settings
from es_scm.search.hybrid.config import hybrid_options, make_fusion
from tests.support import collection_files


def test_the_weight_grid_of_step_one_half_is_the_six_corners_and_midpoints_in_order():
    assert weight_grid(0.5) == [
        {"bm25": 0.0, "scm": 0.0, "dense": 1.0},
        {"bm25": 0.0, "scm": 0.5, "dense": 0.5},
        {"bm25": 0.0, "scm": 1.0, "dense": 0.0},
        {"bm25": 0.5, "scm": 0.0, "dense": 0.5},
        {"bm25": 0.5, "scm": 0.5, "dense": 0.0},
        {"bm25": 1.0, "scm": 0.0, "dense": 0.0},
    ]


def test_the_weight_grid_of_step_a_tenth_is_every_weighting_in_tenths():
    grid = weight_grid(0.1)
    # every (a, b, c) of tenths with a + b + c = 10: C(12, 2) = 66
    expected = {
        (a / 10, b / 10, (10 - a - b) / 10)
        for a, b in itertools.product(range(11), repeat=2)
        if a + b <= 10
    }
    assert len(grid) == len(expected) == 66
    assert {(w["bm25"], w["scm"], w["dense"]) for w in grid} == expected
    assert all(list(w) == ["bm25", "scm", "dense"] for w in grid)
    assert weight_grid(0.5, legs=("bm25", "dense")) == [
        {"bm25": 0.0, "dense": 1.0},
        {"bm25": 0.5, "dense": 0.5},
        {"bm25": 1.0, "dense": 0.0},
    ]


@pytest.mark.parametrize("step", [0.3, 0.0, 0.6, -0.1])
def test_a_weight_step_that_does_not_divide_one_is_refused(step):
    with pytest.raises(ValueError, match=str(step)):
        weight_grid(step)


def _tune_args(**given):
    return argparse.Namespace(**{"dense": "all-MiniLM-L6-v2", "dense_fusions": "zscore,max,rrf",
                                 "dense_step": 0.5, **given})  # fmt: skip


def test_the_three_way_fusions_of_the_command_line():
    fusions = dense_fusions_from_args(_tune_args(dense_fusions="max, rrf"))
    assert fusions == [MaxFusion(weights=w) for w in weight_grid(0.5)] + [ReciprocalRankFusion()]
    assert len(dense_fusions_from_args(_tune_args(dense_step=0.1))) == 66 + 66 + 1
    assert dense_fusions_from_args(_tune_args(dense=None)) == []  # no --dense: no row


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"dense_fusions": "max,average"}, "--dense-fusions: unknown fusion 'average'"),
        ({"dense_fusions": " , "}, "--dense-fusions: unknown fusion ''"),
        ({"dense_step": 0.3}, "--dense-step: the weights' step must divide 1"),
    ],
)
def test_bad_three_way_fusions_are_one_line_errors(given, message):
    with pytest.raises(CLIError, match=message):
        dense_fusions_from_args(_tune_args(**given))


def test_tune_refuses_the_dense_objective_without_the_dense_leg(collection, capsys):
    assert main(["tune", *collection_files(collection), "--objective", "dense"]) != 0
    assert "--objective dense goes with --dense" in capsys.readouterr().err
    assert main(["tune", *collection_files(collection), "--dense-step", "0.7"]) != 0
    assert "--dense-step" in capsys.readouterr().err


def test_leg_weights_parse_and_check_the_legs():
    assert leg_weights("bm25=0.4, scm=0.1 ,dense=0.5") == {"bm25": 0.4, "scm": 0.1, "dense": 0.5}
    assert leg_weights("bm25=1,dense=0") == {"bm25": 1.0, "dense": 0.0}
    for bad, message in [
        ("bm25", "expected LEG=WEIGHT"),
        ("bm25=half,dense=0.5", "the weight 'half' of bm25 is not a number"),
        ("bm25=0.5", "at least two legs"),
        ("bm25=0,dense=0", "positive weight"),
        ("bm25=-1,dense=1", "bm25"),
        ("bm25=0.5,colbert=0.5", "colbert"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            leg_weights(bad)


def test_eval_refuses_dense_fusion_options_without_dense(collection, capsys):
    status = main(["eval", "collection", *collection_files(collection), "--dense-weights",
                   "bm25=0.5,scm=0.2,dense=0.3"])  # fmt: skip
    assert status != 0
    assert "--dense-weights goes with --dense" in capsys.readouterr().err


def test_fusion_rows_name_the_weights_of_each_leg():
    weighted = ZScoreFusion(weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5})
    assert fusion_row(weighted) == "zscore[bm25=0.4,scm=0.1,dense=0.5]"
    assert fusion_row(MaxFusion(alpha=0.7)) == "max@0.7"
    assert fusion_row(ReciprocalRankFusion()) == "rrf"


def test_a_fused_run_is_the_weighted_sum_of_each_leg_over_its_maximum():
    legs = {
        "bm25": {"a": 4.0, "b": 2.0},
        "scm": {"b": 0.8, "c": 0.4, "d": 0.2},
        "dense": {"a": 0.5, "b": 0.9, "c": 1.0, "d": 0.6, "e": 0.7},
    }
    tops = {"bm25": {"a": 4.0}, "scm": {"b": 0.8}, "dense": {"c": 1.0, "b": 0.9}}
    fusion = MaxFusion(weights={"bm25": 0.2, "scm": 0.3, "dense": 0.5})
    # candidates a, b, c (the lists' union); maxima over them: bm25 4, scm 0.8, dense 1.0
    expected = {
        "a": 0.2 * 4 / 4 + 0.3 * 0 / 0.8 + 0.5 * 0.5 / 1.0,
        "b": 0.2 * 2 / 4 + 0.3 * 0.8 / 0.8 + 0.5 * 0.9 / 1.0,
        "c": 0.2 * 0 / 4 + 0.3 * 0.4 / 0.8 + 0.5 * 1.0 / 1.0,
    }
    fused = fused_run(legs, tops, fusion, depth=2)
    assert list(fused) == ["b", "c"]  # b 0.85, c 0.65, a 0.45
    assert fused == pytest.approx({d: expected[d] for d in ("b", "c")})
    # reciprocal rank fusion reads the lists alone: 1 / (60 + rank) in each list it is in
    rrf = fused_run(legs, tops, ReciprocalRankFusion(rrf_k=60), depth=3)
    assert rrf == pytest.approx({"b": 1 / 61 + 1 / 62, "a": 1 / 61, "c": 1 / 61})
    assert list(rrf) == ["b", "a", "c"]  # ties by id


def test_dense_tops_rank_by_score_then_id_even_across_the_depth():
    scores = DenseScores(["e", "d", "c", "b", "a"], {"t": np.array([0.5, 0.9, 0.5, 0.5, 0.1])})
    assert scores.top("t", 2) == {"d": 0.9, "b": 0.5}  # of the three at 0.5, the first id
    assert scores.top("t", 9) == {"d": 0.9, "b": 0.5, "c": 0.5, "e": 0.5, "a": 0.1}
    assert scores.scores("t")["c"] == 0.5
    assert scores.scores("t").get("z", 0.0) == 0.0


def _report() -> TuningReport:
    two = {"fusion": "max", "alpha": 0.7}
    three = {"fusion": "zscore", "weights": {"bm25": 0.3, "scm": 0.2, "dense": 0.5}}
    settings = {
        "dense": {"method": "reference"},
        "bm25+dense": {"method": "reference", "fusion": {"fusion": "max"}},
        "scm nonzero_limit=10": {"nonzero_limit": 10, "method": "scm"},
        "max@0.7 nonzero_limit=10": {"nonzero_limit": 10, "method": "hybrid", "fusion": two},
        "zscore[bm25=0.3,scm=0.2,dense=0.5] nonzero_limit=10": {
            "nonzero_limit": 10, "method": "dense", "fusion": three,
        },
        "rrf+dense nonzero_limit=10": {
            "nonzero_limit": 10, "method": "dense", "fusion": {"fusion": "rrf", "rrf_k": 60},
        },
    }  # fmt: skip
    held_out = dict(zip(settings, [0.62, 0.66, 0.55, 0.60, 0.70, 0.64], strict=True))
    best = "zscore[bm25=0.3,scm=0.2,dense=0.5] nonzero_limit=10"
    return TuningReport("c", 5, 0.5, held_out, settings, {"score": 0.69}, best, "nDCG@10")


def test_the_report_marks_the_reference_rows_and_ranks_every_row():
    report = _report()
    assert [row for row, _, _ in report.rows()] == [
        "zscore[bm25=0.3,scm=0.2,dense=0.5] nonzero_limit=10",
        "bm25+dense",
        "rrf+dense nonzero_limit=10",
        "dense",
        "max@0.7 nonzero_limit=10",
        "scm nonzero_limit=10",
    ]
    assert [report.reference(row) for row in ("dense", "bm25+dense", report.best)] == [
        True,
        True,
        False,
    ]
    lines = report.markdown().splitlines()
    assert "| bm25+dense (reference) | 66.00 | +16.00 |" in lines
    assert "| dense (reference) | 62.00 | +12.00 |" in lines
    assert "| zscore[bm25=0.3,scm=0.2,dense=0.5] nonzero_limit=10 | 70.00 | +20.00 |" in lines


def test_out_saves_the_best_two_way_and_three_way_fusions_which_search_then_uses():
    saved = _report().model_hybrid()
    three = {"fusion": "zscore", "weights": {"bm25": 0.3, "scm": 0.2, "dense": 0.5}}
    assert saved == {"fusion": "max", "alpha": 0.7, "dense": three}
    assert hybrid_settings(saved) == saved  # a model takes it as it is
    # hybrid search with a dense leg fuses by the saved three-way fusion, without by the other
    assert make_fusion(hybrid_options(saved, dense=True)) == ZScoreFusion(weights=three["weights"])
    assert make_fusion(hybrid_options(saved)) == MaxFusion(alpha=0.7)


def test_out_saves_a_three_way_rrf_alone_when_no_two_way_row_was_tried():
    report = _report()
    for row in ("max@0.7 nonzero_limit=10", "zscore[bm25=0.3,scm=0.2,dense=0.5] nonzero_limit=10"):
        del report.settings[row], report.held_out[row]
    report.best = "rrf+dense nonzero_limit=10"
    saved = report.model_hybrid()
    assert saved == {"dense": {"fusion": "rrf", "rrf_k": 60}}
    assert make_fusion(hybrid_options(hybrid_settings(saved), dense=True)) == (
        ReciprocalRankFusion(rrf_k=60)
    )
    # only the reference rows and the SCM: nothing to save
    del report.settings["rrf+dense nonzero_limit=10"], report.held_out["rrf+dense nonzero_limit=10"]
    report.best = "scm nonzero_limit=10"
    assert report.model_hybrid() is None
