r"""The search methods, each a plan: the requests it sends, round by round, and how it finishes.

Pure code, no I/O. A searcher (:mod:`es_scm.elastic._async.searcher`) checks a method's options
into a :class:`~es_scm.elastic.requests.SearchRequest`, makes the method's plan for it, and runs
one loop for every method: it sends what :meth:`Plan.next` asks — the searches of one round trip,
in one ``search`` or one ``_msearch`` — and hands the answers to :meth:`Plan.take`, until
``next`` says that the plan is done; :meth:`Plan.result` is then the
:class:`~es_scm.elastic.results.SearchResult`. ``batch_search`` runs the same loop over many
plans, each round of all of them in one ``_msearch``. Every answer is read through the searcher's
:class:`~es_scm.elastic.target.Target` (whole, and from the checked indices).

The methods (:data:`METHODS`, by the searcher's method name):

``search`` (:class:`ExactPlan`)
    Exact search's windows (:mod:`es_scm.elastic.windows`), each read whole in one round trip,
    until the top k is proven: one round trip for almost every query.
``native`` (:class:`NativePlan`)
    One page of Elasticsearch's scores of the expanded query, divided by ‖Wx‖_S.
``hybrid`` (:class:`HybridPlan`)
    The legs' top lists and the SCM's first window in one round trip, BM25's score of each of
    the SCM's candidates reported beside it (:func:`~es_scm.elastic.query.reported`): the two
    legs are fused from that one answer (:mod:`es_scm.elastic.hybrid`); on an engine whose
    ``_msearch`` reports no named scores, BM25's scores of the SCM's other candidates are asked
    in a second round trip instead. A dense leg, whose
    scores of the other legs' candidates (and whose candidates' BM25 scores) cannot be asked
    beside its search, costs a second round trip.
``bm25`` (:class:`BM25Plan`), ``dense`` (:class:`DensePlan`)
    One page of Elasticsearch's ``match`` or kNN search, scores as Elasticsearch gives them.
``rescore`` (:class:`RescorePlan`)
    The stored vectors of given ids (one ``mget``), or the top hits of a given query, rescored.

Hybrid search's lists, and why shorter ones give the same answer
    A fusion that normalizes each leg by its best score alone (``max``, the default:
    :attr:`~es_scm.fusion.Fusion.reads_top_only`) gives a candidate the same fused score
    whichever other candidates there are, as long as each leg's best is among them. Hybrid
    search with such a fusion first reads each leg's top ``reach`` (:func:`first_reach`, less
    than ``depth``). When the fusion of those lists is proven — every document outside them
    fuses below the k-th (:func:`~es_scm.elastic.hybrid.fuse`) — its top k is the top k of the
    fusion over every document, which the legs' top ``depth`` lists hold too: the answer is
    the one the top ``depth`` lists give, and proven as they would prove it (their k-th fused
    score is at least as high, their bound at most as high). Otherwise the lists are read again
    to ``depth``, in one more round trip, and fused as always.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from es_scm.elastic.dense import DenseQuery, field_for
from es_scm.elastic.explain import explanation_of
from es_scm.elastic.hybrid import (
    BM25Leg,
    DenseLeg,
    Fused,
    Leg,
    LegList,
    candidates_of,
    fuse,
    scm_list,
)
from es_scm.elastic.query import (
    ExpandedQuery,
    QueryAccount,
    QueryType,
    bm25_query,
    clause_budget,
    expand_query,
    named_scores,
    reported,
)
from es_scm.elastic.requests import RescoreRequest, SearchRequest
from es_scm.elastic.results import Hit, SearchResult, Stored, distinct_hits
from es_scm.elastic.target import Checked
from es_scm.elastic.windows import ExactWindows, page
from es_scm.query_signals import QuerySignals, query_signals
from es_scm.similarity.scoring import rank
from es_scm.validation import Options, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "METHODS",
    "BM25Plan",
    "Context",
    "DensePlan",
    "ExactPlan",
    "HybridPlan",
    "NativePlan",
    "Plan",
    "RescorePlan",
    "first_reach",
    "search_request",
]

#: The name under which BM25's score is reported beside the SCM's search.
BM25_NAME = "bm25"


@dataclass(frozen=True)
class Context:
    """What a searcher's plans read: the ``model``, the passed model check (``checked``: the
    target, the side of S, the mapped fields), the cluster's clause limit (``clause_limit``),
    the form of the expanded query (``query_type``), exact search's largest window, and whether
    the cluster reports named queries' scores in an ``_msearch`` (``named_scores``: else hybrid
    search asks for BM25's scores of the SCM's candidates in a round trip of their own)."""

    model: SoftCosineModel
    checked: Checked
    clause_limit: int
    query_type: QueryType
    max_window: int
    named_scores: bool = True


class Plan:
    """One search of one method (module docstring): the searches of each round trip, the
    answers taken, the result made.

    Subclasses declare the method's ``name`` (the searcher's method), the ranking its hits
    follow (``mode``) and the keyword arguments it takes beside the query and k (``options``).
    """

    name: ClassVar[str]
    mode: ClassVar[str]
    options: ClassVar[tuple[str, ...]]

    def __init__(self, request: SearchRequest | RescoreRequest, context: Context) -> None:
        self.request = request
        self.context = context
        self.target = context.checked.target
        self.account = QueryAccount()
        self.rounds = 0  # round trips answered
        self.started = time.perf_counter()

    @classmethod
    def checked(
        cls,
        request: SearchRequest,
        options: Mapping[str, Any],
        model_hybrid: Mapping[str, Any] | None = None,
    ) -> SearchRequest:
        """``request``, whose common options are checked, with the method's own (``options``:
        the keyword arguments beside ``from_`` and ``filter``)."""
        if "explain" in cls.options:
            return request.explained(options.get("explain", False))
        return request

    def next(self) -> list[dict[str, Any]] | None:
        """The searches of the next round trip (keyword arguments of ``search``, with the
        index; ``"api": "mget"`` for an ``mget``), or None when the plan is done."""
        raise NotImplementedError

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        """The answers to the last :meth:`next`, in its order."""
        raise NotImplementedError

    def result(self) -> SearchResult:
        """The search's result, once :meth:`next` said that the plan is done."""
        raise NotImplementedError

    def _result(
        self,
        hits: list[Hit],
        *,
        candidates: int = 0,
        exact_guarantee: bool = False,
        notes: Sequence[str] = (),
        unproven: str | None = None,
    ) -> SearchResult:
        return SearchResult(
            hits=hits,
            mode=self.mode,
            query_terms=self.account.query_terms,
            expansion_terms=self.account.expansion_terms,
            pruned_terms=self.account.pruned_terms,
            candidates=candidates,
            rounds=self.rounds,
            exact_guarantee=exact_guarantee,
            took_ms=(time.perf_counter() - self.started) * 1000,
            notes=(*self.account.notes, *notes),
            unproven=unproven,
        )

    def _expanded(self, budget: int) -> ExpandedQuery:
        """The request's query expanded within ``budget`` clauses (and its account kept)."""
        context = self.context
        expanded = expand_query(context.model, self.request.text, budget, context.checked.expansion)
        self.account = expanded.account(context.clause_limit)
        return expanded

    def _hit(
        self,
        stored: Stored,
        score: float,
        expanded: ExpandedQuery | None,
        *,
        native: float | None = None,
        components: dict[str, float | None] | None = None,
    ) -> Hit:
        explanation = None
        if getattr(self.request, "explain", False) and expanded is not None:
            explanation = explanation_of(self.context.model, expanded, stored)
        return Hit.of(
            stored, score, native_score=native, components=components, explanation=explanation
        )


