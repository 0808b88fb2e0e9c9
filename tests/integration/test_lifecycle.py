"""A document's lifecycle on a real node: upsert, delete by id (idempotent), and the index a
failed `es-scm index` run leaves behind (kept, always, with a word saying why)."""

from __future__ import annotations

import json

import pytest

from es_scm.cli.errors import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL
from es_scm.elastic import IndexNotFoundError, SCMIndex

TEXTS = {
    "wing": "boundary layer on a swept wing",
    "cone": "supersonic flow past a cone",
    "heat": "heat transfer in the boundary layer",
    "plate": "pressure on a flat plate in supersonic flow",
}


def documents() -> list[dict]:
    return [{"id": doc_id, "text": text, "kind": "paper"} for doc_id, text in TEXTS.items()]


def write_jsonl(path, rows: list) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_upsert_then_delete_round_trip(es_client, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    assert index.upsert(documents()).created == 4
    before = index.searcher.search("supersonic cone", k=4)
    assert before.ids()[0] == "cone"

    # the upsert replaces the document whole: new text, new vector, metadata as sent
    report = index.upsert([{"id": "cone", "text": "heat transfer on a swept wing"}])
    assert (report.created, report.updated, report.index_count) == (0, 1, 4)
    after = index.searcher.search("supersonic cone", k=4)
    assert "cone" not in after.ids()[:1]
    assert model.similarity("supersonic cone", "heat transfer on a swept wing") == 0.0
    hits = {hit.id: hit for hit in index.searcher.search("heat transfer swept wing", k=4)}
    assert hits["cone"].source == {"text": "heat transfer on a swept wing"}
    expected = model.similarity("heat transfer swept wing", "heat transfer on a swept wing")
    assert hits["cone"].score == pytest.approx(expected, abs=1e-9)

    deleted = index.delete_documents(["cone"])
    assert (deleted.requested, deleted.deleted, deleted.not_found, deleted.failed) == (1, 1, 0, 0)
    assert "cone" not in index.searcher.search("heat transfer swept wing", k=4).ids()
    assert index.count() == 3

    again = index.delete_documents(["cone", "never-indexed"])
    assert (again.deleted, again.not_found, again.failed) == (0, 2, 0)
    assert again.not_found_ids == ["cone", "never-indexed"]
    assert again.ok
    assert index.count() == 3


def test_deleting_checks_ids_and_the_index(es_client, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    index.index_documents(documents())
    report = index.delete_documents(["", "L" * 600, "wing", "wing", 7])
    assert (report.requested, report.duplicates) == (4, 1)
    assert (report.deleted, report.not_found, report.failed) == (1, 1, 2)
    assert not report.ok
    reasons = dict(report.failures)
    assert "non-empty string" in reasons["''"]
    assert "512 bytes" in reasons["L" * 600]
    with pytest.raises(ValueError, match="not a single string"):
        index.delete_documents("wing")
    with pytest.raises(IndexNotFoundError):
        SCMIndex(es_client, index_name + "-missing", model).delete_documents(["wing"])


def test_the_delete_command(cli, es_client, es_url, index_name, model, tmp_path):
    SCMIndex(es_client, index_name, model).index_documents(documents())
    model_dir = model.save(tmp_path / "model")
    common = ("--model", model_dir, "--index", index_name, "--es-url", es_url)
    code, out, _ = cli("delete", *common, "--ids", "wing", "nope")
    assert code == EXIT_OK
    assert f"{index_name}: deleted 1, not found 1, failed 0 of 2 ids" in out
    assert "1 id(s) not in the index (nothing to delete): nope" in out
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("cone\n\nheat\r\nwing\n", encoding="utf-8")
    code, out, _ = cli("delete", *common, "--ids-file", ids_file)
    assert code == EXIT_OK
    assert "deleted 2, not found 1, failed 0 of 3 ids" in out
    assert SCMIndex(es_client, index_name, model).count() == 1
    code, _, err = cli("delete", *common, "--ids", "L" * 600)
    assert code == EXIT_PARTIAL
    assert "512 bytes" in err
    code, _, err = cli("delete", *common, "--ids-file", tmp_path / "missing.txt")
    assert code == EXIT_ERROR
    assert "ids file not found" in err


# -- what a failed run leaves behind --------------------------------------------------------------


def index_command(cli, es_url, index_name, model_dir, corpus, *more) -> tuple[int, str, str]:
    return cli(
        "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--es-url", es_url, "--no-progress", *more,
    )  # fmt: skip


def test_a_failed_run_keeps_the_empty_index_it_created_and_says_why(
    cli, es_client, es_url, index_name, model, tmp_path
):
    """Deleting it would be check-then-act: another run may be writing to it (issue 28, item 1;
    the two runs: test_concurrent_runs.py)."""
    model_dir = model.save(tmp_path / "model")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n", encoding="utf-8")
    code, out, err = index_command(cli, es_url, index_name, model_dir, broken)
    assert code == EXIT_ERROR
    assert "indexed 0" in out
    assert "the index holds 0 documents" in out
    kept = f"kept the index '{index_name}' that this run created, though this run indexed nothing"
    assert kept in err
    assert "es-scm never deletes an index on its own" in err
    assert SCMIndex(es_client, index_name, model).count() == 0

    every_one_fails = write_jsonl(tmp_path / "ids.jsonl", [{"id": "L" * 600, "text": "wing"}])
    code, _, err = index_command(cli, es_url, index_name, model_dir, every_one_fails)
    assert code == EXIT_PARTIAL
    assert f"kept the index '{index_name}': it existed before this run" in err
    assert SCMIndex(es_client, index_name, model).count() == 0


def test_a_failed_run_says_why_it_keeps_the_index(
    cli, es_client, es_url, index_name, model, tmp_path
):
    model_dir = model.save(tmp_path / "model")
    good = write_jsonl(tmp_path / "good.jsonl", documents())
    half = tmp_path / "half.jsonl"
    half.write_text(
        "".join(json.dumps({"id": f"h{i}", "text": "swept wing"}) + "\n" for i in range(3))
        + "{not json\n",
        encoding="utf-8",
    )
    code, _, err = index_command(cli, es_url, index_name, model_dir, half, "--batch-size", "1")
    assert code == EXIT_ERROR
    assert f"kept the index '{index_name}' that this run created: it holds the 3 documents" in err
    assert SCMIndex(es_client, index_name, model).count() == 3

    other = index_name + "-existing"
    assert index_command(cli, es_url, other, model_dir, good)[0] == EXIT_OK
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n", encoding="utf-8")
    code, _, err = index_command(cli, es_url, other, model_dir, broken)
    assert code == EXIT_ERROR
    assert f"kept the index '{other}': it existed before this run" in err
    assert SCMIndex(es_client, other, model).count() == 4
