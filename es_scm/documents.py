"""The document record shared by the corpus readers and ingestion.

A :class:`Document` is an id, a text and the caller's other fields (metadata). The corpus readers
(:mod:`es_scm.corpus`) yield them, and ingestion (:mod:`es_scm.elastic.ingest`) takes them, or
plain mappings ``{"id": ..., "text": ..., **metadata}`` that :meth:`Document.from_mapping`
checks once, in this one place.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Document", "as_document"]


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
            raise ValueError(f"a document id must be a non-empty string, got {self.id!r}")
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
            an integer, or its text is not a string.
        """
        where = f"document #{position}" if position is not None else "a document"
        if not isinstance(record, Mapping):
            raise ValueError(f"{where} must be a mapping with 'id' and 'text', got {record!r}")
        doc_id = record.get("id")
        if isinstance(doc_id, numbers.Integral) and not isinstance(doc_id, bool):
            doc_id = str(int(doc_id))
        if not isinstance(doc_id, str) or not doc_id:
            raise ValueError(f"{where} needs an 'id' (a non-empty string), got {doc_id!r}")
        text = record.get("text")
        if not isinstance(text, str):
            raise ValueError(f"document {doc_id!r} needs a 'text' string, got {text!r}")
        metadata = {key: value for key, value in record.items() if key not in ("id", "text")}
        return cls(doc_id, text, metadata)

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "text", **metadata}``."""
        return {"id": self.id, "text": self.text, **self.metadata}


def as_document(item: Document | Mapping[str, Any], position: int | None = None) -> Document:
    """``item`` if it is a :class:`Document`, else :meth:`Document.from_mapping` of it."""
    return item if isinstance(item, Document) else Document.from_mapping(item, position)
