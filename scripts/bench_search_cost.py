#!/usr/bin/env python
"""Where a search's time goes, per method and per collection size (issue 33).

For each size N (the first N paragraphs of the Wikipedia extract), one model (``es-scm model
build`` with its defaults: S from the sentence encoder's term vectors) and one index are made
once and kept under ``--cache`` (outside the repository; ``prepare``), then every method is
timed on the same
100 queries (the first 12 words of the extract's last 100 paragraphs, never indexed), methods
interleaved query by query, ``--repeats`` times (``measure``):

``bm25``
    Elasticsearch's ``match`` on the same index (k = 10, ``_source`` returned): the baseline.
``exact``, ``native``, ``hybrid``, ``fast``
    ``Searcher.search``, ``.native``, ``.hybrid`` and ``.fast`` with their defaults.
``hybrid@N``, ``fast@N``, ``hybrid@all``
    Hybrid search whose SCM leg's first phase sends each query word's N strongest neighbours
    (``all``: every neighbour, the exact leg), and ``fast`` with N (issue 40's frontier).
``full_scan``
    The brute force: every document's SCM from one row-major sparse product in memory (scipy),
    ``BruteForceSearch.search(every_document=True)``; ``exact`` is compared with it on every
    query (ids and scores).
``memory_index``
    The efficient brute force: an inverted index in memory (scipy, column-major), which reads
    only the postings of the query's expansion, ``BruteForceSearch.search``.

Each search's wall time is split into what the node reports (``took``: Elasticsearch's own
work), the transport (the rest of each request's round trip: HTTP, serialization; the client's
JSON decoding is reported apart) and the client's own work (the rest of the wall time), and the
client's work into the query's expansion, the parsing of stored vectors and the exact rescoring,
by timing the functions that do them. The requests a search sends are counted.

``batch`` times ``batch_search`` of the 100 queries against a loop of single calls, per method.
``three-way`` times the three-way hybrid (BM25 + SCM + MiniLM) against BM25 + kNN as a user would
run it in Elasticsearch (the query encoded, then one request with ``query`` and ``knn``).
``bm25-scores`` times hybrid search with BM25's scores of the SCM's candidates reported beside the
SCM's search against asked in a request of their own, on the index of ``--expansion``.
``ingest`` times es-scm's ingestion of the size's paragraphs against a plain-text bulk of the
same paragraphs (the same ``text`` field and analyzer, nothing else) in the same run.

Usage::

    python scripts/bench_search_cost.py prepare --sizes 100000 300000 850000
    python scripts/bench_search_cost.py measure --sizes 100000 300000 850000 \\
        --json results/bench_search_cost.json

Elasticsearch at ``$ES_URL`` (default http://127.0.0.1:9200).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from benchlib import peak_rss_mib, provenance  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
EXTRACT = DATA / "wikipedia-2015" / "text.tar.xz"
K = 10
QUERY_WORDS = 12
INDEX = "es-scm-cost-{size}"
DOCUMENTS_INDEX = "es-scm-cost-documents-{size}"  # expansion="documents": Sy' stored
TEXT_INDEX = "es-scm-cost-text"

#: The client's own work, by the functions that do it: (part, module, attribute path). A
#: function that the code no longer has is reported as missing, never silently left out.
CLIENT_PARTS = (
    ("expansion", "es_scm.search.query", "expand_query"),
    ("parsing", "es_scm.search.results", "Stored.many"),
    ("parsing", "es_scm.search.results", "Stored.of"),
    ("rescoring", "es_scm.search.query", "ExpandedQuery.exact_scores"),
)
#: The same parts in the code before issue 33 (its searcher expanded the query itself), so that
#: the script measures both (a part whose function a version lacks is listed as missing).
CLIENT_PARTS += (("expansion", "es_scm.elastic._sync.searcher", "expand_query"),)


# -- data --------------------------------------------------------------------------------------


def paragraphs(cache: Path) -> list[dict[str, str]]:
    """Every paragraph of the extract as ``{"id", "text"}``, read once and kept in ``cache``."""
    path = cache / "paragraphs.jsonl"
    if not path.exists():
        from es_scm.evaluation.collections import read_wikipedia_paragraphs

        cache.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with open(partial, "w", encoding="utf-8") as out:
            for p in read_wikipedia_paragraphs(EXTRACT):
                out.write(json.dumps({"id": p["id"], "text": p["text"]}) + "\n")
        partial.replace(path)
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def split(every: list[dict[str, str]], queries: int) -> tuple[list[dict[str, str]], list[str]]:
    """The documents (all but the last ``queries`` paragraphs) and the queries (the first 12
    words of those)."""
    texts = [" ".join(p["text"].split()[:QUERY_WORDS]) for p in every[-queries:]]
    return every[:-queries], texts


def corpus_file(cache: Path, documents: list[dict[str, str]], size: int) -> Path:
    path = cache / f"corpus-{size}.jsonl"
    if not path.exists():
        partial = path.with_suffix(".partial")
        with open(partial, "w", encoding="utf-8") as out:
            for d in documents[:size]:
                out.write(json.dumps(d) + "\n")
        partial.replace(path)
    return path


# -- prepare: a model and an index per size, made once -----------------------------------------


def prepare(args: argparse.Namespace, client: Any) -> dict[str, Any]:
    every = paragraphs(args.cache)
    documents, _ = split(every, args.queries)
    made: dict[str, Any] = {}
    for size in args.sizes:
        corpus = corpus_file(args.cache, documents, size)
        model_dir = args.cache / f"model-{size}"
        row: dict[str, Any] = {}
        if not (model_dir / "model.json").exists():
            started = time.perf_counter()
            command = [
                str(Path(sys.executable).parent / "es-scm"),
                "model",
                "build",
                "--corpus",
                str(corpus),
                "--out",
                str(model_dir),
                "--no-progress",
            ]
            subprocess.run(command, check=True)
            row["model_build_s"] = time.perf_counter() - started
            print(f"{size}: model built in {row['model_build_s']:.0f} s", flush=True)
        name = index_name(args, size)
        if args.reindex or not client.indices.exists(index=name):
            row["ingest"] = ingest(args, client, corpus, model_dir, name, size)
        made[str(size)] = row
    return made


def ingest(
    args: argparse.Namespace, client: Any, corpus: Path, model_dir: Path, name: str, size: int
) -> dict[str, Any]:
    """es-scm's ingestion into ``name`` (a fresh subprocess: ``es-scm index``) and a plain-text
    bulk of the same paragraphs into a text-only index with the same text field, alternated
    ``--ingest-repeats`` times; documents per second of each and their ratio."""
    from es_scm.options.defaults import TEXT_ANALYZER

    text_mapping = {"type": "text", "analyzer": TEXT_ANALYZER}
    runs: dict[str, list[float]] = {"es_scm": [], "plain_text": []}
    for _ in range(args.ingest_repeats):
        client.options(ignore_status=404).indices.delete(index=name)
        started = time.perf_counter()
        es_scm_index(args, model_dir, name, corpus, "--expansion", args.expansion)
        runs["es_scm"].append(time.perf_counter() - started)
        runs["plain_text"].append(plain_text_bulk(client, corpus, text_mapping))
    result = {kind: size / statistics.median(seconds) for kind, seconds in runs.items()}
    result["ratio"] = result["es_scm"] / result["plain_text"]
    result["bytes_per_document"] = index_bytes(client, name) / size
    result["text_only_bytes_per_document"] = index_bytes(client, TEXT_INDEX) / size
    client.options(ignore_status=404).indices.delete(index=TEXT_INDEX)
    print(f"{size}: ingestion {json.dumps(result)}", flush=True)
    return result


def es_scm_index(
    args: argparse.Namespace, model_dir: Path, name: str, corpus: Path, *options: str
) -> None:
    """``es-scm index`` of ``corpus`` into ``name`` with the model of ``model_dir`` (and
    ``options``), as a user runs it."""
    command = [
        str(Path(sys.executable).parent / "es-scm"),
        "index",
        "--model",
        str(model_dir),
        "--index",
        name,
        "--corpus",
        str(corpus),
        "--no-progress",
        "--es-url",
        args.es_url,
        *options,
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def plain_text_bulk(client: Any, corpus: Path, text_mapping: dict[str, Any]) -> float:
    """Seconds to bulk the corpus's texts, read from its file as es-scm reads it, into a fresh
    index holding the text field alone (the same mapping: analyzer included), refreshed."""
    from elasticsearch import helpers

    client.options(ignore_status=404).indices.delete(index=TEXT_INDEX)
    client.indices.create(
        index=TEXT_INDEX,
        settings={"number_of_shards": 1, "number_of_replicas": 0},
        mappings={"properties": {"text": text_mapping}},
    )

    def actions() -> Iterator[dict[str, Any]]:
        with open(corpus, encoding="utf-8") as lines:
            for line in lines:
                d = json.loads(line)
                yield {"_index": TEXT_INDEX, "_id": d["id"], "_source": {"text": d["text"]}}

    started = time.perf_counter()
    for ok, item in helpers.streaming_bulk(client, actions(), chunk_size=500, raise_on_error=False):
        if not ok:
            raise RuntimeError(f"plain-text bulk failed: {item}")
    client.indices.refresh(index=TEXT_INDEX)
    return time.perf_counter() - started


def index_name(args: argparse.Namespace, size: int) -> str:
    """The index of a size, of the side of S that ``--expansion`` names."""
    return (INDEX if args.expansion == "query" else DOCUMENTS_INDEX).format(size=size)


def index_bytes(client: Any, name: str) -> int:
    stats = client.indices.stats(index=name, metric="store")
    return int(stats["indices"][name]["primaries"]["store"]["size_in_bytes"])


# -- measure: where the time goes ----------------------------------------------------------------


class Meter:
    """Times what one search does: its requests (wall time, the node's ``took``, the client's
    JSON decoding) and the client's functions of :data:`CLIENT_PARTS`."""

    def __init__(self, client: Any) -> None:
        self.requests = 0
        self.request_s = 0.0
        self.took_s = 0.0
        self.decode_s = 0.0
        self.parts = dict.fromkeys((part for part, _, _ in CLIENT_PARTS), 0.0)
        self.missing: list[str] = []
        self._undo: list[Callable[[], None]] = []
        self._wrap_transport(client)
        for part, module, path in CLIENT_PARTS:
            self._wrap_function(part, module, path)

    def reset(self) -> None:
        self.requests, self.request_s, self.took_s, self.decode_s = 0, 0.0, 0.0, 0.0
        self.parts = dict.fromkeys(self.parts, 0.0)

    def close(self) -> None:
        for undo in reversed(self._undo):
            undo()

    def _wrap_transport(self, client: Any) -> None:
        transport = client.transport
        perform = transport.perform_request
        meter = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            response = perform(*args, **kwargs)
            meter.request_s += time.perf_counter() - started
            meter.requests += 1
            body = response.body
            if isinstance(body, dict) and isinstance(body.get("took"), int | float):
                meter.took_s += body["took"] / 1000
            return response

        transport.perform_request = timed
        self._undo.append(lambda: setattr(transport, "perform_request", perform))
        serializer = transport.serializers.serializers["application/json"]
        loads = serializer.loads

        def timed_loads(data: Any) -> Any:
            started = time.perf_counter()
            try:
                return loads(data)
            finally:
                meter.decode_s += time.perf_counter() - started

        serializer.loads = timed_loads
        self._undo.append(lambda: setattr(serializer, "loads", loads))

    def _wrap_function(self, part: str, module_name: str, path: str) -> None:
        try:
            owner: Any = importlib.import_module(module_name)
            *outer, name = path.split(".")
            for attribute in outer:
                owner = getattr(owner, attribute)
            raw = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        except (ImportError, AttributeError, KeyError):
            self.missing.append(f"{module_name}.{path}")
            print(f"warning: {module_name}.{path} not found; '{part}' not measured", flush=True)
            return
        function = raw.__func__ if isinstance(raw, classmethod | staticmethod) else raw
        meter = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                meter.parts[part] += time.perf_counter() - started

        wrapped: Any = timed
        if isinstance(raw, classmethod):
            wrapped = classmethod(timed)
        elif isinstance(raw, staticmethod):
            wrapped = staticmethod(timed)
        setattr(owner, name, wrapped)
        self._undo.append(lambda: setattr(owner, name, raw))


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
    }


