"""Explanations of the SCM (no Elasticsearch): the decomposition kernel, a case computed by hand,
the sum property on many text pairs, and the ``es-scm similarity --explain`` output."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import sparse

from es_scm.cli import main
from es_scm.cli.errors import EXIT_OK, EXIT_USAGE
from es_scm.model import Explanation, SoftCosineModel, TermPair
from es_scm.similarity import TermSimilarityMatrix, scm

SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
TOLERANCE = 1e-9

TERMS = ["caesar", "killed", "dead", "antony", "brutus", "stabbed", "rome", "senate"]
PAIRS = [
    ("killed", "dead", 0.5),
    ("killed", "stabbed", 0.625),
    ("dead", "stabbed", 0.25),
    ("rome", "senate", 0.375),
    ("antony", "brutus", 0.125),
]


def thesaurus_model(weighting: str = "log-smooth") -> SoftCosineModel:
    texts = [" ".join(TERMS), "caesar killed", "antony rome senate", "brutus stabbed caesar"]
    return SoftCosineModel.build(
        texts,
        similarity=lambda terms: TermSimilarityMatrix.from_pairs(terms, PAIRS),
        document_weighting=weighting,
        query_weighting=weighting,
    )


@pytest.fixture(scope="module")
def model() -> SoftCosineModel:
    return thesaurus_model()


# -- the kernel: xᵀSy term by term ------------------------------------------------------------


def test_contributions_are_the_summands_of_the_inner_product() -> None:
    S = TermSimilarityMatrix.from_pairs(["a", "b", "c", "d"], [("a", "b", 0.5), ("c", "d", 0.25)])
    x, y = np.array([1.0, 0.0, 2.0, 0.0]), np.array([0.0, 3.0, 1.0, 4.0])
    parts = S.contributions(x, y)
    assert parts.rows.tolist() == [0, 2, 2]  # a·b, c·c, c·d; a·c and a·d have s = 0
    assert parts.columns.tolist() == [1, 2, 3]
    assert parts.similarities.tolist() == [0.5, 1.0, 0.25]
    assert parts.x_weights.tolist() == [1.0, 2.0, 2.0]
    assert parts.y_weights.tolist() == [3.0, 1.0, 4.0]
    assert parts.values.tolist() == [1.5, 2.0, 2.0]
    assert parts.values.sum() == S.inner_product(x, y) == 5.5


def test_contributions_of_empty_and_unrelated_vectors_are_empty() -> None:
    S = TermSimilarityMatrix.identity(["a", "b"])
    assert len(S.contributions(np.zeros(2), np.ones(2)).values) == 0
    assert len(S.contributions([(0, 1.0)], [(1, 1.0)]).values) == 0  # s_ab = 0


def test_contributions_refuse_a_corpus_naming_it() -> None:
    S = TermSimilarityMatrix.identity(["a", "b"])
    with pytest.raises(ValueError, match="y must be one vector, got a corpus of 2 rows"):
        S.contributions(np.ones(2), np.ones((2, 2)))


@st.composite
def matrix_and_vectors(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 8))
    values = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
    S = draw(hnp.arrays(np.float64, (n, n), elements=values))
    S = S * draw(hnp.arrays(np.bool_, (n, n)))
    np.fill_diagonal(S, 1.0)
    weights = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
    x = draw(hnp.arrays(np.float64, n, elements=weights))
    y = draw(hnp.arrays(np.float64, n, elements=weights))
    return S, x, y


@SETTINGS
@given(matrix_and_vectors(), st.sampled_from(["csc", "csr", "dense"]))
def test_contributions_sum_to_x_s_y(data, layout: str) -> None:
    S, x, y = data
    matrix = S if layout == "dense" else sparse.csr_array(S).asformat(layout)
    parts = scm.contributions(matrix, x, y)
    expected = float(x @ S @ y)
    scale = float(np.abs(x) @ np.abs(S) @ np.abs(y))
    assert abs(parts.values.sum() - expected) <= 1e-12 * max(scale, 1.0)
    assert np.all(parts.similarities != 0.0)
    np.testing.assert_array_equal(parts.similarities, S[parts.rows, parts.columns])
    assert np.all(x[parts.rows] != 0)
    assert np.all(y[parts.columns] != 0)
    assert len(set(zip(parts.rows.tolist(), parts.columns.tolist(), strict=True))) == len(parts[0])


# -- a case by hand -----------------------------------------------------------------------------


def test_a_hand_computed_explanation() -> None:
    # raw counts: x = (caesar 1, killed 2), y = (caesar 3, dead 1, antony 2); s(killed, dead) = ½.
    # xᵀSx = 1 + 4 = 5, yᵀSy = 9 + 1 + 4 = 14 (no pair of y's terms is similar), and
    # xᵀSy = caesar·caesar 1·1·3 + killed·dead 2·½·1 = 3 + 1, so SCM = 4/√70 = 3/√70 + 1/√70.
    model = thesaurus_model("raw-none")
    a, b = "caesar killed killed", "caesar caesar caesar dead antony antony"
    explanation = model.explain(a, b)
    root = math.sqrt(70.0)
    assert explanation.score == model.similarity(a, b)
    assert explanation.score == pytest.approx(4 / root, abs=1e-15)
    assert explanation.query_norm == pytest.approx(math.sqrt(5.0), abs=1e-15)
    assert explanation.document_norm == pytest.approx(math.sqrt(14.0), abs=1e-15)
    expected = [
        TermPair("caesar", "caesar", 1.0, 1.0, 3.0, 3 / root, 0.75),
        TermPair("killed", "dead", 0.5, 2.0, 1.0, 1 / root, 0.25),
    ]
    assert len(explanation) == 2
    for got, want in zip(explanation, expected, strict=True):
        assert (got.query_term, got.document_term) == (want.query_term, want.document_term)
        numbers = ["similarity", "query_weight", "document_weight", "contribution", "share"]
        for name in numbers:
            assert getattr(got, name) == pytest.approx(getattr(want, name), abs=1e-15), name
    assert [p.identical for p in explanation] == [True, False]


def test_top_keeps_the_largest_pairs_and_counts_the_rest() -> None:
    model = thesaurus_model("raw-none")
    full = model.explain("caesar killed killed", "caesar caesar caesar dead antony antony")
    first = model.explain("caesar killed killed", "caesar caesar caesar dead antony antony", top=1)
    assert first.pairs == full.pairs[:1]
    assert (first.omitted, first.omitted_contribution) == (1, full.pairs[1].contribution)
    assert first.total == full.total
    assert first.score == full.score
    assert full.top(None) is full
    assert full.top(5) is full
    assert len(full.top(0)) == 0
    assert full.top(0).omitted == 2
    with pytest.raises(ValueError, match="top must be None or an integer >= 0, got -1"):
        model.explain("caesar", "caesar", top=-1)


@pytest.mark.parametrize(
    ("a", "b"), [("", "caesar"), ("caesar", ""), ("zzz unknown", "caesar killed"), ("", "")]
)
def test_a_text_without_vocabulary_terms_gives_an_empty_explanation(model, a: str, b: str) -> None:
    explanation = model.explain(a, b)
    assert explanation == Explanation(0.0, (), 0.0, 0.0, 0.0)
    assert explanation.to_dict()["pairs"] == []


def test_unrelated_texts_give_score_0_and_no_pairs(model) -> None:
    explanation = model.explain("caesar", "rome")
    assert (explanation.score, explanation.pairs, explanation.omitted) == (0.0, (), 0)


# -- the sum property on many text pairs --------------------------------------------------------

WEIGHTINGS = ["log-smooth", "raw-none", "bm25", "augmented-natural"]
MODELS = {weighting: thesaurus_model(weighting) for weighting in WEIGHTINGS}
texts = st.lists(st.sampled_from([*TERMS, "unknown", "the"]), max_size=8).map(" ".join)


@SETTINGS
@given(texts, texts, st.sampled_from(WEIGHTINGS))
def test_contributions_sum_to_the_score(a: str, b: str, weighting: str) -> None:
    model = MODELS[weighting]
    explanation = model.explain(a, b)
    assert explanation.score == model.similarity(a, b)
    contributions = [pair.contribution for pair in explanation]
    assert abs(math.fsum(contributions) - explanation.score) <= TOLERANCE
    assert abs(explanation.total - explanation.score) <= TOLERANCE
    assert contributions == sorted(contributions, reverse=True)
    if explanation.pairs:
        assert math.fsum(pair.share for pair in explanation) == pytest.approx(1.0, abs=1e-12)
    reverse = model.explain(b, a, roles=("document", "query"))
    assert reverse.score == model.similarity(b, a, roles=("document", "query"))


def test_identical_texts_explain_a_score_of_one(model) -> None:
    explanation = model.explain("caesar killed rome", "caesar killed rome")
    assert explanation.score == pytest.approx(1.0, abs=1e-12)
    assert abs(explanation.total - explanation.score) <= TOLERANCE
    assert {(p.query_term, p.document_term) for p in explanation if p.identical} == {
        ("caesar", "caesar"),
        ("killed", "killed"),
        ("rome", "rome"),
    }


# -- es-scm similarity --explain ------------------------------------------------------------------

LINE = re.compile(
    r"^(?P<a>\S+) +(?P<rel>[=≈]) (?P<b>\S+) +s=(?P<s>-?\d\.\d\d) +(?P<c>[+-]\d\.\d{3}) +"
    r"\((?P<share>-?\d+) %\)$"
)


def similarity(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, list[str], str]:
    code = main(["similarity", *(str(arg) for arg in argv)])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_similarity_explain_prints_one_pair_per_line(capsys, model, model_dir: Path) -> None:
    a, b = "Julius Caesar was killed in Rome", "Antony found Caesar dead in the senate"
    code, lines, err = similarity(capsys, "--model", model_dir, "--explain", a, b)
    assert code == EXIT_OK, err
    explanation = model.explain(a, b)
    assert float(lines[0]) == explanation.score == model.similarity(a, b)
    assert len(lines) == 1 + len(explanation) == 4
    for line, pair in zip(lines[1:], explanation, strict=True):
        match = LINE.match(line)
        assert match, line
        assert (match["a"], match["rel"], match["b"]) == (
            pair.query_term,
            "=" if pair.identical else "≈",
            pair.document_term,
        )
        assert float(match["s"]) == round(pair.similarity, 2)
        assert float(match["c"]) == round(pair.contribution, 3)
        assert int(match["share"]) == round(100 * pair.share)
    assert [line.split()[:3] for line in lines[1:]] == [
        ["killed", "≈", "dead"],
        ["caesar", "=", "caesar"],
        ["rome", "≈", "senate"],
    ]
    assert lines[2].startswith("caesar = caesar   s=1.00  +0.")
    # the terms are aligned in columns
    assert len({line.index(" s=") for line in lines[1:]}) == 1


def test_similarity_explain_top(capsys, model, model_dir: Path) -> None:
    a, b = "Julius Caesar was killed in Rome", "Antony found Caesar dead in the senate"
    code, lines, _ = similarity(capsys, "--model", model_dir, "--explain", "--explain-top", 1, a, b)
    assert code == EXIT_OK
    explanation = model.explain(a, b)
    assert len(lines) == 3
    assert lines[1].startswith("killed ≈ dead")
    rest = explanation.total - explanation.pairs[0].contribution
    share = round(100 * rest / explanation.total)
    assert lines[2] == f"… 2 more pair(s)   {rest:+.3f}  ({share} %)"
    _, every, _ = similarity(capsys, "--model", model_dir, "--explain", "--explain-top", 0, a, b)
    assert len(every) == 4
    _, plain, _ = similarity(capsys, "--model", model_dir, a, b)
    assert plain == lines[:1]


def test_similarity_explain_of_an_unknown_text(capsys, model_dir: Path) -> None:
    code, lines, err = similarity(capsys, "--model", model_dir, "--explain", "zzz qqq", "caesar")
    assert code == EXIT_OK
    assert lines == ["0.0", "(no pair of similar terms: the score is 0)"]
    assert "TEXT_A has no vocabulary term" in err


def test_explain_top_must_be_a_count(capsys, model_dir: Path) -> None:
    code, _, err = similarity(capsys, "--model", model_dir, "--explain-top", "-1", "a", "b")
    assert code == EXIT_USAGE
    assert "expected an integer >= 0, got '-1'" in err
    main(["similarity", "--help"])
    help_text = capsys.readouterr().out
    assert "--explain " in help_text
    assert "--explain-top N" in help_text
