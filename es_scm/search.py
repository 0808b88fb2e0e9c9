r"""Soft cosine search: query expansion, native retrieval and exact rescoring (paper §4).

Query expansion (Theorem 4.1)
    The query text becomes x = W(q) and is expanded to x' = SᵀWx. Its positive entries are sent as
    a ``sparse_vector`` query (or, equivalently, a ``bool`` of ``term`` queries each boosted by
    x'_j) on the ``sparse_vector`` field, so Elasticsearch fetches the postings of the O(mC) terms
    related to the m query terms and scores every matching document by the sparse dot product
    s_d = Σ_j x'_j · q(y'_j), where y' = Wy/‖Wy‖_S is the stored normalized document vector
    (Theorem 4.2) and q keeps the 9 most significant bits of a float32. Dividing by the query's
    constant soft norm ‖Wx‖_S gives the SCM.

Native retrieval needs S ≥ 0 and W ≥ 0
    Negative entries of x' are not sent (a query vector cannot carry a negative weight) and
    ``sparse_vector`` stores positive values only, so with negative similarities or weights the
    native ranking is an approximation; ``exact`` mode then reports ``exact_guarantee=False``.

Modes
    ``native``  Elasticsearch's score divided by ‖Wx‖_S: the SCM up to the 9-bit precision of the
                stored values.
    ``exact``   native retrieval of a window of candidates, then the exact SCM from the float64
                vectors y' kept in ``_source``, with the window grown until the result provably
                equals the brute-force exact top k (below).
    ``rescore`` the exact SCM of caller-supplied candidates (ids, or any Elasticsearch query).

The exactness argument
    Let e_d = x'ᵀy'_d = (Wx)ᵀS(Wy_d)/‖Wy_d‖_S, so SCM(x, y_d) = e_d / ‖Wx‖_S. With S ≥ 0, W ≥ 0
    and a unit diagonal, 1 = y'ᵀSy' ≥ y'ᵀy', so ‖y'‖₂ ≤ 1. Lucene stores float32(v) truncated to
    9 significant bits: q(v) ≥ v·(1 − ε) with ε = 2⁻⁸ + 2⁻²³
    (:data:`es_scm.index.FEATURE_VALUE_ERROR`). Query weights are rounded to float32 and the m
    clause scores summed in float32, a relative error below δ = (m + 2)·2⁻²⁴. Hence every
    document d satisfies

        e_d ≤ s_d / ((1 − ε)(1 − δ)) + P,

    where P = ‖x'_D‖₂ is the Euclidean norm of the expansion terms D left out of the query
    (clause-count pruning): Σ_{j∈D} x'_j y'_j ≤ ‖x'_D‖₂ ‖y'‖₂ by Cauchy–Schwarz.
    Elasticsearch returns documents by decreasing s_d; a document outside a window whose lowest
    score is s_min has s_d ≤ s_min (or s_d = 0 when the window holds every match). So once the
    n-th best exact score in the window is strictly greater than
    (s_min / ((1 − ε)(1 − δ)) + P) / ‖Wx‖_S, no unseen document can enter the top n, and the
    window's exact top n is the brute-force exact top n. Otherwise the window doubles.

Ranking ties are broken by document id (ascending), after rounding scores to 12 decimals so that
floating-point noise between arithmetic paths does not reorder equal scores.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import scipy.sparse as sp
from elasticsearch import Elasticsearch

from .index import (
    FEATURE_VALUE_ERROR,
    METADATA_FIELD,
    TEXT_FIELD,
    VECTOR_FIELD,
    check_model,
    stored_vector,
)

if TYPE_CHECKING:
    from .model import SoftCosineModel

Mode = Literal["native", "exact", "rescore"]
QueryType = Literal["bool", "sparse_vector"]
FLOAT32_UNIT_ROUNDOFF = 2.0**-24
DEFAULT_MAX_CLAUSES = 1024  # Lucene's historical limit, used when the cluster cannot be asked
TIE_DECIMALS = 12
# Hits come with their whole _source (text, scm.vector, metadata): filtering it would make
# Elasticsearch parse and rewrite every hit's source, which costs more than sending it whole.
_WHOLE_SOURCE = True


@dataclass
class Hit:
    """One result: the document id, its score, and its text and metadata."""

    id: str
    score: float
    source: dict[str, Any]
    native_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "score": self.score,
            "native_score": self.native_score,
            **self.source,
        }


@dataclass
class SearchResult:
    """Hits and how they were obtained."""

    hits: list[Hit]
    mode: str
    query_terms: int = 0
    expansion_terms: int = 0
    pruned_terms: int = 0
    candidates: int = 0
    rounds: int = 0
    exact_guarantee: bool = False
    took_ms: float = 0.0
    notes: list[str] = field(default_factory=list)

    def __iter__(self):
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def ids(self) -> list[str]:
        return [hit.id for hit in self.hits]


@dataclass
class ExpandedQuery:
    """A query vector x = W(q), its soft norm ‖x‖_S and its expansion x' = Sᵀx (Theorem 4.1)."""

    weights: sp.csr_matrix
    norm: float
    expansion: np.ndarray  # dense x' over the vocabulary, float64
    clauses: list[tuple[int, float]]
    pruned_terms: int
    pruned_mass: float
    has_negative: bool

    @property
    def empty(self) -> bool:
        return self.norm <= 0.0

    def es_query(self, query_type: QueryType = "sparse_vector") -> dict[str, Any]:
        """The expanded query for Elasticsearch, in one of two equivalent forms.

        ``"sparse_vector"``: Elasticsearch's ``sparse_vector`` query with x' as its
        ``query_vector`` and pruning off. ``"bool"``: a ``bool`` of ``should`` ``term`` queries on
        the ``sparse_vector`` field, each boosted by x'_j. Both are the same Lucene query (a
        disjunction of linear feature queries, so the same scores and the same bound); the first
        is the smaller request and Elasticsearch parses it faster (``scripts/bench_search.py``).
        """
        if query_type == "sparse_vector":
            vector = {str(term): boost for term, boost in self.clauses}
            query = {"field": VECTOR_FIELD, "query_vector": vector, "prune": False}
            return {"sparse_vector": query}
        should = [
            {"term": {VECTOR_FIELD: {"value": str(term), "boost": boost}}}
            for term, boost in self.clauses
        ]
        return {"bool": {"should": should}}

    def numerator(self, terms: np.ndarray, values: np.ndarray) -> float:
        """x'ᵀy' = (Wx)ᵀS(Wy)/‖Wy‖_S for a document's normalized vector y' (Theorem 4.1)."""
        if not len(terms):
            return 0.0
        return float(np.dot(self.expansion[terms], values))

    def unseen_upper_bound(self, lowest_native_score: float) -> float:
        """The largest SCM a document outside the window can have (see the module docstring)."""
        delta = (len(self.clauses) + 2) * FLOAT32_UNIT_ROUNDOFF
        numerator = lowest_native_score / ((1.0 - FEATURE_VALUE_ERROR) * (1.0 - delta))
        return (numerator + self.pruned_mass) / self.norm


