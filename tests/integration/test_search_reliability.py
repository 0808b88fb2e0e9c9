"""Search answers for what it searched, whole and as of one moment, on a real node (issue 22).

A searcher held on an alias notices that the alias moved and checks the model again; an exact top
k is the brute-force top k of one state of the index even while documents are deleted between
its windows; hybrid options are refused outside hybrid mode; queries are bounded in length and
never overflow the cluster's clause limit. (A shard that cannot serve: ``test_cluster.py``.)
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import logging
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from es_scm import SoftCosineModel, TermSimilarityMatrix
from es_scm.cli import main
from es_scm.cli.errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from es_scm.elastic import (
    DenseQuery,
    ModelMismatchError,
    SCMIndex,
    Searcher,
    UnsafeFilterError,
    client_from_env,
    cluster_max_clauses,
    reindex_into_alias,
)
from es_scm.elastic.aio import AsyncSCMIndex
from es_scm.fusion import fusion_from
from es_scm.model import BruteForceSearch
from es_scm.options.defaults import MAX_QUERY_WORDS
from es_scm.similarity.scm import rank
from tests.support import assert_one_line_error, with_async_client

FILLER = ["red", "fast", "old", "road", "engine", "wheel", "city", "trip", "fuel", "garage"]
QUERY = "automobile"
NEW_WORDS = ["zeppelin", "airship", "hangar"]  # only the larger model knows them


def corpus(n: int = 300, prefix: str = "d") -> list[dict]:
    """Documents of car words (as in test_aliases): every hit of QUERY scores differently under
    the identity S and under the thesaurus S."""
    documents = []
    for i in range(n):
        words = [FILLER[i % 10], FILLER[(i // 10) % 10]]
        words += ["car", "automobile"] if i % 50 == 0 else ["car"] if i % 50 == 25 else []
        documents.append({"id": f"{prefix}{i}", "text": " ".join(words)})
    return documents


def airships(n: int = 60) -> list[dict]:
    """More documents, with words that only the larger model knows (and QUERY's)."""
    return [
        {"id": f"z{i}", "text": f"{NEW_WORDS[i % 3]} {FILLER[i % 10]} automobile car"}
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def models() -> dict[str, SoftCosineModel]:
    texts = [d["text"] for d in corpus()]
    thesaurus = [("car", "automobile", 0.8)]
    return {
        "old": SoftCosineModel.build(texts),  # S = I
        "new": SoftCosineModel.build(
            texts, similarity=lambda terms: TermSimilarityMatrix.from_pairs(terms, thesaurus)
        ),
        "larger": SoftCosineModel.build(texts + [d["text"] for d in airships()]),
    }


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- a searcher held on an alias (item 2) -------------------------------------------------------


def test_a_searcher_held_on_an_alias_refuses_the_next_models_index(es_client, index_name, models):
    alias, old = index_name, models["old"]
    reindex_into_alias(es_client, alias, old, corpus())
    index, searcher = SCMIndex(es_client, alias, old), Searcher(es_client, alias, old)
    assert index.searcher.search(
        QUERY
    ).exact_guarantee  # both checked their model on the first index
    assert searcher.rescore(QUERY, ids=["d0"]).ids() == ["d0"]
    reindex_into_alias(es_client, alias, models["new"], corpus(), grace=0)
    with pytest.raises(ModelMismatchError, match=f"{alias!r} moved since its model was checked"):
        index.searcher.search(QUERY)
    with pytest.raises(ModelMismatchError, match=f"{alias!r} moved since its model was checked"):
        searcher.rescore(QUERY, ids=["d0"])
    for search in (
        lambda: index.searcher.native(QUERY),
        lambda: index.searcher.hybrid(QUERY),
        lambda: searcher.rescore(QUERY, es_query={"match_all": {}}),
    ):
        with pytest.raises(ModelMismatchError, match="not with this model"):
            search()


def test_a_larger_vocabulary_behind_the_alias_is_refused_not_misread(es_client, index_name, models):
    alias, old = index_name, models["old"]
    reindex_into_alias(es_client, alias, old, corpus())
    searchers = [Searcher(es_client, alias, old) for _ in range(3)]
    for searcher in searchers:
        searcher.check()
    reindex_into_alias(es_client, alias, models["larger"], corpus() + airships(), grace=0)
    moved = f"{alias!r} moved since its model was checked"
    with pytest.raises(ModelMismatchError, match=moved):  # was an IndexError
        searchers[0].search(QUERY, k=50)
    with pytest.raises(ModelMismatchError, match=moved):  # was "no vocabulary terms", proven
        searchers[1].search(" ".join(NEW_WORDS))
    with pytest.raises(ModelMismatchError, match=moved):  # was an IndexError too
        searchers[2].rescore(QUERY, es_query={"match": {"text": NEW_WORDS[0]}})


def test_a_same_model_swap_is_followed(es_client, index_name, models):
    alias, old = index_name, models["old"]
    reindex_into_alias(es_client, alias, old, corpus(prefix="first-"))
    searcher = Searcher(es_client, alias, old)
    assert set(searcher.search(QUERY).ids()) <= {f"first-{i}" for i in range(300)}
    reindex_into_alias(es_client, alias, old, corpus(prefix="second-"), grace=0)
    fresh = Searcher(es_client, alias, old)
    for method in ("search", "native", "hybrid", "bm25"):
        followed = getattr(searcher, method)(QUERY)
        assert followed.ids() == getattr(fresh, method)(QUERY).ids()
        assert all(doc_id.startswith("second-") for doc_id in followed.ids())
    assert searcher.rescore(QUERY, ids=["second-0", "first-0"]).ids() == ["second-0"]


def test_an_index_added_to_a_pattern_is_checked(es_client, index_name, models):
    pattern = f"{index_name}-*"
    first = SCMIndex(es_client, f"{index_name}-a", models["old"])
    assert first.index_documents(corpus()).ok
    searcher = Searcher(es_client, pattern, models["old"])
    assert searcher.search(QUERY).exact_guarantee
    other = SCMIndex(es_client, f"{index_name}-b", models["new"])
    assert other.index_documents(corpus(prefix="b")).ok
    with pytest.raises(ModelMismatchError, match=f"'{index_name}-b' was built with model"):
        searcher.search(QUERY)


def test_an_alias_with_routing_answers_from_its_shards(es_client, index_name, models):
    index = SCMIndex(es_client, index_name, models["old"])
    index.create(shards=3)
    assert index.index_documents(corpus()).ok
    es_client.indices.put_alias(index=index_name, name=f"{index_name}-routed", routing="1")
    routed = Searcher(es_client, f"{index_name}-routed", models["old"])
    everything = set(index.searcher.search("red", k=100).ids())  # every match
    for _ in range(2):  # one shard of three answers: the same index, not a move
        result = routed.search("red", k=100)
        assert result.exact_guarantee
        assert 0 < len(result) < len(everything)
        assert set(result.ids()) <= everything


def test_an_async_searcher_held_on_an_alias_notices_the_move(es_client, es_url, index_name, models):
    alias, old = index_name, models["old"]
    reindex_into_alias(es_client, alias, old, corpus())

    async def work(client):
        index = AsyncSCMIndex(client, alias, old)
        before = await index.searcher.search(QUERY)
        reindex_into_alias(es_client, alias, models["new"], corpus(), grace=0)
        with pytest.raises(ModelMismatchError, match=f"{alias!r} moved since"):
            await index.searcher.search(QUERY)
        with pytest.raises(ModelMismatchError, match="not with this model"):
            await index.searcher.rescore(QUERY, ids=["d0"])
        return before

    assert with_async_client(es_url, work).exact_guarantee


# -- exact windows under concurrent deletes (item 7) ---------------------------------------------

TIED = "car engine"  # every document: every score ties, so exact mode must page to the end
QUERY_TIED = "car"
TIED_IDS = [f"z{i:03d}" for i in range(20)] + ["a000"] + [f"z{i:03d}" for i in range(20, 120)]


@pytest.fixture(scope="module")
def tied_model() -> SoftCosineModel:
    return SoftCosineModel.build([TIED, "red road", "fast wheel", "old city trip"])


@pytest.fixture
def tied_index(es_client, index_name, tied_model) -> SCMIndex:
    """121 equal documents in one segment, in the order of TIED_IDS: Elasticsearch ranks the
    ties in that order, so ``a000`` (first by id, hence in the exact top 10) is 21st natively,
    just past the first window of 20."""
    index = SCMIndex(es_client, index_name, tied_model)
    documents = [{"id": doc_id, "text": TIED} for doc_id in TIED_IDS]
    assert index.index_documents(documents, concurrency=1).ok
    index.optimize()
    return index


def assert_one_state(result, model, deleted_before: set[str], deleted_by_end: set[str]) -> None:
    """``result`` is the brute-force top k of one state of the index between the search's start
    (``deleted_before`` gone) and its end (``deleted_by_end`` gone, or going)."""
    present = [doc_id for doc_id in TIED_IDS if doc_id not in deleted_before]
    brute = dict(BruteForceSearch(model, present, [TIED] * len(present)).search(QUERY_TIED, 200))
    ids = result.ids()
    assert result.exact_guarantee
    assert not set(ids) & deleted_before, ids
    assert ids == [doc_id for doc_id, _ in rank((i, brute[i]) for i in ids)]
    last = rank((i, brute[i]) for i in ids)[-1]
    surely_there = [i for i in present if i not in deleted_by_end and i not in ids]
    for doc_id in surely_there:  # every document present throughout ranks below the last hit
        assert rank([last, (doc_id, brute[doc_id])])[0] == last, (doc_id, ids)


def deleting_after_each_search(client, es_client, index: str, victims: Iterator[str], deleted):
    """``client`` whose every search is followed by the deletion (refreshed) of the next victim:
    a writer that deletes between any two windows of a search."""
    search = client.search

    def search_then_delete(**kwargs):
        response = search(**kwargs)
        victim = next(victims, None)
        if victim is not None:
            es_client.delete(index=index, id=victim, refresh=True)
            deleted.append(victim)
        return response

    client.search = search_then_delete
    return client


def test_exact_windows_see_one_state_while_documents_are_deleted(
    es_client, es_url, tied_index, tied_model, caplog
):
    deleted: list[str] = []
    victims = (doc_id for doc_id in TIED_IDS if doc_id != "a000")
    client = deleting_after_each_search(
        client_from_env(es_url), es_client, tied_index.name, victims, deleted
    )
    searcher = Searcher(client, tied_index.name, tied_model)
    contexts = open_search_contexts(es_client)
    with caplog.at_level(logging.WARNING, logger="es_scm.elastic._sync.searcher"):
        for _ in range(3):
            before = set(deleted)
            result = searcher.search(QUERY_TIED, k=10)
            assert result.rounds > 1  # several windows, with deletions between them
            assert result.ids()[0] == "a000"  # never deleted, first by id: was skipped
            assert_one_state(result, tied_model, before, set(deleted))
    assert not caplog.text  # each window read whole: one state each, nothing to warn of
    assert open_search_contexts(es_client) == contexts  # nothing held open between requests


def open_search_contexts(es_client) -> int:
    """The search contexts the node holds open (a point in time holds one a shard)."""
    stats = es_client.nodes.stats(metric="indices", index_metric="search")["nodes"]
    return sum(node["indices"]["search"]["open_contexts"] for node in stats.values())


@pytest.fixture
def no_point_in_time(es_client) -> Iterator[None]:
    """A cluster that would refuse a point in time of a minute: its keep-alives are capped
    (HTTP 400 to such a request)."""
    capped = {"search.default_keep_alive": "10s", "search.max_keep_alive": "30s"}
    es_client.cluster.put_settings(persistent=capped)
    try:
        yield
    finally:
        es_client.cluster.put_settings(persistent=dict.fromkeys(capped))


def test_exact_search_needs_no_point_in_time(
    es_client, es_url, tied_index, tied_model, no_point_in_time, caplog
):
    """Each window is read whole, in one request: a cluster that refuses points in time (a
    proxy, a role without the privilege, capped keep-alives) searches as any other."""
    deleted: list[str] = []
    victims = (doc_id for doc_id in TIED_IDS if doc_id != "a000")
    client = deleting_after_each_search(
        client_from_env(es_url), es_client, tied_index.name, victims, deleted
    )
    searcher = Searcher(client, tied_index.name, tied_model)
    with caplog.at_level(logging.WARNING, logger="es_scm.elastic._sync.searcher"):
        before = set(deleted)
        result = searcher.search(QUERY_TIED, k=10)
    assert not caplog.text
    assert result.rounds > 1
    assert result.ids()[0] == "a000"
    assert_one_state(result, tied_model, before, set(deleted))


def test_async_exact_windows_see_one_state_while_documents_are_deleted(
    es_client, es_url, tied_index, tied_model
):
    deleted: list[str] = []
    victims = iter([doc_id for doc_id in TIED_IDS if doc_id != "a000"])

    async def work(client):
        search = client.search

        async def search_then_delete(**kwargs):
            response = await search(**kwargs)
            victim = next(victims, None)
            if victim is not None:
                await client.delete(index=tied_index.name, id=victim, refresh=True)
                deleted.append(victim)
            return response

        client.search = search_then_delete
        index = AsyncSCMIndex(client, tied_index.name, tied_model)
        before = set(deleted)
        return before, await index.searcher.search(QUERY_TIED, k=10)

    before, result = with_async_client(es_url, work)
    assert result.ids()[0] == "a000"
    assert_one_state(result, tied_model, before, set(deleted))


def test_exact_searches_racing_with_a_deleting_thread_equal_the_brute_force(
    es_client, tied_index, tied_model
):
    victims = [doc_id for doc_id in TIED_IDS if doc_id != "a000"][::-1][:90]
    confirmed: list[str] = []  # deleted and refreshed: no later search may see them
    requested: list[str] = []  # asked for: a search ending after it may not see them
    lock = threading.Lock()
    errors: list[BaseException] = []

    def delete_all() -> None:
        try:
            for doc_id in victims:
                with lock:
                    requested.append(doc_id)
                es_client.delete(index=tied_index.name, id=doc_id, refresh=True)
                with lock:
                    confirmed.append(doc_id)
        except BaseException as error:  # every failure counts
            errors.append(error)

    searcher = Searcher(es_client, tied_index.name, tied_model)
    outcomes = []
    deleter = threading.Thread(target=delete_all)
    deleter.start()
    while deleter.is_alive() or not outcomes:
        with lock:
            before = set(confirmed)
        result = searcher.search(QUERY_TIED, k=10)
        with lock:
            outcomes.append((result, before, set(requested)))
    deleter.join()
    assert errors == []
    for result, before, by_end in outcomes:
        assert_one_state(result, tied_model, before, by_end)


# -- hybrid options outside hybrid search (item 16) ---------------------------------------------

HYBRID_ONLY = {"fusion": "max", "depth": 50}


@pytest.fixture
def car_index(es_client, index_name, models) -> SCMIndex:
    index = SCMIndex(es_client, index_name, models["old"])
    assert index.index_documents(corpus()).ok
    return index


def test_hybrid_options_are_refused_outside_hybrid_search(es_url, car_index, models):
    # one method per intent: the other methods do not take hybrid search's options at all
    for (name, value), method in itertools.product(HYBRID_ONLY.items(), ("search", "native")):
        with pytest.raises(TypeError, match=name):
            getattr(car_index.searcher, method)(QUERY, **{name: value})
    for name in ("alpha", "rrf_k"):  # they live in the fusion: fusion_from("max", alpha=0.7)
        with pytest.raises(TypeError, match=name):
            car_index.searcher.hybrid(QUERY, **{name: 0.5})

    async def work(client):
        index = AsyncSCMIndex(client, car_index.name, models["old"])
        for (name, value), method in itertools.product(HYBRID_ONLY.items(), ("search", "native")):
            with pytest.raises(TypeError, match=name):
                await getattr(index.searcher, method)(QUERY, **{name: value})
        return await index.searcher.hybrid(QUERY, fusion=fusion_from("rrf", rrf_k=60), depth=50)

    assert with_async_client(es_url, work).mode == "hybrid"


def test_the_search_command_refuses_hybrid_options_outside_hybrid_mode(
    capsys, es_url, car_index, models, tmp_path
):
    model_dir = models["old"].save(tmp_path / "model")
    topics = tmp_path / "topics.tsv"
    topics.write_text(f"q1\t{QUERY}\n", encoding="utf-8")
    common = ("search", "--model", model_dir, "--index", car_index.name, "--es-url", es_url)
    flags = {"--fusion": "max", "--alpha": "0.5", "--rrf-k": "60", "--depth": "50"}
    for (flag, value), mode in itertools.product(flags.items(), ("exact", "native")):
        for query in ([QUERY], ["--queries", topics, "--run", tmp_path / "out.run"]):
            code, out, err = run_cli(capsys, *common, "--mode", mode, flag, value, *query)
            assert code == EXIT_USAGE, (flag, mode, err)
            assert f"{flag} applies to --mode hybrid only" in err
            assert out == ""


# -- a weight model whose weights could be NaN (issue 42, item 1) --------------------------------

#: Finite numbers whose b + θz overflows: on main, hybrid search fused to NaN scores, the hits in
#: any order, and `search --json` printed `"score": NaN`, exit 0.
NAN_WEIGHTS = {
    "legs": ["bm25", "scm"],
    "signals": ["scm.top", "bm25.top"],
    "center": [0.0, 0.0],
    "scale": [1.0, 1.0],
    "intercepts": [0.0, 0.0],
    "coefficients": [[1e308, 1e308], [-1e308, -1e308]],
}


def test_a_weight_model_that_could_fuse_to_nan_is_refused_where_it_is_read(
    capsys, es_url, car_index, models, tmp_path
):
    named = "its coefficient 1e+308 of scm.top"
    with pytest.raises(ValueError, match=re.escape(named)):  # before any search
        car_index.searcher.hybrid(QUERY, k=3, fusion=fusion_from("adaptive", model=NAN_WEIGHTS))
    model_dir = models["old"].save(tmp_path / "model")
    config = json.loads((model_dir / "model.json").read_text(encoding="utf-8"))
    config["hybrid"] = {"fusion": "adaptive", "model": NAN_WEIGHTS}  # not in the model_id
    (model_dir / "model.json").write_text(json.dumps(config), encoding="utf-8")
    common = ("search", "--model", model_dir, "--index", car_index.name, "--es-url", es_url)
    code, out, err = run_cli(capsys, *common, "--mode", "hybrid", "--json", "--k", "3", QUERY)
    assert code == EXIT_ERROR
    assert out == ""
    assert_one_line_error(err, named)
    assert "NaN" not in err
    assert "RuntimeWarning" not in err
    # a model within the bounds fuses to finite scores, each line strict JSON
    config["hybrid"]["model"] = {**NAN_WEIGHTS, "coefficients": [[2.0, -1.0], [0.0, 0.0]]}
    (model_dir / "model.json").write_text(json.dumps(config), encoding="utf-8")
    code, out, err = run_cli(capsys, *common, "--mode", "hybrid", "--json", "--k", "3", QUERY)
    assert code == EXIT_OK, err
    hits = [json.loads(line, parse_constant=_refuse) for line in out.splitlines()]
    assert len(hits) == 3
    assert all(0.0 <= hit["score"] <= 1.0 for hit in hits), hits


def _refuse(constant: str) -> None:
    raise AssertionError(f"{constant} is not JSON")


# -- the length of a query (item 17) -------------------------------------------------------------


def words(n: int) -> str:
    return " ".join(itertools.islice(itertools.cycle([*FILLER, "car", "automobile"]), n))


def test_long_queries_are_refused_at_the_documented_limit(es_url, car_index, models):
    assert car_index.searcher.search(words(MAX_QUERY_WORDS)).exact_guarantee
    too_long = words(MAX_QUERY_WORDS + 1)
    message = f"the query has {MAX_QUERY_WORDS + 1} words, more than max_query_words"
    for search in (
        lambda: car_index.searcher.search(too_long),
        lambda: car_index.searcher.native(too_long),
        lambda: car_index.searcher.hybrid(too_long),
        lambda: car_index.searcher.rescore(too_long, ids=["d0"]),
    ):
        with pytest.raises(ValueError, match=message) as refused:
            search()
        assert "\n" not in str(refused.value)
    short = SCMIndex(car_index.client, car_index.name, models["old"], max_query_words=3)
    assert short.searcher.search("red fast old").exact_guarantee
    with pytest.raises(ValueError, match="4 words, more than max_query_words=3"):
        short.searcher.search("red fast old road")
    with pytest.raises(ValueError, match="max_query_words"):
        Searcher(car_index.client, car_index.name, models["old"], max_query_words=0)

    async def work(client):
        index = AsyncSCMIndex(client, car_index.name, models["old"], max_query_words=3)
        with pytest.raises(ValueError, match="4 words, more than max_query_words=3"):
            await index.searcher.search("red fast old road")
        return await index.searcher.search("red fast old")

    assert with_async_client(es_url, work).exact_guarantee


@pytest.fixture(scope="module")
def wide(es_client) -> tuple[SoftCosineModel, list[str], int]:
    """A model of more distinct words than the cluster's clause limit, and that limit."""
    limit = cluster_max_clauses(es_client)
    vocabulary = [f"w{i}" for i in range(limit + 400)]
    texts = [" ".join(vocabulary[i : i + 100]) for i in range(0, len(vocabulary), 50)]
    return SoftCosineModel.build(texts), texts, limit


def test_long_queries_never_overflow_the_clause_limit(es_client, index_name, wide):
    model, texts, limit = wide
    index = SCMIndex(es_client, index_name, model, max_query_words=10 * limit)
    assert index.index_documents(
        {"id": str(i), "text": text, "part": str(i % 2)} for i, text in enumerate(texts)
    ).ok
    query = " ".join(f"w{i}" for i in range(limit + 300))
    filters = [{"term": {"metadata.part": "0"}}, {"exists": {"field": "text"}}]
    native = index.searcher.native(query, k=5, filter=filters)
    assert len(native) == 5
    assert native.pruned_terms >= 300 + len(filters)
    with pytest.raises(ValueError, match=f"cluster's limit of {limit} clauses") as refused:
        index.searcher.hybrid(query, k=5)
    assert "\n" not in str(refused.value)
    fitting = " ".join(f"w{i}" for i in range(limit - 10))
    assert len(index.searcher.hybrid(fitting, k=5, filter=filters)) == 5
    with pytest.raises(ValueError, match=f"cluster's limit of {limit} clauses"):
        index.searcher.hybrid(fitting, k=5, filter=filters * 6)


def test_the_search_command_reads_queries_from_stdin(
    capsys, monkeypatch, es_url, car_index, models, tmp_path
):
    model_dir = models["old"].save(tmp_path / "model")
    common = ("search", "--model", model_dir, "--index", car_index.name, "--es-url", es_url)
    common += ("--mode", "exact")  # compared with Searcher.search
    expected = car_index.searcher.search(QUERY, k=3).ids()
    monkeypatch.setattr("sys.stdin", io.StringIO(f"  {QUERY}\n"))
    code, out, err = run_cli(capsys, *common, "--k", "3", "--json", "-")
    assert code == EXIT_OK, err
    assert [json.loads(line)["id"] for line in out.splitlines()] == expected
    monkeypatch.setattr("sys.stdin", io.StringIO(f"q1\t{QUERY}\nq2\tred road\n"))
    run_file = tmp_path / "stdin.run"
    code, _, err = run_cli(capsys, *common, "--k", "3", "--queries", "-", "--run", run_file)
    assert code == EXIT_OK, err
    lines = run_file.read_text(encoding="utf-8").splitlines()
    assert [line.split()[2] for line in lines if line.startswith("q1 ")] == expected
    assert any(line.startswith("q2 ") for line in lines)
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"_id": "q3", "text": QUERY})))
    code, _, err = run_cli(capsys, *common, "--k", "3", "--queries", "-", "--run", run_file)
    assert code == EXIT_OK, err
    assert run_file.read_text(encoding="utf-8").split()[0] == "q3"


