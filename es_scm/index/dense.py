r"""Dense vectors beside the SCM: the ``dense_vector`` fields, the kNN requests, the encoder's
identity. Pure code, no I/O.

Hybrid search's dense leg (:class:`~es_scm.search.hybrid.legs.DenseLeg`) is an Elasticsearch kNN
search on a ``dense_vector`` field, in one of two kinds of index:

es-scm's own vectors (:data:`DENSE_FIELD`, ``scm.dense``)
    An index created with ``dense=`` (:class:`~es_scm.options.DenseOptions`) has a
    ``dense_vector`` field of the encoder's dimension, cosine similarity, kept out of
    ``_source`` (nothing es-scm reads back needs it, and 384 floats would triple a hit's
    size); its ``_meta.es_scm.dense`` records the encoder (:func:`dense_meta`): its name and
    its identity, the SHA-256 fingerprint of its files (:attr:`~es_scm.encoder.SentenceEncoder.
    identity`). Ingestion encodes every document's text, and a search with ``dense=True``
    its query, with that encoder: the one given to the searcher, else one loaded from the name
    in ``_meta``; either way its fingerprint must be the recorded one
    (:func:`check_encoder`), since vectors of other weights are in another space: their
    cosines would be silently meaningless.
the user's own field and vectors (:class:`DenseQuery`)
    A ``dense_vector`` field mapped in ``metadata_mapping`` (e.g. ``{"embedding": {"type":
    "dense_vector", "dims": 384, "similarity": "cosine"}}``, searched as
    ``metadata.embedding``), filled by the caller's documents, and a query vector given at
    search time.

Scores. A kNN hit's score is Elasticsearch's: for cosine similarity (1 + cos) / 2, in [0, 1]
(:func:`knn_score`); for ``dot_product``, ``l2_norm`` and ``max_inner_product`` their own
positive transforms. A document without a vector is no kNN hit: its score is 0, below every
hit's, as BM25's is for a document without a matching term.

The scores of given documents (the candidates that the dense leg's own top list does not hold)
are asked by the same kNN query restricted to their ids (:meth:`DenseQuery.knn_of_ids`), not
by a ``script_score`` cosine: the restricted kNN runs the same Lucene code path on the same
stored vectors (float32, or quantized where the index quantizes) as the top list, so a document
gets the same score whichever list it came from — measured bit for bit on a ``flat`` field and
on the cluster's default ``bbq_hnsw`` one (9.5; the filter holds fewer documents than ``k``,
so Lucene scores each of them exactly) — while a script computes its own float arithmetic
from the raw vectors (and needs the ``painless`` module, which minimal distributions leave
out).

Exactness. On a ``flat`` field kNN compares the query with every (filtered) vector, so the top
list is the exact top ``depth`` by the leg's scores and every document outside it scores at most
the list's lowest: hybrid search's bound holds and its top k can be proven. On an HNSW field
(the cluster's default) the list is approximate: the result's ``exact_guarantee`` is False and a
note says why (:class:`DenseField`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from es_scm.index.schema import DENSE_FIELD, ModelMismatchError
from es_scm.options import DenseOptions
from es_scm.options.validation import Interval, OrNone, Text, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.encoder import SentenceEncoder

__all__ = [
    "DENSE_FIELD",
    "ENCODE_BATCH",
    "MAX_KNN",
    "DenseField",
    "DenseQuery",
    "EncoderMismatchError",
    "check_encoder",
    "common_fields",
    "dense_fields",
    "dense_meta",
    "encode_texts",
    "field_for",
    "knn_score",
    "loaded",
]

#: Elasticsearch's largest kNN ``k`` and ``num_candidates``.
MAX_KNN = 10_000
#: Texts per forward pass when ingestion encodes documents (and a batch search its queries).
ENCODE_BATCH = 64
_FIELD = Text(r"[^\s,*]+", "a field name (e.g. metadata.embedding)")
_CANDIDATES = OrNone(Interval(int, 1, MAX_KNN))


class EncoderMismatchError(ModelMismatchError):
    """The encoder is not the one the index's dense vectors were computed with."""


def knn_score(cosines: Any) -> Any:
    """Elasticsearch's kNN score of a cosine similarity: (1 + cos) / 2."""
    return (1.0 + np.asarray(cosines, dtype=np.float64)) / 2.0


