"""Search's pure core against answers a real node gave, replayed without a server.

``scripts/record_answers.py`` ran es-scm's searcher on a 9.5.4 node and recorded every call and
answer (``tests/unit/recorded/``). These tests feed the recorded answers to the pure core — exact
search's window schedule (:mod:`es_scm.elastic.windows`), the checks of every answer
(:mod:`es_scm.elastic.target`), hybrid search's fusion and bound (:mod:`es_scm.elastic.hybrid`) —
in the order the searcher reads them, and check what they conclude against the brute force
(:class:`~es_scm.model.BruteForceSearch`) over the recorded documents: the windows doubling until
the top k is proven, exhaustion, the largest window, the point in time and its refusal, the
pruned mass, a target that moved, a failed shard, and the bound of a fusion.
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
from es_scm.elastic.hybrid import BM25Leg, candidates_of, fuse, scm_list
from es_scm.elastic.query import expand_query
from es_scm.elastic.schema import stored_vector
from es_scm.elastic.target import Target, TargetCheck, TargetMoved
from es_scm.elastic.windows import ExactWindows, point_in_time_refused
from es_scm.fusion import MaxFusion
from es_scm.model import BruteForceSearch
from es_scm.similarity.scoring import rank

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
    assert kwargs.pop("allow_partial_search_results") is False
    return kwargs


@dataclass
class Replayed:
    """What the schedule asked (``asked``: offset, size, in a point in time) and concluded."""

    windows: ExactWindows
    asked: list[tuple[int, int, bool]]
    proven_after_first: bool
    refusal: dict[str, Any] | None


def replay_exact(scenario: str) -> Replayed:
    """Exact search's windows on the recorded answers of ``scenario``, read as the searcher
    reads them; every request the schedule makes is the one recorded."""
    recorded = recording("windows.json")
    asked_for = recorded[scenario]
    index, calls = recorded["index"], list(asked_for["calls"])
    expanded = expand_query(
        windows_model(), asked_for["query"], asked_for.get("max_clauses", LIMIT), "query"
    )
    query = expanded.es_query("sparse_vector")
    target = Target(index, frozenset([index]), frozenset([1]))
    windows = ExactWindows(expanded, asked_for["k"], asked_for.get("max_window", 10_000))
    asked = []

    def answer(window, pit=None) -> None:
        call = calls.pop(0)
        assert call["api"] == "search"
        assert without_partial(call["kwargs"]) == window.search(index, query, pit)
        asked.append((window.offset, window.size, window.in_point_in_time))
        windows.take(target.hits(call["body"]))
        return call["body"].get("pit_id", pit)

    answer(windows.first())
    proven_after_first, refusal = windows.proven, None
    if not windows.final:
        opened = calls.pop(0)
        assert opened["api"] == "open_point_in_time"
        pit = opened["body"]["id"] if opened["status"] == 200 else None
        if pit is None:
            assert point_in_time_refused(opened["status"])
            refusal = opened
        windows.reread(point_in_time=pit is not None)
        while (window := windows.next()) is not None:
            pit = answer(window, pit)
        if pit is not None:
            assert calls.pop(0)["api"] == "close_point_in_time"
    assert calls == []  # every recorded call replayed, none more asked
    return Replayed(windows, asked, proven_after_first, refusal)


def assert_brute_force_top(windows: ExactWindows, query: str) -> None:
    """The windows' top is the brute force's: the same ids, the same scores bit for bit."""
    expected = windows_brute().search(query, windows.need)
    top = windows.top()
    assert [c.stored.id for c in top] == [doc_id for doc_id, _ in expected]
    assert [c.score for c in top] == [score for _, score in expected]


# -- exact search's windows -------------------------------------------------------------------


def test_windows_double_until_the_top_k_is_proven():
    replayed = replay_exact("doubling")
    # 30 equal documents fill the first window: its 10th score equals the bound of its lowest
    assert replayed.asked == [(0, 20, False), (0, 40, True)]
    assert not replayed.proven_after_first
    windows = replayed.windows
    assert windows.proven
    assert not windows.exhausted
    assert windows.rounds == 2
    assert_brute_force_top(windows, "car")


def test_a_short_answer_is_exhausted_and_proves_at_once():
    replayed = replay_exact("exhausted")
    assert replayed.asked == [(0, 20, False)]
    windows = replayed.windows
    assert windows.exhausted
    assert windows.proven
    assert len(windows.candidates) == 5
    assert_brute_force_top(windows, "boat")  # the 5 that match, of 10 asked


def test_windows_double_until_exhausted():
    replayed = replay_exact("exhausted_after_doubling")
    assert replayed.asked == [(0, 70, False), (0, 140, True)]  # 90 documents match
    windows = replayed.windows
    assert not replayed.proven_after_first
    assert windows.exhausted
    assert windows.proven
    assert len(windows.candidates) == 90
    assert_brute_force_top(windows, "car")


def test_the_largest_window_leaves_the_top_k_unproven():
    replayed = replay_exact("largest_window")
    assert replayed.asked == [(0, 40, False)]  # min(2 · 35, max_window = 40): final at once
    windows = replayed.windows
    assert not windows.proven
    assert windows.final
    assert windows.unproven(35, 0) == (
        "exact mode cannot prove the top 35 (from 0 + k 35) with a window of 40 candidates "
        "(max_window = 40); ask for fewer results, or use native mode"
    )


def test_an_exhausted_window_with_terms_left_out_proves_only_by_the_bound():
    replayed = replay_exact("pruned")
    windows = replayed.windows
    expanded = windows.expanded
    assert expanded.pruned_terms == 1
    assert expanded.pruned_mass > 0.0
    assert replayed.asked == [(0, 20, False), (0, 40, True), (40, 40, True)]
    assert windows.exhausted  # every document with the term sent was read
    # what was left out may lift an unseen document up to P / ‖x‖_S: the proof is the bound's
    kth = windows.ranked[windows.need - 1][1]
    assert windows.proven == (kth > expanded.pruned_mass / expanded.norm)
    expected = windows_brute().search("car wheel", windows.need)
    if windows.proven:
        assert [c.stored.id for c in windows.top()] == [doc_id for doc_id, _ in expected]
    else:
        assert "clause limit" in windows.unproven(10, 0)


def test_a_refused_point_in_time_reads_each_window_whole():
    replayed = replay_exact("point_in_time_refused")
    assert replayed.refusal is not None
    assert replayed.refusal["status"] == 400
    assert "search.max_keep_alive" in json.dumps(replayed.refusal["body"])
    assert replayed.asked == [(0, 20, False), (0, 40, False)]  # from offset 0, no point in time
    assert replayed.windows.proven
    assert_brute_force_top(replayed.windows, "car")


@pytest.mark.parametrize(
    ("status", "refused"), [(400, True), (403, True), (429, True), (404, False), (503, False)]
)
def test_which_refusals_of_a_point_in_time_mean_reading_windows_whole(status, refused):
    assert point_in_time_refused(status) is refused


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


def replay_hybrid(depth: int):
    """Hybrid search (max fusion, α = 0.5) on the recorded answers at ``depth``."""
    recorded = recording("hybrid.json")
    index, query, k = recorded["index"], recorded["query"], recorded["k"]
    calls = list(recorded[f"depth_{depth}"]["calls"])
    target = Target(index, frozenset([index]), frozenset([1]))
    expanded = expand_query(hybrid_model(), query, LIMIT, "query")
    leg = BM25Leg(query)
    call = calls.pop(0)
    assert without_partial(call["kwargs"]) == {"index": index, **leg.top(depth, ())}
    bm25_hits = target.hits(call["body"])
    lists = [leg.read(bm25_hits, depth)]
    windows = ExactWindows(expanded, depth, 10_000)
    call = calls.pop(0)
    window = windows.first()
    es_query = expanded.es_query("sparse_vector")
    assert without_partial(call["kwargs"]) == window.search(index, es_query)
    windows.take(target.hits(call["body"]))
    assert windows.final  # a small corpus: the first window holds every match
    scm = {c.stored.id: c.score for c in windows.top()}
    lists.append(scm_list(scm, depth, windows.proven))
    candidates = candidates_of(lists)
    missing = [c for c in candidates if c not in lists[0].scores]
    others: dict[str, dict[str, float]] = {"bm25": {}}
    if missing:
        call = calls.pop(0)
        assert without_partial(call["kwargs"]) == {"index": index, **leg.scores_of(missing)}
        others["bm25"] = leg.read_scores(target.hits(call["body"]))
    stored = {hit["_id"]: hit["_source"] for hit in bm25_hits}
    outside_scm = [c for c in candidates if c not in scm]
    vectors = [stored_vector(stored[c]) for c in outside_scm]
    others["scm"] = dict(zip(outside_scm, expanded.exact_scores(vectors), strict=True))
    assert calls == []
    return fuse(MaxFusion(0.5), lists, others, k), candidates


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


@pytest.mark.parametrize("depth", [6, 16])
def test_a_proven_hybrid_top_k_is_the_fusion_over_every_document(depth):
    fused, candidates = replay_hybrid(depth)
    k = recording("hybrid.json")["k"]
    assert fused.proven  # depth 6: by the bound (neither list holds every match); 16: whole lists
    everywhere = fused_over_every_document(candidates)  # no document outside the lists ranks higher
    assert [doc_id for doc_id, _ in fused.ranked[:k]] == [i for i, _ in everywhere[:k]]
    np.testing.assert_allclose(
        [s for _, s in fused.ranked[:k]], [s for _, s in everywhere[:k]], rtol=1e-12
    )


def test_a_hybrid_depth_too_small_is_not_proven():
    fused, _ = replay_hybrid(3)
    assert not fused.proven  # the lists' lowest scores leave room for a document outside
    note = fused.note(3)
    assert note is not None
    assert "raise depth" in note