def test_the_search_command_bounds_query_length(
    capsys, monkeypatch, es_url, car_index, models, tmp_path
):
    model_dir = models["old"].save(tmp_path / "model")
    common = ("search", "--model", model_dir, "--index", car_index.name, "--es-url", es_url)
    code, _, err = run_cli(capsys, *common, "--max-query-words", "3", "red fast old road")
    assert code == EXIT_ERROR
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "4 words, more than --max-query-words 3" in lines[0]
    monkeypatch.setattr("sys.stdin", io.StringIO(words(MAX_QUERY_WORDS + 1)))
    code, _, err = run_cli(capsys, *common, "-")
    assert code == EXIT_ERROR
    assert f"{MAX_QUERY_WORDS + 1} words, more than --max-query-words {MAX_QUERY_WORDS}" in err
    topics = tmp_path / "topics.tsv"
    topics.write_text(f"q1\t{QUERY}\nq2\tred fast old road\n", encoding="utf-8")
    code, _, err = run_cli(
        capsys, *common, "--max-query-words", "3", "--queries", topics, "--run", tmp_path / "r"
    )
    assert code == EXIT_ERROR
    assert "query q2 has 4 words, more than --max-query-words 3" in err
    assert not (tmp_path / "r").exists()
    code, out, err = run_cli(
        capsys, *common, "--max-query-words", "4", "--json", "red fast old road"
    )
    assert code == EXIT_OK, err
    assert out


