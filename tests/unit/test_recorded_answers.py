"""Search's pure core against answers a real node gave, replayed without a server.

``scripts/record_answers.py`` ran es-scm's searcher on a 9.5.4 node and recorded every call and
answer (``tests/unit/recorded/``). These tests feed the recorded answers to the pure core — exact
search's window schedule (:mod:`es_scm.search.exact`), the checks of every answer
(:mod:`es_scm.search.target`), hybrid search's fusion and bound (:mod:`es_scm.search.hybrid.legs`) —
in the order the searcher reads them, and check what they conclude against the brute force
(:class:`~es_scm.model.BruteForceSearch`) over the recorded documents: the windows doubling until
the top k is proven, exhaustion, the largest window, the pruned mass, a target that moved, a
failed shard, and the bound of a fusion. The searches are those of the methods' plans
(:mod:`es_scm.search.methods`), replayed request by request: each one they ask is the one
recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from es_scm import SoftCosineModel, TermSimilarityMatrix
from es_scm.elastic import PartialResultError
from es_scm.model import BruteForceSearch
from es_scm.search.exact import ExactPlan, ExactWindows
from es_scm.search.filters import MappedFields
from es_scm.search.hybrid.plan import HybridPlan
from es_scm.search.methods import METHODS
from es_scm.search.plan import Context, Plan, RequestContext, msearch_lines
from es_scm.search.target import Checked, Target, TargetCheck, TargetMoved
from es_scm.similarity.scm import rank

RECORDED = Path(__file__).resolve().parent / "recorded"
LIMIT = 1024  # the clause limit of the scenarios that prune nothing: their queries are short


@cache
def recording(name: str) -> dict[str, Any]:
    return json.loads((RECORDED / name).read_text(encoding="utf-8"))


@dataclass
class Answer:
    """A recorded answer as the client gives it: ``meta.status`` and ``body``."""

    meta: SimpleNamespace
    body: Any

    @classmethod
    def of(cls, recorded: dict[str, Any]) -> Answer:
        return cls(SimpleNamespace(status=recorded["status"]), recorded["body"])


@cache
def windows_model() -> SoftCosineModel:
    documents = recording("windows.json")["documents"]
    model = SoftCosineModel.build([d["text"] for d in documents])
    assert model.model_id == recording("windows.json")["model_id"]  # the recorded model
    return model


@cache
def windows_brute() -> BruteForceSearch:
    documents = recording("windows.json")["documents"]
    texts = [d["text"] for d in documents]
    return BruteForceSearch(windows_model(), [d["id"] for d in documents], texts)


def without_partial(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A recorded search's arguments but the refusal of partial answers every search adds."""
    kwargs = dict(kwargs)  # the recording is shared by the tests
    assert kwargs.pop("allow_partial_search_results") is False
    return kwargs


