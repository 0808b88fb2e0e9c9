"""The write side's sync API is its asyncio API, generated: the same names, parameters and
docstrings, coroutines on one side only (``scripts/generate_sync.py --check``, run by
``make lint``, says the generated files are current)."""

from __future__ import annotations

import inspect

import pytest

from es_scm.elastic import AliasSearcher, SCMIndex, reindex_into_alias
from es_scm.elastic.aio import AsyncAliasSearcher, AsyncSCMIndex, async_reindex_into_alias

PAIRS = [(SCMIndex, AsyncSCMIndex), (AliasSearcher, AsyncAliasSearcher)]


def public(cls: type) -> dict[str, object]:
    return {name: value for name, value in vars(cls).items() if not name.startswith("_")}


def parameters(function: object) -> list[tuple[str, object, object]]:
    """Names, kinds and defaults (the annotations name each side's own types)."""
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


@pytest.mark.parametrize(("sync", "asynchronous"), PAIRS, ids=lambda cls: cls.__name__)
def test_both_sides_have_the_same_methods_parameters_and_docstrings(sync, asynchronous):
    assert public(sync).keys() == public(asynchronous).keys()
    assert parameters(sync) == parameters(asynchronous)
    methods = [name for name, value in public(sync).items() if inspect.isfunction(value)]
    assert len(methods) >= 5
    for name in methods:
        sync_method, async_method = getattr(sync, name), getattr(asynchronous, name)
        assert parameters(sync_method) == parameters(async_method), name
        assert sync_method.__doc__ == async_method.__doc__, name
        if inspect.iscoroutinefunction(async_method):
            assert not inspect.iscoroutinefunction(sync_method), name


def test_scm_index_writes_and_composes_a_searcher():
    from es_scm import SoftCosineModel
    from es_scm.elastic import Searcher

    names = set(public(SCMIndex))
    assert {"search", "native", "hybrid", "bm25", "rescore"}.isdisjoint(names)
    assert {"exists", "create", "delete", "count", "optimize", "index_documents"} <= names
    assert {"upsert", "delete_documents", "name", "target"} <= names
    assert not issubclass(SCMIndex, Searcher)
    index = SCMIndex(None, "news", SoftCosineModel.build(["wing", "cone"]), max_window=40)  # type: ignore[arg-type]
    assert isinstance(index.searcher, Searcher)
    assert (index.searcher.name, index.searcher.max_window) == ("news", 40)
    assert index.target is index.searcher.target  # one model check for both


def test_the_alias_swap_is_one_function_on_both_sides():
    assert parameters(reindex_into_alias) == parameters(async_reindex_into_alias)
    assert list(inspect.signature(reindex_into_alias).parameters)[:4] == [
        "client",
        "alias",
        "model",
        "documents",
    ]
    assert inspect.iscoroutinefunction(async_reindex_into_alias)
    assert not inspect.iscoroutinefunction(reindex_into_alias)
    assert reindex_into_alias.__doc__ == async_reindex_into_alias.__doc__
