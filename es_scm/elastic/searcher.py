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
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from elasticsearch import ApiError, Elasticsearch

from es_scm.defaults import MAX_QUERY_WORDS
from es_scm.elastic.calls import Call, Plan, run_sync
from es_scm.elastic.connection import error_reason, max_clauses_plan
from es_scm.elastic.explain import explain_hits
from es_scm.elastic.hybrid import hybrid_options
from es_scm.elastic.plans import rescore_plan, search_plan
from es_scm.elastic.query import (
    ExpandedQuery,
    QueryType,
    check_query_length,
    clause_count,
    expand_query,
)
from es_scm.elastic.results import Hit, NotProvenError, PartialResultError, SearchResult
from es_scm.elastic.schema import ModelMismatchError, check_indices
from es_scm.elastic.target import Target, TargetMoved
from es_scm.validation import NON_NEGATIVE_INT, POSITIVE_INT, Boolean, Options, OrNone, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "Filter",
    "Hit",
    "Mode",
    "NotProvenError",
    "PartialResultError",
    "SearchResult",
    "Searcher",
    "SearcherBase",
]

Mode = Literal["native", "exact", "hybrid", "rescore"]
Filter = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None

logger = logging.getLogger(__name__)
_NO_QUERY = "unknown query [sparse_vector]"  # a cluster without the sparse_vector query
_TOO_MANY_CLAUSES = "maxClauseCount"  # Lucene's refusal of a query over the clause limit
_ATTEMPTS = 3  # searches in a row that may find the alias moved before giving up
#: A checked target and the side its index applies S on (``"query"`` or ``"documents"``).
Checked = tuple[Target, str]