# -- text that is not UTF-8 (issue 28, item 8) ----------------------------------------------------

NOT_UTF8 = b"automobile \xff\xfe car"  # bytes a shell may hand over: not UTF-8
# what Python makes of them in sys.argv (surrogateescape): lone surrogates
AS_PYTHON_READS = NOT_UTF8.decode("utf-8", "surrogateescape")


def test_every_method_reads_text_that_is_not_utf8_the_same_way(car_index):
    searcher = car_index.searcher
    clean = "automobile car"
    for method in ("search", "native", "hybrid", "bm25"):
        got = getattr(searcher, method)(AS_PYTHON_READS, k=5)
        expected = getattr(searcher, method)(clean, k=5)
        assert got.ids() == expected.ids(), method  # the replaced bytes are no word
        assert [hit.score for hit in got] == [hit.score for hit in expected], method
    rescored = searcher.rescore(AS_PYTHON_READS, ids=["d0", "d25"])
    assert rescored.ids() == searcher.rescore(clean, ids=["d0", "d25"]).ids()
    lone = "automobile \ud800"  # a lone surrogate from any other source
    assert searcher.hybrid(lone, k=5).ids() == searcher.hybrid("automobile", k=5).ids()


def test_the_search_command_takes_a_query_that_is_not_utf8(es_url, car_index, models, tmp_path):
    model_dir = models["old"].save(tmp_path / "model")
    command = [sys.executable, "-m", "es_scm.cli", "search", "--model", str(model_dir)]
    command += ["--index", car_index.name, "--es-url", es_url, "--json", "--k", "3"]
    for mode in ("exact", "hybrid", "bm25"):
        done = subprocess.run(
            [*command, "--mode", mode, NOT_UTF8],
            capture_output=True,
            check=False,  # the environment as it is (the 8.x phase puts its client first)
        )
        assert done.returncode == EXIT_OK, (mode, done.stderr)
        method = {"exact": "search"}.get(mode, mode)
        expected = getattr(car_index.searcher, method)("automobile car", k=3).ids()
        assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == expected


