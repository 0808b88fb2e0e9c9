r"""Soft cosine search on Elasticsearch: native retrieval and exact rescoring (paper §4).

The query encoder (:mod:`es_scm.elastic.query`) turns the text into the expanded query x' = SᵀWx;
this module sends it, reads the hits, and ranks them.

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

Scores of a :class:`Hit`
    ``score`` is the mode's score (the exact SCM in ``exact`` and ``rescore`` modes);
    ``native_score`` is always Elasticsearch's estimate of the same SCM, its ``_score`` divided by
    ‖Wx‖_S (None when Elasticsearch did not score the hit, as in a rescore of ids).

The exactness argument
    Every document satisfies e_d ≤ s_d / ((1 − ε)(1 − δ)) + P (:mod:`es_scm.elastic.query`).
    Elasticsearch returns documents by decreasing s_d; a document outside a window whose lowest
    score is s_min has s_d ≤ s_min (or s_d = 0 when the window holds every match). So once the
    n-th best exact score in the window is strictly greater than
    (s_min / ((1 − ε)(1 − δ)) + P) / ‖Wx‖_S, no unseen document can enter the top n, and the
    window's exact top n is the brute-force exact top n. Otherwise the window doubles. Filters
    only remove documents from the matches, so the argument holds over the filtered set.

Ranking ties are broken by document id (ascending), after rounding scores to 12 decimals
(:func:`es_scm.model.brute_force.rank`, the brute force's rule too).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from elasticsearch import Elasticsearch

from es_scm.elastic.connection import cluster_max_clauses
from es_scm.elastic.explain import explain_hits
from es_scm.elastic.hybrid import hybrid_options, hybrid_search
from es_scm.elastic.query import ExpandedQuery, QueryType, expand_query
from es_scm.elastic.results import Hit, NotProvenError, SearchResult
from es_scm.elastic.schema import check_model, public_source, stored_vector
from es_scm.model.brute_force import rank
from es_scm.validation import NON_NEGATIVE_INT, POSITIVE_INT, Boolean, Options, OrNone, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["Hit", "Mode", "NotProvenError", "SearchResult", "Searcher"]

Mode = Literal["native", "exact", "hybrid", "rescore"]
Filter = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None
# Hits come with their whole _source (text, scm.vector, metadata): filtering it would make
# Elasticsearch parse and rewrite every hit's source, which costs more than sending it whole.
_WHOLE_SOURCE = True


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
        :func:`~es_scm.elastic.connection.cluster_max_clauses`).
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
        self.client = client
        self.index = index
        self.model = model
        self.max_window = check(max_window, "max_window", POSITIVE_INT)
        self.query_type = check(query_type, "query_type", Options(("sparse_vector", "bool")))
        self._max_clauses = check(max_clauses, "max_clauses", OrNone(POSITIVE_INT))
        self._checked = False

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
        """The query's vector, soft norm and expansion (see :mod:`es_scm.elastic.query`)."""
        return expand_query(self.model, query, self.max_clauses)

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        mode: Mode = "exact",
        from_: int = 0,
        filter: Filter = None,
        fusion: str | None = None,
        alpha: float | None = None,
        rrf_k: int | None = None,
        depth: int | None = None,
        explain: bool = False,
    ) -> SearchResult:
        """Return the top ``k`` documents for ``query`` after skipping ``from_``.

        ``mode`` is ``"exact"`` (the SCM, provably the brute-force top k), ``"native"``
        (Elasticsearch's scores) or ``"hybrid"`` (BM25 fused with the SCM by ``fusion``,
        ``"rrf"`` or ``"linear"`` with weight ``alpha`` on BM25, over each side's top
        ``depth``; see :mod:`es_scm.elastic.hybrid`; None takes
        :data:`es_scm.defaults.HYBRID_DEFAULTS`).

        With ``explain``, every hit gets an ``explanation`` of its exact SCM term pair by term
        pair (:mod:`es_scm.elastic.explain`; in ``exact`` mode its contributions sum to
        ``hit.score``; in ``hybrid`` mode it explains the SCM component).

        ``filter`` is an Elasticsearch query clause, or a list of them, that the documents must
        match (e.g. ``{"term": {"metadata.topic": "sports"}}``); it does not change scores, and
        in ``exact`` mode the result is the exact top k among the matching documents.

        Raises
        ------
        NotProvenError
            In ``exact`` mode, when the top ``from_ + k`` cannot be proven within
            ``max_window`` candidates (deep pages), or when the cluster's clause limit left out
            too much of the expansion; ``error.result`` holds the window's exact scores.
        """
        k = check(k, "k", POSITIVE_INT)
        from_ = check(from_, "from_", NON_NEGATIVE_INT)
        check(mode, "mode", Options(("native", "exact", "hybrid")))
        explain = check(explain, "explain", Boolean())
        filters = _filters(filter)
        options = hybrid_options(fusion=fusion, alpha=alpha, rrf_k=rrf_k, depth=depth)
        self.check()
        started = time.perf_counter()
        expanded = self.expand(query)
        if mode == "hybrid":
            result = hybrid_search(
                self.client, self.index, query, expanded, (k, from_), filters, options, self._exact
            )
        elif expanded.empty:
            result = SearchResult(hits=[], mode=mode, exact_guarantee=True)
            result.notes.append("the query has no vocabulary terms (empty, stop words or unknown)")
        elif mode == "native":
            result = self._native(expanded, k, from_, filters)
        else:
            result = self._exact(expanded, k, from_, filters)
        if explain:
            explain_hits(self.model, expanded, result.hits)
        result.query_terms = expanded.weights.nnz
        result.expansion_terms = len(expanded.clause_terms) + expanded.pruned_terms
        result.pruned_terms = expanded.pruned_terms
        if expanded.pruned_terms:
            result.notes.append(
                f"the expansion had {result.expansion_terms} terms; the {expanded.pruned_terms} "
                f"lowest-weighted were left out (cluster limit {self.max_clauses} clauses)"
            )
        result.took_ms = (time.perf_counter() - started) * 1000
        if result.unproven:
            raise NotProvenError(result.unproven, result)
        return result

    def rescore(
        self,
        query: str,
        *,
        ids: Sequence[str] | None = None,
        es_query: Mapping[str, Any] | None = None,
        size: int = 100,
        k: int | None = None,
        explain: bool = False,
    ) -> SearchResult:
        """The exact SCM of given candidates: ``ids``, or the top ``size`` hits of ``es_query``.

        Returns the candidates ranked by exact SCM (the top ``k`` if given); candidates that do
        not exist are reported in ``notes``. ``exact_guarantee`` holds for ``ids`` (the exact
        ranking of exactly those documents); for an arbitrary ``es_query`` nothing proves that
        its top ``size`` holds the best documents, so it is False. ``explain`` as in
        :meth:`search`.
        """
        if (ids is None) == (es_query is None):
            raise ValueError("rescore needs exactly one of ids= or es_query=")
        size = check(size, "size", POSITIVE_INT)
        k = check(k, "k", OrNone(POSITIVE_INT))
        explain = check(explain, "explain", Boolean())
        self.check()
        started = time.perf_counter()
        expanded = self.expand(query)
        if ids is not None:
            documents, missing = self._get(ids)
        else:
            response = self.client.search(
                index=self.index, query=dict(es_query), size=size, source=_WHOLE_SOURCE
            )
            hits = response["hits"]["hits"]
            documents, missing = {h["_id"]: h["_source"] for h in hits}, []
        scored = [(i, expanded.exact_score(*stored_vector(s))) for i, s in documents.items()]
        hits_out = [
            Hit(i, score, public_source(documents[i]), vector=stored_vector(documents[i]))
            for i, score in rank(scored)[: k if k else None]  # no native score: not searched
        ]
        if explain:
            explain_hits(self.model, expanded, hits_out)
        result = SearchResult(hits=hits_out, mode="rescore", candidates=len(documents), rounds=1)
        result.exact_guarantee = ids is not None and not expanded.has_negative
        if missing:
            result.notes.append(f"{len(missing)} candidate id(s) not found: {missing[:5]}")
        result.took_ms = (time.perf_counter() - started) * 1000
        return result

    # -- modes ------------------------------------------------------------------------------

    def _native(
        self, expanded: ExpandedQuery, k: int, from_: int, filters: list[dict]
    ) -> SearchResult:
        response = self._retrieve(expanded, from_, k, filters)
        hits = []
        for h in response["hits"]["hits"]:
            score = expanded.native_score(h["_score"])
            vector = stored_vector(h["_source"])
            hits.append(Hit(h["_id"], score, public_source(h["_source"]), score, vector=vector))
        return SearchResult(hits=hits, mode="native", candidates=len(hits), rounds=1)

    def _exact(
        self, expanded: ExpandedQuery, k: int, from_: int, filters: list[dict]
    ) -> SearchResult:
        need = from_ + k
        window = min(max(2 * need, 20), self.max_window)
        fetched: dict[str, tuple[float, float, dict]] = {}
        lowest_native, rounds = float("inf"), 0
        while True:
            rounds += 1
            requested = window - len(fetched)
            hits = self._retrieve(expanded, len(fetched), requested, filters)["hits"]["hits"]
            for h in hits:
                exact = expanded.exact_score(*stored_vector(h["_source"]))
                fetched[h["_id"]] = (exact, h["_score"], h["_source"])
                lowest_native = min(lowest_native, h["_score"])
            exhaustive = len(hits) < requested  # Elasticsearch had no more matches
            bound = expanded.unseen_upper_bound(0.0 if exhaustive else lowest_native)
            ranked = rank((doc_id, value[0]) for doc_id, value in fetched.items())
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
                public_source(fetched[doc_id][2]),
                expanded.native_score(fetched[doc_id][1]),
                vector=stored_vector(fetched[doc_id][2]),
            )
            for doc_id, score in ranked[from_:need]
        ]
        result = SearchResult(hits=hits, mode="exact", candidates=len(fetched), rounds=rounds)
        result.exact_guarantee = proven and not expanded.has_negative
        if not proven:
            reason = (
                "leaving out expansion terms (the cluster's clause limit)"
                if exhaustive
                else f"a window of {len(fetched)} candidates (max_window = {self.max_window})"
            )
            result.unproven = (
                f"exact mode cannot prove the top {need} (from {from_} + k {k}) with {reason}; "
                "ask for fewer results, or use native mode"
            )
        if expanded.has_negative:
            result.notes.append("negative similarities or weights: native retrieval is approximate")
        return result

    # -- Elasticsearch I/O ------------------------------------------------------------------

    def _retrieve(
        self, expanded: ExpandedQuery, offset: int, size: int, filters: list[dict]
    ) -> Mapping[str, Any]:
        return self.client.search(
            index=self.index,
            query=expanded.es_query(self.query_type, filters),
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


def _filters(filter: Filter) -> list[dict[str, Any]]:
    """``filter`` as a list of query clauses (each a mapping)."""
    if filter is None:
        return []
    clauses = [filter] if isinstance(filter, Mapping) else list(filter)
    for clause in clauses:
        if not isinstance(clause, Mapping) or not clause:
            raise ValueError(
                f"filter must be an Elasticsearch query clause or a list of them, got {clause!r}"
            )
    return [dict(clause) for clause in clauses]
