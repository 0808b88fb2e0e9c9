"""Any test collection: documents in a corpus format, topics, and qrels in TREC format.

Topics (:func:`read_topics`)
    * JSONL: one object a line with an id (``id``, ``qid``, ``query_id`` or ``num``) and a text
      (``text``, ``query``, ``title``);
    * TSV (or any text file): ``id<TAB>text`` a line;
    * a TREC topic file (``<top>`` … ``<num> Number: 301`` … ``<title> …``): the title, or with
      ``fields=("title", "desc")`` more of the topic.
Qrels (:func:`read_qrels`)
    TREC's ``qid iteration docid relevance`` a line (a ``qid docid relevance`` line is read too).
Documents
    Whatever ``es-scm index`` reads (:func:`es_scm.corpus.read_corpus`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from es_scm.corpus import read_corpus
from es_scm.evaluation.collections import TestCollection

__all__ = ["read_qrels", "read_test_collection", "read_topics"]

_ID_KEYS = ("id", "qid", "query_id", "num")
_TEXT_KEYS = ("text", "query", "title")
_TREC_FIELD = re.compile(r"<(num|title|desc|narr)>", re.IGNORECASE)
_LABEL = re.compile(r"^(description|narrative|topic):\s*", re.IGNORECASE)


def read_topics(path: str | Path, fields: Sequence[str] = ("title",)) -> dict[str, str]:
    """Topic id → query text, from JSONL, TSV or a TREC topic file (see the module docstring)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8-sig")
    if "<top>" in text.lower():
        return _trec_topics(text, fields)
    if path.suffix.lower() in (".jsonl", ".json"):
        return _jsonl_topics(text, path)
    topics = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, tab, query = line.partition("\t")
        if not tab:
            raise ValueError(f"{path}:{number}: expected 'id<TAB>text', got {line[:60]!r}")
        topics[qid.strip()] = query.strip()
    return topics


def _jsonl_topics(text: str, path: Path) -> dict[str, str]:
    topics = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = json.loads(line)
        qid = next((record[k] for k in _ID_KEYS if k in record), None)
        query = next((record[k] for k in _TEXT_KEYS if k in record), None)
        if qid is None or query is None:
            raise ValueError(f"{path}:{number}: a topic needs one of {_ID_KEYS} and {_TEXT_KEYS}")
        topics[str(qid)] = str(query)
    return topics


def _trec_topics(text: str, fields: Sequence[str]) -> dict[str, str]:
    topics = {}
    for block in re.split(r"<top>", text, flags=re.IGNORECASE)[1:]:
        block = re.split(r"</top>", block, flags=re.IGNORECASE)[0]
        parts = _TREC_FIELD.split(block)
        values = {parts[i].lower(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
        qid = re.sub(r"^number:\s*", "", values.get("num", ""), flags=re.IGNORECASE).strip()
        chosen = [_LABEL.sub("", values.get(f, "")) for f in fields]
        topics[qid] = " ".join(" ".join(chosen).split())
    return topics


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Topic id → document id → relevance grade, from a TREC qrels file."""
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) not in (3, 4):
            raise ValueError(f"{path}:{number}: expected 'qid iter docid rel', got {line!r}")
        qid, doc, grade = parts[0], parts[-2], parts[-1]
        qrels.setdefault(qid, {})[doc] = int(float(grade))
    return qrels


def read_test_collection(
    corpus: str | Path,
    topics: str | Path,
    qrels: str | Path,
    *,
    name: str | None = None,
    corpus_format: str | None = None,
    id_field: str = "id",
    text_field: str = "text",
    topic_fields: Sequence[str] = ("title",),
) -> TestCollection:
    """A :class:`TestCollection` from a corpus, a topics file and a qrels file."""
    documents = {
        document.id: document.text
        for document in read_corpus(corpus, corpus_format, id_field=id_field, text_field=text_field)
    }
    name = name or Path(corpus).stem.split(".")[0]
    return TestCollection(name, documents, read_topics(topics, topic_fields), read_qrels(qrels))
