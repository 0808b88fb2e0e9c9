"""Read a corpus as a lazy stream of :class:`~es_scm.documents.Document` records.

Formats (auto-detected from the path; force one with ``format=``):

``jsonl``
    One JSON object per line (``.jsonl``, ``.ndjson``): the ``id`` and ``text`` fields (names
    configurable) become the document's id and text; every other field is kept as metadata.
    Blank lines are skipped. With the default id field, a record without ``id`` takes its id from
    ``_id``, so BEIR corpora (``_id``, ``title``, ``text``) read as they are.
``csv`` / ``tsv``
    A header row naming the columns (``.csv``, ``.tsv``, ``.tab``); the ``id`` and ``text``
    columns (names configurable) become the id and text, the other columns metadata. With the
    default id column, a header without ``id`` but with ``_id`` takes the ids from ``_id``.
``dir``
    A directory of ``.txt`` files, read recursively in sorted order; a file is one document whose
    id is its path relative to the directory without the ``.txt`` suffix (``news/0001``).
    Symbolic links (to files or folders) are not followed: they are skipped, with one warning
    that counts them and names the first five, so that a link cannot bring a file from outside
    the folder (``passwd.txt -> /etc/passwd``) into an index. A named pipe or device among the
    files is a bad record.
``lines``
    A plain text file (any other suffix, e.g. ``.txt``) with one document per line; the id is the
    line number (1-based). Blank lines are skipped.

Titles (``jsonl``, ``csv``, ``tsv``): a record with a non-empty string under the title field
(``title`` by default; ``title_field=None`` turns this off) is searched by its title and its text:
the document's text is the title, a newline and the text. The title also stays in the metadata.

A ``.gz`` suffix is decompressed on the fly (``corpus.jsonl.gz``). Everything streams: memory
stays bounded by one document (one CSV record), whatever the corpus size.

Bad input raises :class:`CorpusError` with a one-line message naming the file and line, e.g.
``corpus.jsonl, line 7: invalid JSON (Expecting value: column 1)``. With ``on_error="skip"``, a
bad record (a line, a CSV row, a file of a directory) is yielded as an
:class:`~es_scm.documents.InvalidRecord` instead (``where``: ``"corpus.jsonl, line 7"``, and the
reason) and reading goes on; ingestion reports each as a failed document. What makes the whole
corpus unreadable (no such file, a CSV header without the id column) raises in both modes; so
does a path that is not a regular file (``/dev/zero is a character device, not a regular
file``): a device or a named pipe is never read (it could be endless, or block). A JSONL line
whose metadata nests more than :data:`~es_scm.documents.MAX_METADATA_DEPTH` levels is a bad
record, however deep (a line too deep for Python's JSON parser included).

Examples
--------
>>> for document in read_corpus("news.jsonl"):  # doctest: +SKIP
...     print(document.id, document.text, document.metadata)
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import logging
import os
import stat
import sys
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

from es_scm.documents import (
    MAX_METADATA_DEPTH,
    Document,
    InvalidRecord,
    document_id,
    nesting_problem,
)
from es_scm.files import UnsafeFileError, file_kind, open_regular

__all__ = [
    "FORMATS",
    "ON_ERROR",
    "CorpusError",
    "count_documents",
    "detect_format",
    "read_corpus",
    "read_texts",
]

FORMATS = ("jsonl", "csv", "tsv", "dir", "lines")
ON_ERROR = ("stop", "skip")  # a bad record raises CorpusError / is yielded as an InvalidRecord
_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
}


_BEIR_ID = "_id"
_SHOWN_LINKS = 5  # the links a warning names
logger = logging.getLogger(__name__)


class CorpusError(ValueError):
    """The corpus cannot be read; the message names the file (and line) and says why."""


def _inner_suffix(path: Path) -> str:
    suffixes = [suffix.lower() for suffix in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def detect_format(path: str | os.PathLike[str]) -> str:
    """Return the format of ``path`` from its suffix: one of :data:`FORMATS`.

    Raises
    ------
    CorpusError
        If the path does not exist.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise CorpusError(f"{path}: no such file or directory") from None
    except OSError as error:
        raise CorpusError(f"{path}: cannot read ({error.strerror or error})") from None
    if stat.S_ISDIR(mode):
        return "dir"
    _check_regular(path, mode)
    return _SUFFIXES.get(_inner_suffix(path), "lines")


def _check_regular(path: Path, mode: int) -> None:
    """Refuse, in one line, a corpus path that is a device, a named pipe, a socket or a folder."""
    if not stat.S_ISREG(mode):
        raise CorpusError(
            f"{path} is {file_kind(mode)}, not a regular file: a corpus is a file (JSONL, CSV, "
            "TSV or lines) or a folder of .txt files"
        )


