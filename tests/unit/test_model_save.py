"""Saving a model over another is atomic: killed at any point, the folder holds one of the two.

Processes that overwrite a saved model are killed with SIGKILL at points spread over the whole
save, again and again; after each kill the folder must load as the old model or the new one.
Both ways of putting the new folder in place are killed: the one-step exchange (Linux) and the
two renames of other systems (forced in the child process). The processes are forked from a
server that has es-scm imported already, so that each starts in milliseconds.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import stat
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import numpy as np
import pytest

from es_scm import SoftCosineModel
from es_scm.model.persistence import MODEL_FILES
from es_scm.similarity import WordEmbeddings

FORKSERVER = multiprocessing.get_context("forkserver")
FORKSERVER.set_forkserver_preload(["es_scm", "es_scm.model.saving"])


def save_in_child(source: str, target: str, mode: str, said: Connection) -> None:
    """The child process: load ``source``, say "ready", save it to ``target``, say "saved"."""
    if mode == "two-renames":
        import es_scm.model.saving as saving

        saving._exchange = lambda first, second: False
    model = SoftCosineModel.load(source)
    said.send("ready")
    model.save(target)
    said.send("saved")


def build(seed: int) -> SoftCosineModel:
    """A model of 20,000 terms whose save takes a noticeable while (S has ~800,000 entries)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(20_000)]
    texts = [" ".join(rng.choice(words) for _ in range(30)) for _ in range(4_000)]
    vectors = np.random.default_rng(seed).standard_normal((len(words), 16)).astype(np.float32)
    return SoftCosineModel.build(texts, WordEmbeddings(words, vectors))


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    """Two saved models, by model_id."""
    folder = tmp_path_factory.mktemp("sources")
    models = [build(seed) for seed in (1, 2)]
    assert models[0].model_id != models[1].model_id
    return {model.model_id: model.save(folder / str(seed)) for seed, model in enumerate(models)}


def leftovers(target: Path) -> list[str]:
    return sorted(name for name in os.listdir(target.parent) if name.startswith(f".{target.name}."))


def start_saving(source: Path, target: Path, mode: str) -> tuple[BaseProcess, Connection]:
    heard, said = FORKSERVER.Pipe(duplex=False)
    child = FORKSERVER.Process(target=save_in_child, args=(str(source), str(target), mode, said))
    child.start()
    said.close()
    assert heard.recv() == "ready"
    return child, heard


def full_save_seconds(source: Path, target: Path, mode: str) -> float:
    child, heard = start_saving(source, target, mode)
    started = time.perf_counter()
    assert heard.recv() == "saved"
    seconds = time.perf_counter() - started
    child.join()
    assert child.exitcode == 0
    return seconds


@pytest.mark.parametrize(("mode", "kills"), [("exchange", 20), ("two-renames", 12)])
def test_a_save_killed_at_any_point_leaves_the_old_model_or_the_new(tmp_path, sources, mode, kills):
    first, second = sources
    target = tmp_path / "model"
    seconds = full_save_seconds(sources[first], target, mode)
    current, outcomes, interrupted = first, set(), 0
    for kill in range(kills):
        other = second if current == first else first
        child, heard = start_saving(sources[other], target, mode)
        if kill < kills - 1:  # kill points spread over twice a save's time
            time.sleep(2 * seconds * kill / kills)
        else:  # and one after the save, however slow the machine is today
            assert heard.recv() == "saved"
        child.kill()  # SIGKILL
        child.join()
        interrupted += bool(leftovers(target))
        current = SoftCosineModel.load(target).model_id  # whole: its content hashes to its id
        assert current in (first, second)
        assert set(os.listdir(target)) <= set(MODEL_FILES)
        outcomes.add("new" if current == other else "old")
    assert outcomes == {"old", "new"}  # kills before and after the new model took its place
    assert interrupted > 0  # and kills in the middle of a save, which left a folder behind
    full_save_seconds(sources[second if current == first else first], target, mode)
    assert leftovers(target) == []  # a later save removes what killed saves left


def test_a_folder_holding_other_files_is_refused_untouched(tmp_path, sources):
    model = SoftCosineModel.load(next(iter(sources.values())))
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"holds 'notes\.txt', which is not part of a saved model"):
        model.save(folder)
    assert os.listdir(folder) == ["notes.txt"]
    assert leftovers(folder) == []


def test_a_save_keeps_the_folder_mode_and_replaces_a_linked_folder(tmp_path, sources):
    first, second = (SoftCosineModel.load(path) for path in sources.values())
    real = first.save(tmp_path / "real")
    real.chmod(0o750)
    link = tmp_path / "link"
    link.symlink_to(real)
    second.save(link)
    assert link.is_symlink()
    assert SoftCosineModel.load(real).model_id == second.model_id
    assert stat.S_IMODE(real.stat().st_mode) == 0o750


def test_leftovers_of_dead_processes_go_those_of_live_ones_stay(tmp_path, sources):
    model = SoftCosineModel.load(next(iter(sources.values())))
    target = model.save(tmp_path / "model")
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead = tmp_path / f".model.saving-{finished.pid}-0000"
    alive = tmp_path / f".model.saving-{os.getpid()}-0000"
    for leftover in (dead, alive):
        leftover.mkdir()
        (leftover / "model.json").write_text("{")
    model.save(target)
    assert leftovers(target) == [alive.name]
    assert SoftCosineModel.load(target).model_id == model.model_id
