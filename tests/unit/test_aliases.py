"""Alias moves and where es-scm writes, decided without a server: the answers of a real node
(``scripts/record_es_answers.py`` → ``tests/unit/recorded/aliases.json``) replayed into the pure
decisions (the swaps on a real node: tests/integration/test_aliases.py)."""

from __future__ import annotations

import pytest

from es_scm.index.aliases import (
    FLATTENED,
    alias_targets,
    check_replaceable,
    move_actions,
    new_index_name,
    retirement,
    swap_layout,
)
from es_scm.index.indices import deletable, is_write_alias, new_write_alias, write_target
from es_scm.index.schema import IndexNotFoundError, ModelMismatchError
from es_scm.search.target import route_model
from tests.support import recorded

ALIAS, OLD, NEW, FOREIGN = (f"es-scm-record-{name}" for name in ("alias", "old", "new", "foreign"))


@pytest.fixture(scope="module")
def answers() -> dict:
    return recorded("aliases")


def targets(answers: dict, name: str, alias: str = ALIAS) -> tuple[dict, bool]:
    answer = answers[name]
    return alias_targets(alias, answer["status"], answer["body"])


def test_new_index_names_carry_a_timestamp():
    assert new_index_name("news").startswith("news-20")
    with pytest.raises(ValueError, match="lower case"):
        new_index_name("News")


def test_the_indices_behind_an_alias_an_index_or_nothing(answers):
    current, concrete = targets(answers, "alias_mappings")
    assert (sorted(current), concrete) == ([FOREIGN, OLD], False)
    current, concrete = targets(answers, "index_mappings", alias=NEW)
    assert (sorted(current), concrete) == ([NEW], True)
    assert targets(answers, "missing_mappings", alias=f"{ALIAS}-none") == ({}, False)


def test_a_move_is_one_request_that_removes_and_adds(answers):
    current, concrete = targets(answers, "alias_mappings")
    assert move_actions(ALIAS, NEW, sorted(current), concrete) == [
        {"remove": {"index": FOREIGN, "alias": ALIAS, "must_exist": True}},
        {"remove": {"index": OLD, "alias": ALIAS, "must_exist": True}},
        {"add": {"index": NEW, "alias": ALIAS, "is_write_index": True}},
    ]
    # an index named like the alias goes in the same request: it cannot be kept
    assert move_actions(NEW, "next", [NEW], True) == [
        {"remove_index": {"index": NEW}},
        {"add": {"index": "next", "alias": NEW, "is_write_index": True}},
    ]


def test_what_may_be_replaced(answers):
    index, concrete = targets(answers, "index_mappings", alias=NEW)
    check_replaceable(NEW, index, concrete, keep_old=False)
    with pytest.raises(ValueError, match="cannot be kept"):
        check_replaceable(NEW, index, concrete, keep_old=True)
    foreign = {FOREIGN: answers["alias_mappings"]["body"][FOREIGN]["mappings"]}
    with pytest.raises(ValueError, match="es-scm did not create: making it an alias would"):
        check_replaceable(FOREIGN, foreign, True, keep_old=False)


def test_the_indices_left_are_deleted_unless_in_use_or_foreign(answers):
    current, _ = targets(answers, "alias_mappings")
    previous = sorted(current)
    deleted, kept = retirement(ALIAS, previous, current, answers["left_indices"]["body"])
    assert deleted == []
    assert kept == [
        (FOREIGN, "not an es-scm index"),
        (OLD, f"still in use by the alias '{ALIAS}-reports'"),
    ]
    # once the other alias is gone, only es-scm's hidden write alias is left: it goes with it
    deleted, kept = retirement(ALIAS, previous, current, answers["left_indices_alone"]["body"])
    assert deleted == [OLD]
    assert kept == [(FOREIGN, "not an es-scm index")]


def test_the_new_index_takes_the_current_layout_unless_told(answers):
    current, _ = targets(answers, "alias_mappings")
    layout = swap_layout(current, None, None, None, 2, 1)
    assert layout.metadata_mapping == {"n": {"type": "integer"}}
    assert (layout.shards, layout.replicas, layout.expansion) == (2, 1, "query")
    assert swap_layout(current, "simple", FLATTENED, "documents", 1, 0).metadata_mapping is None
    with pytest.raises(ValueError, match="metadata_mapping must be a mapping, None or"):
        swap_layout(current, None, "keyword", None, 1, 0)
    assert swap_layout({}, None, None, None, 1, 0).metadata_mapping is None  # a new alias


def test_a_searcher_routes_to_the_model_of_the_indices(answers):
    index, _ = targets(answers, "index_mappings", alias=NEW)
    model_id = index[NEW]["_meta"]["es_scm"]["model_id"]
    assert route_model(NEW, index, {model_id: object()}) == model_id
    with pytest.raises(ModelMismatchError, match="which this searcher does not hold"):
        route_model(NEW, index, {})
    current, _ = targets(answers, "alias_mappings")
    with pytest.raises(ModelMismatchError, match="are not es-scm indices of one model"):
        route_model(ALIAS, current, {model_id: object()})
    with pytest.raises(IndexNotFoundError):
        route_model(ALIAS, {}, {model_id: object()})


def test_writes_go_to_the_hidden_write_alias_of_the_index(answers):
    body = answers["get_index_target"]["body"]
    concrete, alias = write_target(NEW, body)
    assert concrete == NEW
    assert alias is not None
    assert alias.startswith(f"{NEW}.es-scm-writer-")
    assert is_write_alias(alias, body[NEW]["aliases"][alias])
    assert not is_write_alias(alias, {})  # not hidden: a user's alias of that name
    # an alias of two indices without a write index: written as it is (Elasticsearch refuses)
    assert write_target(ALIAS, answers["get_alias_target"]["body"]) == (ALIAS, ALIAS)
    # an index without one: it must get one
    assert write_target(FOREIGN, {FOREIGN: {"aliases": {}}}) == (FOREIGN, None)


