"""Tests for es_scm.model.text.Vocabulary."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp

from es_scm.model.text import NotFittedError, Vocabulary

# df: a=4, b=3, c=2, d=2, e=1 (N=4); cf: a=5, b=3, c=2, d=3, e=1
DOCS = [
    ["a", "b", "c", "a"],
    ["a", "b", "d", "d"],
    ["a", "b", "c", "e"],
    ["a", "d"],
]


def test_ids_sorted_by_descending_df_then_term():
    vocabulary = Vocabulary().fit(DOCS)
    assert vocabulary.terms == ["a", "b", "c", "d", "e"]
    assert vocabulary.term_to_id == {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4}
    assert vocabulary.document_frequencies.dtype == np.int64
    assert vocabulary.document_frequencies.tolist() == [4, 3, 2, 2, 1]
    assert vocabulary.collection_frequencies.tolist() == [5, 3, 2, 3, 1]
    assert vocabulary.num_documents == 4
    assert vocabulary.num_tokens == 14
    assert vocabulary.average_document_length == pytest.approx(3.5)
    assert len(vocabulary) == 5
    assert "c" in vocabulary
    assert "z" not in vocabulary
    assert list(vocabulary) == vocabulary.terms


def test_ids_do_not_depend_on_document_order():
    forward = Vocabulary().fit(DOCS)
    backward = Vocabulary().fit([list(reversed(doc)) for doc in reversed(DOCS)])
    assert forward.terms == backward.terms
    assert forward == backward


def test_streams_a_generator_once():
    reads = []

    def documents():
        for index, document in enumerate(DOCS):
            reads.append(index)
            yield document

    vocabulary = Vocabulary().fit(documents())
    assert reads == [0, 1, 2, 3]
    assert vocabulary.num_documents == 4


def test_min_df_count_and_fraction():
    assert Vocabulary(min_df=2).fit(DOCS).terms == ["a", "b", "c", "d"]
    # 0.6 * 4 = 2.4 -> at least 3 documents
    assert Vocabulary(min_df=0.6).fit(DOCS).terms == ["a", "b"]


def test_max_df_count_and_fraction():
    assert Vocabulary(max_df=3).fit(DOCS).terms == ["b", "c", "d", "e"]
    # 0.5 * 4 = 2 -> at most 2 documents
    assert Vocabulary(max_df=0.5).fit(DOCS).terms == ["c", "d", "e"]
    # int 1 is a count (one document), float 1.0 is every document
    assert Vocabulary(max_df=1).fit(DOCS).terms == ["e"]
    assert len(Vocabulary(max_df=1.0).fit(DOCS)) == 5


def test_max_terms_keeps_most_frequent_with_term_tie_break():
    vocabulary = Vocabulary(max_terms=3).fit(DOCS)
    assert vocabulary.terms == ["a", "b", "c"]  # c and d tie on df=2; c < d
    assert vocabulary.num_tokens == 5 + 3 + 2


def test_pruned_ids_are_contiguous_and_stats_follow():
    vocabulary = Vocabulary(min_df=2, max_df=3).fit(DOCS)
    assert vocabulary.terms == ["b", "c", "d"]
    assert vocabulary.term_to_id == {"b": 0, "c": 1, "d": 2}
    assert vocabulary.document_frequencies.tolist() == [3, 2, 2]
    assert vocabulary.num_documents == 4
    assert vocabulary.num_tokens == 3 + 2 + 3


def test_min_df_above_max_df_raises():
    with pytest.raises(ValueError, match="min_df=3"):
        Vocabulary(min_df=3, max_df=2).fit(DOCS)


def test_nothing_left_raises():
    with pytest.raises(ValueError, match="no terms remain"):
        Vocabulary(min_df=3).fit([["a"], ["a"], ["b"]])
    with pytest.raises(ValueError, match="no documents"):
        Vocabulary().fit([])
    with pytest.raises(ValueError, match="no terms remain"):
        Vocabulary().fit([[], []])


def test_unicode_terms():
    vocabulary = Vocabulary().fit([["東京", "café"], ["café"]])
    assert vocabulary.terms == ["café", "東京"]


def test_doc2bow():
    vocabulary = Vocabulary().fit(DOCS)
    assert vocabulary.doc2bow(["e", "a", "zzz", "a", "c"]) == [(0, 2), (2, 1), (4, 1)]
    assert vocabulary.doc2bow([]) == []


def test_document_must_be_tokens_not_str():
    with pytest.raises(TypeError, match="tokenize it first"):
        Vocabulary().fit(["a b c"])


def test_to_counts():
    vocabulary = Vocabulary().fit(DOCS)
    counts = vocabulary.to_counts(iter([["d", "a", "d"], [], ["unknown"], ["e"]]))
    assert sp.issparse(counts)
    assert counts.format == "csr"
    assert counts.shape == (4, 5)
    expected = np.array(
        [
            [1, 0, 0, 2, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 0, 1],
        ]
    )
    np.testing.assert_array_equal(counts.toarray(), expected)
    assert counts.has_sorted_indices
    assert counts.nnz == 3


def test_to_counts_of_training_corpus_matches_stats():
    vocabulary = Vocabulary().fit(DOCS)
    counts = vocabulary.to_counts(DOCS)
    np.testing.assert_array_equal((counts > 0).sum(axis=0).A1, vocabulary.document_frequencies)
    np.testing.assert_array_equal(counts.sum(axis=0).A1, vocabulary.collection_frequencies)


def test_save_load_round_trip(tmp_path):
    vocabulary = Vocabulary(min_df=2, max_df=0.9, max_terms=10).fit([*DOCS, ["東京", "東京"]])
    path = tmp_path / "vocabulary.json"
    vocabulary.save(path)
    json.loads(path.read_text(encoding="utf-8"))  # plain JSON
    loaded = Vocabulary.load(path)
    assert loaded == vocabulary
    assert loaded.terms == vocabulary.terms
    assert loaded.term_to_id == vocabulary.term_to_id
    np.testing.assert_array_equal(loaded.document_frequencies, vocabulary.document_frequencies)
    assert loaded.document_frequencies.dtype == np.int64
    assert loaded.num_documents == vocabulary.num_documents == 5
    assert loaded.num_tokens == vocabulary.num_tokens
    assert loaded.get_config() == {"min_df": 2, "max_df": 0.9, "max_terms": 10}


def test_load_rejects_other_json(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"format": "something-else"}', encoding="utf-8")
    with pytest.raises(ValueError, match="not an es-scm vocabulary"):
        Vocabulary.load(path)


def test_unfitted_use_raises():
    vocabulary = Vocabulary()
    with pytest.raises(NotFittedError, match="fit"):
        len(vocabulary)
    with pytest.raises(NotFittedError):
        vocabulary.doc2bow(["a"])


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"min_df": -1}, "-1"),
        ({"min_df": 1.5}, "1.5"),
        ({"min_df": True}, "True"),
        ({"max_df": -0.1}, "-0.1"),
        ({"max_df": "all"}, "'all'"),
        ({"max_terms": 0}, "0"),
        ({"max_terms": 2.0}, "2.0"),
    ],
)
def test_bad_parameters_name_the_value(kwargs, bad):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=rf"{name}.*{re.escape(bad)}"):
        Vocabulary(**kwargs)
