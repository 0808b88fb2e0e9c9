"""English stemming on the server: the ``english`` analyzer and the ``porter_stem`` and ``kstem``
filters.

A full distribution has them built in (analysis-common); the local runner serves them from the
stable plugin of :mod:`es_scm.tools.analysis`. These tests hold either to the same expected
tokens, written by hand from Porter's algorithm and from Elastic's documentation (the plugin's
pure parts: tests/unit/test_english_analysis.py).
"""

from __future__ import annotations


def tokens(es_client, **body) -> list[str]:
    return [token["token"] for token in es_client.indices.analyze(**body)["tokens"]]


def test_the_english_analyzer_drops_stop_words_and_possessives_and_stems(es_client):
    # Porter: running → runn → run (undoubled), flows → flow, studies → studi (ies → i);
    # "the" and "of" are default English stop words; "John's" loses its possessive.
    assert tokens(es_client, analyzer="english", text="The Running flows of studies") == [
        "run",
        "flow",
        "studi",
    ]
    assert tokens(es_client, analyzer="english", text="John's ponies caresses") == [
        "john",
        "poni",
        "caress",
    ]


def test_porter_stem_and_kstem_filters_stem_as_documented(es_client):
    text = "the foxes jumping quickly"
    # Porter: foxes → foxe → fox (final e of a cvc stem ending in x goes), quickly → quickli.
    porter = tokens(es_client, tokenizer="standard", filter=["lowercase", "porter_stem"], text=text)
    assert porter == ["the", "fox", "jump", "quickli"]
    # Elastic's kstem reference example: the same sentence gives quick, not quickli.
    kstem = tokens(es_client, tokenizer="standard", filter=["lowercase", "kstem"], text=text)
    assert kstem == ["the", "fox", "jump", "quick"]


def test_an_index_with_english_and_porter_fields_matches_across_word_forms(es_client, index_name):
    es_client.indices.create(
        index=index_name,
        settings={
            "number_of_shards": 1,
            "number_of_replicas": 0,
            "analysis": {
                "analyzer": {
                    "porter": {"tokenizer": "standard", "filter": ["lowercase", "porter_stem"]},
                    "kstem": {"tokenizer": "standard", "filter": ["lowercase", "kstem"]},
                }
            },
        },
        mappings={
            "properties": {
                "text": {"type": "text", "analyzer": "english"},
                "porter": {"type": "text", "analyzer": "porter"},
                "kstem": {"type": "text", "analyzer": "kstem"},
            }
        },
    )
    documents = {
        "d1": "Two studies of running water",
        "d2": "Cats sleep all day",
    }
    for doc_id, text in documents.items():
        es_client.index(
            index=index_name, id=doc_id, document=dict.fromkeys(("text", "porter", "kstem"), text)
        )
    es_client.indices.refresh(index=index_name)

    def hits(field: str, query: str) -> list[str]:
        response = es_client.search(index=index_name, query={"match": {field: query}})
        return sorted(hit["_id"] for hit in response["hits"]["hits"])

    # studying → study (ing) → studi (y → i), the stem of "studies" too.
    assert hits("text", "studying") == ["d1"]
    assert hits("porter", "studying") == ["d1"]
    assert hits("text", "runs") == ["d1"]
    assert hits("kstem", "study") == ["d1"]  # kstem: studies → study
    assert hits("text", "the") == []  # a stop word
    assert tokens(es_client, index=index_name, field="text", text="Cats sleeping") == [
        "cat",
        "sleep",
    ]
