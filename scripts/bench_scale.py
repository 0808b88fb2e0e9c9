#!/usr/bin/env python
"""Search, ingestion and model building as the collection grows: 100k, 300k, ~850k paragraphs.

For each size N of the Wikipedia extract (the first N paragraphs; the queries are the first 12
words of the last ``--queries`` paragraphs of the extract, never indexed, the same at every
size), with es-scm's default settings:

* **model build**: seconds and peak RSS of ``SoftCosineModel.build`` (in a subprocess of its own,
  GloVe 6B 50d loaded before the clock starts; ``--min-df``);
* **ingestion**: es-scm's ``index_documents`` against a raw ``helpers.streaming_bulk`` of the
  same precomputed documents (the same ``_source``, the same mapping: Elasticsearch does the same
  work, so the ratio shows how much of es-scm's own Python work is hidden), with the peak RSS of
  the ingesting process (a subprocess: model aside, memory must not grow with N);
* **index size**: bytes per document of es-scm's index and of a text-only index;
* **search latency** (k = 10, p50/p95, client-side wall time, methods interleaved query by
  query): BM25 (``match``), ``native``, ``exact``, ``hybrid``, the brute force (``full_scan``:
  ``BruteForceSearch(...).search(every_document=True)``, every document's SCM from one row-major
  sparse product) and the in-memory inverted index (``brute_force``: ``BruteForceSearch``'s
  default, reading only the expansion terms' columns); ``exact`` is compared with both on every
  query. With ``--optimize``, again after ``optimize()`` (one segment); ``--max-clauses`` also times
  ``exact`` with pruned expansions. ``--expansion documents`` measures all of it on indices with
  document-side expansion (Sy' stored, the query's own terms sent), ``--shards`` on indices of
  several primary shards.

Usage::

    python scripts/bench_scale.py --sizes 100000 300000 850000 --queries 100

Writes ``results/bench_scale.json`` and the plot ``docs/bench_scale.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import peak_rss_mib, provenance  # noqa: E402  (scripts/benchlib.py)

from es_scm.options.defaults import EXPANSIONS  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
EXTRACT = DATA / "wikipedia-2015" / "text.tar.xz"
K = 10
INDEX = "es-scm-bench-scale"
RAW_INDEX = "es-scm-bench-scale-raw"
TEXT_INDEX = "es-scm-bench-scale-text"


def paragraphs(limit: int | None = None) -> list[dict]:
    from es_scm.evaluation.collections import read_wikipedia_paragraphs

    return [
        {"id": p["id"], "text": p["text"]} for p in read_wikipedia_paragraphs(EXTRACT, limit=limit)
    ]


# -- subprocess workers (fresh memory) ----------------------------------------------------------


def build_worker(corpus: str, model_dir: str, min_df: int, embeddings: str = "glove") -> None:
    """``embeddings``: ``glove`` (GloVe 6B 50d, loaded before the clock starts), or any value of
    ``SoftCosineModel.build``'s ``embeddings`` (``auto``: the command line's default)."""
    from es_scm.model import SoftCosineModel
    from es_scm.similarity import WordEmbeddings

    source = WordEmbeddings.glove_6b_50d() if embeddings == "glove" else embeddings
    with open(corpus, encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line in lines]
    baseline = peak_rss_mib()
    started = time.perf_counter()
    model = SoftCosineModel.build(texts, source, min_df=int(min_df))
    seconds = time.perf_counter() - started
    model.save(model_dir)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_rss_mib": peak_rss_mib(),
                "rss_before_build_mib": baseline,
                "terms": len(model.terms),
                "similarity_nnz": model.similarity_matrix.nnz,
            }
        )
    )


def ingest_worker(
    corpus: str, model_dir: str, es_url: str, kind: str, expansion: str, shards: str = "1"
) -> None:
    """``kind`` = ``es_scm`` (index_documents) or ``raw`` (streaming_bulk of ready sources)."""
    from elasticsearch import helpers

    from es_scm.elastic import SCMIndex, client_from_env
    from es_scm.index.schema import encode_documents, feature_keys
    from es_scm.model import SoftCosineModel

    model = SoftCosineModel.load(model_dir)
    client = client_from_env(es_url, request_timeout=300)
    after_model = peak_rss_mib()

    def stream():
        with open(corpus, encoding="utf-8") as lines:
            for line in lines:
                yield json.loads(line)

    if kind == "es_scm":
        index = SCMIndex(client, INDEX, model)
        index.delete()
        index.create(expansion=expansion, shards=int(shards))
        started = time.perf_counter()
        report = index.index_documents(stream(), refresh=False)
        seconds = time.perf_counter() - started
        assert report.ok, report.summary()
    else:
        index = SCMIndex(client, RAW_INDEX, model)
        index.delete()
        index.create(expansion=expansion, shards=int(shards))
        keys = feature_keys(len(model.terms))
        actions = []  # precomputed before the clock starts, as a raw bulk would be
        batch: list[dict] = []
        for document in [*stream(), None]:
            if document is not None:
                batch.append(document)
            if len(batch) == 500 or (document is None and batch):
                texts = [d["text"] for d in batch]
                matrix = model.similarity_matrix
                normalized = matrix.normalize(model.vectorize_many(texts))
                expanded = matrix.expand_documents(normalized) if expansion == "documents" else None
                for d, source in zip(
                    batch,
                    encode_documents(texts, normalized, [None] * len(batch), keys, expanded),
                    strict=True,
                ):
                    actions.append({"_index": RAW_INDEX, "_id": d["id"], "_source": source})
                batch = []
        started = time.perf_counter()
        for ok, item in helpers.streaming_bulk(
            client, actions, chunk_size=500, raise_on_error=False
        ):
            if not ok:
                raise RuntimeError(f"raw bulk failed: {item}")
        seconds = time.perf_counter() - started
    client.indices.refresh(index=index.name)
    print(
        json.dumps(
            {"seconds": seconds, "peak_rss_mib": peak_rss_mib(), "rss_after_model_mib": after_model}
        )
    )


def run_worker(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"worker {args[0]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the measurements of one size ---------------------------------------------------------------


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "n": len(ordered),
    }


def index_bytes(client, name: str) -> int:
    stats = client.indices.stats(index=name, metric="store")
    return int(stats["indices"][name]["primaries"]["store"]["size_in_bytes"])


def text_index(client, docs: list[dict]) -> None:
    from elasticsearch import helpers

    client.options(ignore_status=404).indices.delete(index=TEXT_INDEX)
    client.indices.create(
        index=TEXT_INDEX,
        settings={"number_of_shards": 1, "number_of_replicas": 0},
        mappings={"properties": {"text": {"type": "text"}}},
    )
    actions = ({"_index": TEXT_INDEX, "_id": d["id"], "_source": {"text": d["text"]}} for d in docs)
    for ok, item in helpers.streaming_bulk(client, actions, chunk_size=500, raise_on_error=False):
        if not ok:
            raise RuntimeError(f"text bulk failed: {item}")
    client.indices.refresh(index=TEXT_INDEX)


def unproven_too(searcher, query: str):
    """Exact mode's result, also when it could not prove its top k (``exact_guarantee`` False)."""
    from es_scm.search.results import NotProvenError

    try:
        return searcher.search(query, K)
    except NotProvenError as error:
        return error.result