class ExactPlan(Plan):
    """``search``: exact search's windows until the top ``from_ + k`` is proven."""

    name = "search"
    mode = "exact"
    options = ("from_", "filter", "explain")

    def __init__(self, request: SearchRequest, context: Context) -> None:
        super().__init__(request, context)
        self.expanded = self._expanded(clause_budget(context.clause_limit, request.filters))
        self.query = self.expanded.es_query(context.query_type, request.filters)
        self.windows = ExactWindows(self.expanded, request.need, context.max_window)

    def next(self) -> list[dict[str, Any]] | None:
        if self.expanded.empty:  # no vocabulary terms: nothing can score above 0
            return None
        size = self.windows.next()
        return None if size is None else [page(self.target.name, self.query, size)]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        self.windows.take(self.target.hits(answers[0]))
        self.rounds += 1

    def result(self) -> SearchResult:
        request, expanded, windows = self.request, self.expanded, self.windows
        assert isinstance(request, SearchRequest)
        if expanded.empty:
            return self._result([], exact_guarantee=True)
        hits = [
            self._hit(c.stored, c.score, expanded, native=expanded.native_score(c.es_score))
            for c in windows.top(request.from_)
        ]
        return self._result(
            hits,
            candidates=windows.read,
            exact_guarantee=windows.proven and not expanded.has_negative,
            unproven=None if windows.proven else windows.unproven(request.k, request.from_),
        )


