"""Hostile corpora through ``es-scm index`` on a real node (issue 28, items 5 and 9): a line
nested 10,000 levels deep is one bad record and the lines after it are indexed; a corpus folder's
links are not followed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from es_scm.cli import main
from es_scm.cli.errors import EXIT_OK, EXIT_PARTIAL
from es_scm.documents import Document
from es_scm.elastic import SCMIndex

TEXTS = ["wing flow boundary layer", "shock supersonic plate heat", "boundary heat flow"]


def run_cli(capsys, *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_line_nested_10000_levels_deep_is_skipped_and_the_lines_after_it_indexed(
    capsys, es_client, es_url, index_name, model_dir, tmp_path
):
    corpus = tmp_path / "deep.jsonl"
    deep = '{"id": "deep", "text": "wing", "meta": ' + '{"a": ' * 10_000 + "1" + "}" * 10_000
    lines = [json.dumps({"id": f"before-{n}", "text": TEXTS[n % 3]}) for n in range(5)]
    lines += [deep + "}"]
    lines += [json.dumps({"id": f"after-{n}", "text": TEXTS[n % 3]}) for n in range(5)]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run_cli(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--es-url", es_url, "--no-progress", "--on-error", "skip",
    )  # fmt: skip
    assert code == EXIT_PARTIAL, err
    assert "indexed 10 " in out
    assert "failed 1," in out
    assert "the index holds 10 documents" in out
    assert f"{corpus}, line 6: JSON nested more than 100 levels deep" in err
    assert "recursion" not in err.lower()
    assert es_client.count(index=index_name)["count"] == 10
    stored = es_client.mget(index=index_name, ids=["after-4"])["docs"][0]
    assert stored["found"]


def test_metadata_nested_too_deeply_fails_its_document_alone_in_the_api(
    es_client, index_name, model
):
    value: dict = {"leaf": 1}
    for _ in range(10_000):  # no JSON parser involved: the API is given the dict itself
        value = {"a": value}
    documents = [
        Document("fine", TEXTS[0], {"n": 1}),
        Document("deep", TEXTS[1], {"m": value}),
        Document("also-fine", TEXTS[2]),
    ]
    report = SCMIndex(es_client, index_name, model).index_documents(documents)
    assert (report.indexed, report.failed) == (2, 1)
    ((doc_id, reason),) = report.failures
    assert doc_id == "deep"
    assert "metadata field 'm.a.a.a" in reason
    assert "nested more than 100 levels deep" in reason
    assert es_client.count(index=index_name)["count"] == 2


def test_a_corpus_folder_link_out_of_it_is_not_indexed(
    capsys, es_client, es_url, index_name, model_dir, tmp_path
):
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    folder = tmp_path / "docs"
    folder.mkdir()
    for n, text in enumerate(TEXTS):
        (folder / f"doc{n}.txt").write_text(text, encoding="utf-8")
    (folder / "passwd.txt").symlink_to(secret)
    code, out, err = run_cli(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", folder,
        "--format", "dir", "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_OK, err
    assert "the index holds 3 documents" in out
    assert f"es-scm: {folder}: skipped 1 symbolic link (not followed): passwd.txt" in err
    ids = {hit["_id"] for hit in es_client.search(index=index_name, size=10)["hits"]["hits"]}
    assert ids == {"doc0", "doc1", "doc2"}
    assert Path(secret).read_text(encoding="utf-8").startswith("root")  # untouched, unread
