"""Any test collection: documents in a corpus format, topics, and qrels in TREC or BEIR format.

Topics (:func:`read_topics`)
    * JSONL (a ``.jsonl`` or ``.json`` file, or a first line that is an object): one object a
      line with an id (``id``, ``_id``, ``qid``, ``query_id`` or ``num``) and a text (``text``,
      ``query``, ``title``); BEIR's ``queries.jsonl`` (``_id``, ``text``, ``metadata``) reads
      as it is;
    * TSV (or any text file): ``id<TAB>text`` a line;
    * a TREC topic file (``<top>`` … ``<num> Number: 301`` … ``<title> …``): the title, or with
      ``fields=("title", "desc")`` more of the topic.
Qrels (:func:`read_qrels`)
    TREC's ``qid iteration docid relevance`` a line, or ``qid docid relevance`` (BEIR's TSV),
    separated by tabs or spaces; a first line whose relevance is not a number is a header and is
    skipped (BEIR's ``query-id<TAB>corpus-id<TAB>score``). CRLF line ends are fine.
Documents
    Whatever ``es-scm index`` reads (:func:`es_scm.corpus.read_corpus`), BEIR's ``corpus.jsonl``
    included (``_id``, ``title``, ``text``: the title is searched with the text).

Bad input raises :class:`ValueError` with one line that names the file and the line, e.g.
``qrels.tsv:7: relevance 'x' is not a number``; so does a topic id given twice in one file
(``q.tsv:2: the topic id 'a' is repeated (first on line 1) …``: a run and qrels match topics by
id) and a file that is not UTF-8.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

from es_scm.corpus import read_corpus
from es_scm.documents import MAX_METADATA_DEPTH
from es_scm.evaluation.collections import TestCollection
from es_scm.files import decode_utf8, open_regular

__all__ = [
    "GENERIC_NAMES",
    "collection_name",
    "parse_topics",
    "read_qrels",
    "read_test_collection",
    "read_topics",
]

_ID_KEYS = ("id", "_id", "qid", "query_id", "num")
_TEXT_KEYS = ("text", "query", "title")
_TOP = re.compile(r"<top>", re.IGNORECASE)
_TREC_FIELD = re.compile(r"<(num|title|desc|narr)>", re.IGNORECASE)
_LABEL = re.compile(r"^(description|narrative|topic):\s*", re.IGNORECASE)


def read_topics(path: str | Path, fields: Sequence[str] = ("title",)) -> dict[str, str]:
    """Topic id → query text, from JSONL, TSV or a TREC topic file (see the module docstring)."""
    path = Path(path)
    return parse_topics(_read_text(path), path, fields)


def parse_topics(
    text: str, source: str | Path, fields: Sequence[str] = ("title",)
) -> dict[str, str]:
    """:func:`read_topics` of the text of a topics file (standard input, say); ``source`` names
    it in errors. JSONL is told by the name's suffix or by a first line that is an object."""
    if "<top>" in text.lower():
        return _trec_topics(text, source, fields)
    if Path(source).suffix.lower() in (".jsonl", ".json") or text.lstrip().startswith("{"):
        return _jsonl_topics(text, source)
    topics = _Topics(source)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, tab, query = line.partition("\t")
        if not tab:
            raise ValueError(f"{source}:{number}: expected 'id<TAB>text', got {line[:60]!r}")
        topics.add(qid.strip(), query.strip(), number)
    return topics.texts


class _Topics:
    """The topics of one file as they are read: a repeated id is an error naming both lines.

    A TREC run and qrels match topics by id, so two topics under one id cannot both be answered
    and judged: keeping the last silently dropped a query, and renaming one would give an id the
    qrels do not know. (Issue 34, item 2.)
    """

    def __init__(self, source: str | Path) -> None:
        self.source = source
        self.texts: dict[str, str] = {}
        self.lines: dict[str, int] = {}

    def add(self, qid: str, text: str, line: int) -> None:
        first = self.lines.setdefault(qid, line)
        if first != line:
            raise ValueError(
                f"{self.source}:{line}: the topic id {qid!r} is repeated (first on line {first}): "
                "runs and qrels match topics by id, so each topic needs an id of its own"
            )
        self.texts[qid] = text


