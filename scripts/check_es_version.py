#!/usr/bin/env python
"""Check es-scm on one Elasticsearch version: Cranfield indexed, exact search against brute force.

Starts that version with the local runner (on ``--port``, stopped afterwards), indexes the 1,400
Cranfield abstracts with a GloVe model, and counts the queries whose ``exact`` top 10 (default
options, so a cluster without the ``sparse_vector`` query exercises the switch to term
clauses) equals the in-memory brute force's, and whose ``hybrid`` search answers. An 8.x
server needs the 8.x client first on ``PYTHONPATH``
(``pip install --target DIR 'elasticsearch>=8.19,<9'``; ``make test`` makes ``.es8-client``).

Usage::

    PYTHONPATH=.es8-client python scripts/check_es_version.py --version 8.15.5 --port 9560

Writes ``results/check_es_<version>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import elasticsearch  # noqa: E402
from benchlib import provenance  # noqa: E402  (scripts/benchlib.py)

from es_scm.elastic import SCMIndex, client_from_env  # noqa: E402
from es_scm.evaluation.collections import read_cranfield  # noqa: E402
from es_scm.model import BruteForceSearch, SoftCosineModel  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402
from es_scm.tools.node import LocalElasticsearch  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
K = 10


def check(url: str) -> dict:
    cranfield = read_cranfield(DATA / "ir-collections" / "cranfield")
    ids, texts = list(cranfield.documents), list(cranfield.documents.values())
    model = SoftCosineModel.build(texts, WordEmbeddings.glove_6b_50d())
    index = SCMIndex(client_from_env(url), "es-scm-version-check", model)
    index.delete()
    report = index.index_documents([{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)])
    brute = BruteForceSearch(model, ids, texts)
    equal = hybrid = 0
    for query in cranfield.queries.values():
        result = index.searcher.search(query, K)
        equal += result.ids() == [doc_id for doc_id, _ in brute.search(query, K)]
        hybrid += len(index.searcher.hybrid(query, K).hits) > 0
    query_type = index.searcher.query_type  # after the searches: the form they settled on
    index.delete()
    return {
        "indexed": report.indexed,
        "queries": len(cranfield.queries),
        "exact_equals_brute_force": equal,
        "hybrid_answered": hybrid,
        "query_type_used": query_type,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", required=True)
    parser.add_argument("--port", type=int, default=9560)
    parser.add_argument("--json")
    args = parser.parse_args()
    node = LocalElasticsearch(version=args.version, port=args.port)
    url = node.start()
    try:
        checked = check(url)
        record = provenance(sys.argv, client_from_env(url))
    finally:
        node.stop()
    summary = {"provenance": record, **checked}
    summary.update(version=args.version, client=elasticsearch.__versionstr__)
    print(json.dumps(summary))
    out = args.json or REPO / "results" / f"check_es_{args.version}.json"
    Path(out).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
