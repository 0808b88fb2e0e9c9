"""Model swaps behind an alias on a real node: searches keep answering through the swap, from the
old model before it and the new one after; what happens to the old index; failures that leave
the alias where it was."""

from __future__ import annotations

import json
import threading
import time

import pytest

from es_scm import SoftCosineModel, TermSimilarityMatrix
from es_scm.cli.errors import EXIT_ERROR, EXIT_OK
from es_scm.elastic import (
    FLATTENED,
    AliasSearcher,
    AliasSwapError,
    IndexNotFoundError,
    ModelMismatchError,
    SCMIndex,
    Searcher,
    reindex_into_alias,
)
from es_scm.index.ingest import IngestError
from es_scm.index.schema import mapping_options

FILLER = ["red", "fast", "old", "road", "engine", "wheel", "city", "trip", "fuel", "garage"]
QUERY = "automobile"


def corpus(n: int) -> list[dict]:
    """Every document with "automobile" has "car" too, so that every hit of QUERY scores
    differently under the identity S and under the thesaurus S: each result says its model.
    (Few documents match, so that exact mode's window, which ties make grow, stays small.)"""
    documents = []
    for i in range(n):
        words = [FILLER[i % 10], FILLER[(i // 10) % 10]]
        words += ["car", "automobile"] if i % 50 == 0 else ["car"] if i % 50 == 25 else []
        documents.append({"id": f"d{i}", "text": " ".join(words), "group": str(i % 4)})
    return documents


@pytest.fixture(scope="module")
def models() -> tuple[SoftCosineModel, SoftCosineModel]:
    texts = [d["text"] for d in corpus(3000)]
    plain = SoftCosineModel.build(texts)  # S = I
    thesaurus = SoftCosineModel.build(
        texts,
        similarity=lambda terms: TermSimilarityMatrix.from_pairs(
            terms, [("car", "automobile", 0.8)]
        ),
    )
    assert plain.model_id != thesaurus.model_id
    return plain, thesaurus


def answered_by(result, models, texts: dict[str, str]) -> str:
    """Which model's exact scores the result carries: "old", "new" (or "?")."""
    labels = []
    for label, model in zip(("old", "new"), models, strict=True):
        expected = [model.similarity(QUERY, texts[hit.id]) for hit in result]
        if all(abs(hit.score - e) < 1e-9 for hit, e in zip(result, expected, strict=True)):
            labels.append(label)
    return labels[0] if len(labels) == 1 and len(result) else "?"


def test_searches_keep_answering_through_a_model_swap(es_client, index_name, models):
    old, new = models
    alias, documents = index_name, corpus(3000)
    texts = {d["id"]: d["text"] for d in documents}
    first = reindex_into_alias(es_client, alias, old, documents, batch_size=200)
    assert (first.previous, first.deleted, first.kept) == ([], [], [])

    searcher = AliasSearcher(es_client, alias, [old, new])
    answers: list[tuple[float, str]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def search_continuously() -> None:
        while not stop.is_set():
            try:
                result = searcher.search(QUERY, k=10)
                answers.append((time.monotonic(), answered_by(result, models, texts)))
            except BaseException as error:  # every failure counts
                errors.append(error)

    thread = threading.Thread(target=search_continuously)
    thread.start()
    try:
        time.sleep(0.3)
        started = time.monotonic()
        swap = reindex_into_alias(es_client, alias, new, documents, batch_size=100, grace=0.5)
        moved = time.monotonic()
        time.sleep(1.0)
    finally:
        stop.set()
        thread.join()

    assert errors == []
    labels = [label for _, label in answers]
    assert "?" not in labels
    assert labels.index("new") > 0  # the old model first …
    assert labels[labels.index("new") :] == ["new"] * labels[labels.index("new") :].count("new")
    during = [label for at, label in answers if started <= at < moved]
    assert set(during) <= {"old", "new"}
    assert during.count("old") >= 5  # searched while the new index was being built
    assert labels[-1] == "new"  # … the new one after
    assert swap.previous == [first.index]
    assert swap.deleted == [first.index]
    assert not es_client.indices.exists(index=first.index)
    assert list(es_client.indices.get_alias(name=alias)) == [swap.index]


def test_a_same_model_reindex_is_invisible_to_a_plain_searcher(es_client, index_name, models):
    old, _ = models
    alias, documents = index_name, corpus(1500)
    reindex_into_alias(es_client, alias, old, documents)
    plain = SCMIndex(es_client, alias, old)
    errors, results = [], []
    stop = threading.Event()

    def search_continuously() -> None:
        while not stop.is_set():
            try:
                results.append(len(plain.searcher.search(QUERY, k=10)))
            except BaseException as error:
                errors.append(error)

    thread = threading.Thread(target=search_continuously)
    thread.start()
    try:
        swap = reindex_into_alias(es_client, alias, old, documents, text_analyzer="whitespace")
        time.sleep(0.3)
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert set(results) == {10}  # and at least one search
    assert mapping_options(es_client.indices.get_mapping(index=alias)[swap.index]["mappings"]) == {
        "text_analyzer": "whitespace",
        "metadata_mapping": None,
        "expansion": "query",
        "dense": None,
    }


def test_the_old_index_is_kept_when_asked_or_still_in_use(es_client, index_name, models):
    old, new = models
    alias, documents = index_name, corpus(30)
    first = reindex_into_alias(
        es_client, alias, old, documents, metadata_mapping={"group": {"type": "integer"}},
        text_analyzer="simple",
    )  # fmt: skip
    kept = reindex_into_alias(es_client, alias, new, documents, keep_old=True, grace=0)
    assert kept.kept == [(first.index, "kept as asked (keep_old)")]
    assert es_client.indices.exists(index=first.index)
    # the schema of the index the alias pointed at is the new index's too, unless asked otherwise
    mappings = es_client.indices.get_mapping(index=kept.index)[kept.index]["mappings"]
    assert mapping_options(mappings) == {
        "text_analyzer": "simple",
        "metadata_mapping": {"group": {"type": "integer"}},
        "expansion": "query",
        "dense": None,
    }
    es_client.indices.put_alias(index=kept.index, name=alias + "-reports")
    third = reindex_into_alias(
        es_client, alias, old, documents, metadata_mapping=FLATTENED, grace=0
    )
    assert third.kept == [(kept.index, f"still in use by the alias '{alias}-reports'")]
    assert es_client.indices.exists(index=kept.index)
    mappings = es_client.indices.get_mapping(index=third.index)[third.index]["mappings"]
    assert mapping_options(mappings)["metadata_mapping"] is None
    result = Searcher(es_client, alias, old).search(
        "red road", k=3, filter={"term": {"metadata.group": "0"}}
    )
    assert len(result) == 3
    assert all(int(doc_id[1:]) % 4 == 0 for doc_id in result.ids())


def test_an_index_becomes_an_alias_of_the_same_name(es_client, index_name, models):
    old, new = models
    SCMIndex(es_client, index_name, old).index_documents(corpus(30))
    with pytest.raises(ValueError, match="cannot be kept"):
        reindex_into_alias(es_client, index_name, new, corpus(30), keep_old=True)
    swap = reindex_into_alias(es_client, index_name, new, corpus(30))
    assert swap.deleted == [index_name]
    assert list(es_client.indices.get_alias(name=index_name)) == [swap.index]
    assert SCMIndex(es_client, index_name, new).count() == 30
    with pytest.raises(ModelMismatchError):
        Searcher(es_client, index_name, old).search(QUERY)
    with pytest.raises(ModelMismatchError, match="does not hold"):
        AliasSearcher(es_client, index_name, [old]).search(QUERY)
    with pytest.raises(IndexNotFoundError):
        AliasSearcher(es_client, index_name + "-none", [old]).search(QUERY)


def test_failures_leave_the_alias_where_it_was(es_client, index_name, models):
    old, new = models
    first = reindex_into_alias(es_client, index_name, old, corpus(30))
    bad = [*corpus(30), {"id": "L" * 600, "text": "car"}]
    with pytest.raises(AliasSwapError, match="1 document\\(s\\) failed") as refused:
        reindex_into_alias(es_client, index_name, new, bad)
    assert refused.value.report.failed == 1

    def broken_stream():
        yield from corpus(30)
        raise RuntimeError("the source went away")

    with pytest.raises(IngestError, match="the source went away"):
        reindex_into_alias(es_client, index_name, new, broken_stream(), batch_size=10)
    with pytest.raises(ValueError, match="unknown text analyzer"):
        reindex_into_alias(es_client, index_name, new, corpus(3), text_analyzer="no_such_analyzer")
    # the alias never moved, and no unfinished index is left behind
    assert list(es_client.indices.get_alias(name=index_name)) == [first.index]
    assert list(es_client.indices.get(index=f"{index_name}-*")) == [first.index]
    allowed = reindex_into_alias(es_client, index_name, new, bad, max_failures=1)
    assert allowed.report.failed == 1
    assert list(es_client.indices.get_alias(name=index_name)) == [allowed.index]


def test_the_alias_option_of_the_index_command(
    cli, es_client, es_url, index_name, models, tmp_path
):
    old, new = models
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in corpus(50)), encoding="utf-8")
    common = ("--alias", index_name, "--corpus", path, "--es-url", es_url, "--no-progress")
    code, out, _ = cli("index", "--model", old.save(tmp_path / "old"), *common)
    assert code == EXIT_OK
    assert f"moved the alias {index_name} from nothing (a new alias) to {index_name}-20" in out
    first = list(es_client.indices.get_alias(name=index_name))
    code, out, _ = cli(
        "index", "--model", new.save(tmp_path / "new"), *common, "--keep-old", "--optimize"
    )
    assert code == EXIT_OK
    assert f"moved the alias {index_name} from {first[0]} to" in out
    assert f"kept the old index {first[0]}: kept as asked (keep_old)" in out
    assert es_client.indices.exists(index=first[0])
    code, _, err = cli("index", "--model", tmp_path / "new", *common, "--recreate")
    assert code == 2
    assert "--recreate does not go with --alias" in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n", encoding="utf-8")
    code, _, err = cli(
        "index", "--model", tmp_path / "old", "--alias", index_name, "--corpus", broken,
        "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert f"the alias '{index_name}' was not moved" in err
    assert len(es_client.indices.get(index=f"{index_name}-*")) == 2  # first and second only


def test_the_alias_searcher_has_every_search_method_of_a_searcher(es_client, index_name, models):
    """search, native, hybrid, bm25 and rescore on the alias answer as a searcher of the index
    it points at, with that index's model."""
    old, new = models
    reindex_into_alias(es_client, index_name, old, corpus(60))
    swap = reindex_into_alias(es_client, index_name, new, corpus(60), grace=0)
    through_alias = AliasSearcher(es_client, index_name, [old, new])
    direct = Searcher(es_client, swap.index, new)
    calls = {
        "search": lambda s: s.search(QUERY, 5),
        "native": lambda s: s.native(QUERY, 5),
        "hybrid": lambda s: s.hybrid(QUERY, 5),
        "bm25": lambda s: s.bm25("car", 5, filter={"term": {"metadata.group": "0"}}),
        "rescore": lambda s: s.rescore(QUERY, ids=["d0", "d25", "d1"]),
    }
    for name, call in calls.items():
        got, expected = call(through_alias), call(direct)
        assert got.ids() == expected.ids(), name
        assert [hit.score for hit in got] == [hit.score for hit in expected], name
        assert got.ids(), name
