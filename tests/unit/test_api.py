"""Small promises of the public API: what tab completion lists, how a result is indexed, what
the modes are."""

from __future__ import annotations

import pytest

import es_scm
from es_scm.elastic import Searcher
from es_scm.elastic.aio import AsyncSearcher
from es_scm.search.methods import METHODS, SearchMethods
from es_scm.search.results import Hit, SearchResult


def test_dir_lists_the_public_api_and_only_it():

    names = dir(es_scm)
    assert names == sorted(es_scm.__all__)
    assert {"SCMIndex", "AsyncSCMIndex", "SoftCosineModel", "client_from_env"} <= set(names)
    # the module's own helpers are not part of its API
    assert not {"Any", "TYPE_CHECKING", "import_module", "annotations"} & set(names)
    for name in names:
        assert getattr(es_scm, name) is not None


def test_a_result_is_indexed_like_its_hits():
    hits = [Hit("a", 0.9, {}), Hit("b", 0.5, {}), Hit("c", 0.1, {})]
    result = SearchResult(hits=hits, mode="exact")
    assert result[0] is hits[0]
    assert result[-1] is hits[2]
    assert result[1:] == hits[1:]
    assert list(result) == hits
    with pytest.raises(IndexError):
        result[3]


def test_the_methods_of_a_batch_are_the_searchers_methods():
    names = {"search", "fast", "native", "hybrid", "bm25", "dense", "rescore"}
    assert set(METHODS) == names
    assert issubclass(Searcher, SearchMethods)
    assert issubclass(AsyncSearcher, SearchMethods)
    for name in names:
        assert getattr(Searcher, name) is METHODS[name]
        assert METHODS[name].name == name


def test_the_modes_of_the_command_line_and_the_retrievers_are_the_registrys():
    from es_scm.cli.search import EXPLAINED_MODES
    from es_scm.cli.search import METHODS as CLI_MODES
    from es_scm.integrations.retrieval import MODES

    retrieving = {method.mode: name for name, method in METHODS.items() if method.retrieves}
    assert retrieving == CLI_MODES
    assert retrieving == MODES
    explained = {mode for mode, name in retrieving.items() if "explain" in METHODS[name].options}
    assert set(EXPLAINED_MODES) == explained
