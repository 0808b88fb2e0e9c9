"""The document record shared by the corpus readers and ingestion.

A :class:`Document` is an id, a text and the caller's other fields (metadata). The corpus readers
(:mod:`es_scm.corpus`) yield them, and ingestion (:mod:`es_scm.index.ingest`) takes them, or
plain mappings ``{"id": ..., "text": ..., **metadata}`` that :meth:`Document.from_mapping`
checks once, in this one place. Ids are checked by :func:`document_id` (for the corpus readers
too), and a record that could not be read is an :class:`InvalidRecord`, kept so that ingestion
reports it.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "MAX_METADATA_DEPTH",
    "Document",
    "InvalidRecord",
    "as_document",
    "document_id",
    "metadata_problem",
    "nesting_problem",
]

#: The most levels of objects and lists that metadata may nest (Elasticsearch's own mapping
#: limit is 20 by default; deeper JSON than Python's parser reads is refused before this).
MAX_METADATA_DEPTH = 100
ID_RULE = "the id must be a non-empty string or an integer"


@dataclass(frozen=True)
class Document:
    """One document: its id, its text and its metadata.

    Parameters
    ----------
    id : str
        A non-empty string (integers are accepted by :meth:`from_mapping` and written in
        decimal); it becomes the Elasticsearch ``_id``, so re-sending a document overwrites it.
    text : str
        The text that is vectorized (and analyzed for BM25).
    metadata : dict
        Any other fields, stored with the document unchanged.
    """

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            kind = type(self.id).__name__
            raise ValueError(f"a document id must be a non-empty string, got {self.id!r} ({kind})")
        if not isinstance(self.text, str):
            raise ValueError(f"document {self.id!r}: text must be a string, got {self.text!r}")

    @classmethod
    def from_mapping(cls, record: Mapping[str, Any], position: int | None = None) -> Document:
        """A document from ``{"id": ..., "text": ..., **metadata}``.

        ``position`` (0-based, in the stream) names a document that has no usable id in the
        error message.

        Raises
        ------
        ValueError
            When the record is not a mapping, its id is missing, empty or neither a string nor
            an integer (:func:`document_id`), or its text is not a string.
        """
        where = f"document #{position}" if position is not None else "a document"
        if not isinstance(record, Mapping):
            raise ValueError(f"{where} must be a mapping with 'id' and 'text', got {record!r}")
        if record.get("id") is None:
            raise ValueError(f"{where} needs an 'id' (a non-empty string or an integer)")
        try:
            doc_id = document_id(record["id"])
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        text = record.get("text")
        if not isinstance(text, str):
            raise ValueError(f"document {doc_id!r} needs a 'text' string, got {text!r}")
        metadata = {key: value for key, value in record.items() if key not in ("id", "text")}
        return cls(doc_id, text, metadata)

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "text", **metadata}``."""
        return {"id": self.id, "text": self.text, **self.metadata}


@dataclass(frozen=True)
class InvalidRecord:
    """A record of the input that is not a document, read on so that the others are not lost.

    The corpus readers yield one for each bad record with ``on_error="skip"``
    (:func:`es_scm.corpus.read_corpus`); ingestion counts it as a failed document named by
    ``where`` (``"corpus.jsonl, line 7"``) with its ``reason``.
    """

    where: str
    reason: str


