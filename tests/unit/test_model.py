"""Tests for es_scm.model.SoftCosineModel; expected scores are worked out by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from es_scm.model import SoftCosineModel, TokenCounts
from es_scm.model.text import TermWeighting, Tokenizer, Vocabulary
from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings

NEWSPAPERS = ["saint paul tribune", "saint paul post", "willmar west tribune"]
RAW = TermWeighting(tf="raw", idf="none")

ROMANS = ["Caesar dead", "Caesar killed", "the Capitol", "Antony dead"]
# cos(dead, killed) = 0.8, so s = 0.8² = 0.64 with exponent 2; every other pair has cos <= 0
EMBEDDINGS = WordEmbeddings.from_array(
    ["dead", "killed", "caesar", "capitol", "antony"],
    np.array(
        [
            [1.0, 0.0, 0.0, 0.0],
            [0.8, 0.6, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, -1.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ]
    ),
)


def build_raw(texts, **kwargs):
    kwargs.setdefault("tokenizer", Tokenizer(stop_words=None))
    kwargs.setdefault("document_weighting", RAW)
    kwargs.setdefault("query_weighting", RAW)
    return SoftCosineModel.build(texts, **kwargs)


def romans(**kwargs):
    shape = {"threshold": 0.0, "exponent": 2.0}  # the hand computations below square cosines
    return build_raw(ROMANS, embeddings=EMBEDDINGS, tokenizer=Tokenizer(), **{**shape, **kwargs})


# -- identity S: the SCM is the cosine -------------------------------------------------------------


def test_identity_similarity_is_cosine():
    model = build_raw(NEWSPAPERS)
    assert model.similarity_matrix.matrix.nnz == len(model.vocabulary) == 6
    # two shared terms, three terms each
    assert model.similarity("saint paul tribune", "saint paul post") == pytest.approx(2 / 3)
    # q = 2·saint + paul against saint + paul + post: 3 / (√5 · √3)
    assert model.similarity("saint saint paul", "saint paul post") == pytest.approx(
        3 / math.sqrt(15)
    )
    assert model.similarity("willmar west", "saint paul") == 0.0


def test_identity_with_default_weighting_matches_numpy_cosine():
    model = SoftCosineModel.build(NEWSPAPERS, tokenizer=Tokenizer(stop_words=None))
    x = model.vectorize("saint paul tribune").toarray().ravel()
    y = model.vectorize("saint paul post", role="document").toarray().ravel()
    expected = x @ y / (np.linalg.norm(x) * np.linalg.norm(y))
    # default (log-smooth): (1 + ln tf) · ln(1 + N/df); every tf is 1; paul and saint have
    # df 2, tribune 2, post 1
    smooth = {2: math.log(1 + 3 / 2), 1: math.log(1 + 3)}
    hand = (
        2
        * smooth[2] ** 2
        / (math.sqrt(3 * smooth[2] ** 2) * math.sqrt(2 * smooth[2] ** 2 + smooth[1] ** 2))
    )
    assert model.similarity("saint paul tribune", "saint paul post") == pytest.approx(hand)
    assert hand == pytest.approx(expected)


def test_unknown_text_gives_zero_not_nan():
    model = build_raw(NEWSPAPERS)
    assert model.similarity("nothing known", "saint paul") == 0.0
    assert model.vectorize("nothing known").nnz == 0


# -- embeddings ------------------------------------------------------------------------------------


def test_embedding_similarity_by_hand():
    model = romans()
    terms = model.terms
    S = model.similarity_matrix.matrix.toarray()
    assert S[terms.index("dead"), terms.index("killed")] == pytest.approx(0.64)
    assert S[terms.index("killed"), terms.index("dead")] == pytest.approx(0.64)
    np.testing.assert_array_equal(np.diag(S), 1.0)
    assert np.count_nonzero(S) == len(terms) + 2
    # x = caesar + dead, y = caesar + killed: (1 + 0.64) / (√2 · √2)
    assert model.similarity("Caesar dead", "Caesar killed") == pytest.approx(0.82, abs=1e-6)
    # without S the two would only share caesar: 1 / 2
    plain = build_raw(ROMANS, tokenizer=Tokenizer())
    assert plain.similarity("Caesar dead", "Caesar killed") == pytest.approx(0.5)
    assert model.similarity("Capitol", "Caesar killed") == 0.0


def test_embedding_options_change_S():
    cube = romans(exponent=3.0)
    S = cube.similarity_matrix.matrix.toarray()
    terms = cube.terms
    assert S[terms.index("dead"), terms.index("killed")] == pytest.approx(0.512)
    assert romans(threshold=0.9).similarity_matrix.matrix.nnz == len(terms)
    assert cube.similarity("dead", "killed") == pytest.approx(0.512, abs=1e-6)


def test_gensim_neighbour_mode_agrees_here():
    assert romans(neighbors="vocabulary").model_id == romans(neighbors="terms").model_id


def test_thesaurus_callable():
    model = build_raw(
        ROMANS,
        tokenizer=Tokenizer(),
        similarity=lambda terms: TermSimilarityMatrix.from_pairs(terms, [("dead", "killed", 0.5)]),
    )
    assert model.similarity("Caesar dead", "Caesar killed") == pytest.approx((1 + 0.5) / 2)


def test_similarity_over_a_superset_is_restricted():
    superset = ["zebra", "killed", "dead", "caesar", "capitol", "antony"]
    thesaurus = TermSimilarityMatrix.from_pairs(
        superset, [("dead", "killed", 0.5), ("zebra", "dead", 0.9)]
    )
    model = build_raw(ROMANS, tokenizer=Tokenizer(), similarity=thesaurus)
    assert model.similarity_matrix.terms == model.terms
    assert "zebra" not in model.similarity_matrix.terms
    assert model.similarity("dead", "killed") == pytest.approx(0.5)


def test_levenshtein_alone():
    model = build_raw(["caesar caesars", "antony"], levenshtein=True)
    terms = model.terms
    S = model.similarity_matrix.matrix.toarray()
    assert S[terms.index("caesar"), terms.index("caesars")] > 0
    assert S[terms.index("caesar"), terms.index("antony")] == 0


def test_similarity_and_embeddings_are_exclusive():
    with pytest.raises(ValueError, match="either similarity or embeddings"):
        build_raw(ROMANS, embeddings=EMBEDDINGS, similarity=lambda terms: None)


# -- vectors ---------------------------------------------------------------------------------------


def test_vectorize_shapes_and_roles():
    model = build_raw(NEWSPAPERS, document_weighting=TermWeighting(tf="raw", idf="log2"))
    query = model.vectorize("saint saint paul")
    assert sp.issparse(query)
    assert query.format == "csr"
    assert query.shape == (1, len(model.terms))
    assert query.dtype == np.float64
    ids = model.vocabulary.term_to_id
    assert query[0, ids["saint"]] == 2.0
    document = model.vectorize("saint saint paul", role="document")
    assert document[0, ids["saint"]] == pytest.approx(2 * math.log2(3 / 2))
    many = model.vectorize_many(iter(NEWSPAPERS), role="document")
    assert many.shape == (3, len(model.terms))
    np.testing.assert_allclose(
        many[1].toarray(), model.vectorize(NEWSPAPERS[1], "document").toarray()
    )


def test_bad_role_raises():
    model = build_raw(NEWSPAPERS)
    with pytest.raises(ValueError, match="'queries'"):
        model.vectorize("saint", role="queries")


def test_build_streams_a_one_shot_iterator_once():
    reads = []

    def texts():
        for text in NEWSPAPERS:
            reads.append(text)
            yield text

    model = build_raw(texts())
    assert reads == NEWSPAPERS
    assert model.vocabulary.num_documents == 3
    assert model.model_id == build_raw(NEWSPAPERS).model_id


# -- persistence and model_id ----------------------------------------------------------------------


def test_save_load_round_trip(tmp_path):
    model = romans(document_weighting=TermWeighting.bm25(), query_weighting=TermWeighting("log"))
    path = model.save(tmp_path / "model")
    assert {p.name for p in path.iterdir()} == {"model.json", "vocabulary.json", "similarity.npz"}
    assert json.loads((path / "model.json").read_text(encoding="utf-8"))["model_id"] == (
        model.model_id
    )
    loaded = SoftCosineModel.load(path)
    assert loaded.model_id == model.model_id
    assert loaded.terms == model.terms
    assert loaded.document_weighting == model.document_weighting
    assert loaded.query_weighting == model.query_weighting
    for a, b in [("Caesar dead", "Caesar killed"), ("Antony dead", "the Capitol")]:
        assert loaded.similarity(a, b) == model.similarity(a, b)
    np.testing.assert_array_equal(
        loaded.vectorize("Caesar killed", "document").toarray(),
        model.vectorize("Caesar killed", "document").toarray(),
    )


def test_load_detects_changed_files(tmp_path):
    path = romans().save(tmp_path / "model")
    config = json.loads((path / "model.json").read_text(encoding="utf-8"))
    config["query_weighting"] = {"scheme": "smart", "tf": "binary", "idf": "none"}
    (path / "model.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ValueError, match="model_id"):
        SoftCosineModel.load(path)


def test_statistics_unused_by_the_weighting_do_not_change_the_id(tmp_path):
    model = romans()  # raw tf, no idf: N and df cannot affect a score
    path = model.save(tmp_path / "model")
    vocabulary = json.loads((path / "vocabulary.json").read_text(encoding="utf-8"))
    vocabulary["num_documents"] += 1
    (path / "vocabulary.json").write_text(json.dumps(vocabulary), encoding="utf-8")
    assert SoftCosineModel.load(path).model_id == model.model_id


def split_on_spaces(text):
    return text.split(" ")


def test_callable_tokenizer_must_be_passed_again(tmp_path):
    tokenizer = Tokenizer(stop_words=None, tokenizer=split_on_spaces)
    model = build_raw(NEWSPAPERS, tokenizer=tokenizer)
    path = model.save(tmp_path / "model")
    with pytest.raises(ValueError, match="split_on_spaces"):
        SoftCosineModel.load(path)
    loaded = SoftCosineModel.load(path, tokenizer=split_on_spaces)
    assert loaded.model_id == model.model_id


def test_model_id_is_stable():
    first = romans()
    assert first.model_id == romans().model_id
    assert len(first.model_id) == 64
    int(first.model_id, 16)
    # parameters that cannot change a score do not change the id
    assert romans(query_weighting=TermWeighting("raw", "none", augmentation=0.1)).model_id == (
        first.model_id
    )
    assert romans(min_df=0).model_id == first.model_id


@pytest.mark.parametrize(
    "change",
    [
        {"document_weighting": TermWeighting(tf="log", idf="none")},
        {"query_weighting": TermWeighting(tf="raw", idf="smooth")},
        {"document_weighting": TermWeighting.bm25()},
        {"exponent": 3.0},
        {"threshold": 0.9},
        {"embeddings": None},
        {"max_terms": 3},
        {"tokenizer": Tokenizer(min_length=6)},
        {"tokenizer": Tokenizer(stop_words=["caesar"])},
    ],
)
def test_model_id_changes_with_what_affects_scores(change):
    kwargs = {"embeddings": EMBEDDINGS, "tokenizer": Tokenizer(), **change}
    assert build_raw(ROMANS, **kwargs).model_id != romans().model_id


def test_model_id_follows_weighting_parameters():
    bm25 = romans(document_weighting=TermWeighting.bm25())
    assert romans(document_weighting=TermWeighting.bm25(k1=2.0)).model_id != bm25.model_id
    assert romans(document_weighting=TermWeighting.bm25(b=0.5)).model_id != bm25.model_id
    # N matters once a weighting uses idf
    idf = TermWeighting("raw", "natural")
    more = [*ROMANS, "Caesar dead"]
    assert (
        romans(query_weighting=idf).model_id
        != build_raw(
            more, embeddings=EMBEDDINGS, tokenizer=Tokenizer(), query_weighting=idf
        ).model_id
    )


def test_model_id_changes_with_S_values(tmp_path):
    model = romans()
    S = model.similarity_matrix
    changed = S.matrix.copy()
    changed.data[changed.data < 1] = 0.5
    other = SoftCosineModel(
        model.tokenizer,
        model.vocabulary,
        TermSimilarityMatrix(changed, S.terms),
        model.document_weighting,
        model.query_weighting,
    )
    assert other.model_id != model.model_id
    same = SoftCosineModel(
        model.tokenizer,
        model.vocabulary,
        TermSimilarityMatrix(S.matrix.copy(), S.terms),
        model.document_weighting,
        model.query_weighting,
    )
    assert same.model_id == model.model_id


def test_constructor_checks_terms():
    model = romans()
    with pytest.raises(ValueError, match="vocabulary's terms"):
        SoftCosineModel(
            model.tokenizer,
            model.vocabulary,
            TermSimilarityMatrix.identity(list(reversed(model.terms))),
        )


def test_identity_scm_equals_cosine_on_a_random_corpus():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    texts = [" ".join(rng.choice(words, size=rng.integers(1, 12))) for _ in range(40)]
    model = SoftCosineModel.build(texts, tokenizer=Tokenizer(stop_words=None))
    queries = model.vectorize_many(texts[:10], role="query").toarray()
    documents = model.vectorize_many(texts[10:20], role="document").toarray()
    for i, x in enumerate(queries):
        for j, y in enumerate(documents):
            norms = np.linalg.norm(x) * np.linalg.norm(y)
            expected = x @ y / norms if norms else 0.0
            assert model.similarity(texts[i], texts[10 + j]) == pytest.approx(expected, abs=1e-12)


WORDS = ["caesar", "Dead", "killed", "the", "of", "a", "x", "naïve", "café", "2018", "_", "é"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join), max_size=8))
@pytest.mark.parametrize(
    "tokenizer",
    [
        Tokenizer(),
        Tokenizer(min_length=2),
        Tokenizer(stop_words=None),
        Tokenizer(tokenizer=str.split),
    ],
    ids=["default", "min-length", "no-stop-words", "callable"],
)
def test_counts_equal_tokenize_then_to_counts(tokenizer, texts) -> None:
    # The vocabulary holds stop words and short terms too, which the fast path must not count,
    # and lacks two words, which are counted as unknown.
    vocabulary = Vocabulary().fit([[w.lower() for w in WORDS if w not in ("killed", "café")]])
    model = SoftCosineModel(tokenizer, vocabulary, TermSimilarityMatrix.identity(vocabulary.terms))
    tokens = TokenCounts()
    fast = model.counts(texts, tokens)
    slow = model.vocabulary.to_counts(tokenizer.tokenize_many(texts))
    assert fast.shape == slow.shape
    assert (fast != slow).nnz == 0
    assert fast.has_sorted_indices
    terms = [term for text in texts for term in tokenizer.tokenize(text)]
    assert tokens.tokens == len(terms)
    assert tokens.unknown == sum(term not in model.vocabulary for term in terms)


# -- how S was built, the weighting spec, the defaults ------------------------------------------


def test_model_json_records_how_S_was_built(tmp_path):
    model = romans(nonzero_limit=3, threshold=0.1, exponent=4.0, dominant=True)
    saved = json.loads((model.save(tmp_path / "m") / "model.json").read_text(encoding="utf-8"))
    assert saved["similarity"] == {
        "source": "embeddings",
        "embeddings": {"name": "array", "words": 5, "dim": 4},
        "terms_with_vectors": 5,
        "nonzero_limit": 3,
        "threshold": 0.1,
        "exponent": 4.0,
        "symmetric": True,
        "dominant": True,
        "neighbors": "terms",
        "column_order": "rarest",
    }
    assert SoftCosineModel.load(tmp_path / "m").similarity_matrix.build_info == saved["similarity"]


def test_build_info_of_a_combination_names_its_parts():
    pytest.importorskip("rapidfuzz")
    info = romans(levenshtein=0.3).similarity_matrix.build_info
    assert info["source"] == "combination"
    assert [(part["weight"], part["source"]) for part in info["parts"]] == [
        (pytest.approx(0.7), "embeddings"),
        (pytest.approx(0.3), "levenshtein"),
    ]


def test_weightings_are_accepted_as_specs():
    by_spec = romans(document_weighting="bm25:k1=0.9,b=0.4", query_weighting="binary-none")
    assert by_spec.document_weighting == TermWeighting.bm25(k1=0.9, b=0.4)
    assert by_spec.query_weighting == TermWeighting(tf="binary", idf="none")
    assert by_spec.describe()["document_weighting"] == "bm25:k1=0.9,b=0.4"
    with pytest.raises(ValueError, match="bad weighting 'fancy-idf'"):
        romans(document_weighting="fancy-idf")


def test_default_weighting_is_the_same_at_every_layer():
    from es_scm.options.defaults import DEFAULT_WEIGHTING

    model = SoftCosineModel.build(ROMANS)
    assert model.document_weighting == TermWeighting.from_spec(DEFAULT_WEIGHTING)
    assert model.query_weighting == model.document_weighting
    bm25 = SoftCosineModel.build(ROMANS, document_weighting="bm25")
    assert bm25.query_weighting == TermWeighting.from_spec(DEFAULT_WEIGHTING)


def test_unknown_build_options_are_refused():
    with pytest.raises(TypeError, match="nonzero_limt"):
        romans(nonzero_limt=5)
    with pytest.raises(ValueError, match="neighbors must be one of"):
        romans(neighbors="everything")


def test_brute_force_search_equals_the_scm_of_every_document():
    from es_scm.model import BruteForceSearch

    model = romans(document_weighting="log-smooth")
    ids = [f"d{i}" for i in range(len(ROMANS))]
    brute = BruteForceSearch(model, ids, ROMANS)
    documents = model.vectorize_many(ROMANS, role="document")
    for query in ("Caesar killed", "dead Antony", "Capitol", "nothing known"):
        x = model.vectorize(query, role="query")
        expected = np.atleast_1d(
            model.similarity_matrix.inner_product(x, documents, normalized=(True, True))
        )
        np.testing.assert_allclose(brute.scores(query), expected, rtol=1e-12, atol=1e-15)
        scanned = brute.scores(query, every_document=True)
        np.testing.assert_allclose(scanned, expected, rtol=1e-12, atol=1e-15)
        ranked = brute.search(query, k=2)
        positive = [(ids[i], expected[i]) for i in np.argsort(-expected, kind="stable")]
        assert [i for i, _ in ranked] == [i for i, s in positive if s > 0][:2]
        assert brute.search(query, k=2, every_document=True) == ranked
    with pytest.raises(ValueError, match="k must be"):
        brute.search("Caesar", k=0)
