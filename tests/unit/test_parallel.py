"""Tests for es_scm.model.parallel: counting in worker processes gives the in-process result."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from es_scm.model import SoftCosineModel, Tokenizer, Vocabulary
from es_scm.model.parallel import MIN_PARALLEL_DOCUMENTS, count_texts, resolve_n_jobs
from es_scm.model.text import TermCounts
from es_scm.similarity import WordEmbeddings

WORDS = "saint paul tribune post willmar west caesar antony dead killed the capitol of naïve café"
WORDS = WORDS.split()


def corpus(n: int) -> list[str]:
    """Deterministic texts of 1 to 9 words, many ties in df, some stop words and Unicode."""
    rng = np.random.default_rng(7)
    return [
        " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), rng.integers(1, 10))).title()
        for _ in range(n)
    ]


def assert_same_counts(got: TermCounts, expected: TermCounts) -> None:
    assert got.num_documents == expected.num_documents
    assert dict(got.document_counts) == dict(expected.document_counts)
    assert dict(got.term_counts) == dict(expected.term_counts)


@pytest.mark.parametrize("chunk_size", [1, 3, 50])
def test_workers_count_as_in_process(chunk_size):
    texts = corpus(400)
    tokenizer = Tokenizer()
    serial = TermCounts().count(tokenizer.tokenize_many(texts))
    assert_same_counts(count_texts(texts, tokenizer, n_jobs=2, chunk_size=chunk_size), serial)
    assert_same_counts(count_texts(texts, tokenizer, n_jobs=1), serial)


@pytest.mark.parametrize("options", [{}, {"min_df": 2}, {"max_df": 0.5, "max_terms": 5}])
def test_vocabulary_from_workers_is_identical(options):
    texts = corpus(300)
    tokenizer = Tokenizer(stop_words=None)
    serial = Vocabulary(**options).fit(tokenizer.tokenize_many(texts))
    parallel = Vocabulary(**options).fit_counts(
        count_texts(texts, tokenizer, n_jobs=3, chunk_size=7)
    )
    assert parallel.terms == serial.terms
    assert parallel.document_frequencies.tolist() == serial.document_frequencies.tolist()
    assert parallel.to_dict() == serial.to_dict()


def test_reads_a_generator_once():
    texts = corpus(100)
    reads = []

    def stream():
        for index, text in enumerate(texts):
            reads.append(index)
            yield text

    counts = count_texts(stream(), Tokenizer(), n_jobs=2, chunk_size=8)
    assert reads == list(range(100))
    assert_same_counts(counts, TermCounts().count(Tokenizer().tokenize_many(texts)))


def test_unpicklable_tokenizer_counts_in_process(caplog):
    tokenizer = Tokenizer(tokenizer=lambda text: text.split())
    texts = corpus(50)
    with caplog.at_level(logging.INFO, logger="es_scm.model.parallel"):
        counts = count_texts(texts, tokenizer, n_jobs=2, chunk_size=5)
    assert "cannot be pickled" in caplog.text
    assert_same_counts(counts, TermCounts().count(tokenizer.tokenize_many(texts)))


def test_small_corpus_counts_in_process_by_default(caplog):
    texts = corpus(MIN_PARALLEL_DOCUMENTS // 100)
    with caplog.at_level(logging.INFO, logger="es_scm.model.parallel"):
        counts = count_texts(texts, Tokenizer())
    assert "worker processes" not in caplog.text
    assert counts.num_documents == len(texts)


def test_worker_error_is_raised_in_the_parent():
    texts = [*corpus(30), 42, *corpus(30)]
    with pytest.raises(TypeError, match="text must be a str"):
        count_texts(texts, Tokenizer(), n_jobs=2, chunk_size=4)


def test_empty_corpus():
    assert count_texts([], Tokenizer(), n_jobs=2).num_documents == 0
    with pytest.raises(ValueError, match="no documents"):
        Vocabulary().fit_counts(count_texts(iter([]), Tokenizer(), n_jobs=2))


def test_build_with_workers_gives_the_same_model():
    texts = corpus(200)
    embeddings = WordEmbeddings.from_array(
        WORDS, np.random.default_rng(3).standard_normal((len(WORDS), 8))
    )
    serial = SoftCosineModel.build(texts, embeddings, n_jobs=1)
    parallel = SoftCosineModel.build(iter(texts), embeddings, n_jobs=2)
    assert parallel.model_id == serial.model_id


def test_resolve_n_jobs():
    cpus = resolve_n_jobs(None)
    assert cpus >= 1
    assert resolve_n_jobs(-1) == cpus
    assert resolve_n_jobs(-cpus - 5) == 1
    assert resolve_n_jobs(3) == 3
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n_jobs"):
            resolve_n_jobs(bad)
    with pytest.raises(ValueError, match="chunk_size"):
        count_texts(["a"], Tokenizer(), chunk_size=0)
