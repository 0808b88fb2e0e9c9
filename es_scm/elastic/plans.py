"""Every search mode as a plan of Elasticsearch calls, free of I/O (es_scm.elastic.calls).

The same plans run on a synchronous client (:class:`~es_scm.elastic.searcher.Searcher`) and on
an asyncio one (:mod:`es_scm.elastic.aio`), so the query building, the window proof, the
rescoring and the fusion are written once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from es_scm.elastic.calls import WHOLE_SOURCE, Call, Plan, search_call
from es_scm.elastic.hybrid import hybrid_plan
from es_scm.elastic.query import ExpandedQuery
from es_scm.elastic.results import Hit, SearchResult
from es_scm.elastic.schema import public_source, stored_vector
from es_scm.model.brute_force import rank

__all__ = ["exact_plan", "get_plan", "native_plan", "rescore_plan", "retrieve_call", "search_plan"]

# -- the modes ----------------------------------------------------------------------------------


def retrieve_call(
    index: str,
    expanded: ExpandedQuery,
    query_type: str,
    offset: int,
    size: int,
    filters: list[dict],
) -> Call:
    """Elasticsearch's ranking by the sparse dot product, ``size`` hits from ``offset``."""
    kwargs = {
        "index": index,
        "query": expanded.es_query(query_type, filters),  # type: ignore[arg-type]
        "from_": offset,
        "size": max(size, 0),
        "source": WHOLE_SOURCE,
        # Counting every match would disable Lucene's block-max WAND skipping; exhaustion is
        # detected by a short page instead.
        "track_total_hits": False,
    }
    return search_call(**kwargs)


def native_plan(
    index: str, expanded: ExpandedQuery, query_type: str, page: tuple[int, int], filters: list
) -> Plan:
    """``native`` mode: Elasticsearch's scores divided by ‖Wx‖_S."""
    k, from_ = page
    response = yield retrieve_call(index, expanded, query_type, from_, k, filters)
    hits = []
    for h in response["hits"]["hits"]:
        score = expanded.native_score(h["_score"])
        vector = stored_vector(h["_source"])
        hits.append(Hit(h["_id"], score, public_source(h["_source"]), score, vector=vector))
    return SearchResult(hits=hits, mode="native", candidates=len(hits), rounds=1)


def exact_plan(
    index: str,
    expanded: ExpandedQuery,
    query_type: str,
    page: tuple[int, int],
    filters: list,
    max_window: int,
) -> Plan:
    """``exact`` mode: a window of native hits, rescored, grown until the top k is proven.

    See :mod:`es_scm.elastic.searcher` for the argument; an unproven result has ``unproven`` set.
    """
    k, from_ = page
    need = from_ + k
    window = min(max(2 * need, 20), max_window)
    fetched: dict[str, tuple[float, float, dict]] = {}
    lowest_native, rounds = float("inf"), 0
    while True:
        rounds += 1
        requested = window - len(fetched)
        call = retrieve_call(index, expanded, query_type, len(fetched), requested, filters)
        hits = (yield call)["hits"]["hits"]
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
        if proven or exhaustive or window >= max_window:
            break
        window = min(window * 2, max_window)
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
            else f"a window of {len(fetched)} candidates (max_window = {max_window})"
        )
        result.unproven = (
            f"exact mode cannot prove the top {need} (from {from_} + k {k}) with {reason}; "
            "ask for fewer results, or use native mode"
        )
    if expanded.has_negative:
        result.notes.append("negative similarities or weights: native retrieval is approximate")
    return result


def search_plan(
    index: str,
    query: str,
    expanded: ExpandedQuery,
    mode: str,
    settings: Mapping[str, Any],
) -> Plan:
    """Any search mode; ``settings``: query_type, page (k, from_), filters, max_window, hybrid."""
    started = time.perf_counter()
    page, filters = settings["page"], settings["filters"]
    query_type, max_window = settings["query_type"], settings["max_window"]
    if mode == "hybrid":

        def exact(expanded: ExpandedQuery, k: int, from_: int, filters: list) -> Plan:
            return exact_plan(index, expanded, query_type, (k, from_), filters, max_window)

        result = yield from hybrid_plan(
            index, query, expanded, page, filters, settings["hybrid"], exact
        )
    elif expanded.empty:
        result = SearchResult(hits=[], mode=mode, exact_guarantee=True)
        result.notes.append("the query has no vocabulary terms (empty, stop words or unknown)")
    elif mode == "native":
        result = yield from native_plan(index, expanded, query_type, page, filters)
    else:
        result = yield from exact_plan(index, expanded, query_type, page, filters, max_window)
    result.took_ms = (time.perf_counter() - started) * 1000
    return result


def get_plan(index: str, ids: Sequence[str]) -> Plan:
    """The stored sources of ``ids``: (found id → source, missing ids)."""
    if not ids:
        return {}, []
    response = yield Call("mget", {"index": index, "ids": list(ids), "source": WHOLE_SOURCE})
    found = {d["_id"]: d["_source"] for d in response["docs"] if d.get("found")}
    return found, [i for i in ids if i not in found]


def rescore_plan(
    index: str,
    expanded: ExpandedQuery,
    ids: Sequence[str] | None,
    es_query: Mapping[str, Any] | None,
    size: int,
    k: int | None,
) -> Plan:
    """The exact SCM of given candidates (see :meth:`Searcher.rescore`)."""
    started = time.perf_counter()
    if ids is not None:
        documents, missing = yield from get_plan(index, ids)
    else:
        call = search_call(index=index, query=dict(es_query), size=size, source=True)
        hits = (yield call)["hits"]["hits"]
        documents, missing = {h["_id"]: h["_source"] for h in hits}, []
    scored = [(i, expanded.exact_score(*stored_vector(s))) for i, s in documents.items()]
    hits_out = [
        Hit(i, score, public_source(documents[i]), vector=stored_vector(documents[i]))
        for i, score in rank(scored)[: k if k else None]  # no native score: not searched
    ]
    result = SearchResult(hits=hits_out, mode="rescore", candidates=len(documents), rounds=1)
    result.exact_guarantee = ids is not None and not expanded.has_negative
    if missing:
        result.notes.append(f"{len(missing)} candidate id(s) not found: {missing[:5]}")
    result.took_ms = (time.perf_counter() - started) * 1000
    return result