def search_latency(
    client, model, docs: list[dict], queries: list[str], repeats: int, max_clauses: list[int]
) -> dict:
    """Latency of every method, query by query; ``exact@M``: exact mode keeping at most M
    expansion terms (the rest bounded, so the proof may need a larger window or fail)."""
    from es_scm.elastic import SCMIndex, Searcher
    from es_scm.model import BruteForceSearch
    from es_scm.search.query import bm25_query

    index = SCMIndex(client, INDEX, model)
    brute = BruteForceSearch(model, [d["id"] for d in docs], [d["text"] for d in docs])
    methods = {
        "bm25": lambda q: client.search(
            index=INDEX, query=bm25_query(q), size=K, source=True, track_total_hits=False
        ),
        "native": lambda q: index.searcher.native(q, K),
        "exact": lambda q: index.searcher.search(q, K),
        "hybrid": lambda q: index.searcher.hybrid(q, K),
        "brute_force": lambda q: brute.search(q, K),
        "full_scan": lambda q: brute.search(q, K, every_document=True),
    }
    for limit in max_clauses:
        # A window of 1000 at most: past it, a pruned query's proof is not coming.
        pruned = Searcher(client, INDEX, model, max_clauses=limit, max_window=1000)
        methods[f"exact@{limit}"] = lambda q, searcher=pruned: unproven_too(searcher, q)
    for query in queries[:10]:
        for method in methods.values():
            method(query)
    samples: dict[str, list[float]] = {name: [] for name in methods}
    exact_modes = [name for name in methods if name.startswith("exact")]
    checks = {name: {"equal": 0, "proven": 0, "candidates": 0, "rounds": 0} for name in exact_modes}
    checks["exact"]["equals_full_scan"] = 0
    for _ in range(repeats):
        for query in queries:
            results = {}
            for name, method in methods.items():
                started = time.perf_counter()
                results[name] = method(query)
                samples[name].append(time.perf_counter() - started)
            reference = [doc_id for doc_id, _ in results["brute_force"]]
            scanned = [doc_id for doc_id, _ in results["full_scan"]]
            checks["exact"]["equals_full_scan"] += results["exact"].ids() == scanned
            for name in exact_modes:
                result = results[name]
                checks[name]["equal"] += result.ids() == reference
                checks[name]["proven"] += bool(result.exact_guarantee)
                checks[name]["candidates"] += result.candidates
                checks[name]["rounds"] += result.rounds
    runs = repeats * len(queries)
    clauses = [len(index.searcher.expand(q).clause_terms) for q in queries]
    return {
        "latency": {name: percentiles(values) for name, values in samples.items()},
        "exact_equals_brute_force": checks["exact"]["equal"] / runs,
        "exact_modes": {
            name: {key: value / runs for key, value in counts.items()}
            for name, counts in checks.items()
        },
        "expansion_terms_p50": statistics.median(clauses),
        "segments": len(client.cat.segments(index=INDEX, format="json")),
    }