def replay(plan: Plan, calls: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Run ``plan`` on the recorded ``calls``: every round trip it asks is the one recorded (a
    search alone, or an ``_msearch`` of several), and takes the recorded answers. Returns what
    each round trip asked."""
    asked = []
    while (searches := plan.next()) is not None:
        call = calls.pop(0)
        if len(searches) == 1:
            assert call["api"] == "search"
            assert without_partial(call["kwargs"]) == searches[0]
            plan.take([call["body"]])
        else:
            assert call["api"] == "msearch"
            assert call["kwargs"]["searches"] == msearch_lines(searches)
            named = any(search.get("include_named_queries_score") for search in searches)
            assert call["kwargs"].get("include_named_queries_score") == (True if named else None)
            plan.take(call["body"]["responses"])
        asked.append(searches)
    assert calls == []  # every recorded call replayed, none more asked
    return asked


def context(model: SoftCosineModel, index: str, limit: int, max_window: int = 10_000) -> Context:
    target = Target(index, frozenset([index]), frozenset([1]))
    return Context(
        model, Checked(target, "query", MappedFields([])), limit, "sparse_vector", max_window
    )


def replay_exact(scenario: str) -> tuple[ExactWindows, list[int]]:
    """Exact search's windows on the recorded answers of ``scenario``; the window sizes asked."""
    recorded = recording("windows.json")
    asked_for = recorded[scenario]
    limit, max_window = asked_for.get("max_clauses", LIMIT), asked_for.get("max_window", 10_000)
    request = METHODS["search"].request(RequestContext(100), asked_for["query"], asked_for["k"])
    plan = ExactPlan(request, context(windows_model(), recorded["index"], limit, max_window))
    asked = replay(plan, list(asked_for["calls"]))
    assert all(searches[0]["from_"] == 0 for searches in asked)  # each window read whole
    return plan.windows, [searches[0]["size"] for searches in asked]


def assert_brute_force_top(windows: ExactWindows, query: str) -> None:
    """The windows' top is the brute force's: the same ids, the same scores bit for bit."""
    expected = windows_brute().search(query, windows.need)
    top = windows.top()
    assert [c.stored.id for c in top] == [doc_id for doc_id, _ in expected]
    assert [c.score for c in top] == [score for _, score in expected]


# -- exact search's windows -------------------------------------------------------------------


def test_windows_double_until_the_top_k_is_proven():
    windows, sizes = replay_exact("doubling")
    # 30 equal documents fill the first window: its 10th score equals the bound of its lowest
    assert sizes == [20, 40]
    assert windows.proven
    assert not windows.exhausted
    assert windows.rounds == 2
    assert_brute_force_top(windows, "car")


def test_a_short_answer_is_exhausted_and_proves_at_once():
    windows, sizes = replay_exact("exhausted")
    assert sizes == [20]
    assert windows.exhausted
    assert windows.proven
    assert windows.read == 5
    assert_brute_force_top(windows, "boat")  # the 5 that match, of 10 asked


def test_windows_double_until_exhausted():
    windows, sizes = replay_exact("exhausted_after_doubling")
    assert sizes == [70, 140]  # 90 documents match
    assert windows.exhausted
    assert windows.proven
    assert windows.read == 90
    assert_brute_force_top(windows, "car")


def test_only_the_hits_that_may_enter_the_top_k_are_parsed():
    windows, _ = replay_exact("doubling")
    # the window of 40: the 30 equal documents "car", then 10 of the 60 longer ones, scored
    # lower by Elasticsearch; the bound of those 10 is below the 10th exact score (one of the
    # 30): their vectors are not parsed, and the top 10 is still the brute force's
    assert windows.read == 40
    assert len(windows.candidates) == 30
    assert all(doc_id.startswith("a") for doc_id in windows.candidates)
    nth = windows.ranked[windows.need - 1][1]
    lowest_parsed_bound = windows.expanded.unseen_upper_bound(
        min(c.es_score for c in windows.candidates.values())
    )
    assert lowest_parsed_bound >= nth
    assert_brute_force_top(windows, "car")


def test_the_largest_window_leaves_the_top_k_unproven():
    windows, sizes = replay_exact("largest_window")
    assert sizes == [40]  # min(2 · 35, max_window = 40): final at once
    assert not windows.proven
    assert windows.final
    assert windows.unproven(35, 0) == (
        "exact mode cannot prove the top 35 (from 0 + k 35) with a window of 40 candidates "
        "(max_window = 40); ask for fewer results, or use native mode"
    )


def test_an_exhausted_window_with_terms_left_out_proves_only_by_the_bound():
    windows, sizes = replay_exact("pruned")
    expanded = windows.expanded
    assert expanded.pruned_terms == 1
    assert expanded.pruned_mass > 0.0
    assert sizes == [20, 40, 80]
    assert windows.exhausted  # every document with the term sent was read
    # what was left out may lift an unseen document up to P / ‖x‖_S: the proof is the bound's
    kth = windows.ranked[windows.need - 1][1]
    assert windows.proven == (kth > expanded.pruned_mass / expanded.norm)
    expected = windows_brute().search("car wheel", windows.need)
    if windows.proven:
        assert [c.stored.id for c in windows.top()] == [doc_id for doc_id, _ in expected]
    else:
        assert "clause limit" in windows.unproven(10, 0)


def test_the_line_of_a_top_k_unproven_for_terms_left_out_reads_as_a_sentence():
    windows, _ = replay_exact("pruned")
    assert not windows.proven  # what the terms left out may add is above the 10th exact score
    assert windows.unproven(10, 0) == (  # it said "with leaving out expansion terms" (issue 42)
        "exact mode cannot prove the top 10 (from 0 + k 10) with expansion terms left out (the "
        "cluster's clause limit); ask for fewer results, or use native mode"
    )


# -- every answer from the checked indices, whole ----------------------------------------------


def test_an_answer_from_the_index_an_alias_moved_to_is_refused():
    moved = recording("target.json")["moved"]
    check = TargetCheck(recording("target.json")["alias"], windows_model(), LIMIT)
    _, checked = check.accept(Answer.of(moved["checked"]))
    with pytest.raises(TargetMoved, match="-target-b") as refused:
        checked.target.hits(moved["answer"])
    assert refused.value.total == moved["answer"]["_shards"]["total"]
    _, now = check.accept(Answer.of(moved["checked_again"]))
    assert not check.still(checked.target, now, refused.value.total)  # search again, there


def test_an_alias_with_routing_answers_from_its_shards():
    routed = recording("target.json")["routed"]
    check = TargetCheck(routed["name"], windows_model(), LIMIT)
    _, checked = check.accept(Answer.of(routed["checked"]))
    assert checked.target.shard_totals == {3}
    with pytest.raises(TargetMoved) as moved:  # one shard of three: not known to be the same
        checked.target.hits(routed["answer"])
    assert moved.value.total == 1
    _, now = check.accept(Answer.of(routed["checked"]))  # checked again: the same index
    assert check.still(checked.target, now, moved.value.total)
    assert check.checked is not None
    assert check.checked.target.shard_totals == {1, 3}
    hits = check.checked.target.hits(routed["answer"])
    assert hits
    assert {hit["_index"] for hit in hits} == set(checked.target.indices)


def test_an_answer_with_a_failed_shard_is_refused():
    partial = recording("target.json")["partial"]
    target = Target.of(partial["pattern"], partial["checked"]["body"])
    assert partial["answer"]["hits"]["hits"]  # the other shard's hit: not passed on
    with pytest.raises(PartialResultError, match=r"answered from 1 of 2 shards") as refused:
        target.hits(partial["answer"])
    assert "query_shard_exception" in str(refused.value)


# -- hybrid search's fusion and its bound --------------------------------------------------------


@cache
def hybrid_model() -> SoftCosineModel:
    recorded = recording("hybrid.json")
    texts = [d["text"] for d in recorded["documents"]]
    pairs = [tuple(pair) for pair in recorded["thesaurus"]]
    model = SoftCosineModel.build(
        texts, similarity=lambda terms: TermSimilarityMatrix.from_pairs(terms, pairs)
    )
    assert model.model_id == recorded["model_id"]
    return model


def replay_hybrid(depth: int, fusion: str = "max") -> tuple[HybridPlan, list[str]]:
    """Hybrid search (α = 0.5) on the recorded answers at ``depth``: the plan, and the ids of
    its candidates."""
    recorded = recording("hybrid.json")
    index, query, k = recorded["index"], recorded["query"], recorded["k"]
    key = f"depth_{depth}" if fusion == "max" else f"{fusion}_depth_{depth}"
    request = METHODS["hybrid"].request(RequestContext(100), query, k, fusion=fusion, depth=depth)
    plan = HybridPlan(request, context(hybrid_model(), index, LIMIT))
    asked = replay(plan, list(recorded[key]["calls"]))
    # one round trip: BM25's list, and the SCM's first window (every match, in a corpus this
    # small), with BM25's scores of its hits reported beside it
    assert len(asked) == 1
    bm25, scm = asked[0]
    assert bm25["size"] == depth
    assert scm["include_named_queries_score"] is True
    assert plan.fused is not None
    return plan, [doc_id for doc_id in plan.fused.components]


def fused_over_every_document(candidates: list[str]) -> list[tuple[str, float]]:
    """The max fusion of every document (not only the candidates), with the candidates'
    normalization: BM25 from its answer over every document, the SCM from the brute force."""
    recorded = recording("hybrid.json")
    ids = [d["id"] for d in recorded["documents"]]
    texts = [d["text"] for d in recorded["documents"]]
    hits = recorded["bm25_of_every_document"]["hits"]["hits"]
    bm25 = {hit["_id"]: float(hit["_score"]) for hit in hits}
    scores = BruteForceSearch(hybrid_model(), ids, texts).scores(recorded["query"])
    scm = dict(zip(ids, scores.tolist(), strict=True))
    top_bm25 = max(bm25.get(c, 0.0) for c in candidates)
    top_scm = max(scm[c] for c in candidates)
    fused = {i: 0.5 * bm25.get(i, 0.0) / top_bm25 + 0.5 * scm[i] / top_scm for i in ids}
    return rank(fused.items())


@pytest.mark.parametrize(("depth", "fusion"), [(6, "max"), (16, "max")])
def test_a_proven_hybrid_top_k_is_the_fusion_over_every_document(depth, fusion):
    plan, candidates = replay_hybrid(depth, fusion)
    k = recording("hybrid.json")["k"]
    result = plan.result()
    assert result.exact_guarantee  # depth 6: by the bound (neither list holds every match)
    everywhere = fused_over_every_document(candidates)  # no document outside the lists ranks higher
    assert [hit.id for hit in result.hits] == [i for i, _ in everywhere[:k]]
    np.testing.assert_allclose(
        [hit.score for hit in result.hits], [s for _, s in everywhere[:k]], rtol=1e-12
    )
    for hit in result.hits:  # the SCM part of every hit is its exact SCM
        brute = BruteForceSearch(hybrid_model(), [hit.id], [hit.source["text"]])
        assert hit.components is not None
        assert hit.components["scm"] == brute.scores(recording("hybrid.json")["query"])[0]


def test_bm25_reported_beside_the_scm_is_bm25s_own_score():
    plan, _ = replay_hybrid(16)
    every = recording("hybrid.json")["bm25_of_every_document"]["hits"]["hits"]
    bm25 = {hit["_id"]: float(hit["_score"]) for hit in every}
    assert plan.fused is not None
    for doc_id, components in plan.fused.components.items():
        assert components["bm25"] == bm25.get(doc_id, 0.0), doc_id


def test_a_fusion_that_reads_whole_lists_reads_them_to_depth():
    plan, _ = replay_hybrid(6, "linear")
    assert plan.reach == 6
    assert plan.result().hits


def test_a_hybrid_depth_too_small_is_not_proven():
    plan, _ = replay_hybrid(3)
    result = plan.result()
    assert not result.exact_guarantee  # the lists' lowest scores leave room for a document outside
    assert any("raise depth" in note for note in result.notes)
