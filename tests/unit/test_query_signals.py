"""Query signals (es_scm.fusion.signals): each signal by hand, from lists and from a model."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from es_scm.fusion.signals import (
    SHAPE_DEPTH,
    QuerySignals,
    agreement_signals,
    leg_signals,
    query_signals,
    term_signals,
    top_lists,
)
from es_scm.model import SoftCosineModel
from es_scm.similarity import TermSimilarityMatrix


def test_the_shape_of_a_short_list_by_hand():
    signals = leg_signals("scm", [0.8, 0.4, 0.2])
    p = np.array([0.8, 0.4, 0.2]) / 1.4
    padded = np.array([0.8, 0.4, 0.2] + [0.0] * (SHAPE_DEPTH - 3))
    assert signals["scm.top"] == 0.8
    assert signals["scm.log_top"] == pytest.approx(math.log(1.8))
    assert signals["scm.ratio2"] == pytest.approx(0.5)
    assert signals["scm.ratio10"] == 0.0  # padded with 0: only three documents match
    assert signals["scm.matches10"] == pytest.approx(0.3)
    assert signals["scm.entropy10"] == pytest.approx(-(p * np.log(p)).sum() / math.log(10))
    assert signals["scm.top_z"] == pytest.approx((0.8 - padded.mean()) / padded.std())


def test_a_flat_list_has_entropy_one_and_an_empty_one_zeros():
    flat = leg_signals("bm25", [2.0] * 25)
    assert flat["bm25.entropy10"] == pytest.approx(1.0)
    assert flat["bm25.ratio20"] == 1.0
    assert flat["bm25.top_z"] == 0.0
    empty = leg_signals("dense", [])
    assert set(empty.values()) == {0.0}


def test_agreement_by_hand():
    a = [f"d{i}" for i in range(20)]
    b = a[::-1]  # the same twenty, reversed
    signals = agreement_signals("bm25", a, "scm", b)
    assert signals["agree.bm25.scm.overlap20"] == 1.0
    assert signals["agree.bm25.scm.overlap10"] == 0.0  # d0..d9 against d19..d10
    assert signals["agree.bm25.scm.top1"] == 0.0
    assert signals["agree.bm25.scm.spearman20"] == pytest.approx(-1.0)
    same = agreement_signals("bm25", a, "scm", a)
    assert same["agree.bm25.scm.spearman20"] == pytest.approx(1.0)
    assert same["agree.bm25.scm.top1"] == 1.0


def test_lists_give_leg_and_agreement_signals_in_the_legs_order():
    lists = {"scm": {"a": 0.9, "b": 0.5}, "bm25": {"b": 7.0, "c": 3.0}}
    signals = query_signals(lists)
    assert signals.get("agree.bm25.scm.overlap10") == pytest.approx(0.1)  # b in both
    assert signals.get("agree.scm.bm25.overlap10") is None
    assert signals.get("bm25.top") == 7.0
    assert signals.get("query.terms") is None  # no query given
    assert signals.missing(["bm25.top", "scm.exact_share1"]) == ["scm.exact_share1"]


def test_signals_must_be_finite():
    with pytest.raises(ValueError, match="not finite"):
        QuerySignals({"bm25.top": math.nan})


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(0.01, 100.0), min_size=1, max_size=60),
    st.lists(st.floats(0.0, 1.0), min_size=0, max_size=60),
)
def test_the_candidates_give_the_lists_own_signals(listed, fractions):
    """A document outside a list scores at most its lowest (0 when the list, shorter than its
    depth, holds every match): the signals read from every candidate are the list's own."""
    ranked = sorted(listed, reverse=True)
    scores = {f"l{i}": s for i, s in enumerate(ranked)}
    full = len(ranked) < SHAPE_DEPTH  # a short list holds every match: the others score 0
    ceiling = 0.0 if full else ranked[-1]
    others = {f"o{i}": f * ceiling for i, f in enumerate(fractions)}
    candidates = [*others, *scores]
    top = top_lists({"bm25": {**others, **scores}}, candidates)["bm25"]
    from_candidates = leg_signals("bm25", [s for _, s in top])
    assert from_candidates == leg_signals("bm25", ranked)


# -- signals of the query and the SCM's documents -------------------------------------------------


@pytest.fixture(scope="module")
def model() -> SoftCosineModel:
    texts = ["cats chase mice", "dogs chase cats", "mice eat cheese", "cheese and wine"]
    pairs = [("cats", "dogs", 0.5), ("mice", "cheese", 0.3)]

    def similarity(terms):
        return TermSimilarityMatrix.from_pairs(terms, pairs)

    return SoftCosineModel.build(texts, similarity=similarity)


def test_the_query_signals_by_hand(model):
    query = model.query_vector("cats mice zebra")
    idf = model.query_weighting.global_weights(model.vocabulary)
    terms = model.terms
    x = query.weights.toarray().ravel()
    s = model.similarity_matrix.matrix.toarray()
    expansion = s.T @ x
    signals = QuerySignals(term_signals(query, idf)).values
    assert signals["query.terms"] == 2.0  # zebra is not a term
    own = [terms.index("cats"), terms.index("mice")]
    assert signals["query.idf_max"] == pytest.approx(idf[own].max() / idf.max())
    assert signals["query.expansion_share"] == pytest.approx(
        1 - expansion[own].sum() / expansion.sum()
    )
    assert signals["query.soft_norm_ratio"] == pytest.approx(math.log(x @ s @ x / (x @ x)))
    assert "scm.exact_share1" not in signals  # no document given


def test_the_exact_share_of_the_scm_score_by_hand(model):
    query = model.query_vector("cats mice")
    idf = model.query_weighting.global_weights(model.vocabulary)
    s = model.similarity_matrix.matrix.toarray()
    x = query.weights.toarray().ravel()
    documents = model.similarity_matrix.normalize(
        sp.csr_array(model.vectorize_many(["dogs chase cats", "mice eat cheese"]))
    )
    stored = [(documents[[i]].indices, documents[[i]].data) for i in range(2)]
    dense = documents.toarray()
    shares = [(x @ y) / (x @ s @ y) for y in dense]
    signals = term_signals(query, idf, stored)
    assert signals["scm.exact_share1"] == pytest.approx(shares[0])
    assert signals["scm.exact_share10"] == pytest.approx(np.mean(shares))
    assert 0.0 < shares[0] < 1.0  # cats matches exactly, dogs through S
