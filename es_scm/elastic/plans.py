"""Every search mode as a plan of Elasticsearch calls, free of I/O (es_scm.elastic.calls).

The same plans run on a synchronous client (:class:`~es_scm.elastic.searcher.Searcher`) and on
an asyncio one (:mod:`es_scm.elastic.aio`), so the query building, the window proof, the
rescoring and the fusion are written once. Every response is read through the searcher's
:class:`~es_scm.elastic.target.Target`: whole, and from the indices the model was checked on.

Exact mode's windows and concurrent writes
    One search request reads one state of every shard. Windows paged by offset over several
    requests would read several states: a document deleted between two of them moves the next
    ones up by one, and the one at the boundary is never fetched (while the proof says it was
    seen). So the first window is one request, and the windows after it are read in a point in
    time opened then, from offset 0 again (the first window's state may be older than the point
    in time's). Where the cluster refuses a point in time (HTTP 4xx but 404: a proxy, a role
    without the privilege, ``search.max_keep_alive`` below :data:`KEEP_ALIVE`, too many open),
    each window is read whole in one request instead, from offset 0: the same proof over one
    state, for up to twice the candidates fetched.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from elasticsearch import ApiError

from es_scm.elastic.calls import WHOLE_SOURCE, Call, Plan, search_call
from es_scm.elastic.connection import error_reason
from es_scm.elastic.hybrid import hybrid_plan
from es_scm.elastic.query import ExpandedQuery
from es_scm.elastic.requests import RescoreRequest, SearchRequest
from es_scm.elastic.results import Hit, PartialResultError, SearchResult
from es_scm.elastic.schema import public_source, stored_vector
from es_scm.elastic.target import Target, require_whole
from es_scm.model.brute_force import rank

__all__ = [
    "KEEP_ALIVE",
    "exact_plan",
    "get_plan",
    "native_plan",
    "rescore_plan",
    "retrieve_call",
    "search_plan",
]

logger = logging.getLogger(__name__)

#: How long a point in time of exact mode's windows lives between two of its requests.
KEEP_ALIVE = "1m"

# -- the modes ----------------------------------------------------------------------------------


def retrieve_call(
    index: str,
    expanded: ExpandedQuery,
    query_type: str,
    offset: int,
    size: int,
    filters: list[dict],
    pit: str | None = None,
) -> Call:
    """Elasticsearch's ranking by the sparse dot product, ``size`` hits from ``offset``, of
    ``index`` or of the point in time ``pit``."""
    kwargs = {
        "query": expanded.es_query(query_type, filters),  # type: ignore[arg-type]
        "from_": offset,
        "size": max(size, 0),
        "source": WHOLE_SOURCE,
        # Counting every match would disable Lucene's block-max WAND skipping; exhaustion is
        # detected by a short page instead.
        "track_total_hits": False,
    }
    if pit is None:
        kwargs["index"] = index
    else:
        kwargs["pit"] = {"id": pit, "keep_alive": KEEP_ALIVE}
    return search_call(**kwargs)


def native_plan(
    target: Target, expanded: ExpandedQuery, query_type: str, page: tuple[int, int], filters: list
) -> Plan:
    """``native`` mode: Elasticsearch's scores divided by ‖Wx‖_S."""
    k, from_ = page
    response = yield retrieve_call(target.name, expanded, query_type, from_, k, filters)
    hits = []
    for h in target.hits(response):
        score = expanded.native_score(h["_score"])
        vector = stored_vector(h["_source"])
        hits.append(Hit(h["_id"], score, public_source(h["_source"]), score, vector=vector))
    return SearchResult(hits=hits, mode="native", candidates=len(hits), rounds=1)


