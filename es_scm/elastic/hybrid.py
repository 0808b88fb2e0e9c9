r"""Hybrid search: BM25 on the text field fused with the exact SCM, computed by es-scm.

Both sides retrieve their own candidates over the same (filtered) documents:

* **BM25**: Elasticsearch's ``match`` query on the ``text`` field, its top ``depth``;
* **SCM**: ``exact`` mode's top ``depth``, provably the brute-force top ``depth`` of the SCM.

``depth`` is at least ``from + k`` (default 100). The candidates (the union of the two lists)
are fused by a fusion of :mod:`es_scm.fusion` (``fusion``: ``max`` by default, ``linear``,
``zscore`` or ``rrf``; the model's own when it has one, see
:attr:`es_scm.model.SoftCosineModel.hybrid`):

reciprocal rank fusion (``rrf``)
    Σ over the lists that contain it of 1 / (``rrf_k`` + its rank in the list). A document in
    neither list has no score by definition, so the result is exactly the top k of this fusion.
score fusions (``max``, ``linear``, ``zscore``)
    α · N(BM25) + (1 − α) · N(SCM), each side normalized over the candidates. Every candidate gets
    both scores: its exact SCM (from its stored vector) and its BM25 score (a ``match``
    restricted to the candidates that BM25 did not return; 0 if no term matches). A document
    outside both lists has BM25 ≤ the BM25 list's lowest score and SCM ≤ the SCM list's lowest
    (or 0 when a list holds every match), so, the fusion being increasing in both, its fused
    score is at most :meth:`~es_scm.fusion.ScoreFusion.bound` of those; ``exact_guarantee`` is
    True when the k-th fused score exceeds that bound, i.e. when the result is the exact top k of
    the fusion over every (filtered) document with the candidates' normalization. Otherwise a
    note says so and a larger ``depth`` may prove it.

Each hit's ``components`` holds its ``bm25`` and ``scm`` scores (None where a side did not score
it, with RRF), and ``score`` the fused one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from es_scm.defaults import HYBRID_DEFAULTS
from es_scm.elastic.calls import Plan, search_call
from es_scm.elastic.query import bm25_query
from es_scm.elastic.results import Hit, SearchResult
from es_scm.elastic.schema import public_source, stored_vector
from es_scm.fusion import Fusion, ScoreFusion, fusion_from
from es_scm.model.brute_force import rank
from es_scm.options import HybridOptions

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.elastic.query import ExpandedQuery
    from es_scm.elastic.target import Target

#: ``exact(expanded, k, from_, filters)``: the plan of exact mode (its result may be unproven).
ExactPlan = Callable[["ExpandedQuery", int, int, list], Plan]

__all__ = ["HybridOptions", "hybrid_options", "hybrid_plan", "make_fusion"]


def hybrid_options(
    model_defaults: Mapping[str, Any] | None = None,
    *,
    fusion: str | None = None,
    alpha: float | None = None,
    rrf_k: int | None = None,
    depth: int | None = None,
) -> HybridOptions:
    """The hybrid options of a search (:class:`~es_scm.options.HybridOptions`, checked).

    A ``None`` takes the model's own (``model_defaults``, what ``es-scm tune`` saved), else
    :data:`~es_scm.defaults.HYBRID_DEFAULTS`. ``alpha`` (``rrf_k``) given for a fusion that does
    not use it is an error, so that a setting is never silently ignored.
    """
    given = {"fusion": fusion, "alpha": alpha, "rrf_k": rrf_k, "depth": depth}
    base = {**HYBRID_DEFAULTS.as_dict(), **(model_defaults or {})}
    if fusion is not None and fusion != base["fusion"]:  # another fusion: its own defaults
        base = {**HYBRID_DEFAULTS.as_dict(), "depth": base["depth"]}
    options = HybridOptions(**{**base, **{k: v for k, v in given.items() if v is not None}})
    unused = "rrf_k" if options.fusion != "rrf" else "alpha"
    if given[unused] is not None:
        raise ValueError(f"{unused} does not apply to fusion={options.fusion!r}")
    return options


def make_fusion(options: HybridOptions) -> Fusion:
    """The :class:`~es_scm.fusion.Fusion` of hybrid options (from the registry, by name)."""
    return fusion_from(options.fusion, alpha=options.alpha, rrf_k=options.rrf_k)


def hybrid_plan(
    target: Target,
    query: str,
    expanded: ExpandedQuery,
    page: tuple[int, int],
    filters: list[dict[str, Any]],
    options: HybridOptions,
    exact: ExactPlan,
) -> Plan:
    """The top ``k`` after ``from_`` (``page``) of BM25 fused with the SCM (module docstring).

    A plan (:mod:`es_scm.elastic.calls`): it yields its Elasticsearch calls.
    """
    k, from_ = page
    need = from_ + k
    depth = max(options.depth, need)
    bm25_hits = yield from _bm25(target, query, depth, filters)
    bm25 = {doc_id: score for doc_id, score, _ in bm25_hits}
    sources = {doc_id: source for doc_id, _, source in bm25_hits}
    scm_result = (yield from exact(expanded, depth, 0, filters)) if not expanded.empty else None
    scm: dict[str, float] = {}
    if scm_result is not None:
        for hit in scm_result.hits:
            scm[hit.id] = hit.score
            sources.setdefault(hit.id, hit.source)
    candidates = list(dict.fromkeys([*bm25, *scm]))
    scm_proven = scm_result is None or not scm_result.unproven
    fusion = make_fusion(options)
    if not isinstance(fusion, ScoreFusion):
        fused = fusion.fuse(bm25, scm, candidates)
        proven = scm_proven
        components = {c: {"bm25": bm25.get(c), "scm": scm.get(c)} for c in candidates}
    else:
        full_scm = _exact_scores(expanded, candidates, scm, bm25_hits)
        others = [c for c in candidates if c not in bm25]
        full_bm25 = {**(yield from _bm25_of(target, query, others)), **bm25}
        fused = fusion.fuse(full_bm25, full_scm, candidates)
        # a document outside a full list scores at most its lowest; outside a short one, 0
        outside = tuple(min(side.values()) if len(side) >= depth else 0.0 for side in (bm25, scm))
        bound = fusion.bound(full_bm25, full_scm, candidates, outside)
        ranked = rank(fused.items())
        proven = scm_proven and (len(ranked) < need or ranked[need - 1][1] > bound)
        components = {
            c: {"bm25": full_bm25.get(c, 0.0), "scm": full_scm.get(c, 0.0)} for c in candidates
        }
    ranked = rank(fused.items())
    hits = [
        Hit(
            doc_id,
            score,
            public_source(sources.get(doc_id, {})),
            components=components[doc_id],
            vector=stored_vector(sources.get(doc_id, {})),
        )
        for doc_id, score in ranked[from_:need]
    ]
    result = SearchResult(hits=hits, mode="hybrid", candidates=len(candidates), rounds=1)
    result.exact_guarantee = bool(proven)
    if not proven:
        result.notes.append(
            f"the linear fusion's top {need} is exact over the {len(candidates)} candidates; a "
            "document outside both lists could still rank higher (raise depth to prove it)"
        )
    return result


def _bm25(target: Target, query: str, size: int, filters: list[dict[str, Any]]) -> Plan:
    """BM25's top ``size``: (id, score, source) best first."""
    match = bm25_query(query, filters)
    kwargs = {"index": target.name, "query": match, "size": size, "source": True}
    response = yield search_call(**kwargs, track_total_hits=False)
    return [(h["_id"], float(h["_score"]), h["_source"]) for h in target.hits(response)]


def _bm25_of(target: Target, query: str, ids: list[str]) -> Plan:
    """The BM25 scores of the given documents (those without a matching term are left out)."""
    if not ids:
        return {}
    match = bm25_query(query, ids=ids)
    kwargs = {"index": target.name, "query": match, "size": len(ids), "source": False}
    response = yield search_call(**kwargs, track_total_hits=False)
    return {h["_id"]: float(h["_score"]) for h in target.hits(response)}


def _exact_scores(
    expanded: ExpandedQuery,
    candidates: list[str],
    scm: Mapping[str, float],
    bm25_hits: list[tuple[str, float, dict]],
) -> dict[str, float]:
    """The exact SCM of every candidate: the SCM side's, or from a BM25 hit's stored vector."""
    others = {doc_id: source for doc_id, _, source in bm25_hits if doc_id not in scm}
    exact = expanded.exact_scores([stored_vector(source) for source in others.values()])
    scores = {**scm, **dict(zip(others, exact, strict=True))}
    return {c: scores.get(c, 0.0) for c in candidates}
