"""The sync and the asyncio API are one implementation: the same methods, signatures and docs.

The searcher, the index, the alias searcher and the alias swap are written once for asyncio
(``es_scm/elastic/_async/``) and the sync ones generated from them (``scripts/generate_sync.py``,
whose ``--check`` keeps them current): each public class has its twin on the other side with the
same public methods, each with the same parameters and docstring, the asyncio side's coroutine
functions (those that make requests) and the sync side's not.
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from es_scm.elastic import AliasSearcher, SCMIndex, Searcher, aio, reindex_into_alias
from es_scm.search.methods import METHODS
from tests.support import REPO_ROOT

PAIRS = [
    (SCMIndex, aio.AsyncSCMIndex),
    (Searcher, aio.AsyncSearcher),
]


def methods(cls: type) -> dict[str, object]:
    """The public callables of ``cls`` (properties and class attributes left out)."""
    return {
        name: getattr(cls, name)
        for name in dir(cls)
        if not name.startswith("_") and inspect.isfunction(getattr(cls, name))
    }


def parameters(function: object) -> list[tuple[str, object, object]]:
    """Each parameter's name, kind and default (annotations differ: the clients' types)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize(("sync", "asynchronous"), PAIRS, ids=lambda cls: cls.__name__)
def test_both_sides_have_the_same_methods_parameters_and_docs(sync, asynchronous):
    assert {n for n in dir(sync) if not n.startswith("_")} == {
        n for n in dir(asynchronous) if not n.startswith("_")
    }
    assert parameters(sync) == parameters(asynchronous)
    mine, theirs = methods(sync), methods(asynchronous)
    assert set(mine) == set(theirs)
    assert len(mine) >= 2
    for name in mine:
        assert parameters(mine[name]) == parameters(theirs[name]), name
        assert mine[name].__doc__ == theirs[name].__doc__, name
        assert mine[name].__doc__, name


@pytest.mark.parametrize(("sync", "asynchronous"), PAIRS, ids=lambda cls: cls.__name__)
def test_async_methods_are_coroutine_functions_and_sync_ones_are_not(sync, asynchronous):
    coroutines = 0
    for name in methods(sync):
        sync_method = getattr(sync.__new__(sync), name)
        async_method = getattr(asynchronous.__new__(asynchronous), name)
        assert not inspect.iscoroutinefunction(sync_method), name
        assert "self" not in inspect.signature(sync_method).parameters
        if not inspect.iscoroutinefunction(async_method):
            continue  # a method without I/O, on both sides (``add_model``)
        coroutines += 1
    assert coroutines >= 2


def test_each_search_method_shows_its_own_options_and_no_others():
    for name, method in METHODS.items():
        options = method.options
        for searcher in (Searcher, aio.AsyncSearcher):
            bound = getattr(searcher.__new__(searcher), name)
            signature = inspect.signature(bound)
            first = ["query", "k"] if method.retrieves else ["query"]
            assert list(signature.parameters)[: len(first)] == first, name
            assert set(signature.parameters) - {"query", "k"} == set(options), name
            assert signature.return_annotation == "SearchResult"
            assert bound.__doc__, name
            assert bound.__doc__ == method.__doc__, name
            for option in options:  # keyword-only, never hidden in **options
                assert signature.parameters[option].kind is inspect.Parameter.KEYWORD_ONLY


def test_the_index_searches_through_its_searcher_only():
    from es_scm import SoftCosineModel

    for method in ("search", "native", "hybrid", "bm25", "rescore", "batch_search"):
        assert not hasattr(SCMIndex, method), method
    assert not issubclass(SCMIndex, Searcher)
    index = SCMIndex(None, "news", SoftCosineModel.build(["wing", "cone"]), max_window=40)  # type: ignore[arg-type]
    assert isinstance(index.searcher, Searcher)
    assert (index.searcher.name, index.searcher.max_window) == ("news", 40)
    assert index.target is index.searcher.target  # one model check for both


def test_the_generated_sync_code_is_current():
    checked = subprocess.run(
        [sys.executable, "scripts/generate_sync.py", "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr


def test_the_alias_searcher_is_the_searcher_given_several_models_on_both_sides():
    assert parameters(AliasSearcher) == parameters(aio.AsyncAliasSearcher)
    assert AliasSearcher.__doc__ == aio.AsyncAliasSearcher.__doc__
    assert inspect.signature(AliasSearcher).return_annotation == "Searcher"
    assert inspect.signature(aio.AsyncAliasSearcher).return_annotation == "AsyncSearcher"


def test_the_alias_swap_is_one_function_on_both_sides():
    assert parameters(reindex_into_alias) == parameters(aio.async_reindex_into_alias)
    assert list(inspect.signature(reindex_into_alias).parameters)[:4] == [
        "client",
        "alias",
        "model",
        "documents",
    ]
    assert inspect.iscoroutinefunction(aio.async_reindex_into_alias)
    assert not inspect.iscoroutinefunction(reindex_into_alias)
    assert reindex_into_alias.__doc__ == aio.async_reindex_into_alias.__doc__