@dataclass(frozen=True)
class DenseQuery:
    """The dense leg of one search: a ``dense_vector`` ``field`` and the query's ``vector``
    (``num_candidates``: kNN's candidates per shard, None for Elasticsearch's default of
    1.5 × k; it matters only for an approximate index).

    Examples
    --------
    >>> DenseQuery("metadata.embedding", [0.1, 0.3, -0.2])  # doctest: +SKIP
    """

    field: str
    vector: tuple[float, ...]
    num_candidates: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "field", check(self.field, "field", _FIELD))
        object.__setattr__(self, "vector", _checked_vector(self.vector))
        object.__setattr__(
            self, "num_candidates", check(self.num_candidates, "num_candidates", _CANDIDATES)
        )

    def knn(self, k: int, filters: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """The ``knn`` clause of the top ``k`` among the documents that match ``filters``."""
        clause: dict[str, Any] = {"field": self.field, "query_vector": list(self.vector), "k": k}
        if self.num_candidates is not None:
            clause["num_candidates"] = max(self.num_candidates, k)
        if filters:
            clause["filter"] = [dict(f) for f in filters]
        return clause

    def knn_of_ids(self, ids: Sequence[str]) -> dict[str, Any]:
        """The ``knn`` clause that scores exactly the documents ``ids`` (at most
        :data:`MAX_KNN`): the same scores as :meth:`knn`'s hits (module docstring)."""
        n = len(ids)
        return {
            "field": self.field,
            "query_vector": list(self.vector),
            "k": n,
            "num_candidates": n,
            "filter": [{"ids": {"values": list(ids)}}],
        }


def _checked_vector(vector: Any) -> tuple[float, ...]:
    """A query vector: a non-empty sequence (or 1-D array) of finite numbers, as floats."""
    values = np.asarray(vector) if not isinstance(vector, str) else None
    if (
        values is None
        or values.ndim != 1
        or not len(values)
        or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values.tolist())
    ):
        raise ValueError(
            "vector must be a non-empty sequence of numbers (the query's embedding), got "
            f"{_shown(vector)}"
        )
    floats = tuple(float(v) for v in values.tolist())
    if not all(math.isfinite(v) for v in floats):
        raise ValueError(f"vector must hold finite numbers, got {_shown(vector)}")
    return floats


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class DenseField:
    """A ``dense_vector`` field of an index (or of every index behind a name): its dimension,
    similarity, whether it is indexed for kNN, and how (``index_type``: ``flat``,
    ``bbq_hnsw``...; None where Elasticsearch did not say)."""

    path: str
    dims: int | None
    similarity: str | None
    indexed: bool
    index_type: str | None

    @property
    def exact(self) -> bool:
        """Whether kNN on the field is exact (``flat``: every vector compared, float32)."""
        return self.indexed and self.index_type == "flat"

    def approximate_note(self) -> str:
        """What a hybrid result says when the field is indexed for approximate kNN."""
        kind = self.index_type or "the cluster's default"
        return (
            f"the dense leg's top list is approximate: {self.path} is indexed for kNN as "
            f"{kind}, not flat, so a document outside it may score higher (exact_guarantee "
            "is False; index the field with index_options type flat for an exact leg)"
        )


def dense_fields(mappings: Mapping[str, Any]) -> dict[str, DenseField]:
    """Every ``dense_vector`` field of an index's ``mappings``, by its dotted path."""
    return {field.path: field for field in _walk(mappings.get("properties", {}), "")}


def _walk(properties: Mapping[str, Any], prefix: str) -> Iterator[DenseField]:
    for name, mapping in properties.items():
        if not isinstance(mapping, Mapping):
            continue
        path = f"{prefix}{name}"
        if mapping.get("type") == "dense_vector":
            options = mapping.get("index_options") or {}
            indexed = mapping.get("index", True) not in (False, "false")
            yield DenseField(
                path,
                mapping.get("dims"),
                mapping.get("similarity"),
                indexed,
                options.get("type") if indexed else None,
            )
        if isinstance(mapping.get("properties"), Mapping):
            yield from _walk(mapping["properties"], f"{path}.")


