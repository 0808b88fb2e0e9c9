"""Your schema without a server: metadata mapped ``flattened`` unless given, the text field's
analyzer, options refused before any request, and the previous mapping read as the new default
(on a real node: tests/integration/test_schema_es.py)."""

from __future__ import annotations

import pytest

from es_scm.index.schema import (
    METADATA_IGNORE_ABOVE,
    index_mapping,
    mapping_options,
    metadata_field_mapping,
)
from es_scm.options import DenseOptions
from tests.support import AERO_TEXTS

TEXTS = AERO_TEXTS


def test_metadata_is_flattened_by_default(model):
    mapping = index_mapping(model)
    assert mapping["properties"]["metadata"] == {
        "type": "flattened",
        "ignore_above": METADATA_IGNORE_ABOVE,
    }
    # the fair BM25 by default: English's analyzer, named so that the index says which it has
    assert mapping["properties"]["text"] == {"type": "text", "analyzer": "english"}
    assert mapping["_meta"]["es_scm"]["schema_version"] == 2


def test_explicit_metadata_and_analyzer_options(model):
    mapping = index_mapping(
        model, text_analyzer="simple", metadata_mapping={"published": {"type": "date"}}
    )
    assert mapping["properties"]["text"] == {"type": "text", "analyzer": "simple"}
    assert mapping["properties"]["metadata"] == {
        "type": "object",
        "dynamic": False,
        "properties": {"published": {"type": "date"}},
    }
    assert mapping_options(mapping) == {
        "text_analyzer": "simple",
        "metadata_mapping": {"published": {"type": "date"}},
        "expansion": "query",
        "dense": None,
    }
    assert mapping_options(index_mapping(model, expansion="documents")) == {
        "text_analyzer": "english",
        "metadata_mapping": None,
        "expansion": "documents",
        "dense": None,
    }
    # an index made before the analyzer was written into the mapping has Elasticsearch's default
    older = index_mapping(model)
    del older["properties"]["text"]["analyzer"]
    assert mapping_options(older)["text_analyzer"] == "standard"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"metadata_mapping": {"published": "date"}}, "metadata_mapping must be"),
        ({"metadata_mapping": ["published"]}, "metadata_mapping must be"),
        ({"text_analyzer": "two words"}, "text_analyzer must be"),
        ({"text_analyzer": ""}, "text_analyzer must be"),
    ],
)
def test_bad_schema_options_are_refused_before_any_request(model, options, message):
    with pytest.raises(ValueError, match=message):
        index_mapping(model, **options)


def test_a_previous_default_metadata_mapping_reads_as_the_new_default():
    old = {"properties": {"text": {"type": "text"}, "metadata": {"type": "object"}}}
    assert mapping_options(old) == {
        "text_analyzer": "standard",  # Elasticsearch's default, which an old index has
        "metadata_mapping": None,
        "expansion": "query",  # an index older than the option expands queries
        "dense": None,  # and has no dense vectors
    }
    empty = {"properties": {"metadata": {"dynamic": "false"}}}  # no properties: an empty object
    assert mapping_options(empty)["metadata_mapping"] == {}
    assert metadata_field_mapping({})["dynamic"] is False


def test_an_index_with_dense_vectors_maps_them_out_of_source_and_records_the_encoder(model):
    record = {
        "field": "scm.dense",
        "encoder": "all-MiniLM-L6-v2",
        "identity": {"weights": "sha256:abc", "sentence_transformers": "6.2.0"},
        "dims": 384,
        "similarity": "cosine",
        "index_options": "flat",
    }
    mapping = index_mapping(model, dense=record, expansion="documents")
    assert mapping["properties"]["scm"]["properties"]["dense"] == {
        "type": "dense_vector",
        "dims": 384,
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "flat"},
    }
    assert mapping["_source"] == {"excludes": ["scm.expanded", "scm.dense"]}
    assert mapping["_meta"]["es_scm"]["dense"] == record
    assert mapping_options(mapping)["dense"] == DenseOptions("all-MiniLM-L6-v2", "flat")
    # the cluster's default (approximate) kNN index: no index_options sent
    default = index_mapping(model, dense={**record, "index_options": "default"})
    assert "index_options" not in default["properties"]["scm"]["properties"]["dense"]
    assert default["_source"] == {"excludes": ["scm.dense"]}