def expand_query(
    model: SoftCosineModel,
    text: str,
    max_clauses: int,
    similarity_rows: sp.csr_matrix | None = None,
) -> ExpandedQuery:
    """Vectorize ``text`` as a query and expand it to x' = SᵀWx, keeping at most ``max_clauses``.

    The expansion keeps the positive entries of x' with the largest weights; what it leaves out
    is counted (``pruned_terms``) and bounded (``pruned_mass``, the Euclidean norm of their
    weights: see the module docstring).
    ``similarity_rows`` is S as float64 CSR (:func:`similarity_rows`), so that the expansion reads
    only the O(mC) rows of the query's terms; it is computed when not given.
    """
    if max_clauses < 1:
        raise ValueError(f"max_clauses must be at least 1, got {max_clauses}")
    weights = model.vectorize(text, role="query")
    matrix = similarity_rows if similarity_rows is not None else similarity_rows_of(model)
    expansion = np.asarray((weights @ matrix).todense()).ravel()
    norm_squared = float(weights.data @ expansion[weights.indices]) if weights.nnz else 0.0
    if weights.nnz and norm_squared <= 0.0:
        raise ValueError(
            "the query's squared soft norm xᵀSx is not positive: S is not positive "
            "semi-definite on it (negative similarities?)"
        )
    positive = np.flatnonzero(expansion > 0.0)
    order = positive[np.argsort(-expansion[positive], kind="stable")]
    kept, dropped = order[:max_clauses], order[max_clauses:]
    return ExpandedQuery(
        weights=weights,
        norm=float(np.sqrt(norm_squared)) if norm_squared > 0 else 0.0,
        expansion=expansion,
        clauses=[(int(j), float(expansion[j])) for j in kept],
        pruned_terms=len(dropped),
        pruned_mass=float(np.linalg.norm(expansion[dropped])),
        has_negative=bool((expansion < 0).any() or (weights.data < 0).any()),
    )


