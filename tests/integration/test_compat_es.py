"""Client and server majors across each other, on real servers.

``$ES_SCM_ES8_URL`` names an Elasticsearch 8 server and ``$ES_SCM_ES9_URL`` a 9 one;
``scripts/run-tests`` sets both (the first for the 9.x client's run, the second for the 8.x
client's). Each test is for one client major and the other major's server (``client`` marker):
where the installed client or that server differs, it is deselected (tests/integration/conftest.py),
as a plain run has no server of the other major.
"""

from __future__ import annotations

import os
import uuid

import elasticsearch
import pytest

from es_scm import SCMIndex, SoftCosineModel, TermSimilarityMatrix
from es_scm.cli import main
from es_scm.cli.errors import EXIT_ERROR
from es_scm.elastic import cluster_version
from es_scm.elastic.connection import client_from_env, error_reason

TEXTS = ["the car drives on the road", "an automobile on the highway", "a cat sleeps on a mat"]


def server(variable: str, major: int) -> str:
    url = os.environ.get(variable)
    if not url:
        pytest.skip(f"${variable} names no Elasticsearch {major} server")
    return url


def thesaurus_model() -> SoftCosineModel:
    pairs = [("car", "automobile", 0.8), ("road", "highway", 0.6)]
    return SoftCosineModel.build(
        TEXTS, similarity=lambda terms: TermSimilarityMatrix.from_pairs(terms, pairs)
    )


@pytest.mark.client(major=9, server="ES_SCM_ES8_URL")
def test_the_9_client_on_an_8_server_names_the_install_that_fixes_it():
    client = client_from_env(server("ES_SCM_ES8_URL", 8))
    with pytest.raises(elasticsearch.BadRequestError) as refused:
        client.count()
    reason = error_reason(refused.value)
    assert reason.startswith(f"the Python client elasticsearch {elasticsearch.__versionstr__} ")
    assert "Elasticsearch 8 server refuses: pip install 'elasticsearch>=8.19,<9'" in reason
    assert "(media_type_header_exception: " in reason


@pytest.mark.client(major=8, server="ES_SCM_ES9_URL")
def test_the_8_client_indexes_and_searches_on_a_9_server():
    client = client_from_env(server("ES_SCM_ES9_URL", 9))
    assert cluster_version(client).startswith("9.")
    index = SCMIndex(client, f"es-scm-test-{uuid.uuid4().hex[:12]}", thesaurus_model())
    try:
        report = index.index_documents([{"id": str(i), "text": t} for i, t in enumerate(TEXTS)])
        assert (report.created, report.failed) == (3, 0)
        result = index.searcher.search("car on the road", k=3)
        # "car"/"road" are in document 0; document 1 has their synonyms only; 2 neither
        assert result.ids() == ["0", "1"]
        assert result.exact_guarantee
    finally:
        index.delete()


@pytest.mark.client(major=9, server="ES_SCM_ES8_URL")
@pytest.mark.parametrize("command", ["index", "search"])
def test_the_command_line_names_the_client_major_and_the_fix(
    capsys, monkeypatch, tmp_path, command
):
    """``index`` starts with a HEAD request, whose refusal has no body; ``search`` with a GET."""
    monkeypatch.setenv("ES_URL", server("ES_SCM_ES8_URL", 8))
    model = thesaurus_model().save(tmp_path / "model")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(f'{{"id": "{i}", "text": "{t}"}}\n' for i, t in enumerate(TEXTS)))
    name = f"es-scm-test-{uuid.uuid4().hex[:12]}"
    if command == "index":
        argv = ["index", "--model", model, "--index", name, "--corpus", corpus]
    else:
        argv = ["search", "--model", model, "--index", name, "car"]
    assert main([str(arg) for arg in argv]) == EXIT_ERROR
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert "None" not in lines[0]
    assert f"the Python client elasticsearch {elasticsearch.__versionstr__} " in lines[0]
    assert "Elasticsearch 8 server refuses: pip install 'elasticsearch>=8.19,<9'" in lines[0]
