"""Findings of the reliability review that need no server: ids seen across batches, index names
checked before any request, credentials never printed, damaged model files named (the rest, on a
real node: tests/integration/test_reliability.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from es_scm.cli.errors import EXIT_ERROR
from es_scm.elastic import SCMIndex, client_from_env
from tests.support import aero_corpus

TEXTS = [d["text"] for d in aero_corpus(200)]


def test_seen_ids_match_a_set_across_and_within_batches():
    import random

    from es_scm.index.ingest import SeenIds

    rng = random.Random(7)
    seen, reference = SeenIds(), set()
    for _ in range(300):  # batches of 0-59 ids drawn from 5,000: repeats within and across
        keys = [hash(f"id-{rng.randrange(5000)}") for _ in range(rng.randrange(60))]
        expected = []
        for key in keys:
            expected.append(key in reference)
            reference.add(key)
        assert seen.add(keys).tolist() == expected
    assert len(seen) == len(reference)


@pytest.mark.parametrize(
    ("name", "rule"), [("_bad", "must not start"), ("t-*", "must not contain")]
)
def test_index_names_are_checked_before_any_request(model, name, rule):
    unreachable = client_from_env("http://127.0.0.1:9", max_retries=0)
    with pytest.raises(ValueError, match=rule):
        SCMIndex(unreachable, name, model).index_documents(aero_corpus(3))


def test_credentials_are_never_printed(cli, tmp_path, model, monkeypatch):
    model_dir = model.save(tmp_path / "model")
    monkeypatch.setenv("ES_URL", "http://elastic:s3cr3t-pw@127.0.0.1:9")
    code, out, err = cli("search", "--model", model_dir, "--index", "x", "wing")
    assert code == EXIT_ERROR
    assert "s3cr3t-pw" not in out + err
    reached = "cannot reach Elasticsearch at http://elastic:***@127.0.0.1:9 (connection refused)"
    assert reached in err
    code, out, err = cli(
        "search", "--model", model_dir, "--index", "x", "--es-url",
        "http://127.0.0.1:9", "--password", "an0ther-pw", "--username", "u", "wing",
    )  # fmt: skip
    assert "an0ther-pw" not in out + err


def test_damaged_model_files_are_reported_as_such(cli, tmp_path, model):
    model_dir = model.save(tmp_path / "model")
    similarity = Path(model_dir) / "similarity.npz"
    similarity.write_bytes(similarity.read_bytes()[:100])
    code, _, err = cli("similarity", "--model", model_dir, "wing", "flow")
    assert code == EXIT_ERROR
    assert "similarity.npz is damaged" in err
    assert "unexpected" not in err
