"""The schema of an es-scm index: field names, mapping, settings, the vector codec, the model check.

Each document ``y`` is stored as (paper §4, Theorems 4.1–4.2):

``text``
    The text, stored in ``_source`` and analyzed for BM25 (``match`` queries keep working).
``scm.vector``
    A ``sparse_vector`` holding the normalized vector y' = Wy / √((Wy)ᵀS(Wy)) keyed by term id
    (:func:`encode_documents`). A query expanded to x' = SᵀWx scores x'ᵀy' = (Wx)ᵀS(Wy)/‖Wy‖_S
    by a plain sparse dot product, so Elasticsearch ranks by the SCM up to the query's constant
    norm. Lucene's postings keep only the 9 most significant bits of each value (truncating:
    :data:`FEATURE_VALUE_ERROR`), which the exact mode accounts for; ``_source`` keeps the
    float64 values as sent, which the exact rescoring reads back (:func:`stored_vector`): one
    copy of the vector serves both (the index keeps vectors in ``_source``, see
    :func:`settings_for_version`).
``scm.expanded``
    Only in an index made with ``expansion="documents"`` (:data:`EXPANSIONS`): a second
    ``sparse_vector`` holding the document-side expansion Sy': the query sends its own m
    weighted terms Wx instead of the O(mC) of x' = SᵀWx, and scores the same (Wx)ᵀSy' = x'ᵀy'.
    It is kept out of ``_source`` (the rescorer reads y' only).
``scm.empty``
    True when y has no term of the vocabulary: such documents are stored and counted.
``scm.dense``
    Only in an index made with ``dense=`` (:class:`~es_scm.options.DenseOptions`): the
    document's dense vector from a sentence encoder, a ``dense_vector`` of the encoder's
    dimension with cosine similarity (:func:`dense_field_mapping`), for hybrid search's kNN leg
    (:mod:`es_scm.index.dense`). It is kept out of ``_source``; ``_meta.es_scm.dense``
    records the encoder.
``metadata``
    The caller's other fields, kept in ``_source`` unchanged. By default the field is
    ``flattened`` (:func:`metadata_field_mapping`): every leaf value is indexed as a keyword, so
    a later document can never be rejected because an earlier one made Elasticsearch guess
    another type. With explicit ``properties`` it is an object with those fields typed as
    given, and other fields kept in ``_source`` but not indexed (``dynamic: false``).

The ``text`` field's analyzer can be chosen (``text_analyzer``); neither choice changes what
es-scm reads back, so both kinds of index are schema version 2.

The index ``_meta`` records the model's ``model_id`` and parameters. Writing to or searching an
index built with another model raises :class:`ModelMismatchError`: scores would be silently wrong.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from es_scm._version import __version__
from es_scm.engines import (
    ELASTICSEARCH,
    METADATA_IGNORE_ABOVE,
    Engine,
    UnsupportedVersionError,
)
from es_scm.options import DenseOptions
from es_scm.options.defaults import EXPANSIONS, TEXT_ANALYZER
from es_scm.options.validation import POSITIVE_INT, MappingOf, Options, OrNone, Text, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "ANALYZER_NAME",
    "DENSE_FIELD",
    "EXPANDED_FIELD",
    "EXPANSIONS",
    "FEATURE_VALUE_ERROR",
    "METADATA_FIELD",
    "METADATA_IGNORE_ABOVE",
    "METADATA_PROPERTIES",
    "MIN_VERSION",
    "SCHEMA_VERSION",
    "TEXT_FIELD",
    "VECTOR_FIELD",
    "IndexNotFoundError",
    "ModelMismatchError",
    "PartialResultError",
    "UnsupportedVersionError",
    "check_indices",
    "check_version",
    "dense_field_mapping",
    "encode_documents",
    "feature_keys",
    "index_mapping",
    "mapping_options",
    "metadata_field_mapping",
    "public_source",
    "require_whole",
    "settings_for_version",
    "stored_vector",
    "stored_vectors",
    "vector_field_mapping",
]

#: The oldest Elasticsearch es-scm works with (:func:`check_version`; OpenSearch's:
#: :data:`~es_scm.engines.OPENSEARCH`).
MIN_VERSION = ELASTICSEARCH.min_version
SCHEMA_VERSION = 2  # 1 kept the exact vector in a separate base64 object
TEXT_FIELD = "text"
VECTOR_FIELD = "scm.vector"
EXPANDED_FIELD = "scm.expanded"  # Sy', in an index with expansion="documents" (EXPANSIONS)
#: The field of the dense vectors es-scm computes (an index made with ``dense=``).
DENSE_FIELD = "scm.dense"
METADATA_FIELD = "metadata"
# Lucene's FeatureField stores float32(v) truncated to 9 significant bits:
# v·(1 − 2⁻²⁴)(1 − 2⁻⁸) < stored ≤ v·(1 + 2⁻²⁴), so stored ≥ v·(1 − FEATURE_VALUE_ERROR).
FEATURE_VALUE_ERROR = 2.0**-8 + 2.0**-23
#: An analyzer's name (Elasticsearch checks that it exists when the index is created).
ANALYZER_NAME = OrNone(Text(r"[^\s,]+", "an analyzer name (a non-empty string without spaces)"))
#: Explicit metadata fields: Elasticsearch ``properties``, {field name: its mapping}.
METADATA_PROPERTIES = OrNone(
    MappingOf(
        Text(),
        MappingOf(Text()),
        what="Elasticsearch properties: a mapping of field names to their mappings (JSON objects, "
        'e.g. {"published": {"type": "date"}})',
    )
)


class ModelMismatchError(ValueError):
    """The index was built with a different model (or is not an es-scm index)."""


class IndexNotFoundError(LookupError):
    """The index does not exist."""


def metadata_field_mapping(
    properties: Mapping[str, Any] | None = None, engine: Engine = ELASTICSEARCH
) -> dict[str, Any]:
    """The mapping of the ``metadata`` field: ``flattened`` by default, else typed ``properties``.

    ``flattened`` (the default) indexes every leaf of the metadata object as a keyword under its
    dotted path (``metadata.published``, ``metadata.author.name``): ``term``, ``terms``,
    ``prefix``, ``exists`` and (string-ordered) ``range`` filters work on any field, and no
    value is ever rejected for its type, since nothing is guessed. Strings longer than
    :data:`METADATA_IGNORE_ABOVE` characters are kept in ``_source`` but not indexed; an object
    nested deeper than 20 levels fails its document (reported).

    With ``properties`` (Elasticsearch mappings by field name, e.g.
    ``{"published": {"type": "date"}}``) ``metadata`` is an object with exactly those fields
    indexed as typed: dates and numbers range-filter as such, and a value that does not fit its
    type fails its document with Elasticsearch's reason (the ingestion report's ``failures``).
    Other fields are kept in ``_source`` but not indexed (``dynamic: false``), so
    a new field never changes the mapping.

    On OpenSearch (``engine``) the default is ``flat_object``, which takes the same filters but
    no ``ignore_above``: a string over Lucene's 32,766-byte term fails its document (reported;
    a typed ``properties`` mapping can leave it unindexed).
    """
    properties = check(properties, "metadata_mapping", METADATA_PROPERTIES)
    if properties is None:
        return engine.metadata_field()
    return {"type": "object", "dynamic": False, "properties": properties}


def check_version(version: str, engine: Engine = ELASTICSEARCH) -> str:
    """``version`` if es-scm works with it on ``engine``, else raise
    :class:`UnsupportedVersionError`.

    Elasticsearch 8.15 brought the ``sparse_vector`` query, which es-scm sends; before it the
    ``sparse_vector`` field could only be searched with ``text_expansion`` (an inference model's
    tokens, not caller-given weights) or through ``rank_features`` queries. OpenSearch: 2.19,
    the oldest release es-scm is tested on.
    """
    return engine.check_version(version)


def vector_field_mapping(
    version: str | None = None, engine: Engine = ELASTICSEARCH
) -> dict[str, Any]:
    """The field of y' on ``engine``, never pruned, for a cluster of ``version`` (None: the
    newest): a ``sparse_vector`` on Elasticsearch (``prune: false`` where the field takes
    ``index_options``), ``rank_features`` on OpenSearch
    (:meth:`~es_scm.engines.Engine.vector_field`)."""
    return engine.vector_field(version)


def dense_field_mapping(dims: int, index_options: str) -> dict[str, Any]:
    """The mapping of :data:`DENSE_FIELD`: ``dims`` dimensions, cosine, indexed for kNN as
    ``index_options`` says (:data:`~es_scm.options.DENSE_INDEX_OPTIONS`; ``default``: the
    cluster's own, no ``index_options`` sent)."""
    mapping: dict[str, Any] = {
        "type": "dense_vector",
        "dims": check(dims, "dims", POSITIVE_INT),
        "index": True,
        "similarity": "cosine",
    }
    if index_options != "default":
        mapping["index_options"] = {"type": index_options}
    return mapping


def index_mapping(
    model: SoftCosineModel,
    *,
    text_analyzer: str | None = None,
    metadata_mapping: Mapping[str, Any] | None = None,
    version: str | None = None,
    expansion: str = "query",
    dense: Mapping[str, Any] | None = None,
    swap: Mapping[str, Any] | None = None,
    engine: Engine = ELASTICSEARCH,
) -> dict[str, Any]:
    """The index mapping for documents vectorized by ``model``, with the model in ``_meta``.

    ``text_analyzer`` is the analyzer of the BM25 ``text`` field (default
    :data:`~es_scm.options.defaults.TEXT_ANALYZER`, ``english``; ``standard`` on request), written
    into the mapping by name so that the index says which analyzer it has; ``metadata_mapping`` the
    ``properties`` of the metadata fields (see :func:`metadata_field_mapping`; default:
    ``flattened``); ``version`` the cluster's (:func:`vector_field_mapping`; default: the
    newest); ``expansion`` one of :data:`EXPANSIONS` (``"documents"`` adds the field of Sy',
    kept out of ``_source``); ``dense`` the record of the encoder whose vectors the index holds
    (:func:`~es_scm.index.dense.dense_meta`: adds :data:`DENSE_FIELD`, kept out of
    ``_source``, and the record to ``_meta``); ``swap`` the marker of an index made for a swap
    behind an alias (:func:`es_scm.index.swaps.swap_marker`, kept in ``_meta`` too);
    ``engine`` the cluster's (:mod:`es_scm.engines`: the field types).
    """
    text_analyzer = check(text_analyzer, "text_analyzer", ANALYZER_NAME)
    expansion = check(expansion, "expansion", Options(EXPANSIONS))
    text: dict[str, Any] = {"type": "text", "analyzer": text_analyzer or TEXT_ANALYZER}
    scm_fields = {"vector": vector_field_mapping(version, engine), "empty": {"type": "boolean"}}
    excluded = []
    if expansion == "documents":
        scm_fields["expanded"] = vector_field_mapping(version, engine)
        excluded.append(EXPANDED_FIELD)
    dense_record: dict[str, Any] = {}
    if dense is not None:
        scm_fields["dense"] = dense_field_mapping(dense["dims"], dense["index_options"])
        excluded.append(DENSE_FIELD)
        dense_record["dense"] = dict(dense)
    mapping: dict[str, Any] = {"_source": {"excludes": excluded}} if excluded else {}
    return mapping | {
        "_meta": {
            "es_scm": {
                "schema_version": SCHEMA_VERSION,
                "model_id": model.model_id,
                "n_terms": len(model.terms),
                "similarity_nnz": int(model.similarity_matrix.nnz),
                "model": model.get_config(),
                "expansion": expansion,
                **dense_record,
                **({} if swap is None else {"swap": dict(swap)}),
                "created_with": f"es-scm {__version__}",
            }
        },
        "dynamic": "strict",
        "properties": {
            TEXT_FIELD: text,
            "scm": {"properties": scm_fields},
            METADATA_FIELD: metadata_field_mapping(metadata_mapping, engine),
        },
    }


def mapping_options(mappings: Mapping[str, Any]) -> dict[str, Any]:
    """The ``text_analyzer``, ``metadata_mapping``, ``expansion`` and ``dense`` that made
    ``mappings``.

    The inverse of :func:`index_mapping` for those options, so that a new index can be made
    like an old one. An index made before es-scm wrote the analyzer into the mapping has
    Elasticsearch's default, ``standard``, which is what it gives. Metadata mapped by es-scm
    before the default became ``flattened`` (a dynamic object) gives ``None``: the new default.
    """
    properties = mappings.get("properties", {})
    metadata = properties.get(METADATA_FIELD, {})
    explicit = metadata.get("type", "object") == "object" and metadata.get("dynamic") in (
        False,
        "false",
    )
    meta = mappings.get("_meta", {}).get("es_scm", {})
    dense = meta.get("dense")
    return {
        "text_analyzer": properties.get(TEXT_FIELD, {}).get("analyzer", "standard"),
        "metadata_mapping": metadata.get("properties", {}) if explicit else None,
        "expansion": meta.get("expansion", "query"),
        "dense": None
        if dense is None
        else DenseOptions(encoder=dense["encoder"], index_options=dense["index_options"]),
    }


def settings_for_version(
    version: str, *, shards: int = 1, replicas: int = 0, engine: Engine = ELASTICSEARCH
) -> dict[str, Any]:
    """The index settings for a cluster of the given version (e.g. ``"9.5.4"``) of ``engine``:
    shards, replicas, and ``_source`` that keeps the vectors (Elasticsearch 9.2+; OpenSearch
    3.x: Elasticsearch's BM25 scores, :meth:`~es_scm.engines.Engine.index_settings`).

    Since 9.2 Elasticsearch leaves ``sparse_vector`` values out of the stored ``_source``
    (``index.mapping.exclude_source_vectors``) and rebuilds them from the index when asked, with
    the index's 9-bit precision. es-scm needs the exact values the rescorer reads, and cutting
    the vector out also means parsing every document a second time: for vectors of ~60
    features it made Elasticsearch's indexing of a document 1.4 times as costly
    (``scripts/bench_ingest.py``).
    """
    return engine.index_settings(version, shards=shards, replicas=replicas)


def check_indices(index: str, response: Any, model: SoftCosineModel) -> dict[str, Any]:
    """Check that ``index`` (an index, alias or pattern) was built with ``model``, from the answer
    of a get-mapping or get-index request of it (404 ignored):
    every concrete index in it, ``{name: {"mappings": ...}}``, was built with ``model``."""
    if response.meta.status == 404 or not response.body:
        raise IndexNotFoundError(f"index {index!r} does not exist")
    meta: dict[str, Any] = {}
    expansions = set()
    encoders = []
    for concrete, body in response.body.items():
        meta = body.get("mappings", {}).get("_meta", {}).get("es_scm", {})
        if not meta:
            raise ModelMismatchError(f"index {concrete!r} was not created by es-scm")
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise ModelMismatchError(
                f"index {concrete!r} has es-scm schema version {meta.get('schema_version')}, "
                f"this es-scm reads version {SCHEMA_VERSION}; reindex the documents"
            )
        if meta.get("model_id") != model.model_id:
            raise ModelMismatchError(
                f"index {concrete!r} was built with model {meta.get('model_id', '?')[:12]}, "
                f"not with this model {model.model_id[:12]}; use the same model or reindex"
            )
        meta = {**meta, "expansion": meta.get("expansion", "query")}
        expansions.add(meta["expansion"])
        encoders.append(meta.get("dense"))
    if len(expansions) > 1:
        raise ModelMismatchError(
            f"the indices of {index!r} mix query-side and document-side expansion; search them "
            "apart"
        )
    weights = {(e or {}).get("identity", {}).get("weights") for e in encoders}
    if len(weights) > 1 and None not in weights:
        raise ModelMismatchError(
            f"the indices of {index!r} hold dense vectors of different encoders; search them apart"
        )
    # dense vectors of es-scm's searchable only where every index has them
    return {**meta, "dense": encoders[0] if None not in weights else None}


@lru_cache(maxsize=8)
def feature_keys(n_terms: int) -> np.ndarray:
    """The ``sparse_vector`` feature key of every term id (its decimal string), made once."""
    return np.array([str(i) for i in range(n_terms)], dtype=object)


def encode_documents(
    texts: Sequence[str],
    normalized: Any,
    metadata: Sequence[Mapping[str, Any] | None],
    term_keys: np.ndarray,
    expanded: Any = None,
    dense: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """The ``_source`` of a batch of documents from their normalized vectors y' (CSR rows).

    ``normalized`` is :meth:`~es_scm.similarity.TermSimilarityMatrix.normalize` of the batch's
    weighted vectors and ``term_keys[i]`` (an object array of str) the feature key of term ``i``;
    ``expanded``, for an index with document-side expansion, the rows Sy'
    (:meth:`~es_scm.similarity.TermSimilarityMatrix.expand_documents`); ``dense``, for an index
    with dense vectors, their rows (float32, one per text: :data:`DENSE_FIELD`).
    Only the assembly of each document's dictionaries is per document.
    """
    vectors = _feature_dicts(normalized, len(texts), term_keys)
    expansions = _feature_dicts(expanded, len(texts), term_keys) if expanded is not None else None
    dense_rows = dense.tolist() if dense is not None else None  # float32 values as floats, once
    sources = []
    for row, text in enumerate(texts):
        scm: dict[str, Any] = {"empty": not vectors[row]}
        if vectors[row]:
            scm["vector"] = vectors[row]
        if expansions is not None and expansions[row]:
            scm["expanded"] = expansions[row]
        if dense_rows is not None:
            scm["dense"] = dense_rows[row]
        source: dict[str, Any] = {TEXT_FIELD: text, "scm": scm}
        fields = metadata[row]
        if fields:
            source[METADATA_FIELD] = dict(fields)
        sources.append(source)
    return sources


def _feature_dicts(rows: Any, n_rows: int, term_keys: np.ndarray) -> list[dict[str, float]]:
    """Each CSR row's positive entries as {feature key: value}, the form of a ``sparse_vector``."""
    row_of = np.repeat(np.arange(n_rows), np.diff(rows.indptr))
    positive = rows.data > 0.0  # sparse_vector holds positive values only (all of them: S, W ≥ 0)
    keys = term_keys[rows.indices[positive]].tolist()
    values = rows.data[positive].tolist()
    counts = np.bincount(row_of[positive], minlength=n_rows)
    bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
    return [
        dict(zip(keys[first:last], values[first:last], strict=True))
        for first, last in itertools.pairwise(bounds)
    ]


def stored_vector(source: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """A document's normalized vector y' from its ``_source``: (term ids, float64 values)."""
    return stored_vectors([source])[0]


def stored_vectors(sources: Sequence[Mapping[str, Any]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The normalized vectors y' of many documents' ``_source``, parsed in one pass: each
    (term ids, float64 values). The feature keys (decimal term ids) of all of them are read by
    one C parse of their comma-joined text, not one ``int()`` each."""
    vectors = [source.get("scm", {}).get("vector") or {} for source in sources]
    lengths = [len(vector) for vector in vectors]
    total = sum(lengths)
    keys = ",".join(itertools.chain.from_iterable(vectors))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy warns, and stops, at text it cannot read
            ids = np.fromstring(keys, dtype=np.int64, sep=",") if total else np.zeros(0, np.int64)
    except (ValueError, DeprecationWarning):
        ids = np.zeros(0, np.int64)
    values = np.fromiter(
        itertools.chain.from_iterable(vector.values() for vector in vectors),
        dtype=np.float64,
        count=total,
    )
    if len(ids) != total:  # a key that is not a term id: refuse rather than misread
        raise ModelMismatchError("a stored vector has feature keys that are not term ids")
    bounds = np.cumsum([0, *lengths]).tolist()
    return [(ids[a:b], values[a:b]) for a, b in itertools.pairwise(bounds)]


def public_source(source: Mapping[str, Any]) -> dict[str, Any]:
    """What a hit shows of a stored document: its text and metadata (not the vector)."""
    public = {TEXT_FIELD: source.get(TEXT_FIELD, "")}
    if METADATA_FIELD in source:
        public[METADATA_FIELD] = source[METADATA_FIELD]
    return public


class PartialResultError(RuntimeError):
    """Elasticsearch answered without part of what was asked (a shard or document it could not
    serve): the answer is refused rather than passed on as whole."""


def require_whole(response: Mapping[str, Any], what: str) -> None:
    """Raise :class:`PartialResultError` unless every shard answered ``response`` in time."""
    shards = response.get("_shards", {})
    if shards.get("failed") or response.get("timed_out"):
        failures = shards.get("failures") or [{}]
        reason = answer_reason(failures[0]) if shards.get("failed") else "timed out"
        raise PartialResultError(
            f"{what} answered from {shards.get('successful', '?')} of "
            f"{shards.get('total', '?')} shards ({reason}); a partial answer is not given"
        )


def answer_reason(failure: Mapping[str, Any]) -> str:
    """``type: reason`` of a shard failure or a document's error, on one line."""
    error = failure.get("error") or failure.get("reason") or {}
    if not isinstance(error, Mapping):
        return " ".join(str(error).split())
    text = str(error.get("type", "error"))
    if error.get("reason"):
        text += f": {error['reason']}"
    return " ".join(text.split())