def measure_size(args: argparse.Namespace, client: Any, size: int, queries: list[str]) -> dict:
    from es_scm.elastic import SCMIndex
    from es_scm.model import BruteForceSearch, SoftCosineModel
    from es_scm.search.query import bm25_query

    name = index_name(args, size)
    model = SoftCosineModel.load(args.cache / f"model-{size}")
    index = SCMIndex(client, name, model)
    searcher = index.searcher
    with open(args.cache / f"corpus-{size}.jsonl", encoding="utf-8") as lines:
        documents = [json.loads(line) for line in lines]
    brute = BruteForceSearch(model, [d["id"] for d in documents], [d["text"] for d in documents])
    del documents
    methods: dict[str, Callable[[str], Any]] = {
        "bm25": lambda q: client.search(
            index=name, query=bm25_query(q), size=K, source=True, track_total_hits=False
        ),
        "exact": lambda q: searcher.search(q, K),
        "native": lambda q: searcher.native(q, K),
        "hybrid": lambda q: searcher.hybrid(q, K),
        "fast": lambda q: searcher.fast(q, K),
        "full_scan": lambda q: brute.search(q, K, every_document=True),
        "memory_index": lambda q: brute.search(q, K),
    }
    methods = {m: methods.get(m) or budgeted(searcher, m) for m in args.methods}
    meter = Meter(client)
    for query in queries[:10]:  # warm: caches, JIT, the model check
        for method in methods.values():
            method(query)
    samples: dict[str, list[dict[str, float]]] = {m: [] for m in methods}
    equal = {"ids": 0, "scores": 0, "max_abs_diff": 0.0}
    expansion_terms: list[int] = []
    try:
        for repeat in range(args.repeats):
            for query in queries:
                answers = {}
                for method_name, method in methods.items():
                    meter.reset()
                    started = time.perf_counter()
                    answers[method_name] = method(query)
                    wall = time.perf_counter() - started
                    samples[method_name].append(
                        {
                            "wall": wall,
                            "requests": meter.requests,
                            "took": meter.took_s,
                            "transport": meter.request_s - meter.took_s - meter.decode_s,
                            "decode": meter.decode_s,
                            "client": wall - meter.request_s,
                            **{part: seconds for part, seconds in meter.parts.items()},
                        }
                    )
                if repeat == 0 and "exact" in answers and "full_scan" in answers:
                    exact, scan = answers["exact"], answers["full_scan"]
                    equal["ids"] += exact.ids() == [doc_id for doc_id, _ in scan]
                    diffs = [abs(h.score - s) for h, (_, s) in zip(exact.hits, scan, strict=False)]
                    equal["scores"] += len(diffs) == len(scan) and max(diffs or [0]) <= 1e-9
                    equal["max_abs_diff"] = max(equal["max_abs_diff"], *diffs, 0.0)
                    expansion_terms.append(exact.expansion_terms)
    finally:
        meter.close()
    row: dict[str, Any] = {"documents": size, "queries": len(queries), "repeats": args.repeats}
    row["methods"] = {}
    for method_name, runs in samples.items():
        summary = percentiles([r["wall"] for r in runs])
        for key in ("requests", "took", "transport", "decode", "client", *meter.parts):
            values = [r[key] for r in runs]
            summary[key if key == "requests" else f"{key}_ms"] = (
                statistics.mean(values) if key == "requests" else 1000 * statistics.median(values)
            )
        row["methods"][method_name] = summary
    base = row["methods"].get("bm25", {}).get("p50_ms")
    if base:
        for summary in row["methods"].values():
            summary["x_bm25_p50"] = summary["p50_ms"] / base
            summary["x_bm25_p95"] = summary["p95_ms"] / row["methods"]["bm25"]["p95_ms"]
    if expansion_terms:
        row["exact_equals_brute_force"] = equal
        row["expansion_terms_p50"] = statistics.median(expansion_terms)
    row["missing_parts"] = meter.missing
    row["segments"] = len(client.cat.segments(index=name, format="json"))
    return row


