"""Unknown tokens counted at ingestion, with a warning when the corpus drifted from the model's
(at build time and without a server: tests/unit/test_unknown_tokens.py)."""

from __future__ import annotations

import json

from es_scm import SoftCosineModel
from es_scm.elastic import SCMIndex

# "wing" and "flow" are in every document, "rare" in one: min_df=2 drops it.
BUILD_CORPUS = [f"the wing and the flow {'rare' if i == 0 else 'wing'}" for i in range(10)]


def test_ingestion_counts_unknown_tokens_and_warns_of_drift(
    cli, es_url, es_client, index_name, tmp_path
):
    model = SoftCosineModel.build(BUILD_CORPUS, min_df=2)
    same = [{"id": f"s{i}", "text": text} for i, text in enumerate(BUILD_CORPUS)]
    report = SCMIndex(es_client, index_name, model).index_documents(same)
    assert (report.tokens, report.unknown_tokens) == (30, 1)
    assert "1 of 30 tokens unknown to the model (3.3%)" in report.summary()
    assert report.warnings == []

    # 400 documents of "wing zebra quokka": 800 of 1200 tokens unknown, far above 3.3%
    drifted = [{"id": f"d{i}", "text": "the wing zebra quokka"} for i in range(400)]
    report = SCMIndex(es_client, index_name, model).index_documents(drifted)
    assert (report.tokens, report.unknown_tokens) == (1200, 800)
    assert any("drifted" in warning for warning in report.warnings)

    path = tmp_path / "drifted.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in drifted), encoding="utf-8")
    code, out, err = cli(
        "index", "--model", model.save(tmp_path / "model"), "--index", index_name,
        "--corpus", path, "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == 0
    assert "800 of 1200 tokens unknown to the model (66.7%)" in out
    assert "warning: 66.7% of the corpus's tokens are unknown to the model" in err
    assert "consider rebuilding the model" in err