class NativePlan(Plan):
    """``native``: one page of Elasticsearch's scores divided by ‖Wx‖_S."""

    name = "native"
    mode = "native"
    options = ("from_", "filter", "explain")

    def __init__(self, request: SearchRequest, context: Context) -> None:
        super().__init__(request, context)
        self.expanded = self._expanded(clause_budget(context.clause_limit, request.filters))
        self.hits: list[Mapping[str, Any]] = []

    def next(self) -> list[dict[str, Any]] | None:
        if self.rounds or self.expanded.empty:
            return None
        request = self.request
        assert isinstance(request, SearchRequest)
        query = self.expanded.es_query(self.context.query_type, request.filters)
        return [page(self.target.name, query, request.k, request.from_)]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        self.hits = distinct_hits(self.target.hits(answers[0]))
        self.rounds += 1

    def result(self) -> SearchResult:
        expanded = self.expanded
        hits = []
        for hit, stored in zip(self.hits, Stored.many(self.hits), strict=True):
            score = expanded.native_score(hit["_score"])
            hits.append(self._hit(stored, score, expanded, native=score))
        return self._result(hits, candidates=len(hits), exact_guarantee=expanded.empty)


class BM25Plan(Plan):
    """``bm25``: one page of Elasticsearch's BM25 (``match`` on the text field)."""

    name = "bm25"
    mode = "bm25"
    options = ("from_", "filter")

    def __init__(self, request: SearchRequest, context: Context) -> None:
        super().__init__(request, context)
        clause_budget(context.clause_limit, request.filters, request.words)  # fits the limit
        self.hits: list[Mapping[str, Any]] = []

    def next(self) -> list[dict[str, Any]] | None:
        if self.rounds:
            return None
        request = self.request
        assert isinstance(request, SearchRequest)
        query = bm25_query(request.text, request.filters)
        return [page(self.target.name, query, request.k, request.from_)]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        self.hits = distinct_hits(self.target.hits(answers[0]))
        self.rounds += 1

    def result(self) -> SearchResult:
        hits = [Hit.of(Stored.of(hit), float(hit["_score"])) for hit in self.hits]
        return self._result(hits, candidates=len(hits))