@dataclass
class _Windows:
    """Exact mode's candidates so far, and what they prove (see :mod:`es_scm.elastic.searcher`)."""

    expanded: ExpandedQuery
    need: int
    # id → (exact score, native score, _source, stored vector y'): each vector parsed once
    fetched: dict[str, tuple[float, float, dict, tuple[np.ndarray, np.ndarray]]] = field(
        default_factory=dict
    )
    lowest_native: float = math.inf
    exhaustive: bool = False
    proven: bool = False
    ranked: list[tuple[str, float]] = field(default_factory=list)

    def restart(self) -> None:
        """Forget the candidates: the next window is read from another state of the index."""
        self.fetched = {}
        self.lowest_native = math.inf

    def add(self, hits: list[dict], requested: int) -> None:
        """The next ``requested`` native hits (fewer: Elasticsearch had no more matches)."""
        vectors = [stored_vector(h["_source"]) for h in hits]
        exact = self.expanded.exact_scores(vectors)
        for h, score, vector in zip(hits, exact, vectors, strict=True):
            self.fetched[h["_id"]] = (score, h["_score"], h["_source"], vector)
            self.lowest_native = min(self.lowest_native, h["_score"])
        self.exhaustive = len(hits) < requested
        bound = self.expanded.unseen_upper_bound(0.0 if self.exhaustive else self.lowest_native)
        self.ranked = rank((doc_id, value[0]) for doc_id, value in self.fetched.items())
        self.proven = (self.exhaustive and self.expanded.pruned_mass == 0.0) or (
            len(self.ranked) >= self.need and self.ranked[self.need - 1][1] > bound
        )

    def final(self, window: int, max_window: int) -> bool:
        return self.proven or self.exhaustive or window >= max_window


def exact_plan(
    target: Target,
    expanded: ExpandedQuery,
    query_type: str,
    page: tuple[int, int],
    filters: list,
    max_window: int,
) -> Plan:
    """``exact`` mode: a window of native hits, rescored, grown until the top k is proven.

    See :mod:`es_scm.elastic.searcher` for the argument, and the module docstring for the
    windows after the first; an unproven result has ``unproven`` set.
    """
    k, from_ = page
    need = from_ + k
    window = min(max(2 * need, 20), max_window)
    state = _Windows(expanded, need)

    def retrieve(offset: int, size: int, pit: str | None = None) -> Call:
        return retrieve_call(target.name, expanded, query_type, offset, size, filters, pit)

    state.add(target.hits((yield retrieve(0, window))), window)
    rounds = 1
    if not state.final(window, max_window):
        rounds += yield from _more_windows(target, state, retrieve, window, max_window)
    fetched = state.fetched
    hits = [
        Hit(
            doc_id,
            score,
            public_source(fetched[doc_id][2]),
            expanded.native_score(fetched[doc_id][1]),
            vector=fetched[doc_id][3],
        )
        for doc_id, score in state.ranked[from_:need]
    ]
    result = SearchResult(hits=hits, mode="exact", candidates=len(fetched), rounds=rounds)
    result.exact_guarantee = state.proven and not expanded.has_negative
    if not state.proven:
        reason = (
            "leaving out expansion terms (the cluster's clause limit)"
            if state.exhaustive
            else f"a window of {len(fetched)} candidates (max_window = {max_window})"
        )
        result.unproven = (
            f"exact mode cannot prove the top {need} (from {from_} + k {k}) with {reason}; "
            "ask for fewer results, or use native mode"
        )
    if expanded.has_negative:
        result.notes.append("negative similarities or weights: native retrieval is approximate")
    return result


def _more_windows(
    target: Target, state: _Windows, retrieve: Any, window: int, max_window: int
) -> Plan:
    """The windows after the first, each twice as large, over one state of the index (module
    docstring); returns the number of requests."""
    pit = yield from _open_point_in_time(target)
    if pit is None:
        rounds = 0
        while not state.final(window, max_window):
            window = min(window * 2, max_window)
            rounds += 1
            state.restart()
            state.add(target.hits((yield retrieve(0, window))), window)
        return rounds
    try:
        rounds = yield from _windows_in(pit, target, state, retrieve, window, max_window)
    except Exception:
        yield from _close_point_in_time(pit)
        raise
    yield from _close_point_in_time(pit)
    return rounds


