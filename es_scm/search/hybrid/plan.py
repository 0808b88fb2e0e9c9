r"""``hybrid``: BM25 fused with the SCM — and with a dense kNN leg when asked — in one round trip.

The legs (:mod:`es_scm.search.hybrid.legs`) are read in one round trip: each leg's top list
(BM25's ``match``, the dense leg's kNN) and the SCM's first window, with BM25's score of each of
the SCM's candidates reported beside it (:func:`~es_scm.search.hybrid.legs.reported`); the SCM
scores every other candidate from its stored vector. On an engine whose ``_msearch`` reports no
named scores, BM25's scores of the SCM's other candidates are asked in a second round trip
instead; a dense leg, whose scores of the other legs' candidates (and whose candidates' BM25
scores) cannot be asked beside its search, costs a second round trip too. The lists are then
fused (:func:`~es_scm.search.hybrid.legs.fuse`, :mod:`es_scm.fusion`).

The SCM leg, exact or in two phases (``neighbours``)
    With ``neighbours=None`` the SCM's list is exact search's top ``depth``, provably the
    brute-force top of the SCM (its windows grow until proven). With ``neighbours=N`` it has two
    phases: the first sends only the query's terms and each one's N strongest neighbours in S
    (:class:`~es_scm.search.query.Pruning`), which costs a fraction of the whole expansion, and
    every candidate it returns is scored by the exact SCM of the whole S from its stored vector.
    The fused top k is then **the fusion of BM25's top R and the exact SCM of the first phase's
    top R candidates, every candidate of either list scored by both legs exactly** (BM25 by
    Elasticsearch, the SCM from its stored vector) and normalized over those candidates; R is the
    lists' reach below. It is proven (``exact_guarantee``) only where the first phase's bound
    proves the SCM's list, and a note says so otherwise.

Hybrid search's lists, and why shorter ones give the same answer
    A fusion that normalizes each leg by its best score alone (``max``, the default:
    :attr:`~es_scm.fusion.Fusion.reads_top_only`) gives a candidate the same fused
    score whichever other candidates there are, as long as each leg's best is among them. Hybrid
    search with such a fusion first reads each leg's top ``reach`` (:func:`first_reach`, less
    than ``depth``). When the fusion of those lists is proven — every document outside them
    fuses below the k-th (:func:`~es_scm.search.hybrid.legs.fuse`) — its top k is the top k of
    the fusion over every document, which the legs' top ``depth`` lists hold too: the answer is
    the one the top ``depth`` lists give, and proven as they would prove it (their k-th fused
    score is at least as high, their bound at most as high). Otherwise the lists are read again
    to ``depth``, in one more round trip, and fused as always — but for a two-phase SCM leg,
    whose lists are the first phase's top ``reach`` once: one round trip.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from es_scm.fusion import Fusion
from es_scm.fusion.signals import QuerySignals, query_signals
from es_scm.index.dense import MAX_KNN, DenseQuery, field_for
from es_scm.options.defaults import HYBRID_NEIGHBOURS
from es_scm.options.validation import (
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    AnyOf,
    Boolean,
    Options,
    OrNone,
    check,
)
from es_scm.search.dense import Dense, dense_option
from es_scm.search.filters import Filter
from es_scm.search.hybrid.config import hybrid_legs, resolve_fusion
from es_scm.search.hybrid.legs import (
    BM25_NAME,
    BM25Leg,
    DenseLeg,
    Fused,
    Leg,
    LegList,
    SCMLeg,
    candidates_of,
    fuse,
    named_scores,
)
from es_scm.search.plan import Context, Page, Plan, RequestContext, search_method
from es_scm.search.query import Pruning, clause_budget
from es_scm.search.results import SearchResult, Stored

__all__ = ["HybridPlan", "HybridRequest", "first_reach", "hybrid"]


@dataclass(frozen=True)
class HybridRequest(Page):
    """A hybrid search: the page and its filters, explanations, the ``fusion`` and ``depth``
    (resolved: :mod:`es_scm.search.hybrid.config`), the dense leg's query (None: no dense leg;
    True until the searcher encodes the text with the index's encoder, then a
    :class:`~es_scm.index.dense.DenseQuery`) and the SCM leg's first phase (``neighbours``:
    None, the exact SCM leg)."""

    fusion: Fusion = dataclasses.field(default=None)  # type: ignore[assignment]
    depth: int = 100
    explain: bool = False
    dense: DenseQuery | bool | None = None
    neighbours: int | None = None
    #: The legs fused (:func:`~es_scm.search.hybrid.config.hybrid_legs`).
    legs: tuple[str, ...] = ("bm25", "scm")


def first_reach(need: int, depth: int) -> int:
    """How far hybrid search first reads each leg's list (module docstring), for the top
    ``need``: five times as far, at least 50, at most ``depth`` (measured:
    docs/BENCHMARKS.md)."""
    return min(depth, max(5 * need, 50))


class HybridPlan(Plan):
    """The legs' top lists, the SCM's by exact search's windows (or one window of its first
    phase), fused.

    Round trips: the legs' tops and the SCM's first window, with BM25's scores of the SCM's
    candidates reported beside its search; the SCM's later windows, if its list is not proven
    by the first (exact leg); the scores that a dense leg and BM25 still owe each other's
    candidates, in a search restricted to their ids. A fusion that reads the legs' best scores
    only (:attr:`~es_scm.fusion.Fusion.reads_top_only`) first reads shorter lists,
    and reads them to ``depth`` only when those do not prove the top k (module docstring).
    """

    mode = "hybrid"

    def __init__(self, request: HybridRequest, context: Context) -> None:
        super().__init__(request, context)
        fusion, depth = request.fusion, request.depth
        self.fusion, self.depth = fusion, depth
        names = request.legs
        self.legs: list[Leg] = []
        self.bm25 = BM25Leg(request.text) if "bm25" in names else None
        if self.bm25 is not None:
            self.legs.append(self.bm25)
        if "dense" in names:
            query = request.dense
            assert isinstance(query, DenseQuery), "the query's vector is known (the searcher's)"
            field = field_for(self.target.name, context.checked.dense_fields, query)
            self.legs.append(DenseLeg(query, field))
        budget = clause_budget(context.clause_limit, request.filters, request.words)
        two_phase = request.neighbours is not None and context.checked.expansion == "query"
        pruning = Pruning(request.neighbours) if two_phase else None  # type: ignore[arg-type]
        self.expanded = self._expanded(budget, pruning)
        self.scm: SCMLeg | None = None
        if "scm" in names:
            expanded = self.expanded
            scm_query = (
                None if expanded.empty else expanded.es_query(context.query_type, request.filters)
            )
            self.scm = SCMLeg(expanded, scm_query, two_phase)
        # BM25's score of the SCM's candidates, reported beside the SCM's search (a round trip
        # less than asking them apart, on either side of S: docs/BENCHMARKS.md)
        self.beside = (
            self.bm25 is not None
            and self.scm is not None
            and fusion.uses_scores
            and context.named_scores
        )
        short = fusion.reads_top_only_for(names)
        self.reach = first_reach(request.need, depth) if short else depth
        self._start()

    def _start(self) -> None:
        """Read every list anew, to :attr:`reach`."""
        self.stage = "tops"
        self.lists: list[LegList] = []
        self.stored: dict[str, Stored] = {}
        self.named: dict[str, float] = {}  # BM25 by id, of the SCM's last window's hits
        self.owed: list[tuple[Leg, list[str]]] = []  # the scores still to ask, by leg
        self.others: dict[str, dict[str, float]] = {}
        self.fused: Fused | None = None
        if self.scm is not None:
            self.scm.start(self.reach, self.context.max_window)

    # -- the rounds ------------------------------------------------------------------------------

    def next(self) -> list[dict[str, Any]] | None:
        request, index = self.request, self.target.name
        if self.stage == "tops":
            tops = [{"index": index, **leg.top(self.reach, request.filters)} for leg in self.legs]
            return tops + self._window()
        if self.stage == "windows":
            return self._window()
        if self.stage == "owed":
            return [{"index": index, **leg.scores_of(ids)} for leg, ids in self._owed_searches()]
        return None

    def _window(self) -> list[dict[str, Any]]:
        """The SCM's next window (none without an SCM leg or after its last)."""
        if self.scm is None:
            return []
        reporters = [self.bm25.reporter()] if self.beside and self.bm25 is not None else []
        search = self.scm.search(self.target.name, reporters)
        return [] if search is None else [search]

    def _owed_searches(self) -> list[tuple[Leg, list[str]]]:
        """The (leg, ids) of each search of the scores still owed, at most ``leg.max_ids``
        ids a search."""
        return [
            (leg, ids[start : start + (leg.max_ids or len(ids))])
            for leg, ids in self.owed
            for start in range(0, len(ids), leg.max_ids or len(ids))
        ]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        self.rounds += 1
        if self.stage == "owed":
            for (leg, _), answer in zip(self._owed_searches(), answers, strict=True):
                scores = leg.read_scores(self.target.hits(answer))
                self.others.setdefault(leg.name, {}).update(scores)
            self._fuse()
            return
        if self.stage == "tops":
            for leg, answer in zip(self.legs, answers, strict=False):
                found = self.target.hits(answer)
                self.lists.append(leg.read(found, self.reach))
                for stored in Stored.many([h for h in found if h["_id"] not in self.stored]):
                    self.stored.setdefault(stored.id, stored)
            answers = answers[len(self.legs) :]
        if self.scm is not None and answers:  # the SCM's window
            hits = self.target.hits(answers[0])
            self.scm.take(hits)
            self.named = {}  # an id held twice: its best copy's, as BM25's own list keeps it
            for hit in hits:
                score = named_scores(hit, BM25_NAME)
                self.named[hit["_id"]] = max(score, self.named.get(hit["_id"], score))
            if not self.scm.final:
                self.stage = "windows"
                return
        self._lists_read()

    def _lists_read(self) -> None:
        """Every list is read: the SCM's from its windows, and the scores each leg owes the
        others' candidates that are known already (the SCM's from their stored vectors, BM25's
        of the SCM's candidates reported beside its search); the rest are asked next."""
        if self.scm is not None:
            self.lists.append(self.scm.read(self.reach, self.stored))
        self.owed, self.others = [], {}
        if self.fusion.uses_scores:
            candidates = candidates_of(self.lists)
            for leg, leg_list in zip(self.legs, self.lists, strict=False):
                known = self.named if leg is self.bm25 and self.beside else {}
                missing = [c for c in candidates if c not in leg_list.scores]
                self.others[leg.name] = {c: known[c] for c in missing if c in known}
                asked = [c for c in missing if c not in known]
                if asked:
                    self.owed.append((leg, asked))
            if self.scm is not None:
                scm_scores = self.lists[-1].scores
                missing_scm = [self.stored[c] for c in candidates if c not in scm_scores]
                self.others["scm"] = self.scm.scores_of(missing_scm)
        if self.owed:
            self.stage = "owed"
            return
        self._fuse()

    def _fuse(self) -> None:
        signals = self._signals() if self.fusion.reads_signals else None
        fused = fuse(self.fusion, self.lists, self.others, self.request.need, signals)
        two_phase = self.scm is not None and self.scm.two_phase
        if not fused.proven and self.reach < self.depth and not two_phase:
            self.reach = self.depth  # shorter lists did not prove it
            self._start()
            return
        self.fused, self.stage = fused, "done"

    def _signals(self) -> QuerySignals:
        """The query's signals (:mod:`es_scm.fusion.signals`) from what the plan holds:
        the lists as read, the query's vector, and the stored vectors of the SCM's best ten."""
        scm = next((leg.scores for leg in self.lists if leg.name == "scm"), {})
        best = [self.stored[doc_id].vector for doc_id in list(scm)[:10]]
        model = self.context.model
        return query_signals(
            {leg.name: leg.scores for leg in self.lists},
            query=self.expanded,
            idf=model.global_weights("query"),
            scm_vectors=best,
        )

    # -- the result -------------------------------------------------------------------------------

    def result(self) -> SearchResult:
        request, fused, expanded = self.request, self.fused, self.expanded
        assert fused is not None, "the plan is done"
        hits = [
            self._hit(self.stored[doc_id], score, expanded, components=fused.components[doc_id])
            for doc_id, score in fused.ranked[request.from_ : request.need]
        ]
        notes = []
        if self.scm is not None:
            reason = self.scm.unproven(self.reach)
            notes += [f"the SCM leg: {reason}"] if reason else []
        notes += [
            leg.field.approximate_note()
            for leg in self.legs
            if isinstance(leg, DenseLeg) and not leg.field.exact
        ]
        note = fused.note(request.need)
        if request.explain and fused.why is not None:  # why the legs weigh what they weigh
            notes.append(f"fusion: {fused.why}")
        return self._result(
            hits,
            candidates=fused.candidates,
            exact_guarantee=fused.proven,
            notes=[*notes, *([] if note is None else [note])],
            fusion_weights=fused.weights,
        )


