"""What a model swap killed with SIGKILL leaves behind is found and deleted by the next swap of
the alias, and what another swap is filling is left alone (issue 34, item 3), on a real node.

``es-scm index --alias`` runs in a process of its own on BEIR SciFact (three times over, as in
``test_signals.py``), killed with SIGKILL while it fills its new index, or just after it moved
the alias (in the second of grace before it deletes the old index); then a rerun of the command
must name and delete what was left, and only that. A swap paused with SIGSTOP while it fills is
alive: a swap meanwhile leaves its index alone, and the paused one, resumed, loses the move in
one line. The rule for runs on other machines (the heartbeat's lease) is checked on indices
marked as another machine's.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from es_scm.cli.errors import EXIT_ERROR, EXIT_OK
from es_scm.elastic import SCMIndex, reindex_into_alias, remove_swap_leftovers
from es_scm.index.layout import IndexLayout
from es_scm.index.swaps import LEASE, SwapRun, swap_marker
from es_scm.model import SoftCosineModel
from tests.support import REPO_ROOT

SMALL = [{"id": f"s{n}", "text": f"cells and proteins number {n}"} for n in range(30)]


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in SMALL), encoding="utf-8")
    return path


def swap_process(url: str, alias: str, model_dir: Path, corpus: Path) -> subprocess.Popen[str]:
    """``es-scm index --alias`` in a process of its own."""
    command = [
        sys.executable, "-m", "es_scm.cli", "index", "--model", str(model_dir), "--alias", alias,
        "--corpus", str(corpus), "--batch-size", "100", "--es-url", url, "--no-progress",
    ]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment
    )


def wait_for(process: subprocess.Popen[str], ready: Callable[[], bool], pause: float) -> None:
    deadline = time.monotonic() + 120
    while not ready():
        assert process.poll() is None, f"it ended too soon: {process.communicate()}"
        assert time.monotonic() < deadline, "the moment never came"
        time.sleep(pause)


def swap_indices(client, alias: str) -> set[str]:
    return set(client.indices.get(index=f"{alias}-*", allow_no_indices=True))


def points_at(client, alias: str) -> set[str]:
    found = client.options(ignore_status=404).indices.get_alias(name=alias)
    return set(found.body) if found.meta.status == 200 else set()


def new_index_holds(client, alias: str, old: set[str], documents: int) -> Callable[[], bool]:
    def holds() -> bool:
        for name in swap_indices(client, alias) - old:
            found = client.options(ignore_status=(404, 503), max_retries=0).count(index=name)
            if found.meta.status == 200 and found["count"] >= documents:
                return True
        return False

    return holds


def first_swap(client, alias: str, model_dir: Path) -> str:
    """The alias onto a first index, made in this process (a swap that finished)."""
    return reindex_into_alias(client, alias, SoftCosineModel.load(model_dir), SMALL).index


@pytest.mark.slow
def test_a_swap_killed_while_it_fills_leaves_an_index_that_the_next_swap_deletes(
    cli,
    es_client,
    es_url,
    index_name,
    scifact,
    scifact_model_dir,
    small_corpus,
):
    alias = index_name
    old = first_swap(es_client, alias, scifact_model_dir)
    process = swap_process(es_url, alias, scifact_model_dir, scifact)
    try:
        wait_for(process, new_index_holds(es_client, alias, {old}, 1000), 0.05)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    (killed,) = swap_indices(es_client, alias) - {old}  # left behind, full of documents
    assert points_at(es_client, alias) == {old}
    assert es_client.count(index=killed)["count"] >= 1000

    code, out, err = cli("index", "--model", scifact_model_dir, "--alias", alias,
                         "--corpus", small_corpus, "--es-url", es_url, "--no-progress")  # fmt: skip
    assert code == EXIT_OK, err
    assert (
        f"deleted the index {killed} that a killed swap of the alias {alias} left behind: a swap "
        f"that never moved the alias onto it: its run (pid {process.pid} on "
    ) in out
    (new,) = points_at(es_client, alias)
    assert f"deleted the old index {old}" in out
    assert swap_indices(es_client, alias) == {new}  # nothing else is left


@pytest.mark.slow
def test_a_swap_killed_just_after_the_move_leaves_the_old_index_that_the_next_swap_deletes(
    cli,
    es_client,
    es_url,
    index_name,
    scifact,
    scifact_model_dir,
    small_corpus,
):
    alias = index_name
    old = first_swap(es_client, alias, scifact_model_dir)
    process = swap_process(es_url, alias, scifact_model_dir, scifact)
    quick = es_client.options(request_timeout=5)
    try:  # the old index is deleted a second after the move: kill within that second
        wait_for(process, lambda: points_at(quick, alias) not in ({old}, set()), 0.01)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    (moved_to,) = points_at(es_client, alias)
    assert moved_to != old
    assert swap_indices(es_client, alias) == {old, moved_to}  # the old one stays

    code, out, err = cli("index", "--model", scifact_model_dir, "--alias", alias,
                         "--corpus", small_corpus, "--es-url", es_url, "--no-progress")  # fmt: skip
    assert code == EXIT_OK, err
    assert (
        f"deleted the index {old} that a killed swap of the alias {alias} left behind: the swap "
        f"to '{moved_to}' moved the alias off it and was killed before deleting it"
    ) in out
    (new,) = points_at(es_client, alias)
    assert f"deleted the old index {moved_to}" in out
    assert swap_indices(es_client, alias) == {new}


@pytest.mark.slow
def test_a_swap_being_filled_is_left_alone_and_loses_the_move_in_one_line(
    cli,
    es_client,
    es_url,
    index_name,
    scifact,
    scifact_model_dir,
    small_corpus,
):
    """A swap paused (SIGSTOP) while it fills is alive: a second swap names its index and
    leaves it alone, and moves the alias; resumed, the first loses the move, says so in one
    line (it said ``aliases [X] missing``), and deletes its own index."""
    alias = index_name
    old = first_swap(es_client, alias, scifact_model_dir)
    process = swap_process(es_url, alias, scifact_model_dir, scifact)
    try:
        wait_for(process, new_index_holds(es_client, alias, {old}, 1000), 0.05)
        process.send_signal(signal.SIGSTOP)
        (filling,) = swap_indices(es_client, alias) - {old}
        code, out, err = cli("index", "--model", scifact_model_dir, "--alias", alias,
                             "--corpus", small_corpus, "--es-url", es_url,
                             "--no-progress")  # fmt: skip
        assert code == EXIT_OK, err
        assert (
            f"note: left the index {filling} alone: another swap of the alias {alias} is writing "
            f"it (pid {process.pid} on "
        ) in err
        assert "is filling it (started " in err
        (second,) = points_at(es_client, alias)
        assert swap_indices(es_client, alias) == {filling, second}
        process.send_signal(signal.SIGCONT)
        out, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == EXIT_ERROR, (out, err)
    lines = [line for line in err.splitlines() if line.startswith("es-scm: error: ")]
    assert lines == [
        f"es-scm: error: another run moved the alias '{alias}' first: it points at {second} now, "
        f"no longer at {old}; the new index '{filling}' of this run was deleted and the alias "
        "left as that run set it"
    ], err
    assert points_at(es_client, alias) == {second}
    assert swap_indices(es_client, alias) == {second}


def marked_index(es_client, name: str, model, marker: dict) -> None:
    """An index created with a swap marker (as a swap would, on the machine it names)."""
    assert SCMIndex(es_client, name, model)._create(IndexLayout(), False, marker)


def test_the_rule_for_other_machines_kept_and_rolled_back_indices(es_client, index_name):
    """A swap from another machine is gone once its heartbeat is older than the lease; an index
    kept by ``keep_old``, one moved off by hand, and one another alias uses are never taken;
    nor is an index of another alias or one without the marker."""
    model = SoftCosineModel.build([d["text"] for d in SMALL])
    alias = index_name
    elsewhere = SwapRun("r1", "other-host", "another-boot/1", 4242)
    now = dt.datetime.now(dt.timezone.utc)
    stale = now - dt.timedelta(seconds=LEASE + 60)
    first = reindex_into_alias(es_client, alias, model, SMALL).index
    kept = reindex_into_alias(es_client, alias, model, SMALL, keep_old=True)
    assert kept.kept == [(first, "kept as asked (keep_old)")]
    third = reindex_into_alias(es_client, alias, model, SMALL, keep_old=True).index
    assert third not in (first, kept.index)
    marked_index(es_client, f"{alias}-stale", model, swap_marker(alias, elsewhere, stale))
    marked_index(es_client, f"{alias}-fresh", model, swap_marker(alias, elsewhere, now))
    marked_index(es_client, f"{alias}-other", model, swap_marker(f"{alias}x", elsewhere, stale))
    SCMIndex(es_client, f"{alias}-plain", model).create()
    # a rollback by hand: the alias back onto the first index; the third is neither kept nor
    # retired by a swap, and another alias holds the second
    es_client.indices.update_aliases(
        actions=[
            {"remove": {"index": third, "alias": alias}},
            {"add": {"index": first, "alias": alias, "is_write_index": True}},
            {"add": {"index": kept.index, "alias": f"{alias}-archive"}},
        ]
    )
    cleanup = remove_swap_leftovers(es_client, alias)
    assert [leftover.index for leftover in cleanup.deleted] == [f"{alias}-stale"]
    assert re.fullmatch(
        "a swap that never moved the alias onto it: its run \\(pid 4242 on other-host, started "
        f"{re.escape(stale.isoformat(timespec='seconds'))}\\) last showed it was alive "
        f"6[6-9]\\d s ago, more than the {LEASE:.0f} s lease",
        cleanup.deleted[0].why,
    ), cleanup.deleted[0].why
    assert [leftover.index for leftover in cleanup.writing] == [f"{alias}-fresh"]
    assert re.match(
        r"pid 4242 on other-host is filling it \(started .*, last heartbeat \d+ s ago\)$",
        cleanup.writing[0].why,
    )
    assert cleanup.warning is None
    left = set(es_client.indices.get(index=f"{alias}-*"))
    assert left == {f"{alias}-fresh", f"{alias}-other", f"{alias}-plain", first, kept.index, third}


def test_a_swap_renews_its_heartbeat_while_it_fills_and_marks_what_it_did(
    es_client, index_name, monkeypatch
):
    """The marker as the rule reads it: the heartbeat renewed while the run fills (every 0.2 s
    here), ``moved`` once the alias is on the index, ``kept`` on the index a ``keep_old`` swap
    left."""
    import es_scm.elastic._sync.aliases as swapping

    monkeypatch.setattr(swapping, "HEARTBEAT", 0.2)
    model = SoftCosineModel.build([d["text"] for d in SMALL])
    first = reindex_into_alias(es_client, index_name, model, SMALL).index

    def slowly():
        for document in SMALL:
            time.sleep(0.05)  # 1.5 s in all: several beats, and a heartbeat's second changes
            yield document

    second = reindex_into_alias(es_client, index_name, model, slowly(), keep_old=True, batch_size=5)

    def marker(name: str) -> dict:
        return es_client.indices.get_mapping(index=name)[name]["mappings"]["_meta"]["es_scm"][
            "swap"
        ]

    mine = marker(second.index)
    assert (mine["alias"], mine["state"], mine["run"]["pid"]) == (index_name, "moved", os.getpid())
    assert mine["heartbeat"] == mine["moved"] > mine["started"]
    assert marker(first)["kept"]["for"] == second.index
    # the beats themselves: the marker while the run fills, read from another thread
    seen: list[str] = []

    def watching():
        for document in SMALL:
            time.sleep(0.05)
            name = next(iter(swap_indices(es_client, index_name) - {first, second.index}), None)
            if name is not None:
                seen.append(marker(name)["heartbeat"])
            yield document

    reindex_into_alias(es_client, index_name, model, watching(), batch_size=5, grace=0)
    assert len(set(seen)) >= 2, seen  # renewed while it filled
