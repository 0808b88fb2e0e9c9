"""The sync and the asyncio API are one implementation: the same operations, the same signatures.

Every operation is a plan decorated with ``es_scm.elastic.shells.operation``: these tests check
that each public class or function has its twin on the other side with the same signature and
docstring, that the asyncio side's are coroutine functions and the sync side's are not.
"""

from __future__ import annotations

import inspect

import pytest

from es_scm.elastic import aio
from es_scm.elastic.aliases import AliasSearcher, reindex_into_alias
from es_scm.elastic.index import SCMIndex
from es_scm.elastic.searcher import Searcher
from es_scm.elastic.shells import operation

PAIRS = [
    (SCMIndex, aio.AsyncSCMIndex),
    (Searcher, aio.AsyncSearcher),
    (AliasSearcher, aio.AsyncAliasSearcher),
]


def operations(cls: type) -> dict[str, operation]:
    return {
        name: value
        for klass in cls.__mro__
        for name, value in vars(klass).items()
        if isinstance(value, operation) and not name.startswith("_")
    }


def public_names(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


@pytest.mark.parametrize(("sync", "asynchronous"), PAIRS, ids=lambda cls: cls.__name__)
def test_both_sides_have_the_same_public_names_and_operations(sync, asynchronous):
    assert public_names(sync) == public_names(asynchronous)
    assert operations(sync) == operations(asynchronous)  # the same objects: one implementation
    assert len(operations(sync)) >= 2


@pytest.mark.parametrize(("sync", "asynchronous"), PAIRS, ids=lambda cls: cls.__name__)
def test_both_sides_have_the_same_signatures(sync, asynchronous):
    assert inspect.signature(sync) == inspect.signature(asynchronous)
    for name in operations(sync):
        assert inspect.signature(getattr(sync, name)) == inspect.signature(
            getattr(asynchronous, name)
        )


@pytest.mark.parametrize(("sync", "asynchronous"), PAIRS, ids=lambda cls: cls.__name__)
def test_async_operations_are_coroutine_functions_and_sync_ones_are_not(sync, asynchronous):
    for name in operations(sync):
        sync_method = getattr(sync.__new__(sync), name)
        async_method = getattr(asynchronous.__new__(asynchronous), name)
        assert not inspect.iscoroutinefunction(sync_method), name
        assert inspect.iscoroutinefunction(async_method), name
        assert sync_method.__doc__ == async_method.__doc__
        assert sync_method.__doc__, name
        assert "self" not in inspect.signature(sync_method).parameters


def test_operations_show_their_explicit_signature_and_result():
    signature = inspect.signature(SCMIndex.search)
    assert list(signature.parameters)[:3] == ["self", "query", "k"]
    assert "mode" in signature.parameters
    assert "options" not in signature.parameters  # nothing hidden in **options
    assert signature.return_annotation == "SearchResult"
    bound = inspect.signature(SCMIndex.__new__(SCMIndex).search)
    assert list(bound.parameters)[:2] == ["query", "k"]


def test_the_alias_swap_is_one_plan_on_both_sides():
    sync_signature = inspect.signature(reindex_into_alias)
    assert sync_signature == inspect.signature(aio.async_reindex_into_alias)
    assert list(sync_signature.parameters)[:4] == ["client", "alias", "model", "documents"]
    assert inspect.iscoroutinefunction(aio.async_reindex_into_alias)
    assert not inspect.iscoroutinefunction(reindex_into_alias)
    assert reindex_into_alias.__doc__ == aio.async_reindex_into_alias.__doc__
    assert reindex_into_alias.__wrapped__ is aio.async_reindex_into_alias.__wrapped__
