"""A filter that names a field the index does not have is an error, not a search that silently
finds nothing (issue 30): on a real node, through the API and the command line, with no request
of its own on a search that passes.

The fields come from the mapping in the model check's answer (``MappedFields``); a field that it
lacks is looked up once more before the error, since a typed field may be mapped later.
"""

from __future__ import annotations

import json

import pytest

from es_scm.cli.errors import EXIT_USAGE
from es_scm.elastic import SCMIndex, Searcher, UnknownFieldError
from tests.integration.test_requests_es import Requests
from tests.support import one_error_line, with_async_client

TEXTS = {
    "a": "supersonic flow over a swept wing",
    "b": "boundary layer transition on a flat plate",
    "c": "heat transfer in a hypersonic boundary layer",
}
YEARS = {"a": 2019, "b": 2020, "c": 2020}


def documents() -> list[dict]:
    return [{"id": i, "text": t, "year": YEARS[i]} for i, t in TEXTS.items()]


def test_a_filter_on_a_field_outside_metadata_names_the_metadata_path(es_client, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    assert index.index_documents(documents()).ok
    searcher = Searcher(es_client, index_name, model)  # checks the model on its first search
    good = {"term": {"metadata.year": 2020}}
    assert {hit.id for hit in searcher.search("boundary layer", filter=good).hits} == {"b", "c"}
    for method in ("search", "native", "hybrid", "bm25"):
        with pytest.raises(UnknownFieldError) as error:
            getattr(searcher, method)("boundary layer", filter={"term": {"year": 2020}})
        assert "the filter names the field 'year'" in str(error.value)
        assert "filter on 'metadata.year'" in str(error.value)
    with pytest.raises(UnknownFieldError, match="'year'"):
        searcher.batch_search(["wing", "layer"], filter=[good, {"range": {"year": {"gt": 1}}}])
    # the index this searcher created itself is known by its mapping too (no model check)
    assert index.searcher.search("wing", filter=good).hits == []
    with pytest.raises(UnknownFieldError, match="'year'"):
        index.searcher.search("wing", filter={"exists": {"field": "year"}})


def test_the_async_searcher_says_the_same(es_client, es_url, index_name, model):
    from es_scm.elastic.aio import AsyncSearcher

    assert SCMIndex(es_client, index_name, model).index_documents(documents()).ok

    async def work(client):
        searcher = AsyncSearcher(client, index_name, model)
        good = await searcher.search("layer", filter={"term": {"metadata.year": 2020}})
        refused = []
        for call in (
            searcher.search("layer", filter={"term": {"year": 2020}}),
            searcher.batch_search(["layer"], method="hybrid", filter={"term": {"year": 2020}}),
        ):
            with pytest.raises(UnknownFieldError) as error:
                await call
            refused.append(str(error.value))
        return good, refused

    good, refused = with_async_client(es_url, work)
    assert {hit.id for hit in good.hits} == {"b", "c"}
    for message in refused:
        assert "the filter names the field 'year'" in message
        assert "filter on 'metadata.year'" in message


def test_a_field_typed_later_is_found_by_a_second_look(es_client, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    index.create(metadata_mapping={"year": {"type": "integer"}})
    assert index.index_documents(documents()).ok
    searcher = Searcher(es_client, index_name, model)
    searcher.search("wing")  # the model check: the mapping has metadata.year only
    with pytest.raises(UnknownFieldError) as error:
        searcher.search("wing", filter={"term": {"metadata.month": "may"}})
    assert "the fields it maps are " in str(error.value)
    assert "metadata.year" in str(error.value)
    es_client.indices.put_mapping(
        index=index_name, properties={"metadata": {"properties": {"month": {"type": "keyword"}}}}
    )
    requests = Requests(es_client)
    sent = requests.during(
        lambda: searcher.search("wing", filter={"term": {"metadata.month": "may"}})
    )
    assert requests.result.hits == []  # no document has a month: a search that found nothing
    # the second look at the mapping, the search, and the look that confirms an empty answer
    look, search = f"/{index_name}", f"/{index_name}/_search"
    assert [path for _, path in sent] == [look, search, look]


def test_checking_the_fields_costs_no_request(es_client, index_name, model):
    SCMIndex(es_client, index_name, model).index_documents(documents())
    requests = Requests(es_client)
    counts = []
    for filter in (None, {"term": {"metadata.year": 2020}}):
        cold = Searcher(es_client, index_name, model)
        counts.append(len(requests.during(lambda s=cold, f=filter: s.search("layer", filter=f))))
        warm = requests.during(lambda s=cold, f=filter: s.search("boundary", filter=f))
        assert len(warm) == 1, warm
    assert counts[0] == counts[1]


def test_a_deep_filter_is_refused_before_any_request(es_client, index_name, model):
    SCMIndex(es_client, index_name, model).index_documents(documents())
    searcher = Searcher(es_client, index_name, model)
    deep: dict = {"term": {"metadata.year": 2020}}
    for _ in range(5_000):  # far past Python's recursion limit
        deep = {"bool": {"filter": [deep]}}
    requests = Requests(es_client)
    for method in ("search", "native", "hybrid", "bm25"):
        with pytest.raises(ValueError, match="nested deeper than 100 levels") as refused:
            requests.during(lambda m=method: getattr(searcher, m)("layer", filter=deep))
        assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match="nested deeper than 100 levels"):
        requests.during(lambda: searcher.batch_search(["layer", "wing"], filter=deep))
    assert requests.sent == []


def test_the_command_line_says_so_in_one_line(
    cli, es_client, es_url, index_name, model_dir, tmp_path
):
    from es_scm import SoftCosineModel

    index = SCMIndex(es_client, index_name, SoftCosineModel.load(model_dir))
    assert index.index_documents(documents()).ok
    search = ["search", "--model", model_dir, "--index", index_name, "--es-url", es_url]
    for mode in ("exact", "native", "hybrid", "bm25"):
        code, out, err = cli(*search, "--mode", mode, "--filter", '{"term": {"year": 2020}}', "x")
        assert code == EXIT_USAGE
        assert out == ""
        line = one_error_line(err)
        assert line.startswith("es-scm: error: --filter: the filter names the field 'year', ")
        assert f"which {index_name!r} does not have" in line
        assert "filter on 'metadata.year'" in line
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tboundary layer\nq2\tswept wing\n")
    for output in (["--json"], ["--run", "-"], ["--run", tmp_path / "out.run"]):
        code, out, err = cli(
            *search, "--queries", topics, *output, "--filter", '{"range": {"year": {"gt": 1}}}'
        )
        assert code == EXIT_USAGE, output
        assert out == ""
        assert "filter on 'metadata.year'" in one_error_line(err)
    assert not (tmp_path / "out.run").exists()

    code, out, err = cli(
        *search, "--filter", '{"term": {"metadata.year": 2020}}', "--json", "layer"
    )
    assert code == 0, err
    assert {json.loads(line)["id"] for line in out.splitlines()} == {"b", "c"}
    code, out, err = cli(*search, "--filter", "year=2020", "--json", "layer")
    assert code == 0, err
    assert {json.loads(line)["id"] for line in out.splitlines()} == {"b", "c"}
    code, out, err = cli(
        *search,
        "--queries",
        topics,
        "--json",
        "--filter",
        '{"range": {"metadata.year": {"gt": "2019"}}}',
    )
    assert code == 0, err
    found = {}
    for line in out.splitlines():
        answer = json.loads(line)
        found[answer["qid"]] = {hit["id"] for hit in answer["hits"]}
    assert found == {"q1": {"b", "c"}, "q2": set()}  # a (2019) has the wing: filtered out
