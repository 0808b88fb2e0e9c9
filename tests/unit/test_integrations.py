"""The retrievers' promises that need no server: a missing extra is one line that says what to
install, a bad option is refused when the retriever is made, and what a hit's metadata holds.

(Their searches are tested against a real node in tests/integration/test_retrievers_es.py.)
"""

from __future__ import annotations

import importlib
import sys

import pytest
from elasticsearch import Elasticsearch

from es_scm import SoftCosineModel
from es_scm.elastic import Searcher
from es_scm.extras import MissingExtraError
from es_scm.integrations.retrieval import Retrieval, hit_metadata, hit_text, searcher_of
from es_scm.search.results import Hit

# each integration module → the framework modules it imports, and the extra that installs them
FRAMEWORKS = {
    "es_scm.integrations.langchain": (
        ("langchain_core", "langchain_core.retrievers", "langchain_core.documents"),
        "langchain",
    ),
    "es_scm.integrations.llamaindex": (
        (
            "llama_index",
            "llama_index.core",
            "llama_index.core.retrievers",
            "llama_index.core.schema",
        ),
        "llamaindex",
    ),
}


@pytest.mark.parametrize("module", sorted(FRAMEWORKS))
def test_a_missing_framework_is_one_line_naming_the_extra(module, monkeypatch):
    framework_modules, extra = FRAMEWORKS[module]
    monkeypatch.delitem(sys.modules, module, raising=False)
    for name in framework_modules:  # None in sys.modules: the import fails as if not installed
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingExtraError) as error:
        importlib.import_module(module)
    message = str(error.value)
    assert "\n" not in message
    assert message.endswith(f"pip install 'es-scm[{extra}]'")
    assert message.startswith(module)


@pytest.fixture(scope="module")
def searcher() -> Searcher:
    """A searcher on a client that is never asked anything (no request is made when the
    retrievers are built)."""
    model = SoftCosineModel.build(["the cat sat", "a dog ran", "cats and dogs"])
    return Searcher(Elasticsearch("http://127.0.0.1:9"), "no-such-index", model)


BAD_OPTIONS = [
    (
        {"mode": "fuzzy"},
        "mode must be one of 'exact', 'fast', 'native', 'hybrid', 'bm25', 'dense', got 'fuzzy'",
    ),
    ({"k": 0}, "k must be an integer >= 1, got 0"),
    ({"mode": "bm25", "explain": True}, "explain is not an option of mode='bm25'"),
    (
        {"mode": "exact", "fusion": "max"},
        "fusion is not an option of mode='exact'; its options are filter, explain",
    ),
    ({"mode": "native", "depth": 50}, "depth is not an option of mode='native'"),
    ({"mode": "hybrid", "depth": 0}, "depth must be None or an integer >= 1, got 0"),
    ({"mode": "hybrid", "fusion": "best"}, "fusion must be one of"),
    ({"filter": "metadata.group:g1"}, "filter must be an Elasticsearch query clause"),
    # values pydantic would convert (LangChain's retriever gave 1 document for k=True, 5 for
    # k="5"; issue 34, item 8)
    ({"k": True}, "k must be an integer >= 1, got True"),
    ({"k": "5"}, "k must be an integer >= 1, got '5'"),
    ({"k": 5.0}, "k must be an integer >= 1, got 5.0"),
    ({"explain": "yes"}, "explain must be True or False, got 'yes'"),
    ({"explain": 1}, "explain must be True or False, got 1"),
    ({"mode": "hybrid", "depth": "30"}, "depth must be None or an integer >= 1, got '30'"),
    ({"mode": "hybrid", "depth": True}, "depth must be None or an integer >= 1, got True"),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_a_bad_option_is_refused_in_one_line_that_names_it(options, message):
    rest = {key: value for key, value in options.items() if key not in ("mode", "k")}
    with pytest.raises(ValueError, match=message) as error:
        Retrieval.of(options.get("mode", "hybrid"), options.get("k", 10), **rest)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_each_retriever_refuses_a_bad_option_in_the_same_words(searcher, options, message):
    langchain = pytest.importorskip("es_scm.integrations.langchain")
    llamaindex = pytest.importorskip("es_scm.integrations.llamaindex")
    with pytest.raises(ValueError, match=message):  # pydantic's ValidationError is one
        langchain.SCMRetriever(searcher=searcher, **options)
    with pytest.raises(ValueError, match=message):
        llamaindex.SCMRetriever(searcher, **options)


def test_both_retrievers_default_to_hybrid_search_with_exact_one_option_away(searcher):
    """The mode README calls the default, as `es-scm search`'s (issue 41); the searcher's
    own methods keep their names (`Searcher.search` stays exact)."""
    langchain = pytest.importorskip("es_scm.integrations.langchain")
    llamaindex = pytest.importorskip("es_scm.integrations.llamaindex")
    assert Retrieval.of_fields({}).method == "hybrid"
    for retrieval in (
        langchain.SCMRetriever(searcher=searcher)._retrieval(),
        llamaindex.SCMRetriever(searcher).retrieval,
    ):
        assert (retrieval.mode, retrieval.method, retrieval.k) == ("hybrid", "hybrid", 10)
    for retrieval in (
        langchain.SCMRetriever(searcher=searcher, mode="exact")._retrieval(),
        llamaindex.SCMRetriever(searcher, mode="exact").retrieval,
    ):
        assert (retrieval.mode, retrieval.method) == ("exact", "search")


def test_the_searcher_is_an_index_s_or_a_searcher(searcher):
    assert searcher_of(searcher) is searcher
    with pytest.raises(TypeError, match=r"searcher must be an es-scm SCMIndex.*got str$"):
        searcher_of("http://127.0.0.1:9200")


def test_a_hit_s_metadata_is_the_document_s_plus_its_scores():
    source = {"text": "the cat sat", "metadata": {"group": "g1", "score": "the document's"}}
    hit = Hit("7", 0.5, source, components={"bm25": 2.5, "scm": None})
    assert hit_text(hit) == "the cat sat"
    # the retriever's keys replace the document's own of the same name (docs/INTEGRATIONS.md)
    assert hit_metadata(hit) == {
        "group": "g1",
        "id": "7",
        "score": 0.5,
        "components": {"bm25": 2.5, "scm": None},
    }
    assert source["metadata"]["score"] == "the document's"  # the hit itself is not changed
    bare = Hit("8", 0.25, {"text": "a dog ran"})
    assert hit_metadata(bare) == {"id": "8", "score": 0.25}
