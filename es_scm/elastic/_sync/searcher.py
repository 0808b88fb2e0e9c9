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
one method at once (their first requests in one ``_msearch``, their query vectors encoded in
one batch). The vectors of an index that es-scm filled with dense vectors are searched with the
query encoded by the index's encoder: the one given to the searcher (``encoder=``), else the
one ``_meta`` names, loaded once; either way its identity must be the recorded one.

Every answer is read through the searcher's :class:`~es_scm.elastic.target.TargetCheck`: whole,
and from the indices the model was checked on, else the model is checked again and the search
repeated.

Native retrieval needs S ≥ 0 and W ≥ 0: negative entries of x' are not sent (a query vector
cannot carry a negative weight) and ``sparse_vector`` stores positive values only, so with
negative similarities or weights the native ranking is an approximation, and exact search
reports ``exact_guarantee=False``.

The code reads top-down in the order the requests go. It is written once, for asyncio, in
``es_scm/elastic/_async/searcher.py``; ``scripts/generate_sync.py`` generates the sync searcher
from it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, overload

from elasticsearch import ApiError, Elasticsearch

from es_scm.defaults import MAX_QUERY_WORDS
from es_scm.elastic._sync.client import cluster_max_clauses
from es_scm.elastic.concurrency import compute, map_concurrently
from es_scm.elastic.connection import error_reason
from es_scm.elastic.dense import (
    DenseQuery,
    check_encoder,
    encode_texts,
    field_for,
    loaded,
)
from es_scm.elastic.explain import explanation_of
from es_scm.elastic.filters import FILTER_POLICIES, Filter, FilterPolicy
from es_scm.elastic.hybrid import (
    BM25Leg,
    DenseLeg,
    Leg,
    LegList,
    candidates_of,
    fuse,
    scm_list,
)
from es_scm.elastic.names import check_target_name
from es_scm.elastic.query import (
    ExpandedQuery,
    QueryAccount,
    QueryType,
    bm25_query,
    clause_budget,
    expand_query,
)
from es_scm.elastic.requests import (
    Dense,
    Method,
    RescoreRequest,
    SearchRequest,
    check_method_options,
    dense_per_query,
)
from es_scm.elastic.results import Hit, NotProvenError, PartialResultError, SearchResult, Stored
from es_scm.elastic.schema import ModelMismatchError
from es_scm.elastic.target import (
    ATTEMPTS,
    Checked,
    Target,
    TargetCheck,
    TargetMoved,
    require_whole,
)
from es_scm.elastic.windows import (
    KEEP_ALIVE,
    ExactWindows,
    Window,
    msearch_lines,
    point_in_time_refused,
)
from es_scm.encoder import SentenceEncoder
from es_scm.fusion import Fusion
from es_scm.options import DenseOptions
from es_scm.similarity.scoring import rank
from es_scm.validation import POSITIVE_INT, Options, OrNone, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["Searcher"]

logger = logging.getLogger(__name__)
_NO_QUERY = "unknown query [sparse_vector]"  # a cluster without the sparse_vector query
_TOO_MANY_CLAUSES = "maxClauseCount"  # Lucene's refusal of a query over the clause limit
_MSEARCH_SIZE = 100  # searches per _msearch request of a batch


@dataclass(frozen=True)
class _Prepared:
    """A search ready to send: its request, its expanded query (None for BM25 and dense
    search), the account of its terms, its first searches (keyword arguments of ``search``; a
    batch sends them in one ``_msearch``), exact search's windows when it has them, when it
    started, and the legs that Elasticsearch retrieves (hybrid search's BM25 and dense legs,
    dense search's kNN: their top lists are the first searches)."""

    request: SearchRequest | RescoreRequest
    expanded: ExpandedQuery | None
    account: QueryAccount
    first: tuple[dict[str, Any], ...]
    windows: ExactWindows | None
    started: float
    legs: tuple[Leg, ...] = ()
    known: Mapping[str, _Known] = field(default_factory=dict)  # by leg: a batch's (_prefetched)


