"""SemEval-2016/2017 Task 3 subtask B (question–question similarity ranking) through es-scm.

Data
    The task's English XML (``SemEval2016-Task3-CQA-QL-*.xml``) holds ``<OrgQuestion ORGQ_ID=…>``
    elements, each with one ``<Thread>`` whose ``<RelQuestion>`` carries ``RELQ_ID``,
    ``RELQ_RANKING_ORDER`` (the search engine's rank: the official IR baseline) and
    ``RELQ_RELEVANCE2ORGQ`` ∈ {PerfectMatch, Relevant, Irrelevant}. An original question appears
    once per related question (10 times), so elements are grouped by ``ORGQ_ID``. The gold file
    ``*.subtaskB.relevancy`` has ``ORGQ_ID  RELQ_ID  rank  score  true|false`` (TAB separated);
    ``true`` = PerfectMatch or Relevant, and columns 3–4 are the IR baseline.

Task
    Rank each original question's 10 related questions; a question's text is its subject and body
    (as in the gensim SCM notebook). Scores are turned into rankings with the official scorer's
    stable sort over the IR baseline's order (:func:`es_scm.evaluation.metrics.rank_candidates`)
    and scored with its MAP, AvgRec and MRR (:func:`es_scm.evaluation.metrics.semeval_scores`).

Methods (:func:`evaluate`)
    ``ir-baseline``  the official IR baseline (columns 3–4 of the gold file, or RELQ_RANKING_ORDER);
    ``tfidf``        cos(Wx, Wy), the plain cosine of the model's weighted vectors (S = I);
    ``scm``          SCM(x, y) = (Wx)ᵀS(Wy) / (‖Wx‖_S ‖Wy‖_S), computed locally in Python;
    ``es-scm``       the same SCM through Elasticsearch: the related questions are indexed by
                     :class:`es_scm.index.SCMIndex`, and each original question's 10 candidates are
                     scored by :meth:`es_scm.search.Searcher.rescore` with ``ids=`` — the exact SCM
                     of exactly those documents, computed from the exact vectors stored in
                     Elasticsearch. (A restricted ``exact`` search would omit the candidates with no
                     expanded term in common, whose SCM is 0; subtask B must rank all 10.)
    ``es-scm-native`` Elasticsearch's own sparse-dot-product score x'ᵀq(y') / ‖Wx‖_S restricted
                     to the 10 ids (9-bit stored values, so ties and small swaps are possible);
    ``es-bm25``      Elasticsearch BM25: a ``match`` query on the ``text`` field, filtered to the
                     ids;
    ``bm25+scm``     α·minmax(BM25) + (1 − α)·minmax(SCM) over each question's candidates.
"""

from __future__ import annotations

import json
import re
import time
import uuid
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from es_scm.evaluation.metrics import (
    average_precision,
    rank_candidates,
    reciprocal_rank,
    semeval_scores,
)
from es_scm.evaluation.trec import interpolate_scores

__all__ = [
    "METHOD_LABELS",
    "OriginalQuestion",
    "RelatedQuestion",
    "SemEvalReport",
    "apply_gold",
    "build_model",
    "clean_text",
    "cosine_scores",
    "elasticsearch_scores",
    "evaluate",
    "local_scm_scores",
    "read_gold",
    "read_semeval",
    "read_semeval_xml",
]

RELEVANT_LABELS = frozenset({"PerfectMatch", "Relevant"})
METHOD_LABELS = {
    "ir-baseline": "IR baseline (official, gold columns 3–4)",
    "tfidf": "TF-IDF cosine (local)",
    "es-bm25": "BM25 (Elasticsearch)",
    "scm": "SCM (local, exact)",
    "es-scm": "SCM (Elasticsearch, exact rescore)",
    "es-scm-native": "SCM (Elasticsearch, native 9-bit scores)",
    "bm25+scm": "BM25 + SCM (min-max interpolation)",
}

