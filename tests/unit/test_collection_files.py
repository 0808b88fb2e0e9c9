"""Test collections as users have them: BEIR and TREC topics and qrels, measures, the report.

The readers are checked on small files written here, with the expected values by hand, and on the
real BEIR SciFact training files in ``../shared/data`` (skipped when the folder is absent).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from es_scm.evaluation.topics import read_qrels, read_test_collection, read_topics
from es_scm.evaluation.trec import MEASURES, TrecReport, check_measures, measure_label

SCIFACT = "beir-scifact-train"


def _write(path: Path, text: str, newline: str = "\n") -> Path:
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


# -- topics --------------------------------------------------------------------------------------


def test_beir_queries_are_keyed_by_underscore_id(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "queries.jsonl",
        '{"_id": "0", "text": "0-dimensional biomaterials lack inductive properties.", '
        '"metadata": {}}\n'
        '{"_id": "2", "text": "1 in 5 million in UK have abnormal PrP positivity.", '
        '"metadata": {"13734012": [{"sentences": [4], "label": "CONTRADICT"}]}}\n',
        newline="\r\n",
    )
    assert read_topics(path) == {
        "0": "0-dimensional biomaterials lack inductive properties.",
        "2": "1 in 5 million in UK have abnormal PrP positivity.",
    }


def test_bad_jsonl_topics_name_the_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.jsonl", '{"_id": "1", "text": "fine"}\n{"_id": "2", "text": \n')
    with pytest.raises(ValueError, match=r"q\.jsonl:2: invalid JSON") as error:
        read_topics(path)
    assert "\n" not in str(error.value)
    path = _write(tmp_path / "r.jsonl", '{"_id": "1"}\n')
    with pytest.raises(ValueError, match=r"r\.jsonl:1: a topic needs one of"):
        read_topics(path)
    path = _write(tmp_path / "s.jsonl", "[1, 2]\n")
    with pytest.raises(ValueError, match=r"s\.jsonl:1: expected a JSON object"):
        read_topics(path)


# -- qrels ---------------------------------------------------------------------------------------


def test_beir_qrels_with_a_header_and_crlf(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "qrels.tsv",
        "query-id\tcorpus-id\tscore\n0\t31715818\t1\n2\t13734012\t1\n2\t999\t0\n",
        newline="\r\n",
    )
    assert read_qrels(path) == {"0": {"31715818": 1}, "2": {"13734012": 1, "999": 0}}


def test_trec_qrels_still_read_and_a_header_is_only_a_first_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "qrels.txt", "301 0 FBIS-1 2\n\n301 0 FBIS-2 0\n302 0 FT-9 1.0\n")
    assert read_qrels(path) == {"301": {"FBIS-1": 2, "FBIS-2": 0}, "302": {"FT-9": 1}}
    path = _write(tmp_path / "late.tsv", "q\td\t1\nquery-id\tcorpus-id\tscore\n")
    with pytest.raises(ValueError, match=r"late\.tsv:2: relevance 'score' is not a whole number"):
        read_qrels(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("query-id\tcorpus-id\tscore\n1\t2\n", r"qrels\.tsv:2: expected 'qid iter docid rel'"),
        ("1 0 d1 1\n1 0 d2 1 extra\n", r"qrels\.tsv:2: expected .* got 5 columns"),
        ("1 d1 1\n1 d2 0.5\n", r"qrels\.tsv:2: relevance '0\.5' is not a whole number"),
        ("1 d1 1\n1 d2 nan\n", r"qrels\.tsv:2: relevance 'nan' is not a whole number"),
    ],
)
def test_bad_qrels_name_the_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = _write(tmp_path / "qrels.tsv", content)
    with pytest.raises(ValueError, match=message) as error:
        read_qrels(path)
    assert "\n" not in str(error.value)


def test_a_beir_collection_in_one_call(tmp_path: Path) -> None:
    corpus = _write(
        tmp_path / "corpus.jsonl",
        '{"_id": "d1", "title": "Car repair", "text": "the shop fixes engines"}\n'
        '{"_id": "d2", "title": "", "text": "automobile dealer"}\n',
    )
    topics = _write(tmp_path / "queries.jsonl", '{"_id": "q1", "text": "car"}\n')
    qrels = _write(tmp_path / "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    collection = read_test_collection(corpus, topics, qrels)
    assert collection.name == tmp_path.name  # the folder, not "corpus"
    assert collection.documents == {
        "d1": "Car repair\nthe shop fixes engines",
        "d2": "automobile dealer",
    }
    assert collection.judged_queries() == {"q1": "car"}
    untitled = read_test_collection(corpus, topics, qrels, title_field=None)
    assert untitled.documents["d1"] == "the shop fixes engines"
    no_documents = read_test_collection(None, topics, qrels)  # an index holds them
    assert (no_documents.name, no_documents.documents) == (tmp_path.name, {})


def test_scifact_as_distributed(shared_data: Path) -> None:
    folder = shared_data / SCIFACT
    if not folder.is_dir():
        pytest.skip(f"BEIR SciFact not found at {folder}")
    assert (
        (folder / "qrels" / "train.tsv").read_bytes().startswith(b"query-id\tcorpus-id\tscore\r\n")
    )
    collection = read_test_collection(
        folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "train.tsv"
    )
    assert len(collection.documents) == 5183
    assert len(collection.queries) == 809
    assert len(collection.qrels) == 809
    assert sum(map(len, collection.qrels.values())) == 919
    assert len(collection.judged_queries()) == 809
    assert collection.queries["0"] == "0-dimensional biomaterials lack inductive properties."
    assert collection.qrels["0"] == {"31715818": 1}
    first = json.loads((folder / "corpus.jsonl").open(encoding="utf-8").readline())
    assert collection.documents[first["_id"]] == f"{first['title']}\n{first['text']}"
    judged = {doc for docs in collection.qrels.values() for doc in docs}
    assert judged <= set(collection.documents)


# -- measures and the report ---------------------------------------------------------------------


def test_measures_are_checked_named_and_deduplicated() -> None:
    assert check_measures(MEASURES) == ["AP", "nDCG@10", "R@100"]
    assert check_measures(["AP@100", "P@10", "RR", "P@10", "NumRet"]) == [
        "AP@100",
        "P@10",
        "RR",
        "NumRet",
    ]
    for bad, message in [
        ("foo", "measure 'foo': unknown measure"),
        ("nDCG@x", "measure 'nDCG@x': cannot parse it"),
        ("R@0", "measure 'R@0': the cutoff must be a whole number of at least 1"),
        ("AP@2.5", "measure 'AP@2.5': the cutoff must be"),
        ("alpha_nDCG@10", "measure 'alpha_nDCG@10': ir_measures cannot compute it"),
    ]:
        with pytest.raises(ValueError, match=message) as error:
            check_measures([bad])
        assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="no measures given"):
        check_measures([])


def test_the_default_table_is_unchanged_and_others_show_their_measures() -> None:
    methods = {"bm25": {"AP": 0.5, "nDCG@10": 0.25, "R@100": 1.0}}
    report = TrecReport("toy", methods, per_query={})
    assert report.markdown().splitlines() == [
        "| collection | method | MAP | nDCG@10 | R@100 |",
        "|:---|:---|---:|---:|---:|",
        "| toy | BM25 (Elasticsearch) | 50.00 | 25.00 | 100.00 |",
    ]
    other = TrecReport(
        "toy", {"scm": {"P@10": 0.1, "NumRet": 40.0}}, {}, measures=["P@10", "NumRet"]
    )
    assert other.markdown().splitlines() == [
        "| collection | method | P@10 | NumRet |",
        "|:---|:---|---:|---:|",
        "| toy | SCM (Elasticsearch, exact) | 10.00 | 40 |",
    ]
    assert [measure_label(m) for m in ("AP", "AP@100", "nDCG@10")] == ["MAP", "MAP@100", "nDCG@10"]


# -- run files and collection names (es_scm.evaluation.trec.read_trec_run, topics.collection_name)


def test_read_trec_run_keeps_each_documents_best_score(tmp_path):
    from es_scm.evaluation.trec import read_trec_run

    path = tmp_path / "dense.run"
    path.write_text("q1 Q0 d1 1 0.9 dense\nq1 Q0 d2 2 0.5 dense\n\nq2 Q0 d1 1 0.3 dense\n"
                    "q1 Q0 d2 3 0.7 dense\n")  # fmt: skip
    assert read_trec_run(path) == {"q1": {"d1": 0.9, "d2": 0.7}, "q2": {"d1": 0.3}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 Q0 d1 1 0.9\n", r"bad\.run:1: a TREC run line has 6 columns"),
        ("q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 high t\n", r"bad\.run:2: the score 'high' is not a number"),
        ("q1 Q0 d1 1 nan t\n", r"bad\.run:1: the score 'nan' is not finite"),
        ("\n", r"bad\.run: the run file has no line"),
    ],
)
def test_read_trec_run_names_the_bad_line(tmp_path, text, message):
    from es_scm.evaluation.trec import read_trec_run

    path = tmp_path / "bad.run"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_trec_run(path)


def test_a_collection_is_named_after_its_folder_when_its_file_name_is_generic(tmp_path):
    from es_scm.evaluation.topics import collection_name

    folder = tmp_path / "beir-scifact-train"
    folder.mkdir()
    assert collection_name(folder / "corpus.jsonl") == "beir-scifact-train"
    assert collection_name(folder / "queries.jsonl") == "beir-scifact-train"
    assert collection_name(folder / "news.2024.jsonl") == "news"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("q.tsv", "a\tcancer\na\tbrain\n", ":2: the topic id 'a' is repeated (first on line 1)"),
        ("q.jsonl", '{"id": 1, "text": "x"}\n{"qid": "1", "text": "y"}\n', ":2: the topic id '1'"),
        (
            "q.trec",
            "<top>\n<num> Number: 301\n<title> a\n</top>\n\n<top>\n<num> 301\n<title> b\n</top>\n",
            ":6: the topic id '301' is repeated (first on line 1)",
        ),
    ],
)
def test_a_topic_id_given_twice_is_an_error_naming_the_file_and_both_lines(
    tmp_path, name, text, message
):
    """Issue 34, item 2: the later topic silently replaced the earlier one."""
    from es_scm.evaluation.topics import read_topics

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="^" + re.escape(f"{path}{message}")):
        read_topics(path)


def test_a_topics_file_that_is_not_utf8_names_the_line(tmp_path):
    from es_scm.evaluation.topics import read_qrels, read_topics

    path = tmp_path / "q.tsv"
    path.write_bytes(b"1\tcoffee\n2\tcaf\xe9\n")
    with pytest.raises(
        ValueError, match=re.escape(f"{path}:2: not valid UTF-8 (byte 0xe9 at column 6")
    ):
        read_topics(path)
    path.write_bytes("1\tcoffee\n".encode("utf-16"))
    with pytest.raises(ValueError, match=f"{re.escape(str(path))}:1: .* the file is UTF-16"):
        read_qrels(path)
