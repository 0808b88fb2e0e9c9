#!/usr/bin/env python
"""Record real Elasticsearch answers for the unit tests of search's pure core.

The pure core of search (exact search's windows, the checks of every answer, hybrid search's
fusion and bound) is unit-tested without a server by replaying answers that a real node gave:
this script makes small indices on the node at ``ES_URL``, runs es-scm's searcher on them with
every call it makes recorded (the API, its arguments, the answer or the refusal), asks the few
extra questions the tests check the answers against, deletes the indices, and writes the
recordings under ``tests/unit/recorded/`` as JSON, each with the documents and model settings
to rebuild the model and its provenance (``scripts/benchlib.py``).

Usage::

    ES_URL=http://127.0.0.1:9200 python scripts/record_answers.py

Scenarios (``tests/unit/test_recorded_answers.py`` replays them):

``windows.json``
    exact search's windows: doubling until proven, exhaustion (at once, and after doubling),
    the largest window reached unproven, and the clause limit leaving out terms (pruned mass).
``target.json``
    an alias moved to another index between the model check and a search; an alias with
    routing answering from one shard of three; a search with a failed shard.
``hybrid.json``
    hybrid search (``max`` fusion) at a depth too small to prove its top k, at one that proves
    it by the bound and at one whose lists hold every match, with BM25's scores of every
    document to check the proof against; and (``linear`` fusion, which reads whole lists) at
    the depth that proves it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from elasticsearch import ApiError, Elasticsearch  # noqa: E402

from es_scm import SoftCosineModel, TermSimilarityMatrix  # noqa: E402
from es_scm.elastic import NotProvenError, SCMIndex, Searcher, client_from_env  # noqa: E402

OUT = REPO / "tests" / "unit" / "recorded"
PREFIX = "es-scm-recorded"
#: The windows corpus: 30 equal short documents, 60 equal longer ones, 5 of another topic.
WINDOWS_CORPUS = (
    [{"id": f"a{i:02d}", "text": "car"} for i in range(30)]
    + [{"id": f"b{i:02d}", "text": "car wheel city trip fuel"} for i in range(60)]
    + [{"id": f"c{i}", "text": "boat harbour"} for i in range(5)]
)
#: The hybrid corpus: car words, some with the synonym only (S relates car and automobile).
HYBRID_CORPUS = [
    {"id": f"h{i:02d}", "text": text}
    for i, text in enumerate(
        [
            "car garage",
            "automobile garage repair",
            "car road trip",
            "automobile dealer",
            "old car engine",
            "garage door",
            "road trip map",
            "fast automobile race",
            "red car",
            "engine oil change",
            "car wash",
            "city road",
            "automobile museum visit",
            "garage sale",
            "car insurance price",
            "trip planner",
        ]
    )
]
THESAURUS = [("car", "automobile", 0.8)]


class Recorder:
    """Records every call that a searcher makes through the client's ``search``, ``mget`` and
    ``msearch``: the API, its keyword arguments, and the answer (``status``, ``body``) or the
    refusal."""

    APIS = ("search", "mget", "msearch")

    def __init__(self, client: Elasticsearch) -> None:
        self.calls: list[dict[str, Any]] = []
        for api in self.APIS:
            setattr(client, api, self._recording(api, getattr(client, api)))

    def _recording(self, api: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(**kwargs: Any) -> Any:
            try:
                response = call(**kwargs)
            except ApiError as error:
                self.calls.append({"api": api, "kwargs": kwargs, **_refusal(error)})
                raise
            answer = {"status": response.meta.status, "body": response.body}
            self.calls.append({"api": api, "kwargs": kwargs, **answer})
            return response

        return recorded

    def take(self) -> list[dict[str, Any]]:
        """The calls since the last take."""
        calls, self.calls = self.calls, []
        return calls


def _refusal(error: ApiError) -> dict[str, Any]:
    return {"status": error.meta.status, "body": error.body}


def _indexed(client: Elasticsearch, name: str, model: SoftCosineModel, docs: list, **create: Any):
    index = SCMIndex(client, name, model)
    index.delete()
    index.create(**create)
    report = index.index_documents(docs, concurrency=1)
    assert report.ok, report.failures[:3]
    index.optimize()  # one segment: Elasticsearch ranks ties in the order the documents came
    return index


def _get_index(client: Elasticsearch, name: str) -> dict[str, Any]:
    response = client.options(ignore_status=404).indices.get(index=name)
    return {"status": response.meta.status, "body": response.body}


def record_windows(client: Elasticsearch) -> dict[str, Any]:
    """Exact search's scenarios on the windows corpus (module docstring)."""
    name = f"{PREFIX}-windows"
    model = SoftCosineModel.build([d["text"] for d in WINDOWS_CORPUS])
    _indexed(client, name, model, WINDOWS_CORPUS)
    scenarios = {
        "doubling": {"query": "car", "k": 10},
        "exhausted": {"query": "boat", "k": 10},
        "exhausted_after_doubling": {"query": "car", "k": 35},
        "largest_window": {"query": "car", "k": 35, "max_window": 40},
        "pruned": {"query": "car wheel", "k": 10, "max_clauses": 1},
    }
    recorded = {}
    try:
        for scenario, asked in scenarios.items():
            recorded[scenario] = {**asked, "calls": _exact_calls(client, name, model, asked)}
            print(f"windows: {scenario}: {len(recorded[scenario]['calls'])} calls")
    finally:
        SCMIndex(client, name, model).delete()
    return {"index": name, "documents": WINDOWS_CORPUS, "model_id": model.model_id, **recorded}


