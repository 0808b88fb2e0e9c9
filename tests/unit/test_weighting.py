"""Tests for es_scm.model.text.TermWeighting; expected values are written out by hand."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import scipy.sparse as sp

from es_scm.model.text import TermWeighting, Vocabulary

# N = 4; df: a=3, b=2, c=2, d=1 (ids 0..3); cf: a=5, b=2, c=3, d=1, so avgdl = 11 / 4
DOCS = [["a", "a", "a", "b"], ["a", "c"], ["a", "b", "c", "c"], ["d"]]
LN = math.log


@pytest.fixture
def vocabulary():
    vocabulary = Vocabulary().fit(DOCS)
    assert vocabulary.terms == ["a", "b", "c", "d"]
    return vocabulary


@pytest.fixture
def counts(vocabulary):
    return vocabulary.to_counts(DOCS)


def weights(weighting, counts, vocabulary):
    result = weighting.transform(counts, vocabulary)
    assert sp.isspmatrix_csr(result) or result.format == "csr"
    assert result.dtype == np.float64
    assert result.shape == counts.shape
    return result.toarray()


COUNTS = np.array([[3, 1, 0, 0], [1, 0, 1, 0], [1, 1, 2, 0], [0, 0, 0, 1]], dtype=float)


@pytest.mark.parametrize(
    ("tf", "kwargs", "expected"),
    [
        ("raw", {}, COUNTS),
        ("binary", {}, (COUNTS > 0).astype(float)),
        (
            "log",
            {},
            [[1 + LN(3), 1, 0, 0], [1, 0, 1, 0], [1, 1, 1 + LN(2), 0], [0, 0, 0, 1]],
        ),
        (
            "log",
            {"log_base": 10},
            [
                [1 + math.log10(3), 1, 0, 0],
                [1, 0, 1, 0],
                [1, 1, 1 + math.log10(2), 0],
                [0, 0, 0, 1],
            ],
        ),
        (
            "augmented",
            {},
            [[1, 0.5 + 0.5 / 3, 0, 0], [1, 0, 1, 0], [0.75, 0.75, 1, 0], [0, 0, 0, 1]],
        ),
        (
            "augmented",
            {"augmentation": 0.0},
            [[1, 1 / 3, 0, 0], [1, 0, 1, 0], [0.5, 0.5, 1, 0], [0, 0, 0, 1]],
        ),
    ],
)
def test_tf_schemes_without_idf(tf, kwargs, expected, counts, vocabulary):
    weighting = TermWeighting(tf=tf, idf="none", **kwargs)
    np.testing.assert_allclose(weights(weighting, counts, vocabulary), expected, rtol=1e-12)


@pytest.mark.parametrize(
    ("idf", "expected"),
    [
        ("none", [1, 1, 1, 1]),
        ("natural", [LN(4 / 3), LN(2), LN(2), LN(4)]),
        ("log2", [math.log2(4 / 3), 1, 1, 2]),
        ("smooth", [LN(1 + 4 / 3), LN(3), LN(3), LN(5)]),
    ],
)
def test_idf_schemes(idf, expected, counts, vocabulary):
    weighting = TermWeighting(tf="raw", idf=idf)
    np.testing.assert_allclose(weighting.global_weights(vocabulary), expected, rtol=1e-12)
    np.testing.assert_allclose(
        weights(weighting, counts, vocabulary), COUNTS * np.array(expected), rtol=1e-12
    )


def test_log_tf_times_natural_idf(counts, vocabulary):
    result = weights(TermWeighting(tf="log", idf="natural"), counts, vocabulary)
    assert result[0, 0] == pytest.approx((1 + LN(3)) * LN(4 / 3))
    assert result[2, 2] == pytest.approx((1 + LN(2)) * LN(2))
    assert result[3, 3] == pytest.approx(LN(4))


def test_natural_idf_zero_for_term_in_every_document():
    vocabulary = Vocabulary().fit([["x", "y"], ["x"]])
    result = TermWeighting(tf="raw", idf="natural").transform(
        vocabulary.to_counts([["x", "y"], ["x"]]), vocabulary
    )
    assert result.nnz == 1  # the zero weights of "x" are not stored
    assert result[0, vocabulary.term_to_id["y"]] == pytest.approx(LN(2))


def test_bm25(counts, vocabulary):
    result = weights(TermWeighting.bm25(), counts, vocabulary)
    avgdl = 11 / 4
    idf_a = LN(1 + (4 - 3 + 0.5) / (3 + 0.5))
    idf_d = LN(1 + (4 - 1 + 0.5) / (1 + 0.5))
    # document 0: tf(a) = 3, |d| = 4
    expected_a = idf_a * 3 * 2.2 / (3 + 1.2 * (0.25 + 0.75 * 4 / avgdl))
    # document 3: tf(d) = 1, |d| = 1
    expected_d = idf_d * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / avgdl))
    assert result[0, 0] == pytest.approx(expected_a, rel=1e-12)
    assert result[0, 0] == pytest.approx(0.51074, abs=1e-5)
    assert result[3, 3] == pytest.approx(expected_d, rel=1e-12)
    assert result[3, 3] == pytest.approx(1.62772, abs=1e-5)
    assert TermWeighting(scheme="bm25") == TermWeighting.bm25()


def test_bm25_without_length_normalization(counts, vocabulary):
    result = weights(TermWeighting.bm25(k1=1.0, b=0.0), counts, vocabulary)
    idf_b = LN(1 + (4 - 2 + 0.5) / (2 + 0.5))  # = ln 2
    # tf = 1 everywhere for b: 1 * 2 / (1 + 1) = 1, whatever the document length
    assert result[0, 1] == pytest.approx(idf_b)
    assert result[2, 1] == pytest.approx(idf_b)
    assert idf_b == pytest.approx(LN(2))


def test_bm25_k1_zero_is_binary_idf(counts, vocabulary):
    result = weights(TermWeighting.bm25(k1=0.0), counts, vocabulary)
    idf = TermWeighting.bm25().global_weights(vocabulary)
    np.testing.assert_allclose(result, (COUNTS > 0) * idf, rtol=1e-12)


def test_weights_are_non_negative_and_sparse(counts, vocabulary):
    for weighting in [
        TermWeighting(tf=tf, idf=idf)
        for tf in ("raw", "log", "binary", "augmented")
        for idf in ("none", "natural", "log2", "smooth")
    ] + [TermWeighting.bm25()]:
        result = weighting.transform(counts, vocabulary)
        assert result.data.min() > 0
        assert set(zip(*result.nonzero(), strict=True)) <= set(zip(*counts.nonzero(), strict=True))


def test_dense_and_1d_input(vocabulary):
    weighting = TermWeighting(tf="raw", idf="log2")
    row = weighting.transform(np.array([2, 0, 0, 1]), vocabulary)
    assert row.shape == (1, 4)
    np.testing.assert_allclose(row.toarray(), [[2 * math.log2(4 / 3), 0, 0, 2]])


def test_input_not_modified(counts, vocabulary):
    before = counts.copy()
    TermWeighting(tf="log", idf="smooth").transform(counts, vocabulary)
    assert (counts != before).nnz == 0
    assert counts.dtype == before.dtype


def test_wrong_width_raises(vocabulary):
    with pytest.raises(ValueError, match="5 columns but the vocabulary has 4"):
        TermWeighting().transform(sp.csr_matrix((2, 5)), vocabulary)


def test_negative_counts_raise(vocabulary):
    with pytest.raises(ValueError, match="non-negative"):
        TermWeighting().transform(np.array([[1, -1, 0, 0]]), vocabulary)


def test_config_round_trip():
    for weighting in [
        TermWeighting(),
        TermWeighting(tf="log", idf="smooth", log_base=10),
        TermWeighting(tf="augmented", idf="log2", augmentation=0.0),
        TermWeighting.bm25(k1=0.9, b=0.4),
    ]:
        config = json.loads(json.dumps(weighting.get_config()))
        restored = TermWeighting.from_config(config)
        assert restored == weighting
        assert restored.get_config() == weighting.get_config()


def test_config_leaves_out_ignored_parameters():
    assert TermWeighting(tf="raw", idf="log2", augmentation=0.2, k1=3.0).get_config() == {
        "scheme": "smart",
        "tf": "raw",
        "idf": "log2",
    }
    assert TermWeighting(tf="log", idf="none", scheme="bm25", b=0.5).get_config() == {
        "scheme": "bm25",
        "k1": 1.2,
        "b": 0.5,
    }
    assert TermWeighting(tf="log", augmentation=0.1) == TermWeighting(tf="log")
    assert TermWeighting(tf="log") != TermWeighting(tf="log", log_base=10)


def test_from_config_unknown_key_raises():
    with pytest.raises(ValueError, match="'norm'"):
        TermWeighting.from_config({"scheme": "smart", "norm": "l2"})


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"tf": "lognormal"}, "'lognormal'"),
        ({"idf": "idf"}, "'idf'"),
        ({"idf": None}, "None"),
        ({"scheme": "okapi"}, "'okapi'"),
        ({"augmentation": 1.0}, "1.0"),
        ({"augmentation": -0.5}, "-0.5"),
        ({"log_base": 1}, "1"),
        ({"log_base": "e"}, "'e'"),
        ({"k1": -1.0}, "-1.0"),
        ({"b": 1.5}, "1.5"),
        ({"b": float("nan")}, "nan"),
    ],
)
def test_bad_parameters_name_the_value(kwargs, bad):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=rf"{name} must .*got {re.escape(bad)}"):
        TermWeighting(**kwargs)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("log-smooth", TermWeighting(tf="log", idf="smooth")),
        ("raw-natural", TermWeighting(tf="raw", idf="natural")),
        (" BM25 ", TermWeighting.bm25()),
        ("bm25:k1=0.9,b=0.4", TermWeighting.bm25(k1=0.9, b=0.4)),
        ("log-none:log_base=10", TermWeighting(tf="log", idf="none", log_base=10)),
        ("augmented-log2:augmentation=0.25", TermWeighting("augmented", "log2", augmentation=0.25)),
    ],
)
def test_weighting_specs_round_trip(spec: str, expected: TermWeighting) -> None:
    weighting = TermWeighting.from_spec(spec)
    assert weighting == expected
    assert TermWeighting.from_spec(weighting.to_spec()) == weighting


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("raw:natural", "unknown scheme 'raw'"),
        ("log-smooth:k1=2", "unknown option 'k1'"),
        ("bm25:k1=x", "k1 must be a number"),
        ("bm25:b=2", "b must be a real number in"),
        ("tfidf", "unknown scheme"),
    ],
)
def test_bad_weighting_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TermWeighting.from_spec(spec)
