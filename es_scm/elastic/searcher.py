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

Ranking ties are broken by document id (ascending) (:func:`es_scm.model.brute_force.rank`, the
brute force's rule too): an exact score has the same bits here and in the brute force
(:mod:`es_scm.similarity.scoring`), so equal scores are equal, with no rounding.

Sync and asyncio
    :class:`SearchOperations` holds every operation once, as a plan
    (:mod:`es_scm.elastic.shells`): :class:`Searcher` runs them on an ``Elasticsearch`` client,
    :class:`AsyncSearcher` awaits them on an ``AsyncElasticsearch`` one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError

from es_scm.defaults import MAX_QUERY_WORDS
from es_scm.elastic.calls import Plan
from es_scm.elastic.connection import error_reason
from es_scm.elastic.explain import explain_hits
from es_scm.elastic.names import check_target_name
from es_scm.elastic.plans import rescore_plan, search_plan
from es_scm.elastic.query import (
    ExpandedQuery,
    QueryType,
    check_query_length,
    clause_count,
    expand_query,
)
from es_scm.elastic.requests import Filter, Mode, RescoreRequest, SearchRequest
from es_scm.elastic.results import Hit, NotProvenError, PartialResultError, SearchResult
from es_scm.elastic.shells import AsyncAPI, SyncAPI, operation
from es_scm.elastic.target import Checked, TargetCheck
from es_scm.validation import POSITIVE_INT, Options, OrNone, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "AsyncSearcher",
    "Filter",
    "Hit",
    "Mode",
    "NotProvenError",
    "PartialResultError",
    "SearchOperations",
    "SearchResult",
    "Searcher",
]

logger = logging.getLogger(__name__)
_NO_QUERY = "unknown query [sparse_vector]"  # a cluster without the sparse_vector query
_TOO_MANY_CLAUSES = "maxClauseCount"  # Lucene's refusal of a query over the clause limit


