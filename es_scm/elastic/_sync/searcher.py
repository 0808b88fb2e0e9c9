# Generated from es_scm/elastic/_async/searcher.py by scripts/generate_sync.py: do not edit.
# Change the asyncio source and run `python scripts/generate_sync.py`.
r"""Search an es-scm index with its model: one method per intent, each a few requests.

A searcher (:class:`~es_scm.elastic.Searcher` on an ``Elasticsearch`` client, and
:class:`~es_scm.elastic.aio.AsyncSearcher` on an ``AsyncElasticsearch`` one: the same code, the
sync one generated) answers a query in one of five ways, each its own method:

``search``   the SCM, exactly: windows of Elasticsearch's candidates rescored from the float64
             vectors y' kept in ``_source``, grown until the result provably equals the
             brute-force top k (:mod:`es_scm.elastic.windows` argues why).
``native``   Elasticsearch's scores divided by ‖Wx‖_S: the SCM up to the 9-bit precision of the
             stored values, in one request.
``hybrid``   BM25 fused with the exact SCM (:mod:`es_scm.elastic.hybrid`), and with a dense kNN
             leg when asked (``dense=``: :mod:`es_scm.elastic.dense`).
``bm25``     Elasticsearch's BM25 on the text field, as it scores it.
``dense``    Elasticsearch's kNN search on a ``dense_vector`` field alone, as it scores it.

``rescore`` gives the exact SCM of given candidates, and ``batch_search`` runs many queries of
one method at once (each round trip of all of them in one ``_msearch``, their query vectors
encoded in one batch).

Each method is a plan (:mod:`es_scm.elastic.plans`): the requests it sends, round trip by round
trip, and how it finishes. The searcher checks the method's options, makes its plan, and runs
one loop for every method: what the plan asks goes in one request (one ``search``, or one
``_msearch`` for several), its answers go back to the plan, until the plan is done.

The vectors of an index that es-scm filled with dense vectors are searched with the query encoded
by the index's encoder: the one given to the searcher (``encoder=``), else the one ``_meta``
names, loaded once; either way its identity must be the recorded one.

Every answer is read through the searcher's :class:`~es_scm.elastic.target.TargetCheck`: whole,
and from the indices the model was checked on, else the model is checked again and the search
repeated.

Native retrieval needs S ≥ 0 and W ≥ 0: negative entries of x' are not sent (a query vector
cannot carry a negative weight) and ``sparse_vector`` stores positive values only, so with
negative similarities or weights the native ranking is an approximation, and exact search
reports ``exact_guarantee=False``.

What the searcher learns of the cluster it learns once: the model check, the clause limit, and
whether the cluster has the ``sparse_vector`` query (where it has not, the same Lucene query is
sent as ``term`` clauses from then on). What its engine does its own way — Elasticsearch or
OpenSearch: the query form, whether an ``_msearch`` reports named queries' scores, dense
vectors — it reads off the client, without a request (:mod:`es_scm.elastic.engines`). The code
reads top-down in the order the requests go.
It is written once, for asyncio, in ``es_scm/elastic/_async/searcher.py``;
``scripts/generate_sync.py`` generates the sync searcher from it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from elasticsearch import ApiError, Elasticsearch, NotFoundError

from es_scm.defaults import MAX_QUERY_WORDS
from es_scm.elastic._sync.client import cluster_max_clauses
from es_scm.elastic._sync.opensearch import es_surface
from es_scm.elastic.concurrency import compute, map_concurrently
from es_scm.elastic.connection import error_reason
from es_scm.elastic.dense import DenseQuery, check_encoder, encode_texts, field_for, loaded
from es_scm.elastic.engines import engine_of
from es_scm.elastic.filters import FILTER_POLICIES, Filter, FilterPolicy
from es_scm.elastic.names import check_target_name
from es_scm.elastic.plans import Context, Plan, RescorePlan, search_request
from es_scm.elastic.query import ExpandedQuery, QueryType, expand_query
from es_scm.elastic.requests import (
    Dense,
    Method,
    RescoreRequest,
    SearchRequest,
    dense_per_query,
)
from es_scm.elastic.results import (
    BatchSearchError,
    NotProvenError,
    PartialResultError,
    SearchResult,
)
from es_scm.elastic.schema import ModelMismatchError
from es_scm.elastic.target import ATTEMPTS, Checked, Target, TargetCheck, TargetMoved
from es_scm.elastic.windows import msearch_lines
from es_scm.encoder import SentenceEncoder
from es_scm.fusion import Fusion
from es_scm.options import DenseOptions
from es_scm.validation import POSITIVE_INT, Options, OrNone, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["Searcher"]

logger = logging.getLogger(__name__)
_NO_QUERY = "unknown query [sparse_vector]"  # a cluster without the sparse_vector query
_TOO_MANY_CLAUSES = "maxClauseCount"  # Lucene's refusal of a query over the clause limit
_MSEARCH_SIZE = 100  # searches per _msearch request of a batch, at most
_MSEARCH_LEAST = 10  # and at least (but for the last), when the batch is cut for overlap


class _QueryFormChanged(Exception):
    """The cluster has no ``sparse_vector`` query: the plan is made again with term clauses."""


def _take(plan: Plan, answers: Sequence[Mapping[str, Any]] | None) -> bool:
    """A batch's plan takes its answers; whether it must run alone instead (one of its searches
    failed, or it read another index)."""
    if answers is None:
        return True
    try:
        plan.take(answers)
    except (TargetMoved, PartialResultError):
        return True
    return False


class Searcher:
    """Search an es-scm index, alias or pattern with its model (the module docstring).

    The model is checked against the indices behind ``name`` once, at the first use; every
    answer is then read through what the check found (:mod:`es_scm.elastic.target`): a hit or
    document of another index, or a search over another number of shards, means that the alias
    moved (or the pattern matches other indices), so the model is checked again and the search
    repeated — or :class:`~es_scm.elastic.schema.ModelMismatchError` raised if the indices now
    have another model. An answer that names no index (no hits) is confirmed by one more look at
    the indices. A shard that fails raises :class:`~es_scm.elastic.PartialResultError`.

    Parameters
    ----------
    client : Elasticsearch or AsyncElasticsearch
        An official client: sync for :class:`~es_scm.elastic.Searcher`, asyncio for
        :class:`~es_scm.elastic.aio.AsyncSearcher`; for OpenSearch, one that
        :func:`~es_scm.elastic.client_from_env` makes, or an opensearch-py ``OpenSearch``
        (``AsyncOpenSearch``), wrapped (:mod:`es_scm.elastic._async.opensearch`).
    name : str
        An es-scm index, an alias, or a pattern of indices built with ``model``.
    model : SoftCosineModel, or an iterable of them
        The model of the indices; several where the name is an alias that moves from the indices
        of one model to those of another (a model swap, :func:`~es_scm.elastic.reindex_into_alias`):
        each search then reads the indices with the model they record (add the next one with
        :meth:`add_model` before the swap).
    max_clauses : int, optional
        The most clauses a query may have; default: the cluster's limit (see
        :func:`~es_scm.elastic.cluster_max_clauses`). Filters count too.
    max_window : int
        The largest candidate window of exact search (``index.max_result_window`` is 10,000 by
        default).
    query_type : {"sparse_vector", "bool", "rank_feature"}, optional
        The form of the expanded query (see :meth:`ExpandedQuery.es_query`); all score alike.
        None (default): the engine's own, ``"sparse_vector"`` on Elasticsearch (the smaller and
        faster request; ``"bool"`` too), ``"rank_feature"`` on OpenSearch (its only form).
    max_query_words : int
        The most words a query may have (runs of letters and digits, stop words included):
        a longer one raises :class:`~es_scm.elastic.QueryTooLongError` before any request
        (default :data:`~es_scm.defaults.MAX_QUERY_WORDS`).
    filter_policy : {"any", "safe"}
        ``"any"`` (default) sends every filter as it is, with the client's rights: for filters
        the application writes. ``"safe"`` refuses, before any request, a filter clause outside
        :data:`~es_scm.elastic.filters.SAFE_QUERIES` (a ``terms`` lookup into another index, a
        ``wrapper``, a script...): for filters that come from users (what an untrusted filter
        could do: :mod:`es_scm.elastic.filters`).
    encoder : SentenceEncoder or str, optional
        The sentence encoder of the index's dense vectors (an index created with ``dense=``),
        which encodes the queries of ``dense=True``: a :class:`~es_scm.encoder.SentenceEncoder`,
        or a model name or folder. None (default): the encoder ``_meta.es_scm.dense`` names,
        loaded once, at the first search that needs it. Either way its identity (the
        fingerprint of its files) must be the one the index recorded, else
        :class:`~es_scm.elastic.dense.EncoderMismatchError`.
    """

    def __init__(
        self,
        client: Elasticsearch,
        name: str,
        model: SoftCosineModel | Iterable[SoftCosineModel],
        *,
        max_clauses: int | None = None,
        max_window: int = 10_000,
        query_type: QueryType | None = None,
        max_query_words: int = MAX_QUERY_WORDS,
        filter_policy: FilterPolicy = "any",
        encoder: SentenceEncoder | str | os.PathLike[str] | None = None,
    ) -> None:
        client = es_surface(client)
        self.client = client
        #: What the cluster's engine does its own way (:mod:`es_scm.elastic.engines`).
        self.engine = engine_of(client)
        if encoder is not None and not isinstance(encoder, SentenceEncoder):
            encoder = SentenceEncoder(encoder)
        self.encoder: SentenceEncoder | None = encoder
        self._encoder_checked: str | None = None  # the weights self.encoder was checked against
        self.max_window: int = check(max_window, "max_window", POSITIVE_INT)
        self.query_type: QueryType = check(
            query_type or self.engine.query_type, "query_type", Options(self.engine.query_types)
        )
        self.max_query_words: int = check(max_query_words, "max_query_words", POSITIVE_INT)
        self.filter_policy: FilterPolicy = check(
            filter_policy, "filter_policy", Options(FILTER_POLICIES)
        )
        limit = check(max_clauses, "max_clauses", OrNone(POSITIVE_INT))
        self.target = TargetCheck(check_target_name(name), model, limit)

    @property
    def name(self) -> str:
        """The index, alias or pattern searched."""
        return self.target.name

    @property
    def model(self) -> SoftCosineModel:
        """The model of the indices last checked (before the first search: the first given)."""
        return self.target.model

    def add_model(self, model: SoftCosineModel) -> None:
        """Search indices built with ``model`` too (e.g. the next model of an alias, before the
        swap to it)."""
        self.target.add(model)

    # -- what the index is ------------------------------------------------------------------------

    def check(self) -> dict[str, Any]:
        """Check the model against the indices behind the name now; return their
        ``_meta.es_scm``.

        Raises
        ------
        IndexNotFoundError
            If nothing has that name.
        ModelMismatchError
            If the indices are not es-scm indices of this model.
        """
        meta, _ = self.target.accept(self._get_index())
        return meta

    def expansion(self) -> str:
        """Where the index applies S: ``"query"`` or ``"documents"`` (the model checked once)."""
        return (self._ready()).expansion

    def max_clauses(self) -> int:
        """The most clauses a query may have (the cluster's limit unless given), learned once."""
        self._ready()
        return self.target.limit

    def expand(self, query: str) -> ExpandedQuery:
        """The query's vector, soft norm and expansion (see :mod:`es_scm.elastic.query`)."""
        checked = self._ready()
        return expand_query(self.target.model, query, self.target.limit, checked.expansion)

    # -- searching, by intent ---------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        from_: int = 0,
        filter: Filter = None,
        explain: bool = False,
    ) -> SearchResult:
        """The top ``k`` documents by the SCM after skipping ``from_``: provably the brute-force
        top k (:mod:`es_scm.elastic.windows`).

        ``filter`` is an Elasticsearch query clause, or a list of them, that the documents must
        match (e.g. ``{"term": {"metadata.topic": "sports"}}``): it changes no score, and the
        result is the exact top k among the matching documents. With ``explain``, every hit
        gets an ``explanation`` of its SCM term pair by term pair, whose contributions sum to
        ``hit.score`` (:mod:`es_scm.elastic.explain`).

        Raises
        ------
        NotProvenError
            When the top ``from_ + k`` cannot be proven within ``max_window`` candidates (deep
            pages), or when the cluster's clause limit left out too much of the expansion;
            ``error.result`` holds the window's exact scores.
        QueryTooLongError
            When the query has more than ``max_query_words`` words.
        """
        plan, request = self._request(
            "search", query, k, from_=from_, filter=filter, explain=explain
        )
        result = self._run(plan, request)
        if result.unproven:
            raise NotProvenError(result.unproven, result)
        return result

    def native(
        self,
        query: str,
        k: int = 10,
        *,
        from_: int = 0,
        filter: Filter = None,
        explain: bool = False,
    ) -> SearchResult:
        """The top ``k`` after ``from_`` by Elasticsearch's score divided by ‖Wx‖_S: the SCM up
        to the 9-bit precision of the stored values, in one request. ``filter`` and ``explain``
        as in :meth:`search` (the explanation is of the exact SCM)."""
        plan, request = self._request(
            "native", query, k, from_=from_, filter=filter, explain=explain
        )
        return self._run(plan, request)

    def hybrid(
        self,
        query: str,
        k: int = 10,
        *,
        from_: int = 0,
        filter: Filter = None,
        fusion: Fusion | str | None = None,
        depth: int | None = None,
        explain: bool = False,
        dense: Dense = None,
    ) -> SearchResult:
        """The top ``k`` after ``from_`` of BM25 fused with the exact SCM, and with a dense kNN
        leg when ``dense`` is given (:mod:`es_scm.elastic.hybrid`).

        ``dense`` is None (two legs), True (the index's own dense vectors, an index created
        with ``dense=``: the query encoded by its encoder) or a
        :class:`~es_scm.elastic.dense.DenseQuery` (a ``dense_vector`` field of the caller's,
        e.g. ``metadata.embedding``, and the query's vector). ``fusion`` is a
        :class:`~es_scm.fusion.Fusion` (``fusion_from("max", alpha=0.7)``; with a dense leg
        ``fusion_from("zscore", weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5})``, whose
        weights name the legs fused) or the name of one (``"max"``, ``"linear"``,
        ``"zscore"``, ``"rrf"``); None takes the model's own
        (:attr:`~es_scm.model.SoftCosineModel.hybrid`, what ``es-scm tune`` saved; with a
        dense leg its ``"dense"`` entry), else :data:`es_scm.defaults.HYBRID_DEFAULTS` (with a
        dense leg :data:`es_scm.defaults.HYBRID_DENSE_DEFAULTS`). Each leg retrieves its top
        ``depth`` (at least ``from_ + k``; None: the model's, else the default). Each hit's
        ``components`` holds its score by leg (the dense leg's is Elasticsearch's kNN score,
        (1 + cos) / 2 for cosine); with ``explain``, its explanation is of its exact SCM
        (``components["scm"]``). ``filter`` as in :meth:`search`. The result is proven
        (``exact_guarantee``) only when every leg's list is its exact top: a dense leg's field
        must be indexed ``flat`` (exact kNN; a note says so otherwise).
        """
        plan, request = self._request(
            "hybrid",
            query,
            k,
            from_=from_,
            filter=filter,
            explain=explain,
            fusion=fusion,
            depth=depth,
            dense=dense,
        )
        return self._run(plan, request)

    def bm25(
        self, query: str, k: int = 10, *, from_: int = 0, filter: Filter = None
    ) -> SearchResult:
        """The top ``k`` after ``from_`` by Elasticsearch's BM25 (a ``match`` query on the text
        field, analyzed by the index's analyzer), scores as Elasticsearch gives them: the
        baseline on the same index. ``filter`` as in :meth:`search`."""
        plan, request = self._request("bm25", query, k, from_=from_, filter=filter)
        return self._run(plan, request)

    def dense(
        self,
        query: str,
        k: int = 10,
        *,
        from_: int = 0,
        filter: Filter = None,
        dense: Dense = None,
    ) -> SearchResult:
        """The top ``k`` after ``from_`` by Elasticsearch's kNN search alone (the dense leg of
        :meth:`hybrid`), scores as Elasticsearch gives them ((1 + cos) / 2 for cosine): the
        dense baseline on the same index.

        ``dense`` None (or True) searches the index's own dense vectors with ``query`` encoded
        by its encoder; a :class:`~es_scm.elastic.dense.DenseQuery` searches its field with its
        vector (``query`` is then not read but by the length check). ``filter`` as in
        :meth:`search`. ``exact_guarantee`` holds when the field is indexed ``flat`` (exact
        kNN).
        """
        plan, request = self._request("dense", query, k, from_=from_, filter=filter, dense=dense)
        return self._run(plan, request)

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

        Raises
        ------
        PartialResultError
            When a shard could not serve some of the ``ids``: they are not known to be missing.
        """
        request = RescoreRequest.of(
            query, ids, es_query, size, k, explain, max_words=self.max_query_words
        )
        return self._run(RescorePlan, request)

    @overload
    def batch_search(
        self,
        queries: Mapping[str, str],
        k: int = 10,
        *,
        method: Method = "search",
        threads: int = 4,
        unproven: Literal["raise", "keep"] = "raise",
        **options: Any,
    ) -> dict[str, SearchResult]: ...

    @overload
    def batch_search(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        method: Method = "search",
        threads: int = 4,
        unproven: Literal["raise", "keep"] = "raise",
        **options: Any,
    ) -> list[SearchResult]: ...

    def batch_search(
        self,
        queries: Mapping[str, str] | Sequence[str],
        k: int = 10,
        *,
        method: Method = "search",
        threads: int = 4,
        unproven: Literal["raise", "keep"] = "raise",
        **options: Any,
    ) -> dict[str, SearchResult] | list[SearchResult]:
        """Many queries of one method: what as many calls of ``method`` return, in less time.

        Parameters
        ----------
        queries : sequence of str, or mapping of query id to str
            A sequence gives a list of results in its order; a mapping (``{qid: text}``, as
            pyserini's ``batch_search`` takes them) a dict of results by query id.
        k : int
            The hits of each query.
        method : {"search", "native", "hybrid", "bm25", "dense"}
            The method every query runs, with ``options``: its keyword arguments
            (``from_``, ``filter``, ``explain``; ``fusion``, ``depth`` and ``dense`` for
            hybrid; ``dense`` for dense). ``dense=True`` encodes every query in one batch;
            ``dense`` may also give each query its own
            :class:`~es_scm.elastic.dense.DenseQuery`: a sequence in the queries' order, or a
            mapping by query id.
        threads : int
            Queries whose answers are read at once (threads of the sync searcher, tasks of the
            asyncio one).
        unproven : {"raise", "keep"}
            Exact search only: raise :class:`NotProvenError` naming the queries whose top k
            could not be proven (``error.result``: the first one's, as a call of ``search``
            would; ``error.results``: every query's), or keep their results, whose
            ``unproven`` says why.

        Raises
        ------
        BatchSearchError
            Queries that could not be answered (a query too long, a search refused), named by
            id (or position) with their errors in ``error.failed``, the results of all the
            others in ``error.results``.

        Every round trip of every query goes in one ``_msearch`` per 100 searches: the first
        of all of them (exact search's first window, native's or BM25's page, hybrid search's
        lists), then the second of those that need one (a larger window, scores still owed),
        and so on. A query one of whose searches fails, or whose answer comes from other
        indices, is searched again alone, as a single call would.
        """
        threads = check(threads, "threads", POSITIVE_INT)
        unproven = check(unproven, "unproven", Options(("raise", "keep")))
        if isinstance(queries, str):
            raise ValueError("queries must be a sequence of query texts or a mapping id → text")
        ids = list(queries) if isinstance(queries, Mapping) else list(range(len(queries)))
        texts = list(queries.values()) if isinstance(queries, Mapping) else list(queries)
        dense = dense_per_query(queries, options.pop("dense", None))
        given: dict[str, Any] = {} if not dense or dense[0] is None else {"dense": dense[0]}
        plan, _ = search_request(method, "", k, max_words=1, **options, **given)  # once
        requests: dict[Any, SearchRequest] = {}
        failed: dict[Any, BaseException] = {}
        for qid, text, query in zip(ids, texts, dense, strict=True):
            try:  # a query's own text (its length) or dense vector: its failure alone
                extra = {} if query is None else {"dense": query}
                requests[qid] = self._request(method, text, k, **options, **extra)[1]
            except ValueError as error:
                failed[qid] = error
        answered = self._batch(plan, list(requests.values()), threads)
        results: dict[Any, SearchResult] = {}
        for qid, outcome in zip(requests, answered, strict=True):
            if isinstance(outcome, SearchResult):
                results[qid] = outcome
            else:
                failed[qid] = outcome
        if failed:
            raise BatchSearchError({q: failed[q] for q in ids if q in failed}, results)
        unprovable = [qid for qid in ids if results[qid].unproven]
        if unproven == "raise" and unprovable:
            first = results[unprovable[0]]
            named = ", ".join(repr(qid) for qid in unprovable[:5])
            more = f" and {len(unprovable) - 5} more" if len(unprovable) > 5 else ""
            raise NotProvenError(
                f"{len(unprovable)} of {len(ids)} queries could not be proven ({named}{more}); "
                f"{unprovable[0]!r}: {first.unproven}",
                first,
                results,
            )
        if isinstance(queries, Mapping):
            return results
        return [results[n] for n in ids]

    # -- one search: checked, planned, sent round trip by round trip ------------------------------

    def _request(
        self, method: str, query: str, k: int, **options: Any
    ) -> tuple[type[Plan], SearchRequest]:
        return search_request(
            method,
            query,
            k,
            max_words=self.max_query_words,
            filter_policy=self.filter_policy,
            model_hybrid=self.target.model.hybrid,
            **options,
        )

    def _run(self, plan: type[Plan], request: SearchRequest | RescoreRequest) -> SearchResult:
        """``request``'s result by ``plan``, from the indices the model was checked on: after an
        answer from elsewhere the model is checked again and the search repeated; an answer
        without hits is confirmed by one more look at the indices."""
        for _ in range(ATTEMPTS):
            checked = self._ready()
            if isinstance(request, SearchRequest) and request.filters:
                checked = self._fields_known(checked, [request])
            if isinstance(request, SearchRequest) and request.dense is not None:
                (request,) = self._with_vectors(checked, [request])
            planned = plan(request, self._context(checked))
            try:
                while (searches := planned.next()) is not None:
                    planned.take(self._send(searches))
            except TargetMoved as moved:
                self._recheck(checked.target, moved.total)
                continue
            except NotFoundError:  # an index of the name went away (an alias moved): look again
                self._recheck(checked.target, None)
                continue
            except _QueryFormChanged:
                continue
            result = planned.result()
            if result.hits or self._recheck(checked.target, None):
                return result
        raise self.target.moved_too_often()

    def _context(self, checked: Checked) -> Context:
        model = checked.model or self.target.model
        return Context(
            model,
            checked,
            self.target.limit,
            self.query_type,
            self.max_window,
            named_scores=self.engine.named_scores_in_msearch,
        )

    def _ready(self) -> Checked:
        """The model checked (once) and the clause limit known (once)."""
        checked = self.target.checked
        if checked is None:
            _, checked = self.target.accept(self._get_index())
        if self.target.clause_limit is None:
            self.target.clause_limit = cluster_max_clauses(self.client)
        return checked

    def _fields_known(
        self, checked: Checked, requests: Sequence[SearchRequest | RescoreRequest]
    ) -> Checked:
        """``checked``, once every field that the requests' filters name is known to be mapped
        (:class:`~es_scm.elastic.filters.MappedFields`, from the model check's answer: no
        request). A field that it lacks is looked up once more, since fields may have been
        mapped since the check.

        Raises
        ------
        UnknownFieldError
            A filter names a field that no index behind the name maps: it would match nothing.
        """
        filters = [r.filters for r in requests if isinstance(r, SearchRequest) and r.filters]
        if not any(checked.fields.unknown(clauses) for clauses in filters):
            return checked
        _, checked = self.target.accept(self._get_index())
        for clauses in filters:
            checked.fields.check(self.name, clauses)
        return checked

    def _get_index(self) -> Any:
        return self.client.options(ignore_status=404).indices.get(index=self.name)

    def _recheck(self, seen: Target, total: int | None) -> bool:
        """An answer did not come from ``seen``, or named no index: check the model again;
        whether the name still stands for the same indices."""
        self.target.forget()  # until checked again (another thread then checks too)
        try:
            _, now = self.target.accept(self._get_index())
        except ModelMismatchError as error:
            raise self.target.moved(error) from error
        return self.target.still(seen, now, total)

    def _send(self, searches: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The answers to one round trip of a plan: one ``search`` (or ``mget``), or one
        ``_msearch`` of several searches, each refusing a partial answer. A search that the
        ``_msearch`` answers with an error is sent alone, so that its error is raised as a
        single search raises it."""
        try:
            if len(searches) == 1:
                (search,) = searches
                if search.get("api") == "mget":
                    arguments = {key: value for key, value in search.items() if key != "api"}
                    return [(self.client.mget(**arguments, source=True)).body]
                return [self._search(**search)]
            answers = self._msearch_request(searches)
            failed = next((n for n, answer in enumerate(answers) if "error" in answer), None)
            if failed is not None:
                self._search(**searches[failed])  # raises its error
                answers = self._msearch_request(searches)  # it passed alone: once more
                if any("error" in answer for answer in answers):
                    raise RuntimeError(f"{self.name!r}: a search of an _msearch failed twice")
            return answers
        except ApiError as error:
            raise self._refusal(error) from error

    def _refusal(self, error: ApiError) -> Exception:
        """What a refused search means: the cluster has no ``sparse_vector`` query (learned once:
        term clauses from then on), or the query is over the clause limit (one line)."""
        if self.query_type == "sparse_vector" and _NO_QUERY in str(error):
            # Up to 8.17 the query came with the machine-learning plugin, which minimal
            # distributions leave out; boosted term clauses are the same Lucene query.
            logger.warning("%s: no sparse_vector query; searching with term clauses", self.name)
            self.query_type = "bool"
            return _QueryFormChanged()
        if _TOO_MANY_CLAUSES in str(error):
            return ValueError(
                f"the query and its filters exceed the cluster's limit of {self.target.limit} "
                f"clauses ({error_reason(error)}); shorten the query or use fewer filters"
            )
        return error

    def _search(self, **kwargs: Any) -> dict[str, Any]:
        """A search that fails when a shard fails: a partial result would be silently wrong
        (missing hits, and no proof of exactness)."""
        response = self.client.search(**kwargs, allow_partial_search_results=False)
        return response.body

    def _msearch_request(self, searches: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        named = any(search.get("include_named_queries_score") for search in searches)
        response = self.client.msearch(
            searches=msearch_lines(searches), include_named_queries_score=named or None
        )
        return list(response["responses"])

    # -- dense vectors: the index's encoder, the queries' vectors ---------------------------------

    def _with_vectors(self, checked: Checked, requests: list[SearchRequest]) -> list[SearchRequest]:
        """``requests`` with the index's dense vectors asked (``dense=True``) made a
        :class:`DenseQuery` of the query encoded by the index's encoder — every query of the
        batch in one encoding, off the event loop — and every dense query's field checked.

        Raises
        ------
        DenseUnsupportedError
            A dense leg on an engine without dense vectors (OpenSearch), in one line.
        """
        if any(request.dense is not None for request in requests):
            self.engine.check_dense()
        asking = [n for n, request in enumerate(requests) if request.dense is True]
        if asking:
            encoder = self._index_encoder(checked)
            texts = [requests[n].text for n in asking]
            vectors = compute(encode_texts, encoder, texts)
            field = str((checked.encoder or {})["field"])
            requests = list(requests)
            for n, vector in zip(asking, vectors, strict=True):
                requests[n] = dataclasses.replace(requests[n], dense=DenseQuery(field, vector))
        for request in requests:
            if isinstance(request.dense, DenseQuery):
                field_for(self.name, checked.dense_fields, request.dense)
        return requests

    def _index_encoder(self, checked: Checked) -> SentenceEncoder:
        """The encoder of the index's dense vectors: the one given, else the one ``_meta``
        names, loaded once; its identity checked against the index's record (once per record).

        Raises
        ------
        ValueError
            The index holds no dense vectors of es-scm's.
        EncoderMismatchError
            The encoder's weights are not those that encoded the index.
        """
        meta = checked.encoder
        if meta is None:
            raise ValueError(
                f"{self.name!r} holds no dense vectors of es-scm's (an index created with "
                "dense=...); for a dense_vector field of your own give "
                "dense=DenseQuery(field, vector)"
            )
        weights = meta.get("identity", {}).get("weights")
        if self.encoder is not None and self._encoder_checked == weights:
            return self.encoder
        encoder = self.encoder or SentenceEncoder(str(meta["encoder"]))
        _, identity = compute(loaded, encoder)
        check_encoder(self.name, meta, identity, encoder.name)
        self.encoder, self._encoder_checked = encoder, weights
        return encoder

    def _new_encoder(self, options: DenseOptions) -> tuple[SentenceEncoder, int, dict]:
        """The encoder of a new index's dense vectors (``options.encoder``; the searcher's own
        if it has that name), loaded: with its dimension and identity."""
        if self.encoder is not None and self.encoder.name == options.encoder:
            encoder = self.encoder
        else:
            encoder = SentenceEncoder(options.encoder)
        dims, identity = compute(loaded, encoder)
        self.encoder, self._encoder_checked = encoder, identity.get("weights")
        return encoder, dims, identity

    # -- a batch: every round trip of every query in one _msearch ----------------------------------

    def _batch(
        self, plan: type[Plan], requests: list[SearchRequest], threads: int
    ) -> list[SearchResult | Exception]:
        """Every request's result, as :meth:`_run` gives it (or the error it raises), each round
        trip of all of them sent together; a query one of whose searches failed, or that read
        another index, is run alone."""
        if not requests:
            return []
        checked = self._fields_known(self._ready(), requests)
        requests = self._with_vectors(checked, requests)  # encoded once, in one batch
        context = self._context(checked)
        plans: dict[int, Plan] = {}
        alone: set[int] = set()  # run alone: a failure of its own, or another index read
        for n, request in enumerate(requests):
            try:
                plans[n] = plan(request, context)
            except ValueError:  # e.g. BM25's words over the clause limit: its own error, alone
                alone.add(n)
        active = list(plans)
        while active:
            asked: list[tuple[int, list[dict[str, Any]]]] = []
            for n in active:
                searches = plans[n].next()
                if searches is not None:
                    asked.append((n, searches))
            # The round's queries in ``threads`` _msearch requests at once: while the answers of
            # one are read (the client's work), Elasticsearch searches for the next.
            size = min(_MSEARCH_SIZE, max(_MSEARCH_LEAST, -(-len(asked) // threads)))
            chunks = [
                [(n, s, plans[n]) for n, s in asked[a : a + size]]
                for a in range(0, len(asked), size)
            ]
            moved = map_concurrently(self._round, chunks, threads)
            alone.update(n for chunk in moved for n in chunk)
            active = [n for n, _ in asked if n not in alone]
        results: list[SearchResult | Exception] = []
        for n, request in enumerate(requests):
            results.append(self._alone(plan, request) if n in alone else plans[n].result())
        empty = [n for n, r in enumerate(results) if isinstance(r, SearchResult) and not r.hits]
        if empty and not self._recheck(checked.target, None):
            for n in empty:  # moved: searched again, alone
                results[n] = self._alone(plan, requests[n])
        return results

    def _round(self, chunk: list[tuple[int, list[dict[str, Any]], Plan]]) -> list[int]:
        """One round trip of some of a batch's queries, in one ``_msearch``: each plan takes
        its answers; those that must run alone instead (a search of theirs failed, or they read
        another index) are returned."""
        answers = self._msearch([searches for _, searches, _ in chunk])
        return [n for (n, _, plan), found in zip(chunk, answers, strict=True) if _take(plan, found)]

    def _alone(self, plan: type[Plan], request: SearchRequest) -> SearchResult | Exception:
        """A query of a batch run alone: its result, or the error that it alone raises."""
        try:
            return self._run(plan, request)
        except (ApiError, ValueError, PartialResultError, ModelMismatchError) as error:
            return error

    def _msearch(
        self, groups: Sequence[Sequence[Mapping[str, Any]]]
    ) -> list[list[Mapping[str, Any]] | None]:
        """The answers to each group of searches, sent in ``_msearch`` requests of at most
        :data:`_MSEARCH_SIZE` searches; None for a group one of whose searches failed (or all,
        if a request was refused)."""
        searches = [search for group in groups for search in group]
        answers: list[Mapping[str, Any]] = []
        try:
            for start in range(0, len(searches), _MSEARCH_SIZE):
                answers += self._msearch_request(searches[start : start + _MSEARCH_SIZE])
        except ApiError as error:
            logger.info(
                "%s: _msearch refused (%s); one query at a time", self.name, error_reason(error)
            )
            return [None] * len(groups)
        grouped: list[list[Mapping[str, Any]] | None] = []
        position = 0
        for group in groups:
            mine = answers[position : position + len(group)]
            position += len(group)
            grouped.append(None if any("error" in answer for answer in mine) else mine)
        return grouped