@search_method(HybridPlan)
def hybrid(
    context: RequestContext,
    query: str,
    k: int = 10,
    *,
    from_: int = 0,
    filter: Filter = None,
    fusion: Fusion | str | None = None,
    depth: int | None = None,
    explain: bool = False,
    dense: Dense = None,
    neighbours: int | Literal["all"] | None = None,
) -> HybridRequest:
    """The top ``k`` after ``from_`` of BM25 fused with the exact SCM, and with a dense kNN
    leg when ``dense`` is given (:mod:`es_scm.search.hybrid`).

    ``dense`` is None (two legs), True (the index's own dense vectors, an index created
    with ``dense=``: the query encoded by its encoder) or a
    :class:`~es_scm.index.dense.DenseQuery` (a ``dense_vector`` field of the caller's,
    e.g. ``metadata.embedding``, and the query's vector). ``fusion`` is a
    :class:`~es_scm.fusion.Fusion` (``fusion_from("max", alpha=0.7)``; with a
    dense leg ``fusion_from("zscore", weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5})``,
    whose weights name the legs fused) or the name of one (``"max"``, ``"linear"``,
    ``"zscore"``, ``"rrf"``); None takes the model's own
    (:attr:`~es_scm.model.SoftCosineModel.hybrid`, what ``es-scm tune`` saved; with a
    dense leg its ``"dense"`` entry), else :data:`es_scm.options.defaults.HYBRID_DEFAULTS` (with a
    dense leg :data:`es_scm.options.defaults.HYBRID_DENSE_DEFAULTS`). Each leg retrieves its top
    ``depth`` (at least ``from_ + k``; None: the model's, else the default). ``neighbours``
    makes the SCM leg two-phase: its candidates are retrieved with the query's terms and each
    one's ``neighbours`` strongest neighbours only, and scored by the exact SCM
    (:mod:`es_scm.search.hybrid.plan`); ``"all"``: the SCM's exact top list, every neighbour
    sent; None: :data:`es_scm.options.defaults.HYBRID_NEIGHBOURS`. Each hit's
    ``components`` holds its score by leg (the dense leg's is Elasticsearch's kNN score,
    (1 + cos) / 2 for cosine); with ``explain``, its explanation is of its exact SCM
    (``components["scm"]``). ``filter`` as in :meth:`search`. The result is proven
    (``exact_guarantee``) only when every leg's list is its exact top: a dense leg's field
    must be indexed ``flat`` (exact kNN; a note says so otherwise).
    """
    common = Page.of(context, query, k, from_, filter)
    need = common["from_"] + common["k"]
    dense_query = None if dense is None else dense_option(dense)
    depth = check(depth, "depth", OrNone(POSITIVE_INT))
    with_dense = dense_query is not None
    if fusion is None and depth is None:  # the model's own, resolved once per searcher
        chosen, depth, legs = context.once(
            ("hybrid", with_dense), lambda: _resolved(context, with_dense)
        )
    else:
        chosen, depth, legs = _resolved(context, with_dense, fusion, depth)
    depth = max(depth, need)
    if with_dense and depth > MAX_KNN:
        raise ValueError(f"from_ + k must be at most {MAX_KNN} with a dense leg, got {depth}")
    return HybridRequest(
        **common,
        fusion=chosen,
        depth=depth,
        explain=check(explain, "explain", Boolean()),
        dense=dense_query,
        neighbours=_neighbours(neighbours),
        legs=legs,
    )


def _neighbours(neighbours: int | Literal["all"] | None) -> int | None:
    """The SCM leg's first phase: each query term's neighbours sent (None: all of them, the
    exact leg)."""
    if neighbours is None:
        return HYBRID_NEIGHBOURS
    checked = check(neighbours, "neighbours", AnyOf((NON_NEGATIVE_INT, Options(("all",)))))
    return None if checked == "all" else int(checked)


def _resolved(
    context: RequestContext,
    dense: bool,
    fusion: Fusion | str | None = None,
    depth: int | None = None,
) -> tuple[Fusion, int, tuple[str, ...]]:
    """The fusion, the depth and the legs of a hybrid search (:mod:`es_scm.search.hybrid.config`:
    the options given, else the model's, else the defaults)."""
    chosen, depth = resolve_fusion(fusion, depth, context.model_hybrid, dense)
    return chosen, depth, hybrid_legs(chosen, dense)
