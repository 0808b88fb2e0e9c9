"""Small promises of the public API: what tab completion lists, how a result is indexed, what
the modes are."""

from __future__ import annotations

import typing

import pytest

import es_scm
from es_scm.elastic import Searcher
from es_scm.elastic.aio import AsyncSearcher
from es_scm.elastic.plans import METHODS
from es_scm.elastic.requests import Method
from es_scm.elastic.results import Hit, SearchResult


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
    assert set(typing.get_args(Method)) == {"search", "native", "hybrid", "bm25", "dense"}
    assert set(METHODS) == set(typing.get_args(Method))
    for method in typing.get_args(Method):
        assert callable(getattr(Searcher, method))
        assert callable(getattr(AsyncSearcher, method))
