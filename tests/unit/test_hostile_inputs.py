"""Inputs as an attacker (or an accident) makes them: a line nested 10,000 levels deep, a corpus
folder with links out of it, a device or a named pipe where a file belongs. Each is one clear
line or one bad record, never a hang, a crash or a file read from outside the corpus.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from es_scm.corpus import CorpusError, count_documents, read_corpus
from es_scm.documents import MAX_METADATA_DEPTH, Document, InvalidRecord, metadata_problem
from es_scm.evaluation.topics import read_qrels, read_topics
from tests.support import REPO_ROOT, one_error_line


def nested(depth: int, leaf: object = 1) -> str:
    """JSON of ``depth`` objects one inside the other, ``leaf`` innermost."""
    return '{"a": ' * depth + json.dumps(leaf) + "}" * depth


def deep_value(depth: int) -> dict:
    """A dict ``depth`` levels deep, built without recursion."""
    value: dict = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def in_child(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter; a hang is a timeout, hence a failure."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )


# -- item 5: one deeply nested line --------------------------------------------------------------


def test_a_line_nested_10000_levels_deep_is_one_bad_record_and_reading_goes_on(tmp_path):
    corpus = tmp_path / "deep.jsonl"
    lines = [
        json.dumps({"id": "before", "text": "good"}),
        '{"id": "deep", "text": "x", "meta": ' + nested(10_000) + "}",
        '{"id": "lists", "text": "x", "meta": ' + "[" * 10_000 + "]" * 10_000 + "}",
        json.dumps({"id": "after", "text": "good"}),
    ]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = list(read_corpus(corpus, on_error="skip"))
    assert [r.id for r in read if isinstance(r, Document)] == ["before", "after"]
    bad = [r for r in read if isinstance(r, InvalidRecord)]
    assert [r.where for r in bad] == [f"{corpus}, line 2", f"{corpus}, line 3"]
    for record in bad:
        assert f"nested more than {MAX_METADATA_DEPTH} levels deep" in record.reason
        assert "\n" not in record.reason
    with pytest.raises(CorpusError, match=rf"^{corpus}, line 2: .*nested more than 100 levels"):
        list(read_corpus(corpus))


def test_metadata_may_nest_100_levels_and_no_more(tmp_path):
    corpus = tmp_path / "levels.jsonl"
    lines = [
        json.dumps({"id": "at-limit", "text": "x", "m": deep_value(MAX_METADATA_DEPTH)}),
        json.dumps({"id": "beyond", "text": "x", "m": deep_value(MAX_METADATA_DEPTH + 1)}),
        json.dumps({"id": "list-beyond", "text": "x", "m": _lists(101)}),
    ]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = list(read_corpus(corpus, on_error="skip"))
    assert [r.id for r in read if isinstance(r, Document)] == ["at-limit"]
    reasons = [r.reason for r in read if isinstance(r, InvalidRecord)]
    assert len(reasons) == 2
    assert reasons[0].startswith("metadata field 'm.a.a.a.a")
    assert "nested more than 100 levels deep" in reasons[0]


def _lists(depth: int) -> list:
    value: list = [1]
    for _ in range(depth - 1):
        value = [value]
    return value


def test_metadata_given_to_the_api_is_checked_without_recursion():
    assert metadata_problem({"m": deep_value(MAX_METADATA_DEPTH)}) is None
    problem = metadata_problem({"m": deep_value(100_000)})
    assert problem is not None
    assert problem.startswith("metadata field 'm.a.a.a.a")
    assert "…" in problem
    assert len(problem) < 300
    assert "nested more than 100 levels deep" in problem


def test_topics_nested_too_deeply_name_the_file_and_line(tmp_path):
    topics = tmp_path / "topics.jsonl"
    topics.write_text(
        json.dumps({"id": "1", "text": "fine"}) + "\n" + '{"id": "2", "text": ' + nested(10_000),
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=rf"^{topics}:2: .*nested more than"):
        read_topics(topics)


# -- item 9: directory corpora do not follow links -----------------------------------------------


def test_a_corpus_folder_does_not_follow_links_and_says_so_once(tmp_path, caplog):
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("first", encoding="utf-8")
    (folder / "sub" / "b.txt").write_text("second", encoding="utf-8")
    (folder / "passwd.txt").symlink_to(secret)
    (folder / "sub" / "again.txt").symlink_to(folder / "a.txt")  # even a link inside
    (folder / "elsewhere").symlink_to(secret.parent, target_is_directory=True)
    (folder / "broken.txt").symlink_to(tmp_path / "missing")
    caplog.set_level(logging.WARNING, logger="es_scm")
    read = list(read_corpus(folder, on_error="skip"))
    assert [(r.id, r.text) for r in read] == [("a", "first"), ("sub/b", "second")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{folder}: skipped 4 symbolic links (not followed): ")
    for name in ("broken.txt", "elsewhere", "passwd.txt", "sub/again.txt"):
        assert name in warnings[0]
    assert count_documents(folder) == 2


def test_a_named_pipe_in_a_corpus_folder_is_a_bad_record_not_a_hang(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("first", encoding="utf-8")
    os.mkfifo(folder / "pipe.txt")
    done = in_child(
        "import sys; from es_scm.corpus import read_corpus\n"
        f"for r in read_corpus({str(folder)!r}, on_error='skip'): print(r)"
    )
    assert done.returncode == 0, done.stderr
    assert "Document(id='a'" in done.stdout
    assert "pipe.txt" in done.stdout
    assert "a named pipe (FIFO), not a regular file" in done.stdout


# -- item 10: a path that is not a regular file -------------------------------------------------


@pytest.mark.parametrize("fmt", [None, "jsonl", "lines", "csv"])
def test_a_device_as_corpus_is_named_as_such(fmt):
    with pytest.raises(CorpusError, match=r"^/dev/zero is a character device, not a regular file"):
        list(read_corpus("/dev/zero", fmt))
    assert count_documents("/dev/zero", fmt) is None


def test_a_named_pipe_as_corpus_is_refused_without_blocking(tmp_path):
    pipe = tmp_path / "corpus.jsonl"
    os.mkfifo(pipe)
    done = in_child(
        "from es_scm.corpus import read_corpus, count_documents\n"
        f"print(count_documents({str(pipe)!r}))\n"
        f"list(read_corpus({str(pipe)!r}))"
    )
    assert "CorpusError" in done.stderr
    assert f"{pipe} is a named pipe (FIFO), not a regular file" in done.stderr
    assert done.stdout.strip() == "None"


def test_a_folder_as_a_corpus_file_is_named_as_such(tmp_path):
    with pytest.raises(CorpusError, match=rf"^{tmp_path} is a folder, not a regular file"):
        list(read_corpus(tmp_path, "jsonl"))


def test_the_index_command_says_what_the_corpus_path_is(cli, news_model_dir):
    code, _, err = cli(
        "index", "--model", news_model_dir, "--index", "x", "--corpus", "/dev/zero",
        "--es-url", "http://127.0.0.1:1",
    )  # fmt: skip
    assert code != 0
    line = one_error_line(err)
    assert "/dev/zero is a character device, not a regular file" in line
    assert "no such file" not in line


def test_topics_and_qrels_that_are_not_regular_files_are_refused(tmp_path):
    pipe = tmp_path / "topics.tsv"
    os.mkfifo(pipe)
    done = in_child(
        f"from es_scm.evaluation.topics import read_topics\nread_topics({str(pipe)!r})"
    )  # before the fix: blocked until a writer came (a timeout here)
    assert f"{pipe} is a named pipe (FIFO), not a regular file" in done.stderr
    for read in (read_topics, read_qrels):
        with pytest.raises(ValueError, match=r"^/dev/zero is a character device"):
            read("/dev/zero")


def test_a_metadata_mapping_that_is_not_a_regular_file_or_too_deep_is_one_line(
    cli, news_model_dir, tmp_path
):
    deep = tmp_path / "deep.json"
    deep.write_text(nested(10_000), encoding="utf-8")
    code, _, err = cli(
        "index", "--model", news_model_dir, "--index", "x", "--corpus", deep,
        "--metadata-mapping", deep, "--es-url", "http://127.0.0.1:1",
    )  # fmt: skip
    assert code != 0
    assert f"{deep} is damaged: JSON nested too deeply" in one_error_line(err)
    pipe = tmp_path / "mapping.json"
    os.mkfifo(pipe)
    done = in_child(
        "from es_scm.cli import main\n"
        f"main(['index', '--model', {str(news_model_dir)!r}, '--index', 'x', '--corpus', "
        f"{str(deep)!r}, '--metadata-mapping', {str(pipe)!r}, '--es-url', 'http://127.0.0.1:1'])"
    )  # before the fix: blocked until a writer came (a timeout here); /dev/zero: endless
    assert f"{pipe} is a named pipe (FIFO), not a regular file" in one_error_line(done.stderr)


def test_an_ids_file_that_is_a_named_pipe_is_one_line(news_model_dir, tmp_path):
    pipe = tmp_path / "ids.txt"
    os.mkfifo(pipe)
    done = in_child(
        "from es_scm.cli import main\n"
        f"main(['delete', '--model', {str(news_model_dir)!r}, '--index', 'x', '--ids-file', "
        f"{str(pipe)!r}, '--es-url', 'http://127.0.0.1:1'])"
    )  # before the fix: blocked until a writer came (a timeout here); /dev/zero: endless
    assert f"{pipe} is a named pipe (FIFO), not a regular file" in one_error_line(done.stderr)


def test_embeddings_files_are_regular_files_whose_header_fits_their_size(tmp_path):
    from es_scm.similarity import WordEmbeddings

    binary = tmp_path / "vectors.bin"
    binary.write_bytes(b"100000000 300\nword " + bytes(1200))
    with pytest.raises(
        ValueError, match=r"vectors\.bin: the header declares 100000000 words of 300"
    ):
        WordEmbeddings.load_word2vec(binary, binary=True)  # before: 112 GiB asked of numpy
    pipe = tmp_path / "vectors.txt"
    os.mkfifo(pipe)
    done = in_child(
        f"from es_scm.similarity import WordEmbeddings\nWordEmbeddings.load_glove({str(pipe)!r})"
    )  # before the fix: blocked until a writer came (a timeout here); /dev/zero: endless
    assert f"{pipe} is a named pipe (FIFO), not a regular file" in done.stderr
    for load in (WordEmbeddings.load_glove, WordEmbeddings.load_word2vec):
        with pytest.raises(ValueError, match=r"^/dev/zero is a character device"):
            load("/dev/zero")


def test_smart_collection_files_that_are_not_regular_files_are_refused(tmp_path):
    pipe = tmp_path / "cran.qry"
    os.mkfifo(pipe)
    done = in_child(
        "from es_scm.evaluation.collections import read_smart_records\n"
        f"list(read_smart_records({str(pipe)!r}))"
    )  # eval trec --queries: before the fix, blocked until a writer came (a timeout here)
    assert f"{pipe} is a named pipe (FIFO), not a regular file" in done.stderr
    from es_scm.evaluation.collections import read_smart_records

    with pytest.raises(ValueError, match=r"^/dev/zero is a character device"):
        list(read_smart_records("/dev/zero"))