def budgeted(searcher: Any, method: str) -> Callable[[str], Any]:
    """``hybrid@N`` / ``fast@N``: the method with N neighbours a query word in its first phase
    (``hybrid@all``: the exact SCM leg)."""
    name, _, budget = method.partition("@")
    neighbours: int | str = budget if budget == "all" else int(budget)
    call = searcher.hybrid if name == "hybrid" else searcher.fast
    return lambda q: call(q, K, neighbours=neighbours)


def method_name(text: str) -> str:
    """``--methods``: a method above, or ``hybrid@N|all`` / ``fast@N``."""
    name, at, budget = text.partition("@")
    simple = ("bm25", "exact", "native", "hybrid", "fast", "full_scan", "memory_index")
    if (not at and name in simple) or (
        at and name in ("hybrid", "fast") and (budget.isdigit() or budget == "all" == budget)
    ):
        return text
    raise argparse.ArgumentTypeError(f"unknown method {text!r}")


def batch_size(args: argparse.Namespace, client: Any, size: int, queries: list[str]) -> dict:
    """``batch_search`` of every query against a loop of single calls, per method, interleaved
    ``--repeats`` times; medians and their ratio, and the requests each way sends."""
    from es_scm.elastic import SCMIndex
    from es_scm.model import SoftCosineModel

    model = SoftCosineModel.load(args.cache / f"model-{size}")
    searcher = SCMIndex(client, index_name(args, size), model).searcher
    meter = Meter(client)
    calls = {"search": searcher.search, "hybrid": searcher.hybrid, "native": searcher.native}
    rows: dict[str, Any] = {}
    try:
        for method in args.batch_methods:
            times: dict[str, list[float]] = {"loop": [], "batch": []}
            requests: dict[str, int] = {}
            for _ in range(args.repeats + 1):  # the first of each way warms
                for way in ("loop", "batch"):
                    meter.reset()
                    started = time.perf_counter()
                    if way == "loop":
                        loop = [calls[method](q, K) for q in queries]
                    else:
                        batch = searcher.batch_search(queries, K, method=method)
                    times[way].append(time.perf_counter() - started)
                    requests[way] = meter.requests
            assert [r.ids() for r in loop] == [r.ids() for r in batch], "batch = loop"
            loop_s = statistics.median(times["loop"][1:])
            batch_s = statistics.median(times["batch"][1:])
            rows[method] = {
                "loop_s": loop_s,
                "batch_s": batch_s,
                "loop_over_batch": loop_s / batch_s,
                "requests": requests,
            }
            print(f"{size}: batch {method} {json.dumps(rows[method])}", flush=True)
    finally:
        meter.close()
    return rows