def read_corpus(
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    id_field: str = "id",
    text_field: str = "text",
    title_field: str | None = "title",
    encoding: str = "utf-8",
    on_error: str = "stop",
) -> Iterator[Document]:
    """Stream the documents of a corpus as :class:`~es_scm.documents.Document` records.

    Parameters
    ----------
    path : path
        A file, or a directory of ``.txt`` files.
    format : {"jsonl", "csv", "tsv", "dir", "lines"}, optional
        Default: detected with :func:`detect_format`.
    id_field, text_field : str
        The JSONL fields / CSV columns holding the id and the text. The other fields are the
        document's metadata; one named ``id`` or ``text`` (when those are not the id and text
        fields) is renamed ``original_id`` / ``original_text``. With the default ``id_field``, a
        JSONL record without ``id`` (a CSV header without an ``id`` column) takes ``_id``, as
        BEIR corpora have it.
    title_field : str or None, default="title"
        The JSONL field / CSV column of a title: when a record has a non-empty string there, the
        document's text is the title and the text joined by a newline (so that both are
        searched), and the title stays in the metadata too. None or ``""``: no title.
    encoding : str
        The files' encoding (a UTF-8 byte-order mark is skipped).
    on_error : {"stop", "skip"}
        ``"stop"``: a bad record raises :class:`CorpusError`. ``"skip"``: it is yielded as an
        :class:`~es_scm.documents.InvalidRecord` (where it is, and why it is bad) and the reading
        goes on, so that ingestion indexes the good records and reports the bad ones.

    Yields
    ------
    Document
        ``id`` (str), ``text`` (str) and ``metadata`` (the other fields); with
        ``on_error="skip"``, an :class:`~es_scm.documents.InvalidRecord` for each bad record.

    Raises
    ------
    CorpusError
        For a missing file, an unknown format or bad input (with the file and line).
    """
    path = Path(path)
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise CorpusError(f"unknown encoding {encoding!r} (e.g. utf-8, latin-1, cp1252)") from None
    if on_error not in ON_ERROR:
        raise CorpusError(f"unknown on_error {on_error!r}; choose from {', '.join(ON_ERROR)}")
    format = detect_format(path) if format is None else format
    if format not in FORMATS:
        raise CorpusError(f"unknown corpus format {format!r}; choose from {', '.join(FORMATS)}")
    return _apply(_records(path, format, id_field, text_field, title_field, encoding), on_error)


def _records(
    path: Path,
    format: str,
    id_field: str,
    text_field: str,
    title_field: str | None,
    encoding: str,
) -> Iterator[Document | InvalidRecord]:
    """The reader of ``format``: documents, and an InvalidRecord for each bad record."""
    if format == "dir":
        if not path.is_dir():
            raise CorpusError(f"{path}: not a directory (format 'dir')")
        return _read_directory(path, encoding)
    try:
        _check_regular(path, os.stat(path).st_mode)
    except FileNotFoundError:
        raise CorpusError(f"{path}: no such file") from None
    fields = _Fields(id_field, text_field, title_field or None)
    if format == "jsonl":
        return _read_jsonl(path, fields, encoding)
    if format in ("csv", "tsv"):
        delimiter = "," if format == "csv" else "\t"
        return _read_delimited(path, delimiter, fields, encoding)
    return _read_lines(path, encoding)


def _apply(records: Iterator[Document | InvalidRecord], on_error: str) -> Iterator[Any]:
    """``on_error`` on the records: raise at the first bad one ("stop"), or pass it on."""
    for record in records:
        if isinstance(record, InvalidRecord) and on_error == "stop":
            raise CorpusError(f"{record.where}: {record.reason}")
        yield record


def read_texts(
    path: str | os.PathLike[str], format: str | None = None, **kwargs: Any
) -> Iterator[str]:
    """Stream only the texts of :func:`read_corpus` (same arguments; with ``on_error="skip"``
    the bad records are left out)."""
    documents = read_corpus(path, format, **kwargs)
    return (document.text for document in documents if isinstance(document, Document))


def count_documents(path: str | os.PathLike[str], format: str | None = None) -> int | None:
    """Count the documents cheaply (for a progress bar), or None when that needs parsing (CSV).

    Counts non-blank lines for ``jsonl`` and ``lines``, and ``.txt`` files for ``dir``; the
    count is an upper bound if the corpus has bad lines, which :func:`read_corpus` rejects.
    """
    path = Path(path)
    try:
        format = detect_format(path) if format is None else format
        if format == "dir":
            return sum(1 for _ in _walk_txt(path))
        if format in ("jsonl", "lines"):
            with _open_binary(path) as stream:
                return sum(1 for line in stream if line.strip())
    except (OSError, CorpusError, EOFError):
        return None
    return None