class DensePlan(Plan):
    """``dense``: one page of Elasticsearch's kNN search."""

    name = "dense"
    mode = "dense"
    options = ("from_", "filter", "dense")

    @classmethod
    def checked(
        cls,
        request: SearchRequest,
        options: Mapping[str, Any],
        model_hybrid: Mapping[str, Any] | None = None,
    ) -> SearchRequest:
        return request.dense_search(options.get("dense"))

    def __init__(self, request: SearchRequest, context: Context) -> None:
        super().__init__(request, context)
        query = request.dense
        assert isinstance(query, DenseQuery), "the query's vector is known (the searcher's)"
        checked = context.checked
        self.leg = DenseLeg(query, field_for(self.target.name, checked.dense_fields, query))
        self.hits: list[Mapping[str, Any]] = []

    def next(self) -> list[dict[str, Any]] | None:
        if self.rounds:
            return None
        request = self.request
        assert isinstance(request, SearchRequest)
        search = {"index": self.target.name, **self.leg.top(request.need, request.filters)}
        return [{**search, "from_": request.from_, "size": request.k}]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        self.hits = distinct_hits(self.target.hits(answers[0]))
        self.rounds += 1

    def result(self) -> SearchResult:
        hits = [Hit.of(Stored.of(hit), float(hit["_score"])) for hit in self.hits]
        field = self.leg.field
        notes = () if field.exact else (field.approximate_note(),)
        return self._result(hits, candidates=len(hits), exact_guarantee=field.exact, notes=notes)


class RescorePlan(Plan):
    """``rescore``: the exact SCM of given ids (one ``mget``) or of a query's top hits."""

    name = "rescore"
    mode = "rescore"
    options = ()

    def __init__(self, request: RescoreRequest, context: Context) -> None:
        super().__init__(request, context)
        self.expanded = expand_query(
            context.model, request.text, context.clause_limit, context.checked.expansion
        )
        self.documents: dict[str, Stored] = {}
        self.missing: list[str] = []

    def next(self) -> list[dict[str, Any]] | None:
        request = self.request
        assert isinstance(request, RescoreRequest)
        if self.rounds or (request.ids is not None and not request.ids):
            return None
        if request.ids is not None:
            return [{"api": "mget", "index": self.target.name, "ids": list(request.ids)}]
        query = {"query": request.es_query, "size": request.size, "source": True}
        return [{"index": self.target.name, **query}]

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        request = self.request
        assert isinstance(request, RescoreRequest)
        if request.ids is not None:
            self.documents, self.missing = self.target.documents(answers[0], request.ids)
        else:
            hits = self.target.hits(answers[0])
            self.documents = {stored.id: stored for stored in Stored.many(hits)}
        self.rounds += 1

    def result(self) -> SearchResult:
        request, expanded, documents = self.request, self.expanded, self.documents
        assert isinstance(request, RescoreRequest)
        exact = expanded.exact_scores([document.vector for document in documents.values()])
        ranked = rank(zip(documents, exact, strict=True))[: request.k]
        hits = [self._hit(documents[doc_id], score, expanded) for doc_id, score in ranked]
        missing = self.missing
        return self._result(
            hits,
            candidates=len(documents),
            exact_guarantee=request.ids is not None and not expanded.has_negative,
            notes=(f"{len(missing)} candidate id(s) not found: {missing[:5]}",) if missing else (),
        )


def first_reach(need: int, depth: int) -> int:
    """How far hybrid search first reads each leg's list (module docstring), for the top
    ``need``: five times as far, at least 50, at most ``depth``. Measured on 100 Wikipedia
    queries at 850,000 paragraphs (k = 10, depth 100): 4 % needed the lists to ``depth`` (12 %
    at 30, 31 % at 20), for a first round trip that costs little more than at 30, and about
    two thirds of the one to ``depth`` (``scripts/bench_search_cost.py``)."""
    return min(depth, max(5 * need, 50))