# -- untrusted filters (issue 28, item 11) ------------------------------------------------------


@pytest.fixture
def secret_index(es_client, index_name) -> str:
    """Another index, which the searched one's users must not read: one document, {"ids": ...}."""
    secret = f"{index_name}-secret"
    es_client.index(index=secret, id="1", document={"ids": ["d0", "d50"]}, refresh=True)
    return secret  # index_name's fixture deletes it


def lookup(secret: str) -> dict:
    """A terms lookup: the values of another index's document."""
    return {"terms": {"_id": {"index": secret, "id": "1", "path": "ids"}}}


WRAPPER = {"wrapper": {"query": "eyJtYXRjaF9hbGwiOnt9fQ=="}}  # base64 of {"match_all":{}}


def test_an_untrusted_filter_can_read_another_index_unless_the_policy_is_safe(
    es_client, car_index, models, secret_index
):
    trusting = car_index.searcher  # filter_policy="any", the API's default
    # what an untrusted filter does with the searcher's rights: the hits tell what the other
    # index's document holds
    assert sorted(trusting.search(QUERY, k=10, filter=lookup(secret_index)).ids()) == ["d0", "d50"]
    assert trusting.search(QUERY, k=10, filter=WRAPPER).ids()
    safe = Searcher(es_client, car_index.name, models["old"], filter_policy="safe")
    for clause, name in ((lookup(secret_index), "terms"), (WRAPPER, "wrapper")):
        for method in ("search", "native", "hybrid", "bm25"):
            with pytest.raises(UnsafeFilterError, match=f"filter clause '{name}' is not allowed"):
                getattr(safe, method)(QUERY, filter=clause)
    hidden = {"bool": {"must_not": [{"script": {"script": "true"}}]}}
    with pytest.raises(UnsafeFilterError, match="filter clause 'script'") as refused:
        safe.search(QUERY, filter=[{"term": {"metadata.group": "0"}}, hidden])
    assert "\n" not in str(refused.value)
    allowed = {
        "bool": {"filter": [{"terms": {"_id": ["d0", "d50"]}}, {"exists": {"field": "text"}}]}
    }
    assert (
        safe.search(QUERY, k=10, filter=allowed).ids()
        == trusting.search(QUERY, k=10, filter=allowed).ids()
    )