class SearcherBase:
    """What the sync :class:`Searcher` and the async one share: the arguments, the plans.

    The model is checked against the indices behind ``index`` once, at the first use; every
    answer is then read through what the check found (:mod:`es_scm.elastic.target`): a hit or
    document of another index, or a search over another number of shards, means that the alias
    moved (or the pattern matches other indices), so the model is checked again and the search
    repeated — or :class:`~es_scm.elastic.schema.ModelMismatchError` raised if the indices now
    have another model. An answer that names no index (no hits) is confirmed by one more look at
    the indices. A shard that fails raises :class:`PartialResultError`.

    Parameters
    ----------
    client : Elasticsearch or AsyncElasticsearch
    index : str
        An es-scm index, an alias, or a pattern of indices built with ``model``.
    model : SoftCosineModel
    max_clauses : int, optional
        The most clauses a query may have; default: the cluster's limit (see
        :func:`~es_scm.elastic.connection.cluster_max_clauses`). Filters count too.
    max_window : int
        The largest candidate window of ``exact`` mode (``index.max_result_window`` is 10,000 by
        default).
    query_type : {"sparse_vector", "bool"}
        The form of the expanded query (see :meth:`ExpandedQuery.es_query`); both score alike.
    max_query_words : int
        The most words a query may have (runs of letters and digits, stop words included):
        a longer one raises :class:`~es_scm.elastic.query.QueryTooLongError` before any request
        (default :data:`~es_scm.defaults.MAX_QUERY_WORDS`).
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
        max_query_words: int = MAX_QUERY_WORDS,
    ) -> None:
        self.client = client
        self.index = index
        self.model = model
        self.max_window = check(max_window, "max_window", POSITIVE_INT)
        self.query_type = check(query_type, "query_type", Options(("sparse_vector", "bool")))
        self.max_query_words = check(max_query_words, "max_query_words", POSITIVE_INT)
        self._max_clauses = check(max_clauses, "max_clauses", OrNone(POSITIVE_INT))
        self._checked: Checked | None = None  # set by a passed model check

    def _forget_index(self) -> None:
        """The index was deleted: check the next one of that name again."""
        self._checked = None

    def _check_plan(self) -> Plan:
        """Check the model against the indices behind the name now, and remember them.

        Returns the ``_meta.es_scm`` of the indices and the :data:`Checked` pair.
        """
        response = yield Call("indices.get", {"index": self.index}, {"ignore_status": 404})
        meta = check_indices(self.index, response, self.model)
        checked = (Target.of(self.index, response.body), meta["expansion"])
        self._checked = checked
        return meta, checked

    def _ready_plan(self) -> Plan:
        """The :data:`Checked` pair (the model checked once) and the clause limit, learned once."""
        checked = self._checked
        if checked is None:
            _, checked = yield from self._check_plan()
        if self._max_clauses is None:
            self._max_clauses = yield from max_clauses_plan()
        return checked

    def _recheck_plan(self, seen: Target, total: int | None) -> Plan:
        """An answer did not come from ``seen``, or named no index: check the model again.

        Returns whether the name still stands for the same indices (an answer from ``total``
        shards is then theirs too, as through an alias with routing).
        """
        self._checked = None  # until checked again (another thread then checks too)
        try:
            _, (target, expansion) = yield from self._check_plan()
        except ModelMismatchError as error:
            raise ModelMismatchError(
                f"{self.index!r} moved since its model was checked: {error} (an AliasSearcher "
                "follows an alias from one model to the next)"
            ) from error
        if target.indices != seen.indices:
            now = ", ".join(sorted(target.indices))
            logger.info("%s: now %s; searching again", self.index, now)
            return False
        totals = {*seen.shard_totals, *([] if total is None else [total])}
        self._checked = (target.accepting(totals), expansion)
        return True

    def _verified_plan(self, attempt: Callable[[Checked], Plan]) -> Plan:
        """``attempt``'s result, from the indices its model was checked on (class docstring)."""
        for _ in range(_ATTEMPTS):
            checked = yield from self._ready_plan()
            try:
                result = yield from attempt(checked)
            except TargetMoved as moved:
                yield from self._recheck_plan(checked[0], moved.total)
                continue
            if result.hits or (yield from self._recheck_plan(checked[0], None)):
                return result
        raise PartialResultError(
            f"{self.index!r} moved during each of {_ATTEMPTS} attempts of the search; try again"
        )

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
        words = check_query_length(query, self.max_query_words)
        settings = {
            "page": (k, from_),
            "filters": filters,
            "max_window": self.max_window,
            "hybrid": hybrid,
        }

        def attempt(checked: Checked) -> Plan:
            budget = self._clause_budget(filters, words if mode == "hybrid" else 0)
            expanded = expand_query(self.model, query, budget, checked[1])
            result = yield from self._sent_plan(
                lambda query_type: search_plan(
                    checked[0], query, expanded, mode, {**settings, "query_type": query_type}
                )
            )
            return _described(result, expanded, explain, self.model, self._max_clauses)

        result = yield from self._verified_plan(attempt)
        if result.unproven:
            raise NotProvenError(result.unproven, result)
        return result

    def _clause_budget(self, filters: list[dict[str, Any]], bm25_words: int) -> int:
        """The clauses the expansion may have beside ``filters`` under the cluster's limit; in
        hybrid mode (``bm25_words``), BM25's query of one clause a word must fit too."""
        assert self._max_clauses is not None
        used = sum(map(clause_count, filters))
        if bm25_words and bm25_words + max(used, 1) > self._max_clauses:
            raise ValueError(
                f"hybrid mode's BM25 query has a clause per word: {bm25_words} words and {used} "
                f"filter clauses exceed the cluster's limit of {self._max_clauses} clauses; "
                "shorten the query"
            )
        if used >= self._max_clauses:
            raise ValueError(
                f"the filters have {used} clauses, the cluster's limit of {self._max_clauses} "
                "clauses leaves none for the query"
            )
        return self._max_clauses - used

    def _sent_plan(self, plan: Callable[[str], Plan]) -> Plan:
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
            raise ValueError(
                f"the query and its filters exceed the cluster's limit of {self._max_clauses} "
                f"clauses ({error_reason(error)}); shorten the query or use fewer filters"
            ) from error

    def _rescore_plan(self, query: str, options: dict[str, Any]) -> Plan:
        """The plan of :meth:`Searcher.rescore`."""
        ids, es_query = options.get("ids"), options.get("es_query")
        if (ids is None) == (es_query is None):
            raise ValueError("rescore needs exactly one of ids= or es_query=")
        size = check(options.get("size", 100), "size", POSITIVE_INT)
        k = check(options.get("k"), "k", OrNone(POSITIVE_INT))
        explain = check(options.get("explain", False), "explain", Boolean())
        check_query_length(query, self.max_query_words)

        def attempt(checked: Checked) -> Plan:
            expanded = expand_query(self.model, query, self._clause_budget([], 0), checked[1])
            result = yield from rescore_plan(checked[0], expanded, ids, es_query, size, k)
            if explain:
                explain_hits(self.model, expanded, result.hits)
            return result

        return (yield from self._verified_plan(attempt))


def _described(
    result: SearchResult,
    expanded: ExpandedQuery,
    explain: bool,
    model: SoftCosineModel,
    max_clauses: int | None,
) -> SearchResult:
    """``result`` with its explanations (if asked) and the account of the query's terms."""
    if explain:
        explain_hits(model, expanded, result.hits)
    result.query_terms = expanded.weights.nnz + len(expanded.unseen)
    result.expansion_terms = expanded.clause_count + expanded.pruned_terms
    result.pruned_terms = expanded.pruned_terms
    if expanded.pruned_terms:
        result.notes.append(
            f"the expansion had {result.expansion_terms} terms; the {expanded.pruned_terms} "
            f"lowest-weighted were left out (cluster limit {max_clauses} clauses)"
        )
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
        """Refuse an index built with another model (once per searcher, and again when an
        answer shows that the alias moved)."""
        run_sync(self._ready_plan(), self.client)

    @property
    def expansion(self) -> str:
        """Where the index applies S: ``"query"`` or ``"documents"`` (read once from its _meta)."""
        return run_sync(self._ready_plan(), self.client)[1]

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