def measure(size: int, all_docs: list[dict], queries: list[str], args, client) -> dict:
    from es_scm.model import SoftCosineModel

    docs = all_docs[:size]
    row: dict = {"documents": len(docs)}
    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / "corpus.jsonl"
        with open(corpus, "w", encoding="utf-8") as out:
            for d in docs:
                out.write(json.dumps(d) + "\n")
        model_dir = str(Path(scratch) / "model")
        row["model_build"] = run_worker(
            "build", str(corpus), model_dir, str(args.min_df), args.embeddings
        )
        print(f"{len(docs)}: model {row['model_build']}", flush=True)
        if args.build_only:
            return row
        kinds = ("es_scm",) if args.no_raw_bulk else ("raw", "es_scm")
        runs: dict[str, list] = {kind: [] for kind in kinds}
        for _ in range(args.ingest_repeats):
            for kind in kinds:
                options = (args.es_url, kind, args.expansion, str(args.shards))
                runs[kind].append(run_worker("ingest", str(corpus), model_dir, *options))
        row["ingest"] = {
            kind: {
                "docs_per_s": len(docs) / statistics.median(r["seconds"] for r in values),
                "peak_rss_mib": max(r["peak_rss_mib"] for r in values),
                "rss_after_model_mib": max(r["rss_after_model_mib"] for r in values),
            }
            for kind, values in runs.items()
        }
        if "raw" in runs:
            row["ingest"]["ratio"] = (
                row["ingest"]["es_scm"]["docs_per_s"] / row["ingest"]["raw"]["docs_per_s"]
            )
        print(f"{len(docs)}: ingestion {row['ingest']}", flush=True)
        text_index(client, docs)
        row["bytes_per_document"] = {
            "es_scm": index_bytes(client, INDEX) / len(docs),
            "text_only": index_bytes(client, TEXT_INDEX) / len(docs),
        }
        for name in (TEXT_INDEX, RAW_INDEX):
            client.options(ignore_status=404).indices.delete(index=name)
        if args.ingest_only:
            return row
        model = SoftCosineModel.load(model_dir)
        row.update(search_latency(client, model, docs, queries, args.repeats, args.max_clauses))
        print(f"{len(docs)}: latency {json.dumps(row['latency'])}", flush=True)
        if args.optimize:
            from es_scm.elastic import SCMIndex

            started = time.perf_counter()
            SCMIndex(client, INDEX, model).optimize()
            row["optimize_s"] = time.perf_counter() - started
            row["optimized"] = search_latency(client, model, docs, queries, args.repeats, [])
            row["optimized"]["bytes_per_document"] = index_bytes(client, INDEX) / len(docs)
            latency = row["optimized"]["latency"]
            print(f"{len(docs)}: after optimize() {json.dumps(latency)}", flush=True)
    return row


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4))
    sizes = [row["documents"] for row in rows]
    labels = {"brute_force": "in-memory index", "full_scan": "brute force (full scan)"}
    for method in ("bm25", "native", "exact", "hybrid", "full_scan", "brute_force"):
        axis.plot(
            sizes,
            [row["latency"][method]["p50_ms"] for row in rows],
            marker="o",
            label=labels.get(method, method),
        )
    axis.set_xlabel("documents (Wikipedia paragraphs)")
    axis.set_ylabel("p50 latency, ms (k = 10)")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend()
    axis.set_title("Search latency against collection size (scripts/bench_scale.py)")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        {"build": build_worker, "ingest": ingest_worker}[sys.argv[2]](*sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[100_000, 300_000, 850_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ingest-repeats", type=int, default=1)
    parser.add_argument("--min-df", type=int, default=2)
    parser.add_argument(
        "--embeddings",
        default="glove",
        help="S's source: glove (GloVe 6B 50d, the default of earlier runs) or a value of "
        "SoftCosineModel.build's embeddings, e.g. auto (the command line's default: the "
        "sentence encoder's term vectors when the encoder extra is installed)",
    )
    parser.add_argument(
        "--max-clauses",
        nargs="*",
        type=int,
        default=[64, 128, 256],
        help="also time exact mode keeping at most this many expansion terms (a lever)",
    )
    parser.add_argument("--es-url", default=os.environ.get("ES_URL", "http://127.0.0.1:9200"))
    parser.add_argument(
        "--optimize", action="store_true", help="also time the searches after optimize()"
    )
    parser.add_argument("--build-only", action="store_true", help="time the model build only")
    parser.add_argument(
        "--ingest-only", action="store_true", help="the build, ingestion and index size only"
    )
    parser.add_argument(
        "--no-raw-bulk",
        action="store_true",
        help="skip the raw-bulk baseline of ingestion (it holds every precomputed document in "
        "memory: ~80 KB each with document-side expansion)",
    )
    parser.add_argument(
        "--expansion",
        choices=EXPANSIONS,
        default="query",
        help="the indices' side of S (SCMIndex.create's expansion)",
    )
    parser.add_argument(
        "--shards",
        type=int,
        default=1,
        help="primary shards of es-scm's index (SCMIndex.create's shards; searched in parallel)",
    )
    parser.add_argument("--json", default=str(REPO / "results" / "bench_scale.json"))
    parser.add_argument("--plot", default=str(REPO / "docs" / "bench_scale.png"))
    args = parser.parse_args()

    from es_scm.elastic import client_from_env

    client = client_from_env(args.es_url, request_timeout=600)
    every = paragraphs()
    queries = [" ".join(p["text"].split()[:12]) for p in every[-args.queries :]]
    documents = every[: -args.queries]
    print(f"{len(documents)} paragraphs, {len(queries)} queries", flush=True)
    rows = [
        measure(min(size, len(documents)), documents, queries, args, client) for size in args.sizes
    ]
    client.options(ignore_status=404).indices.delete(index=INDEX)
    summary = {"provenance": provenance(sys.argv, client), "rows": rows}
    summary["expansion"], summary["shards"] = args.expansion, args.shards
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    if args.build_only or args.ingest_only:
        return
    plot(rows, Path(args.plot))
    for row in rows:
        latency = row["latency"]
        p50 = {method: values["p50_ms"] for method, values in latency.items()}
        print(
            f"{row['documents']:>8}: "
            + "  ".join(f"{m} {v['p50_ms']:.1f}" for m, v in latency.items())
            + f"  exact/bm25 {p50['exact'] / p50['bm25']:.2f}"
            + f"  scan/exact {p50['full_scan'] / p50['exact']:.2f}"
            + f"  in-memory/exact {p50['brute_force'] / p50['exact']:.2f}"
            + f"  exact=brute {100 * row['exact_equals_brute_force']:.0f}%"
        )
        for name, checked in row["exact_modes"].items():
            print(
                f"{'':>10}{name}: p50 {latency[name]['p50_ms']:.1f} ms, "
                f"= brute force {100 * checked['equal']:.0f}%, "
                f"proven {100 * checked['proven']:.0f}%, "
                f"candidates {checked['candidates']:.0f}, rounds {checked['rounds']:.2f}"
            )


if __name__ == "__main__":
    main()
