"""Sources of S behind one protocol: adding one is one class, registered; every kind is read by
the registry; the word vectors' fast path gives the S that their ``most_similar`` would."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from es_scm.model import SoftCosineModel
from es_scm.model.similarity_source import KINDS, similarity_source
from es_scm.options import SimilarityOptions, SourceOptions
from es_scm.similarity import WordEmbeddings
from es_scm.similarity.source import SOURCES, SimilaritySource, register

TEXTS = ["car automobile", "truck road", "automobile truck car", "road"]


class Pairs(SimilaritySource):
    """A test-only source: similarities listed by hand, as ``{(a, b): similarity}``."""

    kind = "pairs"
    defaults = SourceOptions(threshold=0.3, exponent=2.0)
    accepts = "a mapping of (term, term) pairs to similarities"

    def __init__(self, table: Mapping[tuple[str, str], float]) -> None:
        self.table = dict(table)

    @classmethod
    def recognize(cls, value: Any) -> Pairs | None:
        if isinstance(value, Pairs):
            return value
        if isinstance(value, Mapping) and all(isinstance(k, tuple) for k in value):
            return cls(value)
        return None

    def describe(self) -> dict[str, Any]:
        return {"pairs": len(self.table)}

    def most_similar(self, term: str, topn: int = 10) -> Sequence[tuple[str, float]]:
        found = [(b if a == term else a, s) for (a, b), s in self.table.items() if term in (a, b)]
        return sorted(found, key=lambda pair: -pair[1])[:topn]


TABLE = {("car", "automobile"): 0.9, ("car", "truck"): 0.6, ("automobile", "truck"): 0.5}
TABLE[("road", "car")] = 0.2  # not above the threshold 0.3: not in S


@pytest.fixture
def pairs_registered() -> Iterator[None]:
    register(Pairs)
    try:
        yield
    finally:
        SOURCES.remove(Pairs)


def off_diagonal(model: SoftCosineModel) -> dict[tuple[str, str], float]:
    matrix = model.similarity_matrix
    dense = matrix.matrix.toarray()
    terms = matrix.terms
    return {
        (terms[i], terms[j]): float(dense[i, j])
        for i, j in zip(*np.nonzero(dense), strict=True)
        if i != j
    }


def test_a_new_source_is_one_registered_class(pairs_registered):
    model = SoftCosineModel.build(TEXTS, TABLE)  # read by the registry: Pairs.recognize
    # by hand: the pairs above the threshold 0.3, squared (the kind's defaults), both ways
    expected = {("car", "automobile"): 0.81, ("car", "truck"): 0.36, ("automobile", "truck"): 0.25}
    expected |= {(b, a): s for (a, b), s in expected.items()}
    found = off_diagonal(model)
    assert found.keys() == expected.keys()
    for pair, value in expected.items():
        assert found[pair] == pytest.approx(value, rel=1e-6)
    np.testing.assert_array_equal(model.similarity_matrix.matrix.diagonal(), 1.0)
    info = model.similarity_matrix.build_info
    assert info["source"] == "pairs"
    assert info["pairs"] == {"pairs": 4}
    assert (info["threshold"], info["exponent"]) == (0.3, 2.0)


def test_a_new_source_takes_the_models_options_and_combines(pairs_registered):
    model = SoftCosineModel.build(TEXTS, Pairs(TABLE), threshold=0.55, exponent=1.0)
    assert off_diagonal(model) == pytest.approx(
        {
            ("car", "automobile"): 0.9,
            ("automobile", "car"): 0.9,
            ("car", "truck"): 0.6,
            ("truck", "car"): 0.6,
        }
    )
    other = Pairs({("road", "truck"): 0.8})
    combined = SoftCosineModel.build(TEXTS, [(0.5, TABLE, {"threshold": 0.55}), (0.5, other)])
    # by hand: half of each part's off-diagonal values (0.9², 0.6²; and 0.8²)
    assert off_diagonal(combined) == pytest.approx(
        {
            ("car", "automobile"): 0.405,
            ("automobile", "car"): 0.405,
            ("car", "truck"): 0.18,
            ("truck", "car"): 0.18,
            ("road", "truck"): 0.32,
            ("truck", "road"): 0.32,
        }
    )


def test_an_unregistered_value_is_refused_naming_what_each_kind_accepts():
    with pytest.raises(ValueError, match="embeddings must be WordEmbeddings or gensim") as error:
        similarity_source(TABLE)
    for kind in KINDS:
        assert kind.accepts in str(error.value)


def test_word_vectors_fast_path_equals_their_most_similar():
    """WordEmbeddings' blocked search and the protocol's most_similar path give the same S."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(30)]
    embeddings = WordEmbeddings(words, rng.normal(size=(30, 4)))
    options = SimilarityOptions(
        nonzero_limit=5,
        threshold=0.2,
        exponent=2.0,
        symmetric=True,
        dominant=False,
        neighbors="vocabulary",
        column_order="id",
    )
    kwargs = {"document_frequencies": None, "dtype": np.dtype(np.float32), "batch_size": None}
    fast, _ = embeddings.similarity_matrix(words, options, **kwargs)
    slow, _ = SimilaritySource.similarity_matrix(embeddings, words, options, **kwargs)
    np.testing.assert_allclose(fast.toarray(), slow.toarray(), rtol=1e-5, atol=1e-7)
    assert (fast.toarray() != 0).sum() == (slow.toarray() != 0).sum()
