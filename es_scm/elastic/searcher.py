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

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from elasticsearch import ApiError, Elasticsearch

from es_scm.elastic.calls import Plan, run_sync
from es_scm.elastic.connection import max_clauses_plan
from es_scm.elastic.explain import explain_hits
from es_scm.elastic.hybrid import hybrid_options
from es_scm.elastic.plans import rescore_plan, search_plan
from es_scm.elastic.query import ExpandedQuery, QueryType, expand_query
from es_scm.elastic.results import Hit, NotProvenError, SearchResult
from es_scm.elastic.schema import check_model_plan
from es_scm.validation import NON_NEGATIVE_INT, POSITIVE_INT, Boolean, Options, OrNone, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["Filter", "Hit", "Mode", "NotProvenError", "SearchResult", "Searcher", "SearcherBase"]

Mode = Literal["native", "exact", "hybrid", "rescore"]
Filter = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None

logger = logging.getLogger(__name__)
_NO_QUERY = "unknown query [sparse_vector]"  # a cluster without the sparse_vector query


class SearcherBase:
    """What the sync :class:`Searcher` and the async one share: the arguments, the plans.

    Parameters
    ----------
    client : Elasticsearch or AsyncElasticsearch
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
        client: Any,
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
        self._expansion: str | None = None  # the index's side of S, set by a passed model check

    def _accept(self, meta: Mapping[str, Any]) -> None:
        """The index passed the model check: remember it and its expansion side."""
        self._expansion = meta["expansion"]

    def _forget_index(self) -> None:
        """The index was deleted: check the next one of that name again."""
        self._expansion = None

    def _ready_plan(self) -> Plan:
        """Check the model against the index, learn its expansion side and the clause limit,
        once."""
        if self._expansion is None:
            self._accept((yield from check_model_plan(self.index, self.model)))
        if self._max_clauses is None:
            self._max_clauses = yield from max_clauses_plan()

    def _search_plan(self, query: str, k: int, options: dict[str, Any]) -> Plan:
        """The plan of :meth:`Searcher.search` (``options``: its keyword arguments)."""
        k = check(k, "k", POSITIVE_INT)
        from_ = check(options.get("from_", 0), "from_", NON_NEGATIVE_INT)
        mode = check(options.get("mode", "exact"), "mode", Options(("native", "exact", "hybrid")))
        explain = check(options.get("explain", False), "explain", Boolean())
        filters = _filters(options.get("filter"))
        unknown = sorted(set(options) - {"from_", "mode", "explain", "filter", *HYBRID_KEYS})
        if unknown:
            raise TypeError(f"search() got an unexpected keyword argument {unknown[0]!r}")
        given = {key: options.get(key) for key in HYBRID_KEYS}
        if mode != "hybrid" and any(value is not None for value in given.values()):
            name = next(key for key, value in given.items() if value is not None)
            raise ValueError(f"{name} applies to mode='hybrid' only, not to mode={mode!r}")
        hybrid = hybrid_options(self.model.hybrid, **given)
        yield from self._ready_plan()
        expanded = expand_query(self.model, query, self._max_clauses, self._expansion)
        settings = {
            "page": (k, from_),
            "filters": filters,
            "query_type": self.query_type,
            "max_window": self.max_window,
            "hybrid": hybrid,
        }
        try:
            result = yield from search_plan(self.index, query, expanded, mode, settings)
        except ApiError as error:
            if self.query_type != "sparse_vector" or _NO_QUERY not in str(error):
                raise
            # Up to 8.17 the query came with the machine-learning plugin, which minimal
            # distributions leave out; boosted term clauses are the same Lucene query.
            logger.warning("%s: no sparse_vector query; searching with term clauses", self.index)
            self.query_type = settings["query_type"] = "bool"
            result = yield from search_plan(self.index, query, expanded, mode, settings)
        if explain:
            explain_hits(self.model, expanded, result.hits)
        result.query_terms = expanded.weights.nnz + len(expanded.unseen)
        result.expansion_terms = expanded.clause_count + expanded.pruned_terms
        result.pruned_terms = expanded.pruned_terms
        if expanded.pruned_terms:
            result.notes.append(
                f"the expansion had {result.expansion_terms} terms; the {expanded.pruned_terms} "
                f"lowest-weighted were left out (cluster limit {self._max_clauses} clauses)"
            )
        if result.unproven:
            raise NotProvenError(result.unproven, result)
        return result

    def _rescore_plan(self, query: str, options: dict[str, Any]) -> Plan:
        """The plan of :meth:`Searcher.rescore`."""
        ids, es_query = options.get("ids"), options.get("es_query")
        if (ids is None) == (es_query is None):
            raise ValueError("rescore needs exactly one of ids= or es_query=")
        size = check(options.get("size", 100), "size", POSITIVE_INT)
        k = check(options.get("k"), "k", OrNone(POSITIVE_INT))
        explain = check(options.get("explain", False), "explain", Boolean())
        yield from self._ready_plan()
        expanded = expand_query(self.model, query, self._max_clauses, self._expansion)
        result = yield from rescore_plan(self.index, expanded, ids, es_query, size, k)
        if explain:
            explain_hits(self.model, expanded, result.hits)
        return result


HYBRID_KEYS = ("fusion", "alpha", "rrf_k", "depth")


class Searcher(SearcherBase):
    """Search an es-scm index with its model (see :class:`SearcherBase` for the parameters)."""

    def __init__(self, client: Elasticsearch, index: str, model: SoftCosineModel, **options: Any):
        super().__init__(client, index, model, **options)

    @property
    def max_clauses(self) -> int:
        if self._max_clauses is None:
            self._max_clauses = run_sync(max_clauses_plan(), self.client)
        return self._max_clauses

    def check(self) -> None:
        """Refuse an index built with another model (once per searcher)."""
        run_sync(self._ready_plan(), self.client)

    @property
    def expansion(self) -> str:
        """Where the index applies S: ``"query"`` or ``"documents"`` (read once from its _meta)."""
        self.check()
        assert self._expansion is not None
        return self._expansion

    def expand(self, query: str) -> ExpandedQuery:
        """The query's vector, soft norm and expansion (see :mod:`es_scm.elastic.query`)."""
        return expand_query(self.model, query, self.max_clauses, self.expansion)

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
        ``"max"``, ``"linear"``, ``"zscore"`` with weight ``alpha`` on BM25, or ``"rrf"``, over
        each side's top
        ``depth``; see :mod:`es_scm.elastic.hybrid`; None takes the model's own,
        :attr:`~es_scm.model.SoftCosineModel.hybrid`, else
        :data:`es_scm.defaults.HYBRID_DEFAULTS`). These options apply to hybrid mode only.

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
        options = {"mode": mode, "from_": from_, "filter": filter, "explain": explain}
        options.update(fusion=fusion, alpha=alpha, rrf_k=rrf_k, depth=depth)
        return run_sync(self._search_plan(query, k, options), self.client)

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
        options = {"ids": ids, "es_query": es_query, "size": size, "k": k, "explain": explain}
        return run_sync(self._rescore_plan(query, options), self.client)


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
