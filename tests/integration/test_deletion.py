"""Deleting an index on a real node: exactly one index that es-scm created, named in full.

A comma list, a pattern, ``_all``, an alias or an index of someone else is refused with one
line before anything is deleted, by ``SCMIndex.delete``, ``AsyncSCMIndex.delete`` and
``es-scm index --recreate`` alike — also on a cluster whose ``action.destructive_requires_name``
is off, so that es-scm does not rely on it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from es_scm.cli.errors import EXIT_ERROR, EXIT_OK
from es_scm.elastic import SCMIndex
from es_scm.elastic.aio import AsyncSCMIndex, async_client_from_env

TEXTS = ["boundary layer on a swept wing", "supersonic flow past a cone", "heat transfer"]


@pytest.fixture
def permissive_cluster(es_client) -> Iterator[None]:
    """The cluster with ``action.destructive_requires_name`` off (reset after the test)."""
    setting = "action.destructive_requires_name"
    es_client.cluster.put_settings(persistent={setting: False})
    yield
    es_client.cluster.put_settings(persistent={setting: None})


@pytest.fixture
def two_indices(es_client, index_name, model) -> tuple[str, str]:
    """Two es-scm indices of three documents each: ``<index_name>-a`` and ``<index_name>-b``."""
    names = (f"{index_name}-a", f"{index_name}-b")
    for name in names:
        documents = [{"id": str(i), "text": text} for i, text in enumerate(TEXTS)]
        assert SCMIndex(es_client, name, model).index_documents(documents).ok
    return names


def counts(es_client, names) -> list[int]:
    return [int(es_client.count(index=name)["count"]) for name in names]


def refusals(index_name: str, a: str, b: str) -> list[str]:
    """Names of several indices: none may be deleted."""
    return [f"{a},{b}", f"{index_name}-*", f"{index_name}-?", f"{a},-{b}", "_all", "*"]


def test_delete_refuses_a_list_a_pattern_and_all_before_any_request(
    es_client, index_name, two_indices, model, permissive_cluster
):
    a, b = two_indices
    for name in refusals(index_name, a, b):
        with pytest.raises(ValueError, match=r"refusing to delete|invalid index name") as refused:
            SCMIndex(es_client, name, model).delete()
        message = str(refused.value)
        assert "\n" not in message
        assert repr(name) in message
        assert counts(es_client, two_indices) == [3, 3]


def test_delete_refuses_an_alias_and_an_index_es_scm_did_not_create(
    es_client, index_name, two_indices, model, permissive_cluster
):
    a, _ = two_indices
    alias = f"{index_name}-alias"
    es_client.indices.put_alias(index=a, name=alias)
    with pytest.raises(ValueError, match=f"refusing to delete '{alias}': it is an alias"):
        SCMIndex(es_client, alias, model).delete()
    assert counts(es_client, two_indices) == [3, 3]

    foreign = f"{index_name}-foreign"
    es_client.index(index=foreign, id="1", document={"text": "not es-scm's"}, refresh=True)
    with pytest.raises(ValueError, match=f"'{foreign}': es-scm did not create that index"):
        SCMIndex(es_client, foreign, model).delete()
    assert counts(es_client, [foreign]) == [1]


def test_delete_deletes_its_own_index_once(es_client, two_indices, model):
    a, b = two_indices
    index = SCMIndex(es_client, a, model)
    assert index.delete() is True
    assert not es_client.indices.exists(index=a)
    assert index.delete() is False
    assert counts(es_client, [b]) == [3]


def test_the_async_delete_refuses_the_same_names(
    es_client, es_url, index_name, two_indices, model, permissive_cluster
):
    a, b = two_indices

    async def delete_each(names: list[str]) -> list[str]:
        client = async_client_from_env(es_url)
        outcomes = []
        try:
            for name in names:
                try:
                    outcomes.append(str(await AsyncSCMIndex(client, name, model).delete()))
                except ValueError as error:
                    outcomes.append(str(error))
        finally:
            await client.close()
        return outcomes

    outcomes = asyncio.run(delete_each([*refusals(index_name, a, b), a, a]))
    assert all("refusing to delete" in o or "invalid index name" in o for o in outcomes[:-2])
    assert outcomes[-2:] == ["True", "False"]
    assert not es_client.indices.exists(index=a)
    assert counts(es_client, [b]) == [3]


def test_index_recreate_deletes_one_es_scm_index_only(
    cli, es_client, es_url, index_name, two_indices, model, tmp_path, permissive_cluster
):
    a, b = two_indices
    model_dir = model.save(tmp_path / "model")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "new", "text": "supersonic cone"}) + "\n")

    def recreate(name: str) -> tuple[int, str, str]:
        return cli(
            "index", "--model", model_dir, "--index", name, "--corpus", corpus,
            "--recreate", "--es-url", es_url, "--no-progress",
        )  # fmt: skip

    foreign = f"{index_name}-foreign"
    es_client.index(index=foreign, id="1", document={"text": "not es-scm's"}, refresh=True)
    for name in (f"{a},{b}", f"{index_name}-*", foreign):
        code, _out, err = recreate(name)
        assert code == EXIT_ERROR
        assert err.count("\n") == 1
        assert "refusing to delete" in err
        assert repr(name) in err
        assert counts(es_client, [a, b, foreign]) == [3, 3, 1]

    code, _, err = recreate(a)
    assert code == EXIT_OK
    assert f"deleted the index '{a}'" in err
    assert counts(es_client, [a, b]) == [1, 3]


def test_deleting_documents_takes_one_index_or_alias(
    cli, es_client, es_url, index_name, two_indices, model, tmp_path
):
    a, b = two_indices
    model_dir = model.save(tmp_path / "model")
    alias = f"{index_name}-alias"
    es_client.indices.put_alias(index=a, name=alias)
    for name in (f"{a},{b}", f"{index_name}-*", "_all"):
        code, _, err = cli(
            "delete", "--model", model_dir, "--index", name, "--ids", "0", "1",
            "--es-url", es_url,
        )  # fmt: skip
        assert code == EXIT_ERROR
        assert err.count("\n") == 1
        assert f"refusing to delete documents from {name!r}: it names" in err
        with pytest.raises(ValueError, match="not one index or alias named in full"):
            SCMIndex(es_client, name, model).delete_documents(["0"])
        assert counts(es_client, two_indices) == [3, 3]
    code, out, _ = cli(
        "delete", "--model", model_dir, "--index", alias, "--ids", "0", "--es-url", es_url
    )
    assert code == EXIT_OK
    assert "deleted 1" in out
    assert counts(es_client, two_indices) == [2, 3]