DENSE_INDEX = "es-scm-cost-dense-{size}"


def three_way(args: argparse.Namespace, client: Any, size: int, queries: list[str]) -> dict:
    """The three-way hybrid (BM25 + SCM + MiniLM, ``hybrid(dense=True)``) against what a user
    would run in Elasticsearch instead: the query encoded by the same sentence encoder, then one
    search request with ``query`` (BM25) and ``knn``; both count the query's encoding. The index
    (``es-scm index --dense-encoder``, a flat field) is made once and kept: encoding the
    paragraphs takes minutes on 2 cores."""
    from es_scm.elastic import SCMIndex
    from es_scm.encoder import SentenceEncoder
    from es_scm.model import SoftCosineModel
    from es_scm.search.query import bm25_query

    name = DENSE_INDEX.format(size=size)
    model_dir = args.cache / f"model-{size}"
    if not client.indices.exists(index=name):
        corpus = corpus_file(args.cache, split(paragraphs(args.cache), args.queries)[0], size)
        started = time.perf_counter()
        es_scm_index(args, model_dir, name, corpus, "--dense-encoder", "all-MiniLM-L6-v2")
        print(f"{size}: dense index made in {time.perf_counter() - started:.0f} s", flush=True)
    model = SoftCosineModel.load(model_dir)
    encoder = SentenceEncoder("all-MiniLM-L6-v2")
    searcher = SCMIndex(client, name, model, encoder=encoder).searcher

    def bm25_knn(query: str) -> Any:
        vector = encoder.encode([query])[0].tolist()
        knn = {"field": "scm.dense", "query_vector": vector, "k": K, "num_candidates": 100}
        return client.search(index=name, query=bm25_query(query), knn=knn, size=K, source=True)

    methods: dict[str, Callable[[str], Any]] = {
        "bm25": lambda q: client.search(
            index=name, query=bm25_query(q), size=K, source=True, track_total_hits=False
        ),
        "bm25_knn": bm25_knn,
        "hybrid_three_way": lambda q: searcher.hybrid(q, K, dense=True),
        "hybrid": lambda q: searcher.hybrid(q, K),
    }
    meter = Meter(client)
    for query in queries[:10]:
        for method in methods.values():
            method(query)
    samples: dict[str, list[float]] = {m: [] for m in methods}
    requests: dict[str, list[int]] = {m: [] for m in methods}
    try:
        for _ in range(args.repeats):
            for query in queries:
                for method_name, method in methods.items():
                    meter.reset()
                    started = time.perf_counter()
                    method(query)
                    samples[method_name].append(time.perf_counter() - started)
                    requests[method_name].append(meter.requests)
    finally:
        meter.close()
    row: dict[str, Any] = {"documents": size, "methods": {}}
    for method_name, values in samples.items():
        row["methods"][method_name] = {
            **percentiles(values),
            "requests": statistics.mean(requests[method_name]),
        }
    base = row["methods"]["bm25_knn"]["p50_ms"]
    for summary in row["methods"].values():
        summary["x_bm25_knn_p50"] = summary["p50_ms"] / base
    print(f"\n{size:,} paragraphs, three-way hybrid against BM25 + kNN (query encoding counted)")
    for method_name, summary in row["methods"].items():
        print(
            f"{method_name:<17}{summary['p50_ms']:7.1f} {summary['p95_ms']:7.1f} "
            f"x{summary['x_bm25_knn_p50']:5.2f} requests {summary['requests']:.2f}"
        )
    return row