def document_id(value: Any) -> str:
    """The document id of ``value``: a non-empty string, or an integer written in decimal.

    Raises
    ------
    ValueError
        For anything else (a bool, a float such as ``4.5``, a list, ``""``), naming the value and
        its type.
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    if isinstance(value, str) and value:
        return value
    raise ValueError(f"{ID_RULE}, got {value!r} ({type(value).__name__})")


def metadata_problem(
    metadata: Mapping[str, Any], serializable: Callable[[Any], bool] | None = None
) -> str | None:
    """Why JSON cannot hold ``metadata`` as it is, naming the first field it cannot; or None.

    NaN and ±Infinity are refused: a serializer writes them as ``NaN`` (not JSON) or ``null``
    (the value is lost). Keys must be strings. Objects and lists may nest
    :data:`MAX_METADATA_DEPTH` levels (checked without recursion: a serializer would recurse).
    A value of a type other than str, int, float, bool, None, list, tuple and mapping must pass
    ``serializable`` (the Elasticsearch client's serializer also writes dates, UUIDs, Decimals
    and NumPy values); without it, it passes.
    """
    stack: list[tuple[str, Any, int]] = [("", metadata, 0)]
    while stack:
        path, value, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH and _nests(value):
            return _too_deep(path)
        problem = _value_problem(path, value, serializable)
        if problem is not None:
            return problem
        stack.extend((p, v, depth + 1) for p, v in reversed(_children(path, value)))
    return None


def nesting_problem(metadata: Mapping[str, Any]) -> str | None:
    """Why ``metadata`` nests too deeply (:data:`MAX_METADATA_DEPTH`), naming the field; or None.

    Only objects and lists are looked into, without recursion.
    """
    stack: list[tuple[str, Any, int]] = [("", metadata, 0)]
    while stack:
        path, value, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            return _too_deep(path)
        stack.extend((p, v, depth + 1) for p, v in _children(path, value) if _nests(v))
    return None


def _nests(value: Any) -> bool:
    return isinstance(value, (Mapping, list, tuple))


def _too_deep(path: str) -> str:
    shown = path if len(path) <= 60 else path[:60] + "…"
    return (
        f"metadata field {shown!r} is nested more than {MAX_METADATA_DEPTH} levels deep "
        "(flatten it, or store it as a string)"
    )


_PLAIN = (str, bool, type(None))
_JSON_INTEGERS = range(-(2**63), 2**64)  # what every JSON serializer of the client writes


def _children(path: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, Mapping):
        return [(f"{path}.{key}" if path else key, item) for key, item in value.items()]
    if isinstance(value, (list, tuple)):
        return [(f"{path}[{n}]", item) for n, item in enumerate(value)]
    return []


def _value_problem(path: str, value: Any, serializable: Callable[[Any], bool] | None) -> str | None:
    field = f"metadata field {path!r}" if path else "metadata"
    if isinstance(value, (_PLAIN, list, tuple)):
        return None
    if isinstance(value, Mapping):
        keys = [key for key in value if not isinstance(key, str)]
        if keys:
            return f"{field} has a key {keys[0]!r} ({type(keys[0]).__name__}); keys must be strings"
        return None
    # numpy's values exist only once numpy is imported: it is not imported to check for them
    np_ = sys.modules.get("numpy")
    floats = (float, Decimal, np_.floating) if np_ is not None else (float, Decimal)
    if isinstance(value, floats) and not _finite(value):
        name = "NaN" if _isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return f"{field} is {name}, which JSON cannot hold (use null or a string)"
    if (
        np_ is not None
        and isinstance(value, np_.ndarray)
        and value.dtype.kind in "fc"
        and not np_.isfinite(value).all()
    ):
        return f"{field} holds NaN or Infinity, which JSON cannot hold (use null or a string)"
    if isinstance(value, int) and value in _JSON_INTEGERS:
        return None
    if isinstance(value, floats) or serializable is None:
        return None
    if serializable(value):
        return None
    return (
        f"{field} holds a value of type {type(value).__name__}, which is not JSON (use a "
        "string, number, boolean, null, list or object)"
    )


def _finite(value: float | np.floating | Decimal) -> bool:
    return value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)


def _isnan(value: float | np.floating | Decimal) -> bool:
    return value.is_nan() if isinstance(value, Decimal) else math.isnan(value)


def as_document(item: Document | Mapping[str, Any], position: int | None = None) -> Document:
    """``item`` if it is a :class:`Document`, else :meth:`Document.from_mapping` of it."""
    return item if isinstance(item, Document) else Document.from_mapping(item, position)