def common_fields(per_index: Sequence[Mapping[str, DenseField]]) -> dict[str, DenseField]:
    """The ``dense_vector`` fields that every index has, alike in dimension; flat only where
    every index has it flat."""
    if not per_index:
        return {}
    common = {}
    for path, field in per_index[0].items():
        others = [fields.get(path) for fields in per_index[1:]]
        if any(other is None or other.dims != field.dims for other in others):
            continue
        kinds = {field.index_type, *(other.index_type for other in others if other)}
        indexed = field.indexed and all(other.indexed for other in others if other)
        common[path] = DenseField(
            path,
            field.dims,
            field.similarity,
            indexed,
            field.index_type if len(kinds) == 1 else "mixed",
        )
    return common


def dense_meta(
    name: str, identity: Mapping[str, Any], dims: int, options: DenseOptions
) -> dict[str, Any]:
    """What ``_meta.es_scm.dense`` records: the field, the encoder's ``name`` and ``identity``
    (:meth:`~es_scm.encoder.SentenceEncoder.cache_identity`: its files' fingerprint and
    sentence-transformers' version), the dimension and how the field is indexed."""
    return {
        "field": DENSE_FIELD,
        "encoder": name,
        "identity": dict(identity),
        "dims": int(dims),
        "similarity": "cosine",
        "index_options": options.index_options,
    }


def loaded(encoder: SentenceEncoder) -> tuple[int, dict[str, Any]]:
    """The encoder's dimension and identity, loading it (CPU and disk: off an event loop)."""
    return encoder.dimension, encoder.cache_identity()


def encode_texts(encoder: SentenceEncoder, texts: Sequence[str]) -> np.ndarray:
    """The unit vectors of ``texts`` (float32 rows), :data:`ENCODE_BATCH` a forward pass."""
    return encoder.encode(list(texts), batch_size=ENCODE_BATCH)


def field_for(index: str, fields: Mapping[str, DenseField], query: DenseQuery) -> DenseField:
    """The field ``query`` searches, checked against the index's ``fields`` before any request.

    Raises
    ------
    ValueError
        No such ``dense_vector`` field (in every index behind the name), one not indexed for
        kNN, or a vector of another dimension: one line naming it.
    """
    field = fields.get(query.field)
    if field is None:
        known = ", ".join(sorted(fields)) or "none"
        raise ValueError(
            f"{index!r} has no dense_vector field {query.field!r} (in every index behind the "
            f"name); its dense_vector fields: {known}"
        )
    if not field.indexed:
        raise ValueError(
            f"the dense_vector field {query.field!r} of {index!r} is not indexed for kNN "
            "(index: false); map it with index: true"
        )
    if field.dims is not None and field.dims != len(query.vector):
        raise ValueError(
            f"the query vector has {len(query.vector)} dimensions, the field {query.field!r} "
            f"of {index!r} {field.dims}"
        )
    if field.similarity in _DIRECTIONAL and not any(query.vector):
        # a cosine (or dot product of unit vectors) of the zero vector is undefined:
        # Elasticsearch refuses it with a raw 400 after the request
        raise ValueError(
            f"the query vector is all zeros, which has no {field.similarity} similarity with any "
            f"vector: the field {query.field!r} of {index!r} compares directions (give the "
            "query's embedding, or leave out the dense leg)"
        )
    return field


#: The similarities of a ``dense_vector`` field that compare directions, for which a zero query
#: vector means nothing (None: a field whose mapping does not say, which Elasticsearch makes
#: cosine).
_DIRECTIONAL = ("cosine", "dot_product", None)


def check_encoder(
    index: str, meta: Mapping[str, Any], identity: Mapping[str, Any], name: str
) -> None:
    """Refuse an encoder (its ``identity``, :meth:`~es_scm.encoder.SentenceEncoder.
    cache_identity`) whose weights are not those that encoded the index's vectors (``meta``:
    ``_meta.es_scm.dense``).

    Raises
    ------
    EncoderMismatchError
        One line naming both encoders and the fix.
    """
    recorded = meta.get("identity", {}).get("weights")
    given = identity.get("weights")
    if recorded != given:
        raise EncoderMismatchError(
            f"index {index!r} holds dense vectors of the encoder {meta.get('encoder')!r} "
            f"(weights {_short(recorded)}), not of {name!r} (weights {_short(given)}); give "
            "the index's encoder (encoder=) or reindex with this one"
        )


def _short(weights: Any) -> str:
    return str(weights)[:19] if weights else "unknown"