def _windows_in(
    pit: str, target: Target, state: _Windows, retrieve: Any, window: int, max_window: int
) -> Plan:
    """Windows paged by offset in the point in time ``pit``, from offset 0."""
    state.restart()
    rounds = 0
    while rounds == 0 or not state.final(window, max_window):
        window = min(window * 2, max_window)
        rounds += 1
        offset = len(state.fetched)
        response = yield retrieve(offset, window - offset, pit)
        pit = response.get("pit_id", pit)
        state.add(target.hits(response), window - offset)
    return rounds


def _open_point_in_time(target: Target) -> Plan:
    """A point in time of ``target``'s indices, or None where the cluster refuses one (4xx)."""
    try:
        opened = {"index": target.name, "keep_alive": KEEP_ALIVE}
        response = yield Call("open_point_in_time", opened)
    except ApiError as error:
        if not 400 <= error.meta.status < 500 or error.meta.status == 404:
            raise  # the cluster is in trouble, or the index is gone: searching would fail too
        logger.warning(
            "%s: no point in time (HTTP %s: %s); exact mode reads each window whole instead",
            target.name,
            error.meta.status,
            error_reason(error),
        )
        return None
    try:
        require_whole(response, f"opening a point in time of {target.name!r}")
    except PartialResultError:
        yield from _close_point_in_time(response["id"])
        raise
    return response["id"]


def _close_point_in_time(pit: str) -> Plan:
    try:
        yield Call("close_point_in_time", {"id": pit})
    except Exception as error:  # it expires by itself after KEEP_ALIVE
        logger.info("a point in time could not be closed (%s); it expires in %s", error, KEEP_ALIVE)


def search_plan(
    target: Target,
    query: str,
    expanded: ExpandedQuery,
    request: SearchRequest,
    query_type: str,
    max_window: int,
) -> Plan[SearchResult]:
    """Any search mode, as ``request`` asks, the expansion sent as ``query_type``."""
    started = time.perf_counter()
    filters = list(request.filters)
    if request.hybrid is not None:

        def exact(expanded: ExpandedQuery, k: int, from_: int, filters: list) -> Plan:
            return exact_plan(target, expanded, query_type, (k, from_), filters, max_window)

        result = yield from hybrid_plan(
            target, query, expanded, request.page, filters, request.hybrid, exact
        )
    elif expanded.empty:
        result = SearchResult(hits=[], mode=request.mode, exact_guarantee=True)
        result.notes.append("the query has no vocabulary terms (empty, stop words or unknown)")
    elif request.mode == "native":
        result = yield from native_plan(target, expanded, query_type, request.page, filters)
    else:
        page = request.page
        result = yield from exact_plan(target, expanded, query_type, page, filters, max_window)
    result.took_ms = (time.perf_counter() - started) * 1000
    return result


def get_plan(target: Target, ids: Sequence[str]) -> Plan:
    """The stored sources of ``ids``: (found id → source, missing ids)."""
    if not ids:
        return {}, []
    call = Call("mget", {"index": target.name, "ids": list(ids), "source": WHOLE_SOURCE})
    return target.documents((yield call), ids)


def rescore_plan(
    target: Target, expanded: ExpandedQuery, request: RescoreRequest
) -> Plan[SearchResult]:
    """The exact SCM of given candidates (see :meth:`SearchOperations.rescore`)."""
    started = time.perf_counter()
    if request.ids is not None:
        documents, missing = yield from get_plan(target, request.ids)
    else:
        size = request.size
        call = search_call(index=target.name, query=request.es_query, size=size, source=True)
        hits = target.hits((yield call))
        documents = {h["_id"]: h["_source"] for h in hits}
        missing = []
    exact = expanded.exact_scores([stored_vector(s) for s in documents.values()])
    scored = list(zip(documents, exact, strict=True))
    hits_out = [
        Hit(i, score, public_source(documents[i]), vector=stored_vector(documents[i]))
        for i, score in rank(scored)[: request.k]  # no native score: not searched
    ]
    result = SearchResult(hits=hits_out, mode="rescore", candidates=len(documents), rounds=1)
    result.exact_guarantee = request.ids is not None and not expanded.has_negative
    if missing:
        result.notes.append(f"{len(missing)} candidate id(s) not found: {missing[:5]}")
    result.took_ms = (time.perf_counter() - started) * 1000
    return result