def _jsonl_topics(text: str, path: str | Path) -> dict[str, str]:
    topics = _Topics(path)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: invalid JSON ({error.msg})") from None
        except RecursionError:  # deeper than Python's parser goes
            raise ValueError(
                f"{path}:{number}: JSON nested more than {MAX_METADATA_DEPTH} levels deep"
            ) from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object, got {line[:60]!r}")
        qid = next((record[k] for k in _ID_KEYS if k in record), None)
        query = next((record[k] for k in _TEXT_KEYS if k in record), None)
        if qid is None or query is None:
            raise ValueError(f"{path}:{number}: a topic needs one of {_ID_KEYS} and {_TEXT_KEYS}")
        if isinstance(qid, (dict, list)) or isinstance(query, (dict, list)):
            raise ValueError(f"{path}:{number}: a topic's id and text must be strings or numbers")
        topics.add(str(qid), str(query), number)
    return topics.texts


def _trec_topics(text: str, source: str | Path, fields: Sequence[str]) -> dict[str, str]:
    topics = _Topics(source)
    starts = [match.end() for match in _TOP.finditer(text)]
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        block = re.split(r"</top>", text[start:end], flags=re.IGNORECASE)[0]
        parts = _TREC_FIELD.split(block)
        values = {parts[i].lower(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
        qid = re.sub(r"^number:\s*", "", values.get("num", ""), flags=re.IGNORECASE).strip()
        chosen = [_LABEL.sub("", values.get(f, "")) for f in fields]
        topics.add(qid, " ".join(" ".join(chosen).split()), text.count("\n", 0, start) + 1)
    return topics.texts


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Topic id → document id → relevance grade, from TREC qrels or BEIR's qrels TSV.

    Parameters
    ----------
    path : path
        ``qid iteration docid relevance`` (TREC) or ``qid docid relevance`` (BEIR) a line; a
        first line whose relevance column is not a number (BEIR's ``query-id corpus-id score``)
        is a header and is skipped.

    Raises
    ------
    ValueError
        For a line with another number of columns or a relevance that is not a whole number,
        naming the file and the line (``qrels.tsv:7: …``).
    """
    qrels: dict[str, dict[str, int]] = {}
    first = True
    for number, line in enumerate(_read_text(Path(path)).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        header = first and not _is_number(parts[-1])
        first = False
        if header:
            continue
        if len(parts) not in (3, 4):
            raise ValueError(
                f"{path}:{number}: expected 'qid iter docid rel' (TREC) or 'qid docid rel' "
                f"(BEIR), got {len(parts)} columns: {line[:80]!r}"
            )
        qid, doc, grade = parts[0], parts[-2], parts[-1]
        if not _is_number(grade) or not float(grade).is_integer():
            raise ValueError(f"{path}:{number}: relevance {grade!r} is not a whole number")
        qrels.setdefault(qid, {})[doc] = int(float(grade))
    return qrels


def _read_text(path: Path) -> str:
    """The text of a topics or qrels file: a regular file (a link to one is followed), never a
    device or a named pipe, which could be endless or block."""
    with open_regular(path, "a topics or qrels file", follow_symlinks=True) as stream:
        return decode_utf8(stream.read(), path)


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


#: File names that say what a file holds, not which collection: BEIR's corpus.jsonl and
#: queries.jsonl, and the like. A collection read from one is named after its folder.
GENERIC_NAMES = frozenset({"corpus", "docs", "documents", "collection", "queries", "topics"})


def collection_name(path: str | Path) -> str:
    """The name of the collection a file belongs to: the file's name without its suffixes, or its
    folder's when that name is generic (:data:`GENERIC_NAMES`: ``beir-scifact/corpus.jsonl`` is
    ``beir-scifact``)."""
    path = Path(path)
    stem = path.name.split(".")[0]
    if stem.lower() in GENERIC_NAMES or not stem:
        folder = path.resolve().parent.name
        return folder or stem
    return stem


def read_test_collection(
    corpus: str | Path | None,
    topics: str | Path,
    qrels: str | Path,
    *,
    name: str | None = None,
    corpus_format: str | None = None,
    id_field: str = "id",
    text_field: str = "text",
    title_field: str | None = "title",
    encoding: str = "utf-8",
    topic_fields: Sequence[str] = ("title",),
) -> TestCollection:
    """A :class:`TestCollection` from a corpus, a topics file and a qrels file.

    ``corpus`` None gives a collection without documents, for an index that holds them already.
    The collection's name is ``name``, else :func:`collection_name` of the corpus (or, without
    one, of the topics file). The corpus options are :func:`~es_scm.corpus.read_corpus`'s.
    """
    documents: dict[str, str] = {}
    if corpus is not None:
        read = read_corpus(
            corpus,
            corpus_format,
            id_field=id_field,
            text_field=text_field,
            title_field=title_field,
            encoding=encoding,
        )
        documents = {document.id: document.text for document in read}
    name = name or collection_name(corpus if corpus is not None else topics)
    return TestCollection(name, documents, read_topics(topics, topic_fields), read_qrels(qrels))
