"""``es-scm eval`` without a server: an unreachable cluster is one line (end to end against a real
Elasticsearch: tests/integration/test_eval_es.py)."""

from __future__ import annotations

from es_scm.cli import main

DEV = "semeval2016-task3/SemEval2016-Task3-CQA-QL-dev.xml"


def test_unreachable_cluster_is_a_one_line_error(shared_data, capsys):
    status = main([
        "eval", "semeval", "--xml", str(shared_data / DEV), "--embeddings", "none",
        "--es-url", "http://127.0.0.1:9", "--quiet",
    ])  # fmt: skip
    assert status == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("es-scm: error:")
    assert "\n" not in err