def test_the_policy_refuses_before_any_request(es_client, models):
    safe = Searcher(es_client, "es-scm-test-nothing-here", models["old"], filter_policy="safe")
    with pytest.raises(UnsafeFilterError):  # not IndexNotFoundError: nothing was asked
        safe.search(QUERY, filter=WRAPPER)


def test_the_search_command_refuses_unsafe_filters_unless_allowed(
    capsys, es_url, car_index, models, secret_index, tmp_path
):
    model_dir = models["old"].save(tmp_path / "model")
    common = ("search", "--model", model_dir, "--index", car_index.name, "--es-url", es_url)
    for clause, name in ((lookup(secret_index), "terms"), (WRAPPER, "wrapper")):
        code, out, err = run_cli(capsys, *common, "--json", "--filter", json.dumps(clause), QUERY)
        assert code == EXIT_USAGE  # a usage error, as a filter on a field the index lacks
        assert out == ""
        assert_one_line_error(err, f"--filter: filter clause '{name}' is not allowed")
    code, out, err = run_cli(
        capsys, *common, "--json", "--allow-unsafe-filters", "--filter", json.dumps(WRAPPER), QUERY
    )
    assert code == EXIT_OK, err
    assert out
    safe = json.dumps({"bool": {"filter": [{"ids": {"values": ["d0", "d25", "d50"]}}]}})
    code, out, err = run_cli(capsys, *common, "--json", "--filter", safe, QUERY)
    assert code == EXIT_OK, err
    assert {json.loads(line)["id"] for line in out.splitlines()} == {"d0", "d50"}
    code, out, err = run_cli(capsys, *common, "--json", "--filter", "group=0", QUERY)
    assert code == EXIT_OK, err  # FIELD=VALUE is a term on metadata.FIELD: always safe