# -- readers ------------------------------------------------------------------------------------


def _open_binary(path: Path) -> IO[bytes]:
    """The corpus file opened if it is a regular file (a link to one is followed: the user named
    it), never blocking on a named pipe."""
    try:
        stream = open_regular(path, "a corpus", follow_symlinks=True)
    except UnsafeFileError as error:
        raise CorpusError(str(error)) from None
    if path.suffix.lower() == ".gz":
        unzipped = gzip.GzipFile(fileobj=stream, mode="rb")
        unzipped.myfileobj = stream  # type: ignore[assignment]  # closed with it, as its own
        return unzipped  # type: ignore[return-value]
    return stream


def _open_text(path: Path, encoding: str) -> IO[str]:
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        encoding = "utf-8-sig"
    return io.TextIOWrapper(_open_binary(path), encoding=encoding, newline="")


class _BadRecord(Exception):
    """A record that is not a document: the reader yields an InvalidRecord and reads on."""


def _decode(raw: bytes, number: int, encoding: str) -> str:
    if number == 1 and encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        encoding = "utf-8-sig"
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as error:
        raise _BadRecord(f"not valid {encoding} ({error.reason})") from None


def _binary_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        with _open_binary(path) as stream:
            yield from enumerate(stream, start=1)
    except (OSError, EOFError) as error:  # e.g. a truncated or fake .gz
        raise CorpusError(f"{path}: cannot read ({error})") from None


class _Fields(NamedTuple):
    """The names of the id, text and title fields (title None: no title)."""

    id: str
    text: str
    title: str | None

    def id_of(self, names: Collection[str]) -> str:
        """The id field of a record (a header) with these names: ``_id`` stands in for ``id``."""
        if self.id == "id" and "id" not in names and _BEIR_ID in names:
            return _BEIR_ID
        return self.id


def _with_metadata(
    doc_id: str, text: str, fields: dict[str, Any], skip: tuple[str, str], title: str | None
) -> Document:
    metadata = {
        f"original_{key}" if key in ("id", "text") else key: value
        for key, value in fields.items()
        if key not in skip
    }
    if title is not None and title not in skip:
        heading = fields.get(title)
        if isinstance(heading, str) and heading.strip():
            text = f"{heading}\n{text}" if text else heading
    return Document(doc_id, text, metadata)


def _read_jsonl(path: Path, names: _Fields, encoding: str) -> Iterator[Document | InvalidRecord]:
    for number, raw in _binary_lines(path):
        try:
            line = _decode(raw, number, encoding)
            if line.strip():
                yield _jsonl_document(line, names)
        except _BadRecord as bad:
            yield InvalidRecord(f"{path}, line {number}", str(bad))


def _jsonl_document(line: str, names: _Fields) -> Document:
    text_field = names.text
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise _BadRecord(f"invalid JSON ({error.msg}: column {error.colno})") from None
    except RecursionError:  # deeper than Python's parser goes (about 1,000 levels)
        raise _BadRecord(
            f"JSON nested more than {MAX_METADATA_DEPTH} levels deep, more than metadata may be"
        ) from None
    if not isinstance(record, dict):
        raise _BadRecord(f"expected a JSON object, got {type(record).__name__}")
    if text_field not in record:
        raise _BadRecord(f"missing text field {text_field!r} (use --text-field)")
    text = record[text_field]
    if not isinstance(text, str):
        raise _BadRecord(f"text field {text_field!r} must be a string, got {type(text).__name__}")
    id_field = names.id_of(record)
    if record.get(id_field) is None:
        raise _BadRecord(f"missing id field {id_field!r} (use --id-field)")
    try:
        doc_id = document_id(record[id_field])
    except ValueError as error:
        raise _BadRecord(f"id field {id_field!r}: {error}") from None
    document = _with_metadata(doc_id, text, record, (id_field, text_field), names.title)
    problem = nesting_problem(document.metadata)
    if problem is not None:
        raise _BadRecord(problem)
    return document


def _raise_csv_field_limit() -> None:
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:
            limit //= 2


