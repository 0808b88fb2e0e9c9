"""Reading SemEval-2016 Task 3 data, and the local methods of ``es-scm eval semeval``."""

from __future__ import annotations

import pytest

from es_scm.evaluation import semeval, semeval_data

DEV = "semeval2016-task3/SemEval2016-Task3-CQA-QL-dev.xml"
GOLD = DEV + ".subtaskB.relevancy"


@pytest.fixture(scope="module")
def dev(shared_data):
    return semeval_data.read_semeval_xml(shared_data / DEV)


def test_reader_on_the_dev_file(dev):
    assert len(dev) == 50
    assert sum(len(q.related) for q in dev) == 500
    assert all(len(q.related) == 10 for q in dev)
    first = dev[0]
    assert first.id == "Q268"
    assert first.subject == "Good Bank"
    assert first.related[0].id == "Q268_R4"
    assert first.related[0].label == "PerfectMatch"
    assert first.related[0].relevant
    assert first.related[0].ir_score == pytest.approx(0.25)
    assert "\r" not in first.body
    assert sum(r.relevant for q in dev for r in q.related) == 214


def test_gold_file_agrees_with_the_xml_labels(dev, shared_data):
    gold = semeval_data.read_gold(shared_data / GOLD)
    assert len(gold) == 50
    assert sum(len(rows) for rows in gold.values()) == 500
    for question in dev:
        expected = [(r.id, r.relevant) for r in question.related]
        assert [(rid, relevant) for rid, _, _, relevant in gold[question.id]] == expected


def test_ir_baseline_from_xml_and_gold(shared_data):
    for gold in ([], [shared_data / GOLD]):
        questions = semeval_data.read_semeval([shared_data / DEV], gold)
        report = semeval.evaluate(questions, {"ir": semeval.ir_baseline_scores(questions)})
        assert round(report.methods["ir"]["MAP"], 2) == 71.35


def test_reader_errors(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<xml><Other/></xml>")
    with pytest.raises(ValueError, match="no OrgQuestion"):
        semeval_data.read_semeval_xml(bad)
    gold = tmp_path / "gold"
    gold.write_text("Q1\tQ1_R1\t1\n")
    with pytest.raises(ValueError, match="5 columns"):
        semeval_data.read_gold(gold)


def test_identity_scm_equals_tfidf_cosine(shared_data):
    questions = semeval_data.read_semeval([shared_data / DEV])[:10]
    model = semeval.build_model(questions)  # no embeddings: S = I
    cosine = semeval.cosine_scores(model, questions)
    scm = semeval.local_scm_scores(model, questions)
    for qid, scores in cosine.items():
        assert scm[qid] == pytest.approx(scores, abs=1e-9)


def test_clean_text():
    assert semeval_data.clean_text("see http://x.y/z <b>now</b>").split() == [
        "see",
        "url_token",
        "now",
    ]


def test_local_command(shared_data, capsys, tmp_path):
    from es_scm.cli import main

    out = tmp_path / "dev.json"
    status = main([
        "eval", "semeval", "--xml", str(shared_data / DEV), "--gold", str(shared_data / GOLD),
        "--no-es", "--embeddings", "none", "--json", str(out), "--quiet",
    ])  # fmt: skip
    assert status == 0
    table = capsys.readouterr().out
    assert "| IR baseline (official, gold columns 3–4) | 71.35 |" in table
    assert out.exists()


def test_command_error_is_one_line(capsys, tmp_path):
    from es_scm.cli import main

    status = main(["eval", "semeval", "--xml", str(tmp_path / "missing.xml"), "--no-es"])
    assert status == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("es-scm: error:")
    assert "\n" not in err
    assert f"file not found: {tmp_path / 'missing.xml'} (the SemEval-2016 Task 3" in err
    assert semeval_data.SEMEVAL_DATA_URL in err  # where to get it


def test_read_semeval_takes_one_path_or_several(shared_data):
    path = shared_data / DEV
    as_list = semeval_data.read_semeval([path])
    for one in (path, str(path)):  # one path, not the characters of a string
        assert [q.id for q in semeval_data.read_semeval(one)] == [q.id for q in as_list]
    with pytest.raises(FileNotFoundError, match=r"missing\.xml"):
        semeval_data.read_semeval(str(shared_data / "missing.xml"))
