# Generated from es_scm/elastic/_async/searcher.py by scripts/generate_sync.py: do not edit.
# Change the asyncio source and run `python scripts/generate_sync.py`.
r"""Search an es-scm index with its model: one method per intent, each a few requests.

A searcher (:class:`~es_scm.elastic.Searcher` on an ``Elasticsearch`` client, and
:class:`~es_scm.elastic.aio.AsyncSearcher` on an ``AsyncElasticsearch`` one: the same code, the
sync one generated) answers a query in one of five ways, each its own method:

``search``   the SCM, exactly: windows of Elasticsearch's candidates rescored from the float64
             vectors y' kept in ``_source``, grown until the result provably equals the
             brute-force top k (:mod:`es_scm.search.exact` argues why).
``native``   Elasticsearch's scores divided by ‖Wx‖_S: the SCM up to the 9-bit precision of the
             stored values, in one request.
``hybrid``   BM25 fused with the exact SCM (:mod:`es_scm.search.hybrid.legs`), and with a dense kNN
             leg when asked (``dense=``: :mod:`es_scm.index.dense`).
``bm25``     Elasticsearch's BM25 on the text field, as it scores it.
``dense``    Elasticsearch's kNN search on a ``dense_vector`` field alone, as it scores it.

``rescore`` gives the exact SCM of given candidates, and ``batch_search`` runs many queries of
one method at once (each round trip of all of them in one ``_msearch``, their query vectors
encoded in one batch).

Each method is a plan (:mod:`es_scm.search.plans`): the requests it sends, round trip by round
trip, and how it finishes. The searcher checks the method's options, makes its plan, and runs
one loop for every method: what the plan asks goes in one request (one ``search``, or one
``_msearch`` for several), its answers go back to the plan, until the plan is done.

The vectors of an index that es-scm filled with dense vectors are searched with the query encoded
by the index's encoder: the one given to the searcher (``encoder=``), else the one ``_meta``
names, loaded once; either way its identity must be the recorded one.

Every answer is read through the searcher's :class:`~es_scm.search.target.TargetCheck`: whole,
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
vectors — it reads off the client, without a request (:mod:`es_scm.engines`). The code
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

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import ApiError, Elasticsearch, NotFoundError

from es_scm.elastic._sync.handle import IndexHandle
from es_scm.elastic.concurrency import compute, map_concurrently
from es_scm.elastic.connection import error_reason
from es_scm.encoder import SentenceEncoder
from es_scm.engines import connection_detail
from es_scm.index.dense import DenseQuery, encode_texts, field_for
from es_scm.index.names import check_target_name
from es_scm.index.schema import ModelMismatchError, PartialResultError
from es_scm.options.defaults import MAX_QUERY_WORDS
from es_scm.options.validation import POSITIVE_INT, Options, OrNone, check
from es_scm.search.dense import dense_per_query
from es_scm.search.filters import FILTER_POLICIES, FilterPolicy
from es_scm.search.methods import METHODS, SearchMethods
from es_scm.search.plan import Context, Plan, RequestContext, msearch_lines
from es_scm.search.query import ExpandedQuery, QueryType, expand_query
from es_scm.search.results import (
    BatchSearchError,
    ConnectionLostError,
    NotProvenError,
    SearchResult,
)
from es_scm.search.target import ATTEMPTS, Checked, TargetCheck, TargetMoved

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["Searcher"]

logger = logging.getLogger(__name__)
_NO_QUERY = "unknown query [sparse_vector]"  # a cluster without the sparse_vector query
_TOO_MANY_CLAUSES = "maxClauseCount"  # Lucene's refusal of a query over the clause limit
_MSEARCH_SIZE = 100  # searches per _msearch request of a batch, at most
_MSEARCH_LEAST = 10  # and at least (but for the last), when the batch is cut for overlap
# No answer, after the client's retries (a node stopped, a network gone, a node too slow): a
# batch that meets one ends with what it answered (a refusal is an answer: ApiError)
_LOST = (TransportConnectionError, ConnectionTimeout)


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


class Searcher(SearchMethods):
    """Search an es-scm index, alias or pattern with its model (the module docstring).

    The model is checked against the indices behind ``name`` once, at the first use; every
    answer is then read through what the check found (:mod:`es_scm.search.target`): a hit or
    document of another index, or a search over another number of shards, means that the alias
    moved (or the pattern matches other indices), so the model is checked again and the search
    repeated — or :class:`~es_scm.index.schema.ModelMismatchError` raised if the indices now
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
        (default :data:`~es_scm.options.defaults.MAX_QUERY_WORDS`).
    filter_policy : {"any", "safe"}
        ``"any"`` (default) sends every filter as it is, with the client's rights: for filters
        the application writes. ``"safe"`` refuses, before any request, a filter clause outside
        :data:`~es_scm.search.filters.SAFE_QUERIES` (a ``terms`` lookup into another index, a
        ``wrapper``, a script...): for filters that come from users (what an untrusted filter
        could do: :mod:`es_scm.search.filters`).
    encoder : SentenceEncoder or str, optional
        The sentence encoder of the index's dense vectors (an index created with ``dense=``),
        which encodes the queries of ``dense=True``: a :class:`~es_scm.encoder.SentenceEncoder`,
        or a model name or folder. None (default): the encoder ``_meta.es_scm.dense`` names,
        loaded once, at the first search that needs it. Either way its identity (the
        fingerprint of its files) must be the one the index recorded, else
        :class:`~es_scm.index.dense.EncoderMismatchError`.
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
        if encoder is not None and not isinstance(encoder, SentenceEncoder):
            encoder = SentenceEncoder(encoder)
        limit = check(max_clauses, "max_clauses", OrNone(POSITIVE_INT))
        #: The client, the model check and the dense vectors' encoder, shared with the
        #: :class:`~es_scm.elastic.aio.AsyncSCMIndex` of the same index
        #: (:mod:`es_scm.elastic._async.handle`).
        self.handle = IndexHandle(client, check_target_name(name), model, limit, encoder)
        self.client = self.handle.client
        #: What the cluster's engine does its own way (:mod:`es_scm.engines`).
        self.engine = self.handle.engine
        self.max_window: int = check(max_window, "max_window", POSITIVE_INT)
        self.query_type: QueryType = check(
            query_type or self.engine.query_type, "query_type", Options(self.engine.query_types)
        )
        self.max_query_words: int = check(max_query_words, "max_query_words", POSITIVE_INT)
        self.filter_policy: FilterPolicy = check(
            filter_policy, "filter_policy", Options(FILTER_POLICIES)
        )
        self._contexts: dict[str, RequestContext] = {}

    @property
    def name(self) -> str:
        """The index, alias or pattern searched."""
        return self.handle.name

    @property
    def target(self) -> TargetCheck:
        """The model check of the indices behind the name (the handle's)."""
        return self.handle.target

    @property
    def encoder(self) -> SentenceEncoder | None:
        """The encoder of the index's dense vectors, once given or loaded (the handle's)."""
        return self.handle.encoder

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
        meta, _ = self.target.accept(self.handle.get_index())
        return meta

    def expansion(self) -> str:
        """Where the index applies S: ``"query"`` or ``"documents"`` (the model checked once)."""
        return (self.handle.ready()).expansion

    def max_clauses(self) -> int:
        """The most clauses a query may have (the cluster's limit unless given), learned once."""
        self.handle.ready()
        return self.target.limit

    def expand(self, query: str) -> ExpandedQuery:
        """The query's vector, soft norm and expansion (see :mod:`es_scm.search.query`)."""
        checked = self.handle.ready()
        return expand_query(self.target.model, query, self.target.limit, checked.expansion)

    # -- searching, by intent: the methods of SearchMethods (es_scm/search/methods.py) ----------

    @overload
    def batch_search(
        self,
        queries: Mapping[str, str],
        k: int = 10,
        *,
        method: str = "search",
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
        method: str = "search",
        threads: int = 4,
        unproven: Literal["raise", "keep"] = "raise",
        **options: Any,
    ) -> list[SearchResult]: ...

    def batch_search(
        self,
        queries: Mapping[str, str] | Sequence[str],
        k: int = 10,
        *,
        method: str = "search",
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
        method : str
            The method every query runs (a name of :data:`~es_scm.search.methods.METHODS`:
            ``"search"``, ``"fast"``, ``"native"``, ``"hybrid"``, ``"bm25"``, ``"dense"``,
            ``"rescore"``), with ``options``: its keyword arguments (``from_``, ``filter``,
            ``explain``; ``fusion``, ``depth``, ``dense`` and ``neighbours`` for hybrid;
            ...). ``dense=True`` encodes every query in one batch;
            ``dense`` may also give each query its own
            :class:`~es_scm.index.dense.DenseQuery`: a sequence in the queries' order, or a
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
            others in ``error.results``. A connection lost in the middle of the batch (a node
            stopped: no answer after the client's retries) ends it there: every query answered
            by then is in ``error.results``, the others are in ``error.failed`` with one
            :class:`~es_scm.search.results.ConnectionLostError`, also ``error.lost``.

        Every round trip of every query goes in one ``_msearch`` per 100 searches: the first
        of all of them (exact search's first window, native's or BM25's page, hybrid search's
        lists), then the second of those that need one (a larger window, scores still owed),
        and so on. A query one of whose searches fails, or whose answer comes from other
        indices, is searched again alone, as a single call would.
        """
        threads = check(threads, "threads", POSITIVE_INT)
        unproven = check(unproven, "unproven", Options(("raise", "keep")))
        chosen = METHODS[check(method, "method", Options(tuple(METHODS)))]
        unknown = sorted(set(options) - set(chosen.options))
        if unknown:
            raise ValueError(
                f"{unknown[0]} is not an option of method={method!r}; its options are "
                f"{', '.join(chosen.options)}"
            )
        if isinstance(queries, str):
            raise ValueError("queries must be a sequence of query texts or a mapping id → text")
        ids = list(queries) if isinstance(queries, Mapping) else list(range(len(queries)))
        texts = list(queries.values()) if isinstance(queries, Mapping) else list(queries)
        dense = dense_per_query(queries, options.pop("dense", None))
        given: dict[str, Any] = {} if not dense or dense[0] is None else {"dense": dense[0]}
        context = self._request_context()
        chosen.request(context, "", k=k, **options, **given)  # the options checked once
        requests: dict[Any, Any] = {}
        failed: dict[Any, BaseException] = {}
        for qid, text, query in zip(ids, texts, dense, strict=True):
            try:  # a query's own text (its length) or dense vector: its failure alone
                extra = {} if query is None else {"dense": query}
                requests[qid] = chosen.request(context, text, k=k, **options, **extra)
            except ValueError as error:
                failed[qid] = error
        plan = chosen.plan
        answered = self._batch(plan, list(requests.values()), threads)
        results: dict[Any, SearchResult] = {}
        lost: ConnectionLostError | None = None
        for qid, outcome in zip(requests, answered, strict=True):
            if isinstance(outcome, SearchResult):
                results[qid] = outcome
            else:
                failed[qid] = outcome
                if isinstance(outcome, ConnectionLostError):
                    lost = lost or outcome
        if failed:
            raise BatchSearchError({q: failed[q] for q in ids if q in failed}, results, lost)
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

    def _request_context(self) -> RequestContext:
        """What the methods' requests read: the searcher's limits and the model's settings
        (one context per model, so that what a method resolves from the model is resolved
        once)."""
        model = self.target.model
        context = self._contexts.get(model.model_id)
        if context is None:
            context = RequestContext(self.max_query_words, self.filter_policy, model.hybrid)
            self._contexts[model.model_id] = context
        return context

    def _run(self, plan: type[Plan], request: Any) -> SearchResult:
        """A method's search: its result by ``plan`` (:meth:`_result`); an unproven result of a
        method that promises proof raises :class:`~es_scm.search.results.NotProvenError`."""
        result = self._result(plan, request)
        if plan.raises_unproven and result.unproven:
            raise NotProvenError(result.unproven, result)
        return result

    def _result(self, plan: type[Plan], request: Any) -> SearchResult:
        """``request``'s result by ``plan``, from the indices the model was checked on: after an
        answer from elsewhere the model is checked again and the search repeated; an answer
        without hits is confirmed by one more look at the indices."""
        for _ in range(ATTEMPTS):
            checked = self.handle.ready()
            if getattr(request, "filters", ()):
                checked = self.handle.fields_known(checked, [request])
            if getattr(request, "dense", None) is not None:
                (request,) = self._with_vectors(checked, [request])
            planned = plan(request, self._context(checked))
            try:
                while (searches := planned.next()) is not None:
                    planned.take(self._send(searches))
            except TargetMoved as moved:
                self.handle.recheck(checked.target, moved.total)
                continue
            except NotFoundError:  # an index of the name went away (an alias moved): look again
                self.handle.recheck(checked.target, None)
                continue
            except _QueryFormChanged:
                continue
            result = planned.result()
            if result.hits or self.handle.recheck(checked.target, None):
                return result
        raise self.target.moved_too_often()

    def _context(self, checked: Checked) -> Context:
        model = checked.model or self.target.model
        limit = self.target.clause_limit
        assert limit is not None, "the clause limit is known once the searcher is ready"
        return Context(
            model,
            checked,
            limit,
            self.query_type,
            self.max_window,
            named_scores=self.engine.named_scores_in_msearch,
        )

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

    def _with_vectors(self, checked: Checked, requests: list[Any]) -> list[Any]:
        """``requests`` with the index's dense vectors asked (``dense=True``) made a
        :class:`DenseQuery` of the query encoded by the index's encoder — every query of the
        batch in one encoding, off the event loop — and every dense query's field checked.

        Raises
        ------
        DenseUnsupportedError
            A dense leg on an engine without dense vectors (OpenSearch), in one line.
        """
        if any(getattr(request, "dense", None) is not None for request in requests):
            self.engine.check_dense()
        asking = [
            n for n, request in enumerate(requests) if getattr(request, "dense", None) is True
        ]
        if asking:
            encoder = self.handle.index_encoder(checked)
            texts = [requests[n].text for n in asking]
            vectors = compute(encode_texts, encoder, texts)
            field = str((checked.encoder or {})["field"])
            requests = list(requests)
            for n, vector in zip(asking, vectors, strict=True):
                requests[n] = dataclasses.replace(requests[n], dense=DenseQuery(field, vector))
        for request in requests:
            if isinstance(getattr(request, "dense", None), DenseQuery):
                field_for(self.name, checked.dense_fields, request.dense)
        return requests

    # -- a batch: every round trip of every query in one _msearch ----------------------------------

    def _batch(
        self, plan: type[Plan], requests: list[Any], threads: int
    ) -> list[SearchResult | Exception]:
        """Every request's result, as :meth:`_run` gives it (or the error it raises), each round
        trip of all of them sent together; a query one of whose searches failed, or that read
        another index, is run alone. A connection lost on the way ends the batch: the queries
        whose plans were done keep their results, and the others get one
        :class:`~es_scm.search.results.ConnectionLostError`; no other request is sent."""
        if not requests:
            return []
        checked = self.handle.fields_known(self.handle.ready(), requests)
        requests = self._with_vectors(checked, requests)  # encoded once, in one batch
        context = self._context(checked)
        plans: dict[int, Plan] = {}
        alone: set[int] = set()  # run alone: a failure of its own, or another index read
        for n, request in enumerate(requests):
            try:
                plans[n] = plan(request, context)
            except ValueError:  # e.g. BM25's words over the clause limit: its own error, alone
                alone.add(n)
        done: set[int] = set()  # plans whose next() said they are done: their results stand
        pending = list(plans)  # plans whose next round trip is to be asked
        lost: ConnectionLostError | None = None
        while pending:
            asked: list[tuple[int, list[dict[str, Any]]]] = []
            for n in pending:
                searches = plans[n].next()
                if searches is None:
                    done.add(n)
                else:
                    asked.append((n, searches))
            if lost is not None or not asked:  # after a lost round: only who is done is asked
                break
            # The round's queries in ``threads`` _msearch requests at once: while the answers of
            # one are read (the client's work), Elasticsearch searches for the next.
            size = min(_MSEARCH_SIZE, max(_MSEARCH_LEAST, -(-len(asked) // threads)))
            chunks = [
                [(n, s, plans[n]) for n, s in asked[a : a + size]]
                for a in range(0, len(asked), size)
            ]
            rounds = map_concurrently(self._round, chunks, threads)
            pending = []
            for chunk, (moved, failure) in zip(chunks, rounds, strict=True):
                if failure is not None:  # this chunk's queries are not answered
                    lost = lost or self._lost(failure)
                    continue
                alone.update(moved)
                pending += [n for n, _, _ in chunk if n not in moved]
        results: list[SearchResult | Exception] = []
        for n, request in enumerate(requests):
            if n in done:
                results.append(plans[n].result())
            elif n in alone and lost is None:
                answered = self._alone(plan, request)
                if isinstance(answered, ConnectionLostError):
                    lost = answered  # the queries after it are not searched
                results.append(answered)
            else:  # its round trip, or one of its chunk's, was cut short by the lost connection
                assert lost is not None
                results.append(lost)
        # An answer without hits names no index: it is confirmed by one more look at the
        # indices, which a lost connection leaves undone (its query is then not answered).
        empty = [n for n, r in enumerate(results) if isinstance(r, SearchResult) and not r.hits]
        still = True
        if empty and lost is None:
            try:
                still = self.handle.recheck(checked.target, None)
            except _LOST as error:
                lost, still = self._lost(error), False
        if empty and (lost is not None or not still):
            for n in empty:  # moved: searched again, alone (unless the cluster went away)
                results[n] = lost if lost is not None else self._alone(plan, requests[n])
        return results

    def _round(
        self, chunk: list[tuple[int, list[dict[str, Any]], Plan]]
    ) -> tuple[list[int], Exception | None]:
        """One round trip of some of a batch's queries, in one ``_msearch``: each plan takes
        its answers; those that must run alone instead (a search of theirs failed, or they read
        another index) are returned, with None; or, when the connection was lost, nothing and
        the client's error (the other chunks of the round go on: what they answer is kept)."""
        try:
            answers = self._msearch([searches for _, searches, _ in chunk])
        except _LOST as error:
            return [], error
        moved = [
            n for (n, _, plan), found in zip(chunk, answers, strict=True) if _take(plan, found)
        ]
        return moved, None

    def _alone(self, plan: type[Plan], request: Any) -> SearchResult | Exception:
        """A query of a batch run alone: its result, or the error that it alone raises (a lost
        connection: :class:`~es_scm.search.results.ConnectionLostError`)."""
        try:
            return self._result(plan, request)
        except (ApiError, ValueError, PartialResultError, ModelMismatchError) as error:
            return error
        except _LOST as error:
            return self._lost(error)

    def _lost(self, error: Exception) -> ConnectionLostError:
        """The one-line error of a batch whose connection to the cluster was lost: the engine
        and how the connection failed (the client's error, its cause, nests reprs)."""
        lost = ConnectionLostError(
            f"the connection to {self.engine.title} was lost in the middle of the batch "
            f"({connection_detail(error)})"
        )
        lost.__cause__ = error
        return lost

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