@dataclass(frozen=True)
class _Known:
    """A leg's scores of the documents ``asked``, asked for before they were needed (a batch
    asks for those of every document that its first answers found, in one ``_msearch``):
    ``scores`` of those the leg matches, the others score 0."""

    asked: frozenset[str]
    scores: Mapping[str, float]


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
        :class:`~es_scm.elastic.aio.AsyncSearcher`.
    name : str
        An es-scm index, an alias, or a pattern of indices built with ``model``.
    model : SoftCosineModel
    max_clauses : int, optional
        The most clauses a query may have; default: the cluster's limit (see
        :func:`~es_scm.elastic.cluster_max_clauses`). Filters count too.
    max_window : int
        The largest candidate window of exact search (``index.max_result_window`` is 10,000 by
        default).
    query_type : {"sparse_vector", "bool"}
        The form of the expanded query (see :meth:`ExpandedQuery.es_query`); both score alike,
        the first is the smaller and faster request.
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
        model: SoftCosineModel,
        *,
        max_clauses: int | None = None,
        max_window: int = 10_000,
        query_type: QueryType = "sparse_vector",
        max_query_words: int = MAX_QUERY_WORDS,
        filter_policy: FilterPolicy = "any",
        encoder: SentenceEncoder | str | os.PathLike[str] | None = None,
    ) -> None:
        self.client = client
        self.model = model
        if encoder is not None and not isinstance(encoder, SentenceEncoder):
            encoder = SentenceEncoder(encoder)
        self.encoder: SentenceEncoder | None = encoder
        self._encoder_checked: str | None = None  # the weights self.encoder was checked against
        self.max_window: int = check(max_window, "max_window", POSITIVE_INT)
        self.query_type: QueryType = check(
            query_type, "query_type", Options(("sparse_vector", "bool"))
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
        return expand_query(self.model, query, self.target.limit, checked.expansion)

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
        request = self._request("search", query, k, from_=from_, filter=filter, explain=explain)
        result = self._run(request)
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
        request = self._request("native", query, k, from_=from_, filter=filter, explain=explain)
        return self._run(request)

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
        request = self._request(
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
        return self._run(request)

    def bm25(
        self, query: str, k: int = 10, *, from_: int = 0, filter: Filter = None
    ) -> SearchResult:
        """The top ``k`` after ``from_`` by Elasticsearch's BM25 (a ``match`` query on the text
        field, analyzed by the index's analyzer), scores as Elasticsearch gives them: the
        baseline on the same index. ``filter`` as in :meth:`search`."""
        request = self._request("bm25", query, k, from_=from_, filter=filter)
        return self._run(request)

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
        request = self._request("dense", query, k, from_=from_, filter=filter, dense=dense)
        return self._run(request)

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
        return self._run(request)

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
            Queries continued at once after the first requests (threads of the sync searcher,
            tasks of the asyncio one).
        unproven : {"raise", "keep"}
            Exact search only: raise the first query's :class:`NotProvenError` (as a call of
            ``search`` would), or keep its result, whose ``unproven`` says why.

        The first request of every query (exact search's first window, native's or BM25's
        page, hybrid search's BM25 list and first window) goes in one ``_msearch`` per 100
        searches; hybrid search's BM25 scores of the candidates outside BM25's list, for every
        query, in one more; what a query needs after them (more windows, the scores of
        candidates those windows found) is asked for on ``threads`` workers. A query whose
        first request fails, or whose answer comes from other indices, is searched again alone,
        as a single call would.
        """
        check_method_options(method, options)
        threads = check(threads, "threads", POSITIVE_INT)
        unproven = check(unproven, "unproven", Options(("raise", "keep")))
        if isinstance(queries, str):
            raise ValueError("queries must be a sequence of query texts or a mapping id → text")
        texts = list(queries.values()) if isinstance(queries, Mapping) else list(queries)
        dense = dense_per_query(queries, options.pop("dense", None))
        requests = [
            self._request(method, text, k, **options, **({} if d is None else {"dense": d}))
            for text, d in zip(texts, dense, strict=True)
        ]
        results = self._batch(requests, threads)
        failed = next((result for result in results if result.unproven), None)
        if unproven == "raise" and failed is not None and failed.unproven:
            raise NotProvenError(failed.unproven, failed)
        if isinstance(queries, Mapping):
            return dict(zip(queries, results, strict=True))
        return results

    # -- one search: checked, prepared, sent, read -------------------------------------------------

    def _request(self, method: str, query: str, k: int, **options: Any) -> SearchRequest:
        return SearchRequest.of(
            method,
            query,
            k,
            max_words=self.max_query_words,
            filter_policy=self.filter_policy,
            model_hybrid=self.model.hybrid,
            **options,
        )

    def _run(self, request: SearchRequest | RescoreRequest) -> SearchResult:
        """``request``'s result, from the indices the model was checked on: after an answer
        from elsewhere the model is checked again and the search repeated; an answer without
        hits is confirmed by one more look at the indices."""
        for _ in range(ATTEMPTS):
            checked = self._fields_known(self._ready(), [request])
            try:
                result = self._sent(checked, request)
            except TargetMoved as moved:
                self._recheck(checked.target, moved.total)
                continue
            if result.hits or self._recheck(checked.target, None):
                return result
        raise self.target.moved_too_often()

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

    def _sent(self, checked: Checked, request: SearchRequest | RescoreRequest) -> SearchResult:
        """The search, with term clauses where the cluster has no sparse_vector query, and the
        cluster's refusal of too many clauses in one line."""
        try:
            try:
                return self._answer(checked, request)
            except ApiError as error:
                if self.query_type != "sparse_vector" or _NO_QUERY not in str(error):
                    raise
            # Up to 8.17 the query came with the machine-learning plugin, which minimal
            # distributions leave out; boosted term clauses are the same Lucene query.
            logger.warning("%s: no sparse_vector query; searching with term clauses", self.name)
            self.query_type = "bool"
            return self._answer(checked, request)
        except ApiError as error:
            if _TOO_MANY_CLAUSES not in str(error):
                raise
            raise ValueError(
                f"the query and its filters exceed the cluster's limit of {self.target.limit} "
                f"clauses ({error_reason(error)}); shorten the query or use fewer filters"
            ) from error

    def _answer(self, checked: Checked, request: SearchRequest | RescoreRequest) -> SearchResult:
        if isinstance(request, SearchRequest):
            (request,) = self._with_vectors(checked, [request])
        prepared = self._prepare(checked, request)
        answers = [self._search(**search) for search in prepared.first]
        return self._finish(checked.target, prepared, answers)

    # -- dense vectors: the index's encoder, the queries' vectors ---------------------------------

    def _with_vectors(self, checked: Checked, requests: list[SearchRequest]) -> list[SearchRequest]:
        """``requests`` with the index's dense vectors asked (``dense=True``) made a
        :class:`DenseQuery` of the query encoded by the index's encoder — every query of the
        batch in one encoding, off the event loop — and every dense query's field checked."""
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

    def _prepare(self, checked: Checked, request: SearchRequest | RescoreRequest) -> _Prepared:
        """The query expanded within the clause limit, and the first searches of its method."""
        started = time.perf_counter()
        index, limit = checked.target.name, self.target.limit
        if isinstance(request, RescoreRequest):
            expanded = expand_query(self.model, request.text, limit, checked.expansion)
            return _Prepared(request, expanded, QueryAccount(), (), None, started)
        filters = request.filters
        if request.method == "bm25":
            clause_budget(limit, filters, request.words)  # BM25's clauses fit beside the filters
            page = Window(request.from_, request.k).search(index, bm25_query(request.text, filters))
            return _Prepared(request, None, QueryAccount(), (page,), None, started)
        if request.method == "dense":
            (leg,) = self._legs(checked, request)
            page = {"index": index, **leg.top(request.need, filters), "from_": request.from_}
            page["size"] = request.k
            return _Prepared(request, None, QueryAccount(), (page,), None, started, (leg,))
        budget = clause_budget(limit, filters, request.words if request.method == "hybrid" else 0)
        expanded = expand_query(self.model, request.text, budget, checked.expansion)
        depth = request.depth or request.need  # hybrid: each leg's top depth
        legs = self._legs(checked, request) if request.method == "hybrid" else []
        first = [{"index": index, **leg.top(depth, filters)} for leg in legs]
        windows = None
        if not expanded.empty and (request.method != "hybrid" or "scm" in request.legs):
            query = expanded.es_query(self.query_type, filters)
            if request.method == "native":
                first.append(Window(request.from_, request.k).search(index, query))
            else:  # exact search's first window (hybrid search: of the SCM leg's top depth)
                windows = ExactWindows(expanded, depth, self.max_window)
                first.append(windows.first().search(index, query))
        account = expanded.account(limit)
        return _Prepared(request, expanded, account, tuple(first), windows, started, tuple(legs))

    def _legs(self, checked: Checked, request: SearchRequest) -> list[Leg]:
        """The legs of a hybrid search that Elasticsearch retrieves, each by one search (BM25,
        the dense kNN; the SCM is exact search's windows); dense search's one kNN leg."""
        legs: list[Leg] = []
        names = request.legs if request.method == "hybrid" else ("dense",)
        if "bm25" in names:
            legs.append(BM25Leg(request.text))
        if "dense" in names:
            query = request.dense
            assert isinstance(query, DenseQuery), "the query's vector is known (_with_vectors)"
            legs.append(DenseLeg(query, field_for(self.name, checked.dense_fields, query)))
        return legs

    def _search(self, **kwargs: Any) -> dict[str, Any]:
        """A search that fails when a shard fails: a partial result would be silently wrong
        (missing hits, and no proof of exactness)."""
        response = self.client.search(**kwargs, allow_partial_search_results=False)
        return response.body

    def _finish(
        self, target: Target, prepared: _Prepared, answers: Sequence[Mapping[str, Any]]
    ) -> SearchResult:
        """The result of a prepared search from the answers to its first searches."""
        request = prepared.request
        if isinstance(request, RescoreRequest):
            return self._rescored(target, prepared, request)
        if request.method == "bm25":
            hits = [Hit.of(Stored.of(hit), float(hit["_score"])) for hit in target.hits(answers[0])]
            return self._result(prepared, hits, candidates=len(hits), rounds=1)
        if request.method == "dense":
            (leg,) = prepared.legs
            assert isinstance(leg, DenseLeg), "dense search has its kNN leg"
            hits = [Hit.of(Stored.of(hit), float(hit["_score"])) for hit in target.hits(answers[0])]
            exact = leg.field.exact
            notes = () if exact else (leg.field.approximate_note(),)
            return self._result(
                prepared, hits, candidates=len(hits), rounds=1, exact_guarantee=exact, notes=notes
            )
        if request.method == "hybrid":
            return self._hybrid(target, prepared, request, answers)
        if not answers:  # no vocabulary terms: nothing can score above 0
            return self._result(prepared, [], exact_guarantee=True)
        if request.method == "native":
            return self._native(target, prepared, request, answers[0])
        return self._exact(target, prepared, request, answers[0])

    # -- the methods' reading of their answers -----------------------------------------------------

    def _native(
        self,
        target: Target,
        prepared: _Prepared,
        request: SearchRequest,
        response: Mapping[str, Any],
    ) -> SearchResult:
        expanded = prepared.expanded
        assert expanded is not None, "native search has an expanded query"
        hits = []
        for hit in target.hits(response):
            score = expanded.native_score(hit["_score"])
            hits.append(self._hit(Stored.of(hit), score, expanded, request.explain, native=score))
        return self._result(prepared, hits, candidates=len(hits), rounds=1)

    def _exact(
        self,
        target: Target,
        prepared: _Prepared,
        request: SearchRequest,
        first: Mapping[str, Any],
    ) -> SearchResult:
        """Exact search: the first window's answer, then windows twice as large until the top
        ``from_ + k`` is proven (:mod:`es_scm.elastic.windows`)."""
        expanded, windows = prepared.expanded, prepared.windows
        assert expanded is not None, "exact search has an expanded query"
        assert windows is not None, "and windows, unless the query is empty"
        windows.take(target.hits(first))
        if not windows.final:
            self._more_windows(target, expanded, request.filters, windows)
        hits = [
            self._hit(
                c.stored, c.score, expanded, request.explain, expanded.native_score(c.es_score)
            )
            for c in windows.top(request.from_)
        ]
        return self._result(
            prepared,
            hits,
            candidates=len(windows.candidates),
            rounds=windows.rounds,
            exact_guarantee=windows.proven and not expanded.has_negative,
            unproven=windows.unproven(request.k, request.from_),
        )

    def _more_windows(
        self,
        target: Target,
        expanded: ExpandedQuery,
        filters: Sequence[Mapping[str, Any]],
        windows: ExactWindows,
    ) -> None:
        """The windows after the first, over one state of the index: in a point in time, else
        each read whole (:mod:`es_scm.elastic.windows`)."""
        query = expanded.es_query(self.query_type, filters)
        pit = self._open_point_in_time(target)
        windows.reread(point_in_time=pit is not None)
        try:
            while (window := windows.next()) is not None:
                response = self._search(**window.search(target.name, query, pit))
                pit = response.get("pit_id", pit)
                windows.take(target.hits(response))
        finally:
            if pit is not None:
                self._close_point_in_time(pit)

    def _open_point_in_time(self, target: Target) -> str | None:
        """A point in time of ``target``'s indices, or None where the cluster refuses one."""
        try:
            response = self.client.open_point_in_time(index=target.name, keep_alive=KEEP_ALIVE)
        except ApiError as error:
            if not point_in_time_refused(error.meta.status):
                raise  # the cluster is in trouble, or the index is gone: searching would fail too
            logger.warning(
                "%s: no point in time (HTTP %s: %s); exact mode reads each window whole instead",
                target.name,
                error.meta.status,
                error_reason(error),
            )
            return None
        pit: str = response["id"]
        try:
            require_whole(response.body, f"opening a point in time of {target.name!r}")
        except PartialResultError:
            self._close_point_in_time(pit)
            raise
        return pit

    def _close_point_in_time(self, pit: str) -> None:
        try:
            self.client.close_point_in_time(id=pit)
        except Exception as error:  # it expires by itself after KEEP_ALIVE
            logger.info(
                "a point in time could not be closed (%s); it expires in %s", error, KEEP_ALIVE
            )

    def _hybrid(
        self,
        target: Target,
        prepared: _Prepared,
        request: SearchRequest,
        answers: Sequence[Mapping[str, Any]],
    ) -> SearchResult:
        """Hybrid search: each leg's top list, the SCM's by exact search's windows, then the
        scores of the candidates outside each list, fused (:mod:`es_scm.elastic.hybrid`)."""
        expanded, windows, fusion = prepared.expanded, prepared.windows, request.fusion
        assert expanded is not None, "hybrid search has an expanded query"
        assert fusion is not None, "and a fusion"
        assert request.depth is not None, "and a depth"
        legs = prepared.legs
        lists: list[LegList] = []
        stored: dict[str, Stored] = {}  # every candidate, with its whole source and vector
        for leg, answer in zip(legs, answers, strict=False):
            found = target.hits(answer)
            lists.append(leg.read(found, request.depth))
            for hit in found:
                stored.setdefault(hit["_id"], Stored.of(hit))
        scm: dict[str, float] = {}
        notes: list[str] = []
        fuses_scm = "scm" in request.legs
        if windows is not None:
            windows.take(target.hits(answers[len(legs)]))
            if not windows.final:
                self._more_windows(target, expanded, request.filters, windows)
            for candidate in windows.top():
                scm[candidate.stored.id] = candidate.score
                stored.setdefault(candidate.stored.id, candidate.stored)
            reason = windows.unproven(request.depth, 0)
            notes += [f"the SCM leg: {reason}"] if reason else []
        if fuses_scm:
            lists.append(scm_list(scm, request.depth, windows is None or windows.proven))
        notes += [
            leg.field.approximate_note()
            for leg in legs
            if isinstance(leg, DenseLeg) and not leg.field.exact
        ]
        others: dict[str, dict[str, float]] = {}
        if fusion.uses_scores:  # every candidate needs every leg's score
            candidates = candidates_of(lists)
            for leg, leg_list in zip(legs, lists, strict=False):
                missing = [c for c in candidates if c not in leg_list.scores]
                known = prepared.known.get(leg.name)
                others[leg.name] = self._scores_of(target, leg, missing, known)
            if fuses_scm:
                missing_scm = [stored[c] for c in candidates if c not in scm]
                exact = expanded.exact_scores([document.vector for document in missing_scm])
                others["scm"] = {d.id: s for d, s in zip(missing_scm, exact, strict=True)}
        fused = fuse(fusion, lists, others, request.need)
        hits = [
            Hit.of(
                stored[doc_id],
                score,
                components=fused.components[doc_id],
                explanation=(
                    explanation_of(self.model, expanded, stored[doc_id])
                    if request.explain
                    else None
                ),
            )
            for doc_id, score in fused.ranked[request.from_ : request.need]
        ]
        note = fused.note(request.need)
        return self._result(
            prepared,
            hits,
            candidates=fused.candidates,
            rounds=1,
            exact_guarantee=fused.proven,
            notes=(*notes, *([] if note is None else [note])),
        )

    def _scores_of(
        self, target: Target, leg: Leg, ids: Sequence[str], known: _Known | None = None
    ) -> dict[str, float]:
        """``leg``'s scores of the documents ``ids`` (those it does not match score 0): those
        ``known`` already, the others asked for in searches of at most ``leg.max_ids``
        documents."""
        scores: dict[str, float] = {}
        if known is not None:
            scores = {doc_id: known.scores[doc_id] for doc_id in ids if doc_id in known.scores}
            ids = [doc_id for doc_id in ids if doc_id not in known.asked]
        step = leg.max_ids or max(len(ids), 1)
        for start in range(0, len(ids), step):
            search = leg.scores_of(ids[start : start + step])
            response = self._search(index=target.name, **search)
            scores.update(leg.read_scores(target.hits(response)))
        return scores

    def _rescored(
        self, target: Target, prepared: _Prepared, request: RescoreRequest
    ) -> SearchResult:
        expanded = prepared.expanded
        assert expanded is not None, "a rescore has an expanded query"
        missing: list[str] = []
        if request.ids is not None:
            documents, missing = self._documents(target, request.ids)
        else:
            kwargs = {"query": request.es_query, "size": request.size, "source": True}
            response = self._search(index=target.name, **kwargs)
            documents = {hit["_id"]: Stored.of(hit) for hit in target.hits(response)}
        exact = expanded.exact_scores([document.vector for document in documents.values()])
        ranked = rank(zip(documents, exact, strict=True))[: request.k]
        hits = [  # no native score: not searched
            self._hit(documents[doc_id], score, expanded, request.explain)
            for doc_id, score in ranked
        ]
        return self._result(
            prepared,
            hits,
            candidates=len(documents),
            rounds=1,
            exact_guarantee=request.ids is not None and not expanded.has_negative,
            notes=(f"{len(missing)} candidate id(s) not found: {missing[:5]}",) if missing else (),
        )

    def _documents(self, target: Target, ids: Sequence[str]) -> tuple[dict[str, Stored], list[str]]:
        """The stored documents of ``ids``: (found id → document, missing ids)."""
        if not ids:
            return {}, []
        response = self.client.mget(index=target.name, ids=list(ids), source=True)
        return target.documents(response.body, ids)

    def _hit(
        self,
        stored: Stored,
        score: float,
        expanded: ExpandedQuery,
        explain: bool,
        native: float | None = None,
    ) -> Hit:
        explanation = explanation_of(self.model, expanded, stored) if explain else None
        return Hit.of(stored, score, native_score=native, explanation=explanation)

    def _result(
        self,
        prepared: _Prepared,
        hits: list[Hit],
        *,
        candidates: int = 0,
        rounds: int = 0,
        exact_guarantee: bool = False,
        notes: tuple[str, ...] = (),
        unproven: str | None = None,
    ) -> SearchResult:
        """The search's result, complete: its hits, how they were found, and its query's terms."""
        request, account = prepared.request, prepared.account
        return SearchResult(
            hits=hits,
            mode="rescore" if isinstance(request, RescoreRequest) else request.mode,
            query_terms=account.query_terms,
            expansion_terms=account.expansion_terms,
            pruned_terms=account.pruned_terms,
            candidates=candidates,
            rounds=rounds,
            exact_guarantee=exact_guarantee,
            took_ms=(time.perf_counter() - prepared.started) * 1000,
            notes=(*account.notes, *notes),
            unproven=unproven,
        )

    # -- a batch: the first searches of every query in one _msearch --------------------------------

    def _batch(self, requests: list[SearchRequest], threads: int) -> list[SearchResult]:
        """Every request's result, as :meth:`_run` gives it, the first searches sent together."""
        if not requests:
            return []
        checked = self._fields_known(self._ready(), requests)
        requests = self._with_vectors(checked, requests)  # encoded once, in one batch
        prepared = [self._prepare(checked, request) for request in requests]
        answers = self._msearch([item.first for item in prepared])
        prepared = self._prefetched(checked.target, prepared, answers)

        def finish(position: int) -> SearchResult:
            found = answers[position]
            if found is not None:
                try:
                    return self._finish(checked.target, prepared[position], found)
                except TargetMoved:
                    pass
            return self._run(requests[position])  # alone, as a single call

        results = map_concurrently(finish, range(len(requests)), threads)
        empty = [n for n, result in enumerate(results) if not result.hits]
        if empty and not self._recheck(checked.target, None):
            for n in empty:  # moved: searched again, alone
                results[n] = self._run(requests[n])
        return results

    def _prefetched(
        self,
        target: Target,
        prepared: list[_Prepared],
        answers: Sequence[Sequence[Mapping[str, Any]] | None],
    ) -> list[_Prepared]:
        """``prepared`` with the scores that hybrid search's score fusion will ask for known.

        A score fusion needs every leg's score of every candidate (:meth:`_hybrid`), and a
        single call asks a leg for those of the candidates outside its list, one search a query.
        A batch asks each leg, for every query in one ``_msearch``, for the scores of every
        document that the query's first answers found outside the leg's list: the candidates
        of a query whose SCM list the first window proves are among them. A query whose SCM
        list needed more windows asks for the rest as a single call does. The scores are the
        same either way (the ``ids`` restriction changes no score), and a search that failed or
        answered from other indices is left to the query's own call.
        """
        asks: list[tuple[int, Leg, list[str]]] = []
        for position, (item, found) in enumerate(zip(prepared, answers, strict=True)):
            request = item.request
            if found is None or not isinstance(request, SearchRequest):
                continue
            if request.method != "hybrid" or request.fusion is None:
                continue
            if not request.fusion.uses_scores:  # rank fusion reads the lists alone
                continue
            try:
                lists = [[hit["_id"] for hit in target.hits(answer)] for answer in found]
            except TargetMoved:
                continue  # the query's own reading of its answers finds the move
            seen = list(dict.fromkeys(doc_id for ids in lists for doc_id in ids))
            for leg, ids in zip(item.legs, lists, strict=False):
                own = set(ids)
                outside = [doc_id for doc_id in seen if doc_id not in own]
                # a leg that takes few ids a search (kNN) is left to the query's own call
                if outside and (leg.max_ids is None or len(outside) <= leg.max_ids):
                    asks.append((position, leg, outside))
        if not asks:
            return prepared
        searches = [[{"index": target.name, **leg.scores_of(ids)}] for _, leg, ids in asks]
        known: dict[int, dict[str, _Known]] = {}
        for (position, leg, ids), answer in zip(asks, self._msearch(searches), strict=True):
            if answer is None:
                continue
            try:
                scores = leg.read_scores(target.hits(answer[0]))
            except TargetMoved:
                continue
            known.setdefault(position, {})[leg.name] = _Known(frozenset(ids), scores)
        return [
            replace(item, known=known[position]) if position in known else item
            for position, item in enumerate(prepared)
        ]

    def _msearch(
        self, groups: Sequence[Sequence[dict[str, Any]]]
    ) -> list[Sequence[Mapping[str, Any]] | None]:
        """The answers to each group of searches, sent in ``_msearch`` requests; None for a
        group one of whose searches failed (or all, if a request was refused)."""
        searches = [search for group in groups for search in group]
        answers: list[Mapping[str, Any]] = []
        try:
            for start in range(0, len(searches), _MSEARCH_SIZE):
                lines = msearch_lines(searches[start : start + _MSEARCH_SIZE])
                answers += (self.client.msearch(searches=lines))["responses"]
        except ApiError as error:
            logger.info(
                "%s: _msearch refused (%s); one query at a time", self.name, error_reason(error)
            )
            return [None] * len(groups)
        grouped: list[Sequence[Mapping[str, Any]] | None] = []
        position = 0
        for group in groups:
            mine = answers[position : position + len(group)]
            position += len(group)
            grouped.append(None if any("error" in answer for answer in mine) else mine)
        return grouped