def similarity_rows_of(model: SoftCosineModel) -> sp.csr_matrix:
    """S as float64 CSR: row slices (the expansion x'ᵀ = xᵀS of a sparse x) cost O(mC)."""
    return sp.csr_matrix(model.similarity_matrix.matrix, dtype=np.float64)


def _rank(scored: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    return sorted(scored, key=lambda item: (-round(item[1], TIE_DECIMALS), item[0]))


def _public_source(source: Mapping[str, Any]) -> dict[str, Any]:
    public = {TEXT_FIELD: source.get(TEXT_FIELD, "")}
    if METADATA_FIELD in source:
        public[METADATA_FIELD] = source[METADATA_FIELD]
    return public


class Searcher:
    """Search an es-scm index with its model.

    Parameters
    ----------
    client : Elasticsearch
    index : str
        An es-scm index, an alias, or a pattern of indices built with ``model``.
    model : SoftCosineModel
    max_clauses : int, optional
        The most ``term`` clauses to send; default: the cluster's limit (see
        :func:`cluster_max_clauses`).
    max_window : int
        The largest candidate window of ``exact`` mode (``index.max_result_window`` is 10,000 by
        default).
    query_type : {"sparse_vector", "bool"}
        The form of the expanded query (see :meth:`ExpandedQuery.es_query`); both score alike.
    """

    def __init__(
        self,
        client: Elasticsearch,
        index: str,
        model: SoftCosineModel,
        *,
        max_clauses: int | None = None,
        max_window: int = 10_000,
        query_type: QueryType = "sparse_vector",
    ) -> None:
        if query_type not in ("sparse_vector", "bool"):
            raise ValueError(f"query_type must be 'sparse_vector' or 'bool', got {query_type!r}")
        self.client = client
        self.index = index
        self.model = model
        self.max_window = max_window
        self.query_type = query_type
        self._max_clauses = max_clauses
        self._checked = False
        self._similarity_rows: sp.csr_matrix | None = None

    @property
    def max_clauses(self) -> int:
        if self._max_clauses is None:
            self._max_clauses = cluster_max_clauses(self.client)
        return self._max_clauses

    def check(self) -> None:
        """Refuse an index built with another model (once per searcher)."""
        if not self._checked:
            check_model(self.client, self.index, self.model)
            self._checked = True

    # -- public API -------------------------------------------------------------------------

    def expand(self, query: str) -> ExpandedQuery:
        """The query's vector, soft norm and expansion (see :func:`expand_query`)."""
        if self._similarity_rows is None:
            self._similarity_rows = similarity_rows_of(self.model)
        return expand_query(self.model, query, self.max_clauses, self._similarity_rows)

    def search(
        self, query: str, k: int = 10, *, mode: Mode = "exact", from_: int = 0
    ) -> SearchResult:
        """Return the top ``k`` documents for ``query`` after skipping ``from_``."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if from_ < 0:
            raise ValueError(f"from_ must be non-negative, got {from_}")
        if mode not in ("native", "exact"):
            raise ValueError(f"mode must be 'native' or 'exact' (use rescore()), got {mode!r}")
        self.check()
        started = time.perf_counter()
        expanded = self.expand(query)
        if expanded.empty:
            result = SearchResult(hits=[], mode=mode, exact_guarantee=True)
            result.notes.append("the query has no vocabulary terms (empty, stop words or unknown)")
        elif mode == "native":
            result = self._native(expanded, k, from_)
        else:
            result = self._exact(expanded, k, from_)
        result.query_terms = expanded.weights.nnz
        result.expansion_terms = len(expanded.clauses) + expanded.pruned_terms
        result.pruned_terms = expanded.pruned_terms
        if expanded.pruned_terms:
            result.notes.append(
                f"the expansion had {result.expansion_terms} terms; the {expanded.pruned_terms} "
                f"lowest-weighted were left out (cluster limit {self.max_clauses} clauses)"
            )
        result.took_ms = (time.perf_counter() - started) * 1000
        return result

    def rescore(
        self,
        query: str,
        *,
        ids: Sequence[str] | None = None,
        es_query: Mapping[str, Any] | None = None,
        size: int = 100,
        k: int | None = None,
    ) -> SearchResult:
        """The exact SCM of given candidates: ``ids``, or the top ``size`` hits of ``es_query``.

        Returns the candidates ranked by exact SCM (the top ``k`` if given); candidates that do
        not exist are reported in ``notes``.
        """
        if (ids is None) == (es_query is None):
            raise ValueError("rescore needs exactly one of ids= or es_query=")
        self.check()
        started = time.perf_counter()
        expanded = self.expand(query)
        if ids is not None:
            documents, missing = self._get(ids)
        else:
            response = self.client.search(
                index=self.index, query=dict(es_query), size=size, source=_WHOLE_SOURCE
            )
            documents = {h["_id"]: h["_source"] for h in response["hits"]["hits"]}
            missing = []
        scored = [(doc_id, self._exact_score(expanded, src)) for doc_id, src in documents.items()]
        ranked = _rank(scored)[: k if k else None]
        hits = [Hit(i, score, _public_source(documents[i])) for i, score in ranked]
        result = SearchResult(hits=hits, mode="rescore", candidates=len(documents), rounds=1)
        result.exact_guarantee = True
        if missing:
            result.notes.append(f"{len(missing)} candidate id(s) not found: {missing[:5]}")
        result.took_ms = (time.perf_counter() - started) * 1000
        return result

    # -- modes ------------------------------------------------------------------------------

    def _native(self, expanded: ExpandedQuery, k: int, from_: int) -> SearchResult:
        response = self._retrieve(expanded, from_, k)
        hits = [
            Hit(h["_id"], h["_score"] / expanded.norm, _public_source(h["_source"]), h["_score"])
            for h in response["hits"]["hits"]
        ]
        return SearchResult(hits=hits, mode="native", candidates=len(hits), rounds=1)

    def _exact(self, expanded: ExpandedQuery, k: int, from_: int) -> SearchResult:
        need = from_ + k
        window = min(max(2 * need, 20), self.max_window)
        fetched: dict[str, tuple[float, float, dict]] = {}
        lowest_native, rounds = float("inf"), 0
        while True:
            rounds += 1
            requested = window - len(fetched)
            response = self._retrieve(expanded, len(fetched), requested)
            hits = response["hits"]["hits"]
            for h in hits:
                exact = self._exact_score(expanded, h["_source"])
                fetched[h["_id"]] = (exact, h["_score"], h["_source"])
                lowest_native = min(lowest_native, h["_score"])
            exhaustive = len(hits) < requested  # Elasticsearch had no more matches
            bound = expanded.unseen_upper_bound(0.0 if exhaustive else lowest_native)
            ranked = _rank((doc_id, value[0]) for doc_id, value in fetched.items())
            proven = (exhaustive and expanded.pruned_mass == 0.0) or (
                len(ranked) >= need and ranked[need - 1][1] > bound
            )
            if proven or exhaustive or window >= self.max_window:
                break
            window = min(window * 2, self.max_window)
        hits = [
            Hit(
                doc_id,
                score,
                _public_source(fetched[doc_id][2]),
                fetched[doc_id][1] / expanded.norm,
            )
            for doc_id, score in ranked[from_:need]
        ]
        result = SearchResult(hits=hits, mode="exact", candidates=len(fetched), rounds=rounds)
        result.exact_guarantee = proven and not expanded.has_negative
        if not proven:
            result.notes.append(
                f"the exact top {need} could not be proven within a window of {len(fetched)} "
                "documents; results are the exact scores of the retrieved window"
            )
        if expanded.has_negative:
            result.notes.append("negative similarities or weights: native retrieval is approximate")
        return result

    # -- Elasticsearch I/O ------------------------------------------------------------------

    def _retrieve(self, expanded: ExpandedQuery, offset: int, size: int) -> Mapping[str, Any]:
        return self.client.search(
            index=self.index,
            query=expanded.es_query(self.query_type),
            from_=offset,
            size=max(size, 0),
            source=_WHOLE_SOURCE,
            # Counting every match would disable Lucene's block-max WAND skipping; exhaustion is
            # detected by a short page instead.
            track_total_hits=False,
        )

    def _get(self, ids: Sequence[str]) -> tuple[dict[str, dict], list[str]]:
        if not ids:
            return {}, []
        response = self.client.mget(index=self.index, ids=list(ids), source=_WHOLE_SOURCE)
        found = {d["_id"]: d["_source"] for d in response["docs"] if d.get("found")}
        return found, [i for i in ids if i not in found]

    @staticmethod
    def _exact_score(expanded: ExpandedQuery, source: Mapping[str, Any]) -> float:
        """SCM(x, y) = x'ᵀy' / ‖Wx‖_S with y' = Wy/‖Wy‖_S, clipped to [−1, 1] as gensim does."""
        terms, values = stored_vector(source)
        if not len(terms) or expanded.norm <= 0.0:
            return 0.0
        value = expanded.numerator(terms, values) / expanded.norm
        return float(min(1.0, max(-1.0, value)))


def cluster_max_clauses(client: Elasticsearch) -> int:
    """The most clauses a query may have on every data node of the cluster.

    Elasticsearch 8+ derives Lucene's clause limit from each node's heap and search thread pool
    (``max(1024, heap_MB · 64 / search_threads)``, ``SearchUtils.calculateMaxClauseValue``); the
    ``indices.query.bool.max_clause_count`` setting is deprecated and not applied. Newer versions
    take the heap in whole GB; this function uses the smaller of the two readings.
    """
    try:
        stats = client.nodes.stats(metric="jvm", filter_path="nodes.*.jvm.mem.heap_max_in_bytes")
        info = client.nodes.info(metric="thread_pool", filter_path="nodes.*.thread_pool.search")
    except Exception:  # a restricted API key may not read node stats
        return DEFAULT_MAX_CLAUSES
    limits = []
    for node_id, node in stats.get("nodes", {}).items():
        heap_bytes = node["jvm"]["mem"]["heap_max_in_bytes"]
        pool = info["nodes"].get(node_id, {}).get("thread_pool", {}).get("search", {})
        threads = pool.get("max") or pool.get("size") or 0
        if threads <= 0 or heap_bytes <= 0:
            limits.append(DEFAULT_MAX_CLAUSES)
            continue
        by_mb = heap_bytes // 2**20 * 64 // threads
        by_whole_gb = heap_bytes // 2**30 * 65_536 // threads
        limits.append(max(DEFAULT_MAX_CLAUSES, min(by_mb, by_whole_gb)))
    return min(limits, default=DEFAULT_MAX_CLAUSES)


def brute_force_search(
    model: SoftCosineModel,
    ids: Sequence[str],
    documents: sp.csr_matrix,
    query: str,
    k: int = 10,
) -> list[tuple[str, float]]:
    """The exact SCM top ``k`` over a whole corpus, in Python (the reference for ``exact``).

    Parameters
    ----------
    ids : sequence of str
        Document ids, one per row of ``documents``.
    documents : scipy.sparse.csr_matrix
        The documents' weighted vectors Wy (``model.vectorize_many(texts, role="document")``).

    Returns
    -------
    list of (id, score)
        Documents with a positive SCM, ranked by score then id (as ``exact`` mode ranks).
    """
    x = model.vectorize(query, role="query")
    if x.nnz == 0:
        return []
    scores = np.atleast_1d(
        model.similarity_matrix.inner_product(x, documents, normalized=(True, True))
    )
    positive = np.flatnonzero(scores > 0)
    return _rank((ids[i], float(scores[i])) for i in positive)[:k]