def bm25_scores(args: argparse.Namespace, client: Any, size: int, queries: list[str]) -> dict:
    """Hybrid search with BM25's scores of the SCM's candidates reported beside the SCM's search
    (a ``post_filter`` of the named ``match``) against asked in a request of their own, on the
    index of ``--expansion``: the choice :class:`~es_scm.search.plans.HybridPlan` makes by the
    index's side (docs/SEARCH.md). The two ways interleaved query by query, their hits compared."""
    from es_scm.elastic import SCMIndex, plans
    from es_scm.model import SoftCosineModel

    model = SoftCosineModel.load(args.cache / f"model-{size}")
    searcher = SCMIndex(client, index_name(args, size), model).searcher
    made = plans.HybridPlan.__init__
    forced: dict[str, bool] = {}

    def init(plan: Any, request: Any, context: Any) -> None:  # the way under test, imposed
        made(plan, request, context)
        fused = "bm25" in request.legs and plan.fuses_scm and plan.fusion.uses_scores
        plan.beside = forced["reported"] and fused

    plans.HybridPlan.__init__ = init  # type: ignore[method-assign]
    meter = Meter(client)
    samples: dict[str, list[float]] = {"reported": [], "apart": []}
    requests: dict[str, list[int]] = {"reported": [], "apart": []}
    same = 0
    try:
        for way in samples:
            forced["reported"] = way == "reported"
            for query in queries[:10]:  # warm
                searcher.hybrid(query, K)
        for _ in range(args.repeats):
            for query in queries:
                ids = []
                for way in samples:
                    forced["reported"] = way == "reported"
                    meter.reset()
                    started = time.perf_counter()
                    result = searcher.hybrid(query, K)
                    samples[way].append(time.perf_counter() - started)
                    requests[way].append(meter.requests)
                    ids.append([(hit.id, hit.components) for hit in result])
                same += ids[0] == ids[1]
    finally:
        plans.HybridPlan.__init__ = made  # type: ignore[method-assign]
        meter.close()
    row: dict[str, Any] = {"documents": size, "expansion": args.expansion, "same_hits": same}
    for way, values in samples.items():
        row[way] = {**percentiles(values), "requests": statistics.mean(requests[way])}
    print(
        f"{size:,} paragraphs ({args.expansion} side), hybrid: BM25's scores reported "
        f"{row['reported']['p50_ms']:.1f} ms p50 ({row['reported']['requests']:.2f} requests), "
        f"asked apart {row['apart']['p50_ms']:.1f} ms ({row['apart']['requests']:.2f}); the same "
        f"hits and components on {same} of {len(queries) * args.repeats} searches"
    )
    return row