# -- an id held by two indices of a pattern (issue 34, item 9) ----------------------------------

TWINS = {  # the same id in both indices, with other texts: its copies score differently
    "a": {"t1": "red car engine", "t2": "old city", "a3": "fast red car"},
    "b": {"t1": "red car red car engine wheel", "t2": "red road", "b3": "city trip"},
}


@pytest.fixture
def twin_indices(es_client, engine, index_name) -> tuple[str, SoftCosineModel]:
    texts = [text for part in TWINS.values() for text in part.values()]
    model = SoftCosineModel.build([*texts, "red car", "city"])
    embedding = {
        "type": "dense_vector",
        "dims": 3,
        "similarity": "cosine",
        "index_options": {"type": "flat"},
    }
    # an engine without dense vectors (OpenSearch) keeps them in _source, unindexed
    mapping = {"embedding": embedding} if engine.dense_vectors else {}
    for part, documents in TWINS.items():
        index = SCMIndex(es_client, f"{index_name}-{part}", model)
        index.create(metadata_mapping=mapping)
        vectors = {"t1": [1.0, 0.2, 0.1] if part == "a" else [0.9, 0.5, 0.0]}
        report = index.index_documents(
            {"id": doc_id, "text": text, "embedding": vectors.get(doc_id, [0.1, 1.0, float(n)])}
            for n, (doc_id, text) in enumerate(documents.items())
        )
        assert report.ok, report.failures[:3]
    return f"{index_name}-*", model


