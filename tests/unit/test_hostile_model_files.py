"""A saved model from someone else cannot take the machine's memory, hang, or read outside it.

Each file here is made by hand as an attacker would: valid enough to get past the first checks
(the right names, a ``model_id`` that matches), hostile in one way. The loads run in a child
process where a hang or the memory taken is what is measured: a timeout for a hang (never a
timed assertion), the child's peak resident memory for an archive that inflates.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from es_scm import SoftCosineModel
from es_scm.model.text import Tokenizer
from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings
from tests.support import REPO_ROOT

PEAK_MEMORY = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="the peak memory is read from /proc (Linux)"
)
N_TERMS = 12_000
UNSEEN_WORDS = 40
MiB = 2**20

# Measured in the child: what loading (or refusing) the model took at its peak. VmHWM is the
# peak of this process's own memory (ru_maxrss would start from the parent's peak at the fork).
LOAD = """
import sys
from es_scm import SoftCosineModel
try:
    model = SoftCosineModel.load(sys.argv[1])
except ValueError as error:
    print("refused:", error)
else:
    print("loaded:", model.model_id)
    if len(sys.argv) > 2:
        print("tokens:", model.tokenizer(sys.argv[2]))
status = open("/proc/self/status").read().split("VmHWM:")[1]
print("peak:", int(status.split()[0]) * 1024)
"""


def child(*args: str, timeout: float = 120) -> tuple[str, int]:
    """Run LOAD in a fresh interpreter: its output lines but the last, and its peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", LOAD, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    *lines, peak = done.stdout.strip().splitlines()
    return "\n".join(lines), int(peak.removeprefix("peak: "))


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved model of N_TERMS terms, with words outside them (``unseen.npz``)."""
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(N_TERMS)]
    texts = [" ".join(words[i : i + 6]) for i in range(0, N_TERMS, 6)]
    extra = [f"x{i}" for i in range(UNSEEN_WORDS)]
    vectors = rng.standard_normal((N_TERMS + UNSEEN_WORDS, 8)).astype(np.float32)
    model = SoftCosineModel.build(
        texts, WordEmbeddings(words + extra, vectors), nonzero_limit=2, unseen_limit=N_TERMS * 2
    )
    assert len(model.terms) == N_TERMS
    assert model.unseen is not None
    return model.save(tmp_path_factory.mktemp("saved") / "model")


def copy_of(saved: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(saved, folder)
    return folder


def replace_members(path: Path, members: dict[str, tuple[tuple[int, ...], str]]) -> None:
    """Rewrite the archive ``path`` with each named member replaced by zeros of the shape and
    dtype given: a valid ``.npy`` whose data compresses about 1,000 times (written in chunks)."""
    with zipfile.ZipFile(path) as original:
        kept = {info.filename: original.read(info) for info in original.infolist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, data in kept.items():
            key = name.removesuffix(".npy")
            if key not in members:
                archive.writestr(name, data)
                continue
            shape, dtype = members[key]
            header = np.lib.format.header_data_from_array_1_0(np.zeros((0,), dtype))
            header["shape"] = shape
            with archive.open(name, "w", force_zip64=True) as out:
                np.lib.format.write_array_header_2_0(out, header)
                left = int(np.prod(shape)) * np.dtype(dtype).itemsize
                chunk = bytes(8 * MiB)
                while left:
                    out.write(chunk[: min(left, len(chunk))])
                    left -= min(left, len(chunk))


@PEAK_MEMORY
def test_an_s_that_declares_a_gigabyte_is_refused_before_it_is_unpacked(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    nnz = 128 * MiB  # ≤ N_TERMS², so S's shape allows it: only its size on disk does not
    replace_members(
        folder / "similarity.npz", {"data": ((nnz,), "<f4"), "indices": ((nnz,), "<i4")}
    )
    on_disk = (folder / "similarity.npz").stat().st_size
    assert on_disk < 8 * MiB  # 1 GiB of arrays declared in a few MiB
    said, peak = child(str(folder))
    assert said.startswith("refused:"), said
    assert "similarity.npz" in said
    assert "1.0 GiB" in said
    assert peak < 400 * MiB, f"the refusal took {peak / MiB:.0f} MiB"


@PEAK_MEMORY
def test_unseen_words_that_declare_a_gigabyte_are_refused_before_they_are_unpacked(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    dim = 2**15  # the word and term vectors agree on it: only the size on disk gives it away
    with zipfile.ZipFile(folder / "unseen.npz") as archive:
        words = int(np.lib.format.read_array(archive.open("s0_words_offsets.npy")).size) - 1
        terms = int(np.lib.format.read_array(archive.open("s0_term_ids.npy")).size)
    replace_members(
        folder / "unseen.npz",
        {"s0_word_vectors": ((words, dim), "<f2"), "s0_term_vectors": ((terms, dim), "<f2")},
    )
    said, peak = child(str(folder))
    with zipfile.ZipFile(folder / "unseen.npz") as archive:
        declared = sum(info.file_size for info in archive.infolist())
    assert declared > 700 * MiB
    assert said.startswith("refused:"), said
    assert "unseen.npz" in said
    assert f"{declared / 2**20:.1f} MiB" in said
    assert peak < 400 * MiB, f"the refusal took {peak / MiB:.0f} MiB"


def test_arrays_that_do_not_fit_the_vocabulary_are_refused_in_one_line(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    replace_members(folder / "similarity.npz", {"indptr": ((N_TERMS + 2,), "<i4")})
    with pytest.raises(ValueError, match=r"similarity\.npz.*indptr.*12000 terms") as refused:
        SoftCosineModel.load(folder)
    assert "\n" not in str(refused.value)


def test_a_standalone_s_file_is_checked_against_its_own_shape(tmp_path):
    path = tmp_path / "S.npz"
    TermSimilarityMatrix.identity(["a", "b", "c"]).save(path)
    assert TermSimilarityMatrix.load(path).terms == ["a", "b", "c"]
    # three columns hold at most 3² = 9 non-zeros; the file declares 10 (a few bytes)
    replace_members(path, {"data": ((10,), "<f4"), "indices": ((10,), "<i4")})
    with pytest.raises(ValueError, match=r"S\.npz: 10 non-zeros \(80 bytes\) declared.* 3 × 3"):
        TermSimilarityMatrix.load(path)


def test_a_model_file_that_is_a_named_pipe_is_refused_at_once(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    (folder / "similarity.npz").unlink()
    os.mkfifo(folder / "similarity.npz")
    done = subprocess.run(
        [sys.executable, "-m", "es_scm.cli", "model", "info", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,  # before the fix, the open blocked until something wrote to the pipe
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert "similarity.npz is a named pipe (FIFO), not a regular file" in line


@pytest.mark.parametrize("name", ["similarity.npz", "vocabulary.json", "unseen.npz", "model.json"])
def test_a_model_file_that_is_a_symbolic_link_is_refused(saved, tmp_path, name):
    folder = copy_of(saved, tmp_path)
    outside = tmp_path / "elsewhere" / name
    outside.parent.mkdir()
    (folder / name).rename(outside)
    (folder / name).symlink_to(outside)  # the same content: only its place is wrong
    with pytest.raises(ValueError, match=rf"{re.escape(name)} is a symbolic link") as refused:
        SoftCosineModel.load(folder)
    assert "\n" not in str(refused.value)


def test_a_model_folder_that_is_a_link_still_loads(saved, tmp_path):
    link = tmp_path / "current"
    link.symlink_to(saved, target_is_directory=True)
    assert SoftCosineModel.load(link).model_id == SoftCosineModel.load(saved).model_id


def test_a_model_json_beyond_its_limit_is_refused_unread(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    config = folder / "model.json"
    with open(config, "ab") as stream:
        stream.truncate(65 * MiB)  # sparse: the refusal must come from its size alone
    with pytest.raises(ValueError, match=r"model\.json is 65\.0 MiB: more than the 64\.0 MiB"):
        SoftCosineModel.load(folder)


def test_a_model_json_nested_too_deeply_is_one_line(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    (folder / "model.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ValueError, match=r"model\.json is damaged: JSON nested too deeply"):
        SoftCosineModel.load(folder)


EVIL_PATTERN = r"(?:(?:[^\W_]+)+)+[^\W_]*#"


def test_a_model_whose_token_pattern_backtracks_forever_is_refused_quickly(tmp_path):
    tokenizer = Tokenizer()
    tokenizer.token_pattern, tokenizer._regex = EVIL_PATTERN, re.compile(EVIL_PATTERN)
    tokenizer._default_pattern = False
    model = SoftCosineModel.build(["alpha# beta#", "beta# gamma#"], tokenizer=tokenizer)
    folder = model.save(tmp_path / "model")
    assert json.loads((folder / "model.json").read_text())["tokenizer"]["token_pattern"] == (
        EVIL_PATTERN
    )
    # before the fix: the model loaded and these 22 letters took minutes (timeout: a failure)
    said, _ = child(str(folder), "a" * 22, timeout=60)
    assert said.startswith("refused:"), said
    assert "token_pattern" in said
    assert "repeat inside a repeat" in said
    assert "\n" not in said


def test_saved_matrices_declare_far_less_than_the_inflation_limit(saved, tmp_path):
    """The limit refuses no real model: S = identity (one value repeated, which compresses best
    of all S) over 200,000 terms, and a saved model's S and unseen words, declare under 10 times
    their size on disk, against MAX_INFLATION = 100."""
    identity = tmp_path / "identity.npz"
    TermSimilarityMatrix.identity([f"term{i}" for i in range(200_000)]).save(identity)
    for path in (identity, saved / "similarity.npz", saved / "unseen.npz"):
        with zipfile.ZipFile(path) as archive:
            declared = sum(info.file_size for info in archive.infolist())
        assert declared < 10 * path.stat().st_size, path.name
    assert len(TermSimilarityMatrix.load(identity).terms) == 200_000