Scores = dict[str, dict[str, float]]  # question id -> candidate id -> score

_URL = re.compile(r"https?://\S+")
_TAG = re.compile(r"<[^<>]+(>|$)")
_IMG = re.compile(r"\[img_assist[^]]*?\]")


@dataclass
class RelatedQuestion:
    """A related (candidate) question: its id, text, IR baseline rank and relevance."""

    id: str
    subject: str
    body: str
    rank: int
    ir_score: float
    relevant: bool
    label: str = ""

    @property
    def text(self) -> str:
        """Subject and body, the text the notebook ranks."""
        return f"{self.subject}\n{self.body}"


@dataclass
class OriginalQuestion:
    """An original question with its candidates in the IR baseline's order (the gold file's)."""

    id: str
    subject: str
    body: str
    related: list[RelatedQuestion] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Subject and body."""
        return f"{self.subject}\n{self.body}"

    @property
    def candidate_ids(self) -> list[str]:
        return [r.id for r in self.related]

    def labels(self, ranking: Sequence[str]) -> list[bool]:
        """The relevance labels of ``ranking`` (candidate ids, best first)."""
        relevant = {r.id: r.relevant for r in self.related}
        return [relevant[c] for c in ranking]


# -- reading ----------------------------------------------------------------------------------


def clean_text(text: str) -> str:
    """Replace URLs by ``url_token`` and drop HTML tags and ``[img_assist …]`` (the notebook's)."""
    text = _IMG.sub(" ", text)
    text = _TAG.sub(" ", text)
    return _URL.sub(" url_token ", text)


def read_semeval_xml(path: str | Path) -> list[OriginalQuestion]:
    """Read a SemEval-2016/2017 Task 3 English XML file (subtask B view).

    Labels come from ``RELQ_RELEVANCE2ORGQ`` (PerfectMatch and Relevant are relevant); the IR
    baseline score is 1 / ``RELQ_RANKING_ORDER`` as in the gold file. The DTD and CRLF line ends
    of the dev file are handled by the XML parser.

    Parameters
    ----------
    path : path
        The XML file.

    Returns
    -------
    list of OriginalQuestion
        In file order, each with its related questions sorted by IR rank.
    """
    questions: dict[str, OriginalQuestion] = {}
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as error:
        raise ValueError(f"{path}: not a well-formed SemEval XML file: {error}") from error
    for element in root.iter("OrgQuestion"):
        qid = element.get("ORGQ_ID")
        if not qid:
            raise ValueError(f"{path}: an OrgQuestion without ORGQ_ID")
        question = questions.get(qid)
        if question is None:
            question = OriginalQuestion(
                qid, _text(element, "OrgQSubject"), _text(element, "OrgQBody")
            )
            questions[qid] = question
        for related in element.iter("RelQuestion"):
            rid = related.get("RELQ_ID") or ""
            rank = int(related.get("RELQ_RANKING_ORDER") or 0)
            label = related.get("RELQ_RELEVANCE2ORGQ") or ""
            question.related.append(
                RelatedQuestion(
                    id=rid,
                    subject=_text(related, "RelQSubject"),
                    body=_text(related, "RelQBody"),
                    rank=rank,
                    ir_score=1.0 / rank if rank > 0 else 0.0,
                    relevant=label in RELEVANT_LABELS,
                    label=label,
                )
            )
    if not questions:
        raise ValueError(f"{path}: no OrgQuestion elements (is it a SemEval Task 3 file?)")
    for question in questions.values():
        question.related.sort(key=lambda r: r.rank)
    return list(questions.values())


def _text(element: ElementTree.Element, tag: str) -> str:
    child = element.find(tag)
    return " ".join((child.text or "").split()) if child is not None else ""


def read_gold(path: str | Path) -> dict[str, list[tuple[str, int, float, bool]]]:
    """Read a ``*.subtaskB.relevancy`` gold file.

    Returns
    -------
    dict
        ``ORGQ_ID -> [(RELQ_ID, rank, score, relevant), …]`` in file order.
    """
    gold: dict[str, list[tuple[str, int, float, bool]]] = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 5 or parts[4] not in ("true", "false"):
                raise ValueError(f"{path}:{number}: expected 5 columns ending in true|false")
            gold.setdefault(parts[0], []).append(
                (parts[1], int(parts[2]), float(parts[3]), parts[4] == "true")
            )
    return gold


def apply_gold(
    questions: list[OriginalQuestion], gold: Mapping[str, Sequence[tuple[str, int, float, bool]]]
) -> list[OriginalQuestion]:
    """Take labels, IR ranks/scores and candidate order from a gold file (in place; returned)."""
    for question in questions:
        if question.id not in gold:
            raise ValueError(f"the gold file has no line for question {question.id}")
        by_id = {r.id: r for r in question.related}
        ordered = []
        for rid, rank, score, relevant in gold[question.id]:
            if rid not in by_id:
                raise ValueError(
                    f"the gold file's {rid} is not a related question of {question.id}"
                )
            related = by_id[rid]
            related.rank, related.ir_score, related.relevant = rank, score, relevant
            ordered.append(related)
        if len(ordered) != len(by_id):
            raise ValueError(
                f"the gold file lists {len(ordered)} of {len(by_id)} for {question.id}"
            )
        question.related = ordered
    return questions


def read_semeval(
    xml_paths: Iterable[str | Path], gold_paths: Iterable[str | Path] = ()
) -> list[OriginalQuestion]:
    """Read one or more XML files, then apply every gold file (matched by question id)."""
    questions: list[OriginalQuestion] = []
    seen: set[str] = set()
    for path in xml_paths:
        for question in read_semeval_xml(path):
            if question.id in seen:
                raise ValueError(f"question {question.id} appears in more than one file")
            seen.add(question.id)
            questions.append(question)
    gold: dict[str, list[tuple[str, int, float, bool]]] = {}
    for path in gold_paths:
        gold.update(read_gold(path))
    if gold:
        covered = [q for q in questions if q.id in gold]
        if not covered:
            raise ValueError("the gold file(s) match no question of the XML file(s)")
        apply_gold(covered, gold)
    return questions


# -- scoring ----------------------------------------------------------------------------------


def build_model(questions: Sequence[OriginalQuestion], embeddings: Any = None, **options: Any):
    """A :class:`~es_scm.model.SoftCosineModel` fitted on the questions' texts.

    The vocabulary and document frequencies come from every original and related question
    (subject + body, :func:`clean_text`); ``options`` go to :meth:`SoftCosineModel.build`.
    """
    from es_scm.model import SoftCosineModel

    return SoftCosineModel.build(corpus_texts(questions), embeddings, **options)


def corpus_texts(questions: Sequence[OriginalQuestion]) -> list[str]:
    """The texts the vocabulary is fitted on: every original and related question, cleaned."""
    texts = [clean_text(q.text) for q in questions]
    texts += [clean_text(r.text) for q in questions for r in q.related]
    return texts


def _vectors(model: Any, questions: Sequence[OriginalQuestion]) -> tuple[Any, Any]:
    queries = model.vectorize_many([clean_text(q.text) for q in questions], role="query")
    documents = model.vectorize_many(
        [clean_text(r.text) for q in questions for r in q.related], role="document"
    )
    return sp.csr_matrix(queries), sp.csr_matrix(documents)


def _per_question(questions: Sequence[OriginalQuestion], values: np.ndarray) -> Scores:
    scores: Scores = {}
    position = 0
    for row, question in enumerate(questions):
        scores[question.id] = {}
        for related in question.related:
            scores[question.id][related.id] = float(values[row, position])
            position += 1
    return scores


def cosine_scores(model: Any, questions: Sequence[OriginalQuestion]) -> Scores:
    """cos(Wx, Wy) = (Wx)·(Wy) / (‖Wx‖₂ ‖Wy‖₂) (0 for an empty vector), the S = I baseline."""
    queries, documents = _vectors(model, questions)
    dots = (queries @ documents.T).toarray()
    qn = np.sqrt(np.asarray(queries.multiply(queries).sum(axis=1)).ravel())
    dn = np.sqrt(np.asarray(documents.multiply(documents).sum(axis=1)).ravel())
    with np.errstate(divide="ignore", invalid="ignore"):
        values = dots / np.outer(qn, dn)
    return _per_question(questions, np.nan_to_num(values))


def local_scm_scores(model: Any, questions: Sequence[OriginalQuestion]) -> Scores:
    """SCM(x, y) = (Wx)ᵀS(Wy) / (√((Wx)ᵀS(Wx)) √((Wy)ᵀS(Wy))) for every question–candidate pair."""
    queries, documents = _vectors(model, questions)
    values = model.similarity_matrix.inner_product(queries, documents, normalized=(True, True))
    values = values.toarray() if sp.issparse(values) else np.asarray(values)
    return _per_question(questions, np.atleast_2d(values))


def elasticsearch_scores(
    client: Any,
    model: Any,
    questions: Sequence[OriginalQuestion],
    *,
    index_name: str | None = None,
    keep_index: bool = False,
) -> dict[str, Scores]:
    """Index the related questions and score them through Elasticsearch.

    Returns
    -------
    dict
        ``{"es-scm": …, "es-scm-native": …, "es-bm25": …}`` (see the module docstring). The
        index (``es-scm-eval-semeval-<random>`` unless named) is deleted afterwards unless
        ``keep_index``.
    """
    from es_scm.index import TEXT_FIELD, SCMIndex

    name = index_name or f"es-scm-eval-semeval-{uuid.uuid4().hex[:10]}"
    index = SCMIndex(client, name, model)
    documents = [
        {"id": r.id, "text": clean_text(r.text), "orgq": q.id} for q in questions for r in q.related
    ]
    try:
        report = index.index_documents(documents, batch_size=500)
        if not report.ok:
            raise RuntimeError(f"indexing failed: {report.summary()}: {report.failures[:3]}")
        searcher = index.searcher
        exact: Scores = {}
        native: Scores = {}
        bm25: Scores = {}
        for question in questions:
            ids = question.candidate_ids
            query = clean_text(question.text)
            result = searcher.rescore(query, ids=ids)
            exact[question.id] = {hit.id: hit.score for hit in result.hits}
            expanded = searcher.expand(query)
            native[question.id] = {}
            if not expanded.empty:
                response = client.search(
                    index=name,
                    query={
                        "bool": {"must": expanded.es_query(), "filter": {"ids": {"values": ids}}}
                    },
                    size=len(ids),
                    source=False,
                )
                native[question.id] = {
                    h["_id"]: h["_score"] / expanded.norm for h in response["hits"]["hits"]
                }
            response = client.search(
                index=name,
                query={
                    "bool": {
                        "must": {"match": {TEXT_FIELD: query}},
                        "filter": {"ids": {"values": ids}},
                    }
                },
                size=len(ids),
                source=False,
            )
            bm25[question.id] = {h["_id"]: h["_score"] for h in response["hits"]["hits"]}
        return {"es-scm": exact, "es-scm-native": native, "es-bm25": bm25}
    finally:
        if not keep_index:
            index.delete()


# -- evaluation -------------------------------------------------------------------------------


@dataclass
class SemEvalReport:
    """Scores of every method, and per question its rankings, AP and reciprocal rank."""

    methods: dict[str, dict[str, float]]
    per_question: dict[str, dict[str, Any]]
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": self.settings,
            "methods": self.methods,
            "seconds": self.seconds,
            "questions": len(self.per_question),
        }

    def markdown(self) -> str:
        """The MAP / AvgRec / MRR table (× 100), in the methods' order."""
        lines = ["| method | MAP | AvgRec | MRR |", "|:---|---:|---:|---:|"]
        for method, scores in self.methods.items():
            label = METHOD_LABELS.get(method, method)
            lines.append(
                f"| {label} | {scores['MAP']:.2f} | {scores['AvgRec']:.2f} | {scores['MRR']:.2f} |"
            )
        return "\n".join(lines)

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    def write_per_question(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.per_question, indent=1) + "\n", encoding="utf-8")