def test_an_id_held_by_two_indices_of_a_pattern_is_one_hit_in_every_mode(
    es_client, engine, index_name, twin_indices
):
    """Every mode lists an id once, as the copy it ranks highest (the one rule: exact and hybrid
    kept one copy, native, dense and bm25 both); hybrid search's BM25 score of it is the one
    bm25 mode ranks it by. (The dense modes where the engine has dense vectors.)"""
    pattern, model = twin_indices
    searcher = Searcher(es_client, pattern, model)
    vector = DenseQuery("metadata.embedding", [1.0, 0.3, 0.0])
    query = "red car"
    results = {
        "exact": searcher.search(query, 10),
        "native": searcher.native(query, 10),
        "bm25": searcher.bm25(query, 10),
        "hybrid": searcher.hybrid(query, 10),
    }
    dense_modes = ("dense", "hybrid dense") if engine.dense_vectors else ()
    if dense_modes:
        results["dense"] = searcher.dense(query, 10, dense=vector)
        results["hybrid dense"] = searcher.hybrid(
            query,
            10,
            dense=vector,
            fusion=fusion_from("zscore", weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5}),
        )
    for mode, result in results.items():
        ids = result.ids()
        assert len(ids) == len(set(ids)), (mode, ids)
        assert "t1" in ids, mode
    alone = {part: Searcher(es_client, f"{index_name}-{part}", model) for part in TWINS}
    # each mode's score of t1 is its best copy's
    best = {
        "bm25": max(hit.score for p in TWINS for hit in alone[p].bm25(query, 10) if hit.id == "t1"),
    }
    if dense_modes:
        best["dense"] = max(
            hit.score
            for p in TWINS
            for hit in alone[p].dense(query, 10, dense=vector)
            if hit.id == "t1"
        )
    exact_copies = [
        hit.score for p in TWINS for hit in alone[p].search(query, 10) if hit.id == "t1"
    ]
    assert next(h.score for h in results["exact"] if h.id == "t1") == max(exact_copies)
    for mode in ("bm25", *dense_modes[:1]):
        assert next(h.score for h in results[mode] if h.id == "t1") == best[mode], mode
    for mode in ("hybrid", *dense_modes[1:]):
        components = next(h.components for h in results[mode] if h.id == "t1")
        assert components is not None
        assert components["bm25"] == best["bm25"], mode
        assert components["scm"] == max(exact_copies), mode