def test_a_write_alias_fits_elasticsearchs_name_limit():
    long = "n" * 255
    alias = new_write_alias(long)
    assert len(alias.encode()) <= 255
    assert ".es-scm-writer-" in alias
    assert new_write_alias("news") != new_write_alias("news")  # each creation its own


def test_only_an_index_es_scm_created_is_deleted(answers):
    mappings = answers["index_mappings"]["body"]
    assert deletable(NEW, 200, mappings) is True
    assert deletable(f"{ALIAS}-none", 404, answers["missing_mappings"]["body"]) is False
    with pytest.raises(ValueError, match=f"refusing to delete '{ALIAS}': it is an alias"):
        deletable(ALIAS, 200, answers["alias_mappings"]["body"])
    foreign = {FOREIGN: answers["alias_mappings"]["body"][FOREIGN]}
    with pytest.raises(ValueError, match="es-scm did not create that index"):
        deletable(FOREIGN, 200, foreign)


def test_what_a_killed_swap_left_is_told_from_what_a_run_writes():
    """The rule of es_scm.index.swaps (issue 34, item 3), case by case."""
    import datetime as dt

    from es_scm.index.swaps import (
        LEASE,
        SwapRun,
        moved_marker,
        retiring_marker,
        swap_leftovers,
        swap_marker,
        with_marker,
    )

    now = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
    here, there = "boot/1", "boot/2"
    dead, alive = SwapRun("a", "h", here, 100), SwapRun("b", "h", here, 200)
    remote = SwapRun("c", "other", there, 100)
    stale = now - dt.timedelta(seconds=LEASE + 1)

    def meta(marker):
        return with_marker({"es_scm": {"model_id": "m"}}, marker)

    filling = swap_marker("news", dead, now)
    metas = {
        "dead-run": meta(filling),
        "alive-run": meta(swap_marker("news", alive, now)),
        "alive-but-silent": meta(swap_marker("news", alive, stale)),
        "remote-fresh": meta(swap_marker("news", remote, now)),
        "remote-stale": meta(swap_marker("news", remote, stale)),
        "retired": meta(retiring_marker(moved_marker(filling, now), "next", False, now)),
        "kept": meta(retiring_marker(moved_marker(filling, now), "next", True, now)),
        "kept-then-retired": meta(
            retiring_marker(retiring_marker(filling, "x", True, now), "y", False, now)
        ),
        "rolled-back": meta(moved_marker(filling, now)),
        "pointed-at": meta(filling),
        "in-another-alias": meta(filling),
        "only-its-writer": meta(filling),
        "another-alias": meta(swap_marker("sports", dead, stale)),
        "no-marker": {"es_scm": {"model_id": "m"}},
    }
    aliases = {
        "pointed-at": {"aliases": {"news": {}}},
        "in-another-alias": {"aliases": {"archive": {}}},
        "only-its-writer": {"aliases": {"only-its-writer.es-scm-writer-ab": {"is_hidden": True}}},
    }
    leftovers, writing = swap_leftovers(
        "news", metas, aliases, now, here, lambda pid: pid == alive.pid
    )
    assert [leftover.index for leftover in leftovers] == [
        "alive-but-silent", "dead-run", "only-its-writer", "remote-stale", "retired",
    ]  # fmt: skip
    assert [other.index for other in writing] == ["alive-run", "remote-fresh"]
    why = {leftover.index: leftover.why for leftover in leftovers}
    assert why["dead-run"].startswith(
        "a swap that never moved the alias onto it: its run (pid 100 on h, started "
    )
    assert why["dead-run"].endswith(") is gone")
    assert why["retired"] == (
        "the swap to 'next' moved the alias off it and was killed before deleting it"
    )
    # no machine known here: only the heartbeat tells
    leftovers, writing = swap_leftovers("news", metas, aliases, now, None, lambda pid: False)
    assert "dead-run" in [other.index for other in writing]


def test_a_heartbeat_beats_while_its_block_runs_and_never_after(caplog):
    """Both twins: beats every interval, a failing beat logged once while the beats go on, and
    none after the block (a beat in flight ends first)."""
    import asyncio
    import logging
    import time

    from es_scm.elastic.concurrency import AsyncHeartbeat, Heartbeat

    beats: list[float] = []

    def beat() -> None:
        beats.append(time.monotonic())
        if len(beats) in (2, 3):
            raise RuntimeError("the cluster went away")
        time.sleep(0.02)  # a request in flight

    with caplog.at_level(logging.WARNING, logger="es_scm.elastic.concurrency"):
        with Heartbeat(0.05, beat):
            time.sleep(0.5)
        ended, count = time.monotonic(), len(beats)
        time.sleep(0.2)
    assert count >= 4
    assert len(beats) == count
    assert beats[-1] < ended
    assert [r.getMessage() for r in caplog.records] == [
        "a heartbeat failed (the cluster went away); retrying every beat"
    ]

    async def run() -> list[float]:
        times: list[float] = []

        async def abeat() -> None:
            times.append(time.monotonic())
            await asyncio.sleep(0.02)

        async with AsyncHeartbeat(0.05, abeat):
            await asyncio.sleep(0.5)
        after = len(times)
        await asyncio.sleep(0.2)
        assert len(times) == after
        return times

    assert len(asyncio.run(run())) >= 4