def rankings_from_scores(
    questions: Sequence[OriginalQuestion], scores: Mapping[str, Mapping[str, float]]
) -> dict[str, list[str]]:
    """Rank each question's candidates by score, ties in the IR baseline's (gold file) order."""
    return {q.id: rank_candidates(q.candidate_ids, scores.get(q.id, {})) for q in questions}


def evaluate(
    questions: Sequence[OriginalQuestion],
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    settings: Mapping[str, Any] | None = None,
    seconds: Mapping[str, float] | None = None,
) -> SemEvalReport:
    """Score every run with the official MAP, AvgRec and MRR; keep per-question details.

    Parameters
    ----------
    questions : sequence of OriginalQuestion
    runs : mapping
        ``method -> question id -> candidate id -> score`` (missing candidates score 0).
    """
    methods: dict[str, dict[str, float]] = {}
    per_question: dict[str, dict[str, Any]] = {
        q.id: {"relevant": [r.id for r in q.related if r.relevant], "methods": {}}
        for q in questions
    }
    for method, scores in runs.items():
        rankings = rankings_from_scores(questions, scores)
        labels = {q.id: q.labels(rankings[q.id]) for q in questions}
        methods[method] = semeval_scores(labels)
        for q in questions:
            per_question[q.id]["methods"][method] = {
                "ranking": rankings[q.id],
                "scores": [float(scores.get(q.id, {}).get(c, 0.0)) for c in rankings[q.id]],
                "AP": average_precision(labels[q.id]),
                "RR": reciprocal_rank(labels[q.id]),
            }
    return SemEvalReport(methods, per_question, dict(settings or {}), dict(seconds or {}))