# -- cancelled searches hold nothing (issue 34, item 4) ------------------------------------------


def test_cancelled_async_searches_leave_nothing_open(es_client, es_url, tied_index, tied_model):
    """40 searches of the LangChain retriever over an ``AsyncSCMIndex``, each cancelled after 0
    to 20 ms, of a query whose windows go past the first (121 tied documents): the node's open
    search contexts are what they were at once, not a minute later (a point in time per
    cancelled search stayed open until it expired; windows are now read whole, one request
    each, and hold nothing between them), and the searcher still answers."""
    from es_scm.integrations.langchain import SCMRetriever

    before = open_search_contexts(es_client)

    async def work(client):
        index = AsyncSCMIndex(client, tied_index.name, tied_model)
        retriever = SCMRetriever(searcher=index, k=10)
        await retriever.ainvoke(QUERY_TIED)  # warm: the model checked
        started = time.perf_counter()
        await retriever.ainvoke(QUERY_TIED)
        took = time.perf_counter() - started  # how long one takes
        cancelled = 0
        for n in range(40):
            task = asyncio.ensure_future(retriever.ainvoke(QUERY_TIED))
            await asyncio.sleep(took * n / 50)  # cut at every point of its course
            if not task.done():
                task.cancel()
                cancelled += 1
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return cancelled, await retriever.ainvoke(QUERY_TIED)

    cancelled, documents = with_async_client(es_url, work)
    assert cancelled >= 20  # most were cut short
    assert open_search_contexts(es_client) == before
    assert documents[0].id == "a000"  # the top 10 of the tied documents, by id