class SearchOperations:
    """Search an es-scm index, alias or pattern with its model (the operations of
    :class:`Searcher` and :class:`AsyncSearcher`).

    The model is checked against the indices behind ``name`` once, at the first use; every
    answer is then read through what the check found (:mod:`es_scm.elastic.target`): a hit or
    document of another index, or a search over another number of shards, means that the alias
    moved (or the pattern matches other indices), so the model is checked again and the search
    repeated — or :class:`~es_scm.elastic.schema.ModelMismatchError` raised if the indices now
    have another model. An answer that names no index (no hits) is confirmed by one more look at
    the indices. A shard that fails raises :class:`PartialResultError`.

    Parameters
    ----------
    client : Elasticsearch or AsyncElasticsearch
        An official client (sync for :class:`Searcher`, asyncio for :class:`AsyncSearcher`).
    name : str
        An es-scm index, an alias, or a pattern of indices built with ``model``.
    model : SoftCosineModel
    max_clauses : int, optional
        The most clauses a query may have; default: the cluster's limit (see
        :func:`~es_scm.elastic.connection.cluster_max_clauses`). Filters count too.
    max_window : int
        The largest candidate window of ``exact`` mode (``index.max_result_window`` is 10,000 by
        default).
    query_type : {"sparse_vector", "bool"}
        The form of the expanded query (see :meth:`ExpandedQuery.es_query`); both score alike,
        the first is the smaller and faster request.
    max_query_words : int
        The most words a query may have (runs of letters and digits, stop words included):
        a longer one raises :class:`~es_scm.elastic.query.QueryTooLongError` before any request
        (default :data:`~es_scm.defaults.MAX_QUERY_WORDS`).
    """

    def __init__(
        self,
        client: Any,
        name: str,
        model: SoftCosineModel,
        *,
        max_clauses: int | None = None,
        max_window: int = 10_000,
        query_type: QueryType = "sparse_vector",
        max_query_words: int = MAX_QUERY_WORDS,
    ) -> None:
        self.client = client
        self.index = check_target_name(name)
        self.model = model
        self.max_window = check(max_window, "max_window", POSITIVE_INT)
        self.query_type = check(query_type, "query_type", Options(("sparse_vector", "bool")))
        self.max_query_words = check(max_query_words, "max_query_words", POSITIVE_INT)
        max_clauses = check(max_clauses, "max_clauses", OrNone(POSITIVE_INT))
        self.target = TargetCheck(self.index, model, max_clauses)

    @property
    def name(self) -> str:
        """The index, alias or pattern searched."""
        return self.index

    # -- the operations ------------------------------------------------------------------------

    @operation
    def check(self) -> Plan[dict[str, Any]]:
        """Check the model against the indices behind the name now; return their
        ``_meta.es_scm``.

        Raises
        ------
        IndexNotFoundError
            If nothing has that name.
        ModelMismatchError
            If the indices are not es-scm indices of this model.
        """
        meta, _ = yield from self.target.check_plan()
        return meta

    @operation
    def expansion(self) -> Plan[str]:
        """Where the index applies S: ``"query"`` or ``"documents"`` (the model checked once)."""
        checked = yield from self.target.ready_plan()
        return checked[1]

    @operation
    def max_clauses(self) -> Plan[int]:
        """The most clauses a query may have (the cluster's limit unless given), learned once."""
        yield from self.target.ready_plan()
        return self.target.clause_limit

    @operation
    def expand(self, query: str) -> Plan[ExpandedQuery]:
        """The query's vector, soft norm and expansion (see :mod:`es_scm.elastic.query`)."""
        checked = yield from self.target.ready_plan()
        return expand_query(self.model, query, self._clause_budget((), 0), checked[1])

    @operation
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
    ) -> Plan[SearchResult]:
        """Return the top ``k`` documents for ``query`` after skipping ``from_``.

        ``mode`` is ``"exact"`` (the SCM, provably the brute-force top k), ``"native"``
        (Elasticsearch's scores) or ``"hybrid"`` (BM25 fused with the SCM by ``fusion``,
        ``"max"``, ``"linear"``, ``"zscore"`` with weight ``alpha`` on BM25, or ``"rrf"`` with
        constant ``rrf_k``, over each side's top ``depth``; see :mod:`es_scm.elastic.hybrid`;
        None takes the model's own, :attr:`~es_scm.model.SoftCosineModel.hybrid`, else
        :data:`es_scm.defaults.HYBRID_DEFAULTS`). These options apply to hybrid mode only: given
        with another mode, they are an error.

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
        QueryTooLongError
            When the query has more than ``max_query_words`` words.
        """
        hybrid = {"fusion": fusion, "alpha": alpha, "rrf_k": rrf_k, "depth": depth}
        request = SearchRequest.of(k, from_, mode, filter, explain, hybrid, self.model.hybrid)
        words = check_query_length(query, self.max_query_words)

        def attempt(checked: Checked) -> Plan[SearchResult]:
            budget = self._clause_budget(request.filters, words if request.hybrid else 0)
            expanded = expand_query(self.model, query, budget, checked[1])
            result = yield from self._sent_plan(
                lambda query_type: search_plan(
                    checked[0], query, expanded, request, query_type, self.max_window
                )
            )
            return self._described(result, expanded, request.explain)

        result = yield from self.target.verified_plan(attempt)
        if result.unproven:
            raise NotProvenError(result.unproven, result)
        return result

    @operation
    def rescore(
        self,
        query: str,
        *,
        ids: Sequence[str] | None = None,
        es_query: Mapping[str, Any] | None = None,
        size: int = 100,
        k: int | None = None,
        explain: bool = False,
    ) -> Plan[SearchResult]:
        """The exact SCM of given candidates: ``ids``, or the top ``size`` hits of ``es_query``.

        Returns the candidates ranked by exact SCM (the top ``k`` if given); candidates that do
        not exist are reported in ``notes``. ``exact_guarantee`` holds for ``ids`` (the exact
        ranking of exactly those documents); for an arbitrary ``es_query`` nothing proves that
        its top ``size`` holds the best documents, so it is False. ``explain`` as in
        :meth:`search`.

        Raises
        ------
        PartialResultError
            When a shard could not serve some of the ``ids``: they are not known to be missing.
        """
        request = RescoreRequest.of(ids, es_query, size, k, explain)
        check_query_length(query, self.max_query_words)

        def attempt(checked: Checked) -> Plan[SearchResult]:
            expanded = expand_query(self.model, query, self._clause_budget((), 0), checked[1])
            result = yield from rescore_plan(checked[0], expanded, request)
            if request.explain:
                explain_hits(self.model, expanded, result.hits)
            return result

        return (yield from self.target.verified_plan(attempt))

    def _forget_index(self) -> None:
        """The index was deleted: check the next one of that name again."""
        self.target.forget()

    # -- sending ---------------------------------------------------------------------------------

    def _clause_budget(self, filters: Sequence[Mapping[str, Any]], bm25_words: int) -> int:
        """The clauses the expansion may have beside ``filters`` under the cluster's limit; in
        hybrid mode (``bm25_words``), BM25's query of one clause a word must fit too."""
        limit = self.target.clause_limit
        used = sum(map(clause_count, filters))
        if bm25_words and bm25_words + max(used, 1) > limit:
            raise ValueError(
                f"hybrid mode's BM25 query has a clause per word: {bm25_words} words and {used} "
                f"filter clauses exceed the cluster's limit of {limit} clauses; "
                "shorten the query"
            )
        if used >= limit:
            raise ValueError(
                f"the filters have {used} clauses, the cluster's limit of {limit} "
                "clauses leaves none for the query"
            )
        return limit - used

    def _sent_plan(self, plan: Callable[[str], Plan[SearchResult]]) -> Plan[SearchResult]:
        """``plan(query_type)``, with term clauses where the cluster has no sparse_vector query,
        and the cluster's refusal of too many clauses in one line."""
        try:
            try:
                return (yield from plan(self.query_type))
            except ApiError as error:
                if self.query_type != "sparse_vector" or _NO_QUERY not in str(error):
                    raise
            # Up to 8.17 the query came with the machine-learning plugin, which minimal
            # distributions leave out; boosted term clauses are the same Lucene query.
            logger.warning("%s: no sparse_vector query; searching with term clauses", self.index)
            self.query_type = "bool"
            return (yield from plan(self.query_type))
        except ApiError as error:
            if _TOO_MANY_CLAUSES not in str(error):
                raise
            limit = self.target.clause_limit
            raise ValueError(
                f"the query and its filters exceed the cluster's limit of {limit} clauses "
                f"({error_reason(error)}); shorten the query or use fewer filters"
            ) from error

    def _described(
        self, result: SearchResult, expanded: ExpandedQuery, explain: bool
    ) -> SearchResult:
        """``result`` with its explanations (if asked) and the account of the query's terms."""
        if explain:
            explain_hits(self.model, expanded, result.hits)
        result.query_terms = expanded.weights.nnz + len(expanded.unseen)
        result.expansion_terms = expanded.clause_count + expanded.pruned_terms
        result.pruned_terms = expanded.pruned_terms
        if expanded.pruned_terms:
            result.notes.append(
                f"the expansion had {result.expansion_terms} terms; the {expanded.pruned_terms} "
                f"lowest-weighted were left out (cluster limit {self.target.clause_limit} clauses)"
            )
        return result


class Searcher(SearchOperations, SyncAPI):
    """Search an es-scm index with its model on an ``Elasticsearch`` client (the parameters and
    operations of :class:`SearchOperations`)."""


class AsyncSearcher(SearchOperations, AsyncAPI):
    """:class:`Searcher` on an ``AsyncElasticsearch`` client: the same operations, awaited."""
