"""SemEval-2016/2017 Task 3 subtask B data: the questions, their labels, and the gold file.

Data
    The task's English XML (``SemEval2016-Task3-CQA-QL-*.xml``) holds ``<OrgQuestion ORGQ_ID=…>``
    elements, each with one ``<Thread>`` whose ``<RelQuestion>`` carries ``RELQ_ID``,
    ``RELQ_RANKING_ORDER`` (the search engine's rank: the official IR baseline) and
    ``RELQ_RELEVANCE2ORGQ`` ∈ {PerfectMatch, Relevant, Irrelevant}. An original question appears
    once per related question (10 times), so elements are grouped by ``ORGQ_ID``. The gold file
    ``*.subtaskB.relevancy`` has ``ORGQ_ID  RELQ_ID  rank  score  true|false`` (TAB separated);
    ``true`` = PerfectMatch or Relevant, and columns 3–4 are the IR baseline.

    The data is published on the task's site (:data:`SEMEVAL_DATA_URL`, named by the task's own
    README); a file that is not there is reported with that address.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from es_scm.files import open_text

__all__ = [
    "RELEVANT_LABELS",
    "SEMEVAL_DATA_URL",
    "OriginalQuestion",
    "RelatedQuestion",
    "apply_gold",
    "clean_text",
    "read_gold",
    "read_semeval",
    "read_semeval_xml",
]

#: Where the task's data is published (``README-v3.2.txt`` of the task's distribution).
SEMEVAL_DATA_URL = "http://alt.qcri.org/semeval2016/task3/index.php?id=data-and-tools"

RELEVANT_LABELS = frozenset({"PerfectMatch", "Relevant"})
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


def read_semeval_xml(path: str | os.PathLike[str]) -> list[OriginalQuestion]:
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


def read_gold(path: str | os.PathLike[str]) -> dict[str, list[tuple[str, int, float, bool]]]:
    """Read a ``*.subtaskB.relevancy`` gold file.

    Returns
    -------
    dict
        ``ORGQ_ID -> [(RELQ_ID, rank, score, relevant), …]`` in file order.
    """
    gold: dict[str, list[tuple[str, int, float, bool]]] = {}
    with open_text(path, "a SemEval gold file") as lines:
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
            related.rank = rank
            related.ir_score = score
            related.relevant = relevant
            ordered.append(related)
        if len(ordered) != len(by_id):
            raise ValueError(
                f"the gold file lists {len(ordered)} of {len(by_id)} for {question.id}"
            )
        question.related = ordered
    return questions


PathOrPaths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


def read_semeval(xml_paths: PathOrPaths, gold_paths: PathOrPaths = ()) -> list[OriginalQuestion]:
    """Read one or more XML files, then apply every gold file (matched by question id).

    Each argument is one path or several (a single string is one path, not its characters).
    """
    xml_paths, gold_paths = _paths(xml_paths), _paths(gold_paths)
    for path in [*xml_paths, *gold_paths]:
        if not Path(path).is_file():
            raise FileNotFoundError(
                f"{path} (the SemEval-2016 Task 3 English data, CQA-QL, to download from "
                f"{SEMEVAL_DATA_URL}; the example notebook reads it from "
                "$ES_SCM_SHARED_DATA/semeval2016-task3)"
            )
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


def _paths(value: PathOrPaths) -> list[str | os.PathLike[str]]:
    """One path (a str or path object) as a list of one; several as a list."""
    if isinstance(value, str | os.PathLike):
        return [value]
    return list(value)