def _exact_calls(
    client: Elasticsearch, name: str, model: SoftCosineModel, asked: dict[str, Any]
) -> list[dict[str, Any]]:
    options = {key: asked[key] for key in ("max_window", "max_clauses") if key in asked}
    searcher = Searcher(client, name, model, **options)
    searcher.check()
    searcher.max_clauses()
    recorder = Recorder(client)
    try:
        searcher.search(asked["query"], asked["k"])
    except NotProvenError:
        pass  # recorded: the largest window read
    finally:
        for api in Recorder.APIS:  # the client's own methods again
            delattr(client, api)
    return recorder.take()


def record_target(client: Elasticsearch) -> dict[str, Any]:
    """An alias moved, an alias with routing, a failed shard (module docstring)."""
    model = SoftCosineModel.build([d["text"] for d in WINDOWS_CORPUS])
    first, second = f"{PREFIX}-target-a", f"{PREFIX}-target-b"
    alias, routed = f"{PREFIX}-target", f"{PREFIX}-target-routed"
    partial_a, partial_b = f"{PREFIX}-partial-a", f"{PREFIX}-partial-b"
    made = [first, second, partial_a, partial_b]
    try:
        _indexed(client, first, model, WINDOWS_CORPUS[:40], shards=3)
        _indexed(client, second, model, WINDOWS_CORPUS[40:])
        client.indices.put_alias(index=first, name=alias)
        client.indices.put_alias(index=first, name=routed, routing="1")
        checked = _get_index(client, alias)
        query = {"match": {"text": "car"}}
        client.indices.update_aliases(
            actions=[
                {"remove": {"index": first, "alias": alias}},
                {"add": {"index": second, "alias": alias}},
            ]
        )
        moved = client.search(index=alias, query=query, size=5).body
        checked_again = _get_index(client, alias)
        routed_checked = _get_index(client, routed)
        routed_answer = client.search(index=routed, query=query, size=5).body
        partial = _failed_shard(client, partial_a, partial_b)
    finally:
        client.options(ignore_status=404).indices.delete(index=",".join(made))
    return {
        "model_id": model.model_id,
        "alias": alias,
        "moved": {"checked": checked, "answer": moved, "checked_again": checked_again},
        "routed": {"name": routed, "checked": routed_checked, "answer": routed_answer},
        "partial": partial,
    }


def _failed_shard(client: Elasticsearch, numeric: str, keyword: str) -> dict[str, Any]:
    """A search of two indices that fails on one shard: a number field in one index, a keyword
    in the other, and a term that is not a number (the whole answer, with the failure)."""
    for name, kind in ((numeric, "long"), (keyword, "keyword")):
        client.options(ignore_status=404).indices.delete(index=name)
        client.indices.create(index=name, mappings={"properties": {"n": {"type": kind}}})
    client.index(index=numeric, id="1", document={"n": 5}, refresh=True)
    client.index(index=keyword, id="2", document={"n": "abc"}, refresh=True)
    pattern = f"{PREFIX}-partial-*"
    checked = _get_index(client, pattern)
    answer = client.search(
        index=pattern, query={"term": {"n": "abc"}}, allow_partial_search_results=True
    ).body
    return {"pattern": pattern, "checked": checked, "answer": answer}


def record_hybrid(client: Elasticsearch) -> dict[str, Any]:
    """Hybrid search at two depths, and BM25's scores of every document (module docstring)."""
    name = f"{PREFIX}-hybrid"
    texts = [d["text"] for d in HYBRID_CORPUS]
    model = SoftCosineModel.build(
        texts, similarity=lambda terms: TermSimilarityMatrix.from_pairs(terms, THESAURUS)
    )
    _indexed(client, name, model, HYBRID_CORPUS)
    query, k = "car garage", 3
    recorded: dict[str, Any] = {}
    try:
        searcher = Searcher(client, name, model)
        searcher.check()
        searcher.max_clauses()
        for fusion, depth in (("max", 3), ("max", 6), ("max", 16), ("linear", 6)):
            recorder = Recorder(client)
            searcher.hybrid(query, k, fusion=fusion, depth=depth)
            key = f"depth_{depth}" if fusion == "max" else f"{fusion}_depth_{depth}"
            recorded[key] = {"fusion": fusion, "depth": depth, "calls": recorder.take()}
            for api in Recorder.APIS:
                delattr(client, api)
        every = client.search(index=name, query={"match": {"text": query}}, size=100).body
    finally:
        SCMIndex(client, name, model).delete()
    return {
        "index": name,
        "documents": HYBRID_CORPUS,
        "thesaurus": THESAURUS,
        "model_id": model.model_id,
        "query": query,
        "k": k,
        "bm25_of_every_document": every,
        **recorded,
    }


def main() -> None:
    from benchlib import provenance  # scripts/benchlib.py

    client = client_from_env()
    OUT.mkdir(parents=True, exist_ok=True)
    for file, record in (
        ("windows.json", record_windows),
        ("target.json", record_target),
        ("hybrid.json", record_hybrid),
    ):
        document = {"provenance": provenance(sys.argv, client), **record(client)}
        (OUT / file).write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {(OUT / file).relative_to(REPO)}")


if __name__ == "__main__":
    main()
