"""Readers for the classic SMART-format test collections (Cranfield, CISI, CACM).

Documents and queries are records that start with ``.I <id>`` and contain fields introduced by
``.T`` (title), ``.A`` (authors), ``.B`` (bibliography), ``.W`` (text), ``.X``, ``.N``, ``.K``,
``.C`` ... on lines of their own. Relevance judgments are whitespace-separated rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from es_scm.files import open_text

_FIELD = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


@dataclass
class TestCollection:
    """Documents, queries and graded relevance judgments (qrels) of one collection."""

    name: str
    documents: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    __test__ = False  # not a pytest test class

    def judged_queries(self) -> dict[str, str]:
        """The queries with at least one relevant document (a positive gain)."""
        return {
            q: text
            for q, text in self.queries.items()
            if any(gain > 0 for gain in self.qrels.get(q, {}).values())
        }


def read_smart_records(path: str | Path) -> Iterator[tuple[str, dict[str, str]]]:
    """Yield ``(id, {field letter: text})`` for each ``.I`` record of a SMART-format file."""
    record_id: str | None = None
    fields: dict[str, list[str]] = {}
    current: str | None = None
    with open_text(path, "a SMART collection file", errors="replace") as lines:
        for raw in lines:
            line = raw.rstrip("\r\n")
            match = _FIELD.match(line)
            if match and match.group(1) == "I":
                if record_id is not None:
                    yield record_id, _join(fields)
                record_id = (match.group(2) or "").strip()
                fields = {}
                current = None
            elif match:
                current = match.group(1)
                fields.setdefault(current, [])
                if match.group(2):
                    fields[current].append(match.group(2))
            elif current is not None:
                fields[current].append(line)
    if record_id is not None:
        yield record_id, _join(fields)


def _join(fields: dict[str, list[str]]) -> dict[str, str]:
    return {key: " ".join(" ".join(lines).split()) for key, lines in fields.items()}


def _texts(path: Path, keys: tuple[str, ...]) -> dict[str, str]:
    return {
        str(int(record_id)): " ".join(fields[k] for k in keys if fields.get(k))
        for record_id, fields in read_smart_records(path)
    }


def read_cranfield(folder: str | Path) -> TestCollection:
    """Cranfield: 1,400 abstracts (``.W``, which repeats the title), 225 queries.

    ``cran.qry`` numbers its queries 001, 002, 004, …, while ``cranqrel`` numbers them 1..225 in
    file order, so queries are renumbered by position. Grades in ``cranqrel`` run from 1 (a
    complete answer) to 4 (minimal interest), with −1 for "no interest"; they are mapped to gains
    5 − grade (4 … 1) and −1 to 0.
    """
    folder = Path(folder)
    documents = _texts(folder / "cran.all.1400", ("W",))
    queries = {
        str(position): fields.get("W", "")
        for position, (_, fields) in enumerate(read_smart_records(folder / "cran.qry"), start=1)
    }
    qrels: dict[str, dict[str, int]] = {}
    for line in _read(folder / "cranqrel").splitlines():
        parts = line.split()
        if len(parts) >= 3:
            grade = int(parts[2])
            gain = 5 - grade if 1 <= grade <= 4 else 0
            qrels.setdefault(parts[0], {})[parts[1]] = gain
    return TestCollection("cranfield", documents, queries, qrels)


def read_cisi(folder: str | Path) -> TestCollection:
    """CISI: 1,460 documents (title + text), 112 queries, binary judgments for 76 of them."""
    folder = Path(folder)
    documents = _texts(folder / "CISI.ALL", ("T", "W"))
    queries = _texts(folder / "CISI.QRY", ("T", "W"))
    return TestCollection("cisi", documents, queries, _binary_qrels(folder / "CISI.REL"))


def read_cacm(folder: str | Path) -> TestCollection:
    """CACM: 3,204 documents (title + abstract where present), 64 queries, 52 judged."""
    folder = Path(folder)
    documents = _texts(folder / "cacm.all", ("T", "W"))
    queries = _texts(folder / "query.text", ("W",))
    return TestCollection("cacm", documents, queries, _binary_qrels(folder / "qrels.text"))


def _binary_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in _read(path).splitlines():
        parts = line.split()
        if len(parts) >= 2:
            qrels.setdefault(str(int(parts[0])), {})[str(int(parts[1]))] = 1
    return qrels


def _read(path: Path) -> str:
    """A judgments file's text (a regular file: never a device or a pipe)."""
    with open_text(path, "a judgments file") as stream:
        return stream.read()


READERS = {"cranfield": read_cranfield, "cisi": read_cisi, "cacm": read_cacm}


def read_collection(name: str, folder: str | Path) -> TestCollection:
    """Read one of ``cranfield``, ``cisi``, ``cacm`` from its folder."""
    if name not in READERS:
        raise ValueError(f"unknown collection {name!r}; choose one of {sorted(READERS)}")
    return READERS[name](folder)


_DOC_START = re.compile(r'^<doc id="([^"]+)"[^>]*title="([^"]*)"')


def read_wikipedia_paragraphs(
    path: str | Path, limit: int | None = None, min_words: int = 5
) -> Iterator[dict[str, str]]:
    """Stream paragraphs of the WikiExtractor ``text.tar.xz`` as ``{id, text, title}`` dicts.

    A paragraph is a non-empty line inside a ``<doc>`` block other than the title line, with at
    least ``min_words`` words; its id is ``<page id>-<paragraph number>``. The archive is read as
    a stream, so only the files needed for ``limit`` paragraphs are decompressed.
    """
    import tarfile

    produced = 0
    with tarfile.open(path, "r|*") as archive:  # a stream: xz, gz or bz2
        for member in archive:
            if not member.isfile():
                continue
            stream = archive.extractfile(member)
            if stream is None:
                continue
            page = ""
            title = ""
            number = 0
            for raw in stream.read().decode("utf-8", errors="replace").splitlines():
                match = _DOC_START.match(raw)
                if match:
                    page = match.group(1)
                    title = match.group(2)
                    number = 0
                    continue
                line = raw.strip()
                if not page or not line or line == title or line.startswith("</doc"):
                    continue
                if len(line.split()) < min_words:
                    continue
                number += 1
                yield {"id": f"{page}-{number}", "text": line, "title": title}
                produced += 1
                if limit is not None and produced >= limit:
                    return