def ir_baseline_scores(questions: Sequence[OriginalQuestion]) -> Scores:
    """The official IR baseline's scores (gold column 4, or 1 / RELQ_RANKING_ORDER)."""
    return {q.id: {r.id: r.ir_score for r in q.related} for q in questions}


def run_all(
    questions: Sequence[OriginalQuestion],
    model: Any,
    *,
    client: Any = None,
    alpha: float = 0.5,
    index_name: str | None = None,
    keep_index: bool = False,
    settings: Mapping[str, Any] | None = None,
) -> SemEvalReport:
    """Run every method (the Elasticsearch ones when ``client`` is given) and evaluate them."""
    runs: dict[str, Scores] = {}
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    runs["ir-baseline"] = ir_baseline_scores(questions)
    runs["tfidf"] = cosine_scores(model, questions)
    seconds["tfidf"] = time.perf_counter() - started
    started = time.perf_counter()
    scm = local_scm_scores(model, questions)
    seconds["scm"] = time.perf_counter() - started
    if client is not None:
        started = time.perf_counter()
        es_runs = elasticsearch_scores(
            client, model, questions, index_name=index_name, keep_index=keep_index
        )
        seconds["elasticsearch"] = time.perf_counter() - started
        runs["es-bm25"] = es_runs["es-bm25"]
        runs["scm"] = scm
        runs["es-scm"] = es_runs["es-scm"]
        runs["es-scm-native"] = es_runs["es-scm-native"]
        runs["bm25+scm"] = {
            q.id: interpolate_scores(
                es_runs["es-bm25"][q.id], es_runs["es-scm"][q.id], alpha, q.candidate_ids
            )
            for q in questions
        }
    else:
        runs["scm"] = scm
    return evaluate(questions, runs, settings=settings, seconds=seconds)