def _read_delimited(
    path: Path, delimiter: str, names: _Fields, encoding: str
) -> Iterator[Document | InvalidRecord]:
    _raise_csv_field_limit()
    kind = "TSV" if delimiter == "\t" else "CSV"
    try:
        with _open_text(path, encoding) as stream:
            # strict: a stray quote is an error with its line, never two records merged
            reader = csv.reader(stream, delimiter=delimiter, strict=True)
            header = next(reader, None)
            if header is None:
                raise CorpusError(f"{path}: empty file, expected a header row")
            columns = [name.strip() for name in header]
            id_field = names.id_of(columns)
            text_field = names.text
            for field, option in ((id_field, "--id-field"), (text_field, "--text-field")):
                if field not in columns:
                    raise CorpusError(
                        f"{path}, line 1: no column {field!r} in the header "
                        f"({', '.join(columns)}); use {option}"
                    )
            id_at, text_at = columns.index(id_field), columns.index(text_field)
            for start, row in _csv_rows(reader):
                where = f"{path}, line {start}"
                if isinstance(row, csv.Error):
                    yield InvalidRecord(where, _csv_reason(kind, row))
                elif not row or (len(row) == 1 and not row[0].strip()):
                    continue
                elif len(row) != len(columns):
                    yield InvalidRecord(where, f"expected {len(columns)} fields, got {len(row)}")
                elif not row[id_at]:
                    yield InvalidRecord(where, f"empty id column {id_field!r}")
                else:
                    fields = dict(zip(columns, row, strict=True))
                    skip = (id_field, text_field)
                    yield _with_metadata(row[id_at], row[text_at], fields, skip, names.title)
    except UnicodeDecodeError as error:
        raise CorpusError(f"{path}: not valid {encoding} ({error.reason})") from None
    except csv.Error as error:  # in the header
        raise CorpusError(f"{path}, line 1: {_csv_reason(kind, error)}") from None
    except (OSError, EOFError) as error:
        raise CorpusError(f"{path}: cannot read ({error})") from None


def _csv_rows(reader: Any) -> Iterator[tuple[int, list[str] | csv.Error]]:
    """(first line, row) of each record; a record the csv module cannot parse comes as its error
    (the reader goes on at the next line)."""
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield start, error
            continue
        yield start, row


def _csv_reason(kind: str, error: csv.Error) -> str:
    return (
        f"bad {kind} ({error}); a quote that opens a field on this line is not closed where the "
        "field ends"
    )


def _walk_txt(root: Path, links: list[str] | None = None) -> Iterator[Path]:
    """The ``.txt`` files under ``root`` in sorted order; symbolic links are not followed, and
    their paths (relative to ``root``) are added to ``links``: to files named ``.txt`` and to
    folders (whatever they hold, it is outside the corpus folder, or read already)."""
    for folder, directories, files in os.walk(root):
        directories.sort()
        for name in [d for d in directories if os.path.islink(os.path.join(folder, d))]:
            _note_link(root, Path(folder) / name, links)
        for name in sorted(files):
            if not name.lower().endswith(".txt"):
                continue
            file = Path(folder) / name
            if os.path.islink(file):
                _note_link(root, file, links)
            else:
                yield file


def _note_link(root: Path, path: Path, links: list[str] | None) -> None:
    if links is not None:
        links.append(path.relative_to(root).as_posix())


def _read_directory(root: Path, encoding: str) -> Iterator[Document | InvalidRecord]:
    links: list[str] = []
    for file in _walk_txt(root, links):
        relative = file.relative_to(root).with_suffix("").as_posix()
        try:
            with open_regular(file, "a corpus file") as stream:  # no link: refused by the open
                text = stream.read().decode(encoding)
        except UnsafeFileError as error:
            yield InvalidRecord(str(file), str(error).removeprefix(f"{file} is "))
        except UnicodeDecodeError as error:
            yield InvalidRecord(str(file), f"not valid {encoding} ({error.reason})")
        except OSError as error:
            yield InvalidRecord(str(file), f"cannot read ({error.strerror or error})")
        else:
            yield Document(relative, text.removeprefix("\ufeff"))
    if links:
        shown = ", ".join(links[:_SHOWN_LINKS]) + (", …" if len(links) > _SHOWN_LINKS else "")
        logger.warning(
            "%s: skipped %d symbolic link%s (not followed): %s",
            root,
            len(links),
            "" if len(links) == 1 else "s",
            shown,
        )


def _read_lines(path: Path, encoding: str) -> Iterator[Document | InvalidRecord]:
    for number, raw in _binary_lines(path):
        try:
            line = _decode(raw, number, encoding).rstrip("\r\n")
        except _BadRecord as bad:
            yield InvalidRecord(f"{path}, line {number}", str(bad))
            continue
        if line.strip():
            yield Document(str(number), line)