def print_table(row: dict[str, Any]) -> None:
    print(f"\n{row['documents']:,} paragraphs (p50/p95 ms; medians of the parts, ms)")
    header = "method     p50    p95   ×BM25  req   took  trans  decode client  expand parse rescore"
    print(header)
    for name, m in row["methods"].items():
        print(
            f"{name:<9}{m['p50_ms']:6.1f} {m['p95_ms']:6.1f} {m.get('x_bm25_p50', 0):6.2f} "
            f"{m['requests']:4.1f} {m['took_ms']:6.1f} {m['transport_ms']:6.1f} "
            f"{m['decode_ms']:6.1f} {m['client_ms']:6.1f} {m['expansion_ms']:7.1f} "
            f"{m['parsing_ms']:5.1f} {m['rescoring_ms']:7.1f}"
        )
    if "exact_equals_brute_force" in row:
        print(f"exact = brute force: {json.dumps(row['exact_equals_brute_force'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("prepare", "measure", "batch", "three-way", "bm25-scores"))
    parser.add_argument("--sizes", nargs="+", type=int, default=[100_000, 300_000, 850_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ingest-repeats", type=int, default=1)
    parser.add_argument(
        "--methods",
        nargs="+",
        type=method_name,
        default=["bm25", "exact", "native", "hybrid", "full_scan"],
        help="bm25, exact, native, hybrid, fast, full_scan, memory_index, hybrid@N|all, fast@N",
    )
    parser.add_argument("--batch-methods", nargs="+", default=["hybrid", "search"])
    parser.add_argument("--reindex", action="store_true", help="prepare: ingest again")
    parser.add_argument(
        "--expansion",
        choices=("query", "documents"),
        default="query",
        help="the indices' side of S (es-scm index --expansion): documents stores Sy'",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=REPO.parent / "bench-cache",
        help="where the paragraphs, corpora, models live (outside the repository)",
    )
    parser.add_argument("--es-url", default=os.environ.get("ES_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    from es_scm.elastic import client_from_env

    client = client_from_env(args.es_url, request_timeout=600)
    summary: dict[str, Any] = {"provenance": provenance(sys.argv, client)}
    if args.step == "prepare":
        summary["prepared"] = prepare(args, client)
    else:
        every = paragraphs(args.cache)
        _, queries = split(every, args.queries)
        del every
        rows = []
        for size in args.sizes:
            if args.step == "measure":
                row = measure_size(args, client, size, queries)
                print_table(row)
            elif args.step == "three-way":
                row = three_way(args, client, size, queries)
            elif args.step == "bm25-scores":
                row = bm25_scores(args, client, size, queries)
            else:
                row = {"documents": size, "batch": batch_size(args, client, size, queries)}
            rows.append(row)
        summary["rows"] = rows
        summary["peak_rss_mib"] = peak_rss_mib()
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")


with contextlib.suppress(KeyboardInterrupt):
    if __name__ == "__main__":
        main()