class HybridPlan(Plan):
    """``hybrid``: the legs' top lists, the SCM's by exact search's windows, fused.

    Round trips: the legs' tops and the SCM's first window, with BM25's scores of the SCM's
    candidates reported beside its search; the SCM's later windows, if its list is not proven
    by the first; the scores that a dense leg and BM25 still owe each other's candidates, in a
    search restricted to their ids. A fusion that reads the legs' best scores only
    (:attr:`~es_scm.fusion.Fusion.reads_top_only`) first reads shorter lists, and reads them
    to ``depth`` only when those do not prove the top k (module docstring).
    """

    name = "hybrid"
    mode = "hybrid"
    options = ("from_", "filter", "explain", "fusion", "depth", "dense")

    @classmethod
    def checked(
        cls,
        request: SearchRequest,
        options: Mapping[str, Any],
        model_hybrid: Mapping[str, Any] | None = None,
    ) -> SearchRequest:
        request = request.explained(options.get("explain", False))
        fusion, depth, dense = (options.get(key) for key in ("fusion", "depth", "dense"))
        return request.hybrid_search(fusion, depth, dense, model_hybrid)

    def __init__(self, request: SearchRequest, context: Context) -> None:
        super().__init__(request, context)
        fusion, depth = request.fusion, request.depth
        assert fusion is not None, "a hybrid search has a fusion"
        assert depth is not None, "and a depth"
        self.fusion, self.depth = fusion, depth
        names = request.legs
        self.fuses_scm = "scm" in names
        self.legs: list[Leg] = []
        if "bm25" in names:
            self.legs.append(BM25Leg(request.text))
        if "dense" in names:
            query = request.dense
            assert isinstance(query, DenseQuery), "the query's vector is known (the searcher's)"
            field = field_for(self.target.name, context.checked.dense_fields, query)
            self.legs.append(DenseLeg(query, field))
        # BM25's score of the SCM's candidates, reported beside the SCM's search (a round trip
        # less than asking them apart, on either side of S: scripts/bench_search_cost.py
        # bm25-scores)
        self.beside = (
            "bm25" in names and self.fuses_scm and fusion.uses_scores and context.named_scores
        )
        budget = clause_budget(context.clause_limit, request.filters, request.words)
        self.expanded = self._expanded(budget)
        scm_query = self.fuses_scm and not self.expanded.empty
        self.scm_query = (
            self.expanded.es_query(context.query_type, request.filters) if scm_query else None
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
        self.windows = (
            ExactWindows(self.expanded, self.reach, self.context.max_window)
            if self.scm_query is not None
            else None
        )

    # -- the rounds ------------------------------------------------------------------------------

    def next(self) -> list[dict[str, Any]] | None:
        request, index = self.request, self.target.name
        assert isinstance(request, SearchRequest)
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
        size = None if self.windows is None else self.windows.next()
        if size is None or self.scm_query is None:
            return []
        search = page(self.target.name, self.scm_query, size)
        if not self.beside:
            return [search]
        bm25 = bm25_query(self.request.text, name=BM25_NAME)
        return [{**search, "post_filter": reported([bm25]), "include_named_queries_score": True}]

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
        if self.windows is not None and answers:  # the SCM's window
            hits = self.target.hits(answers[0])
            self.windows.take(hits)
            self.named = {}  # an id held twice: its best copy's, as BM25's own list keeps it
            for hit in hits:
                score = named_scores(hit, BM25_NAME)
                self.named[hit["_id"]] = max(score, self.named.get(hit["_id"], score))
            if not self.windows.final:
                self.stage = "windows"
                return
        self._lists_read()

    def _lists_read(self) -> None:
        """Every list is read: the SCM's from its windows, and the scores each leg owes the
        others' candidates that are known already (the SCM's from their stored vectors, BM25's
        of the SCM's candidates reported beside its search); the rest are asked next."""
        if self.fuses_scm:
            scm: dict[str, float] = {}
            if self.windows is not None:
                for candidate in self.windows.top():
                    scm[candidate.stored.id] = candidate.score
                    self.stored.setdefault(candidate.stored.id, candidate.stored)
            proven = self.windows is None or self.windows.proven
            self.lists.append(scm_list(scm, self.reach, proven))
        self.owed, self.others = [], {}
        if self.fusion.uses_scores:
            candidates = candidates_of(self.lists)
            for leg, leg_list in zip(self.legs, self.lists, strict=False):
                known = self.named if leg.name == BM25_NAME and self.beside else {}
                missing = [c for c in candidates if c not in leg_list.scores]
                self.others[leg.name] = {c: known[c] for c in missing if c in known}
                asked = [c for c in missing if c not in known]
                if asked:
                    self.owed.append((leg, asked))
            if self.fuses_scm:
                scm_list_scores = self.lists[-1].scores
                missing_scm = [self.stored[c] for c in candidates if c not in scm_list_scores]
                exact = self.expanded.exact_scores([d.vector for d in missing_scm])
                self.others["scm"] = {d.id: s for d, s in zip(missing_scm, exact, strict=True)}
        if self.owed:
            self.stage = "owed"
            return
        self._fuse()

    def _fuse(self) -> None:
        request = self.request
        assert isinstance(request, SearchRequest)
        signals = self._signals() if self.fusion.reads_signals else None
        fused = fuse(self.fusion, self.lists, self.others, request.need, signals)
        if not fused.proven and self.reach < self.depth:  # shorter lists did not prove it
            self.reach = self.depth
            self._start()
            return
        self.fused, self.stage = fused, "done"

    def _signals(self) -> QuerySignals:
        """The query's signals (:mod:`es_scm.query_signals`) from what the plan holds: the
        lists as read, the query's vector, and the stored vectors of the SCM's best ten."""
        scm = next((leg.scores for leg in self.lists if leg.name == "scm"), {})
        best = [self.stored[doc_id].vector for doc_id in list(scm)[:10]]
        model = self.context.model
        return query_signals(
            {leg.name: leg.scores for leg in self.lists},
            query=self.expanded.vector,
            idf=model.global_weights("query"),
            scm_vectors=best,
        )

    # -- the result -------------------------------------------------------------------------------

    def result(self) -> SearchResult:
        request, fused, expanded = self.request, self.fused, self.expanded
        assert isinstance(request, SearchRequest)
        assert fused is not None, "the plan is done"
        hits = [
            self._hit(self.stored[doc_id], score, expanded, components=fused.components[doc_id])
            for doc_id, score in fused.ranked[request.from_ : request.need]
        ]
        notes = []
        if self.windows is not None:
            reason = self.windows.unproven(self.reach, 0)
            notes += [f"the SCM leg: {reason}"] if reason else []
        notes += [
            leg.field.approximate_note()
            for leg in self.legs
            if isinstance(leg, DenseLeg) and not leg.field.exact
        ]
        note = fused.note(request.need)
        if request.explain and fused.why is not None:  # why the legs weigh what they weigh
            notes.append(f"fusion: {fused.why}")
        result = self._result(
            hits,
            candidates=fused.candidates,
            exact_guarantee=fused.proven,
            notes=[*notes, *([] if note is None else [note])],
        )
        return dataclasses.replace(result, fusion_weights=fused.weights)


#: The search methods by the searcher's method name: each with its plan.
METHODS: dict[str, type[Plan]] = {
    plan.name: plan for plan in (ExactPlan, NativePlan, HybridPlan, BM25Plan, DensePlan)
}
_METHODS = Options(tuple(METHODS))


def search_request(
    method: str,
    query: Any,
    k: Any,
    *,
    max_words: int,
    filter_policy: str = "any",
    model_hybrid: Mapping[str, Any] | None = None,
    **options: Any,
) -> tuple[type[Plan], SearchRequest]:
    """The plan of ``method`` and its request, every option checked once (``model_hybrid``:
    the model's own hybrid settings, which hybrid search reads where ``fusion`` or ``depth``
    is None).

    Raises
    ------
    ValueError
        An unknown method, an option the method does not take, or a bad value, in one line.
    """
    plan = METHODS[check(method, "method", _METHODS)]
    unknown = sorted(set(options) - set(plan.options))
    if unknown:
        raise ValueError(
            f"{unknown[0]} is not an option of method={method!r}; its options are "
            f"{', '.join(plan.options)}"
        )
    common = {key: options.pop(key) for key in ("from_", "filter") if key in options}
    request = SearchRequest.common(
        method, query, k, **common, max_words=max_words, filter_policy=filter_policy
    )
    return plan, plan.checked(request, options, model_hybrid)
