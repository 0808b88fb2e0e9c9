"""The corpus readers: JSONL, CSV/TSV, a directory of .txt files, one document per line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from es_scm.corpus import CorpusError, count_documents, detect_format, read_corpus, read_texts
from es_scm.documents import Document, InvalidRecord


def records(documents) -> list[dict]:
    """The documents as ``{"id", "text", **metadata}`` dicts, checking that they are Documents."""
    documents = list(documents)
    assert all(isinstance(document, Document) for document in documents)
    return [document.to_dict() for document in documents]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_keeps_metadata_and_skips_blank_lines(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "c.jsonl",
        '{"id": 1, "text": "first", "topic": "a"}\n\n{"id": "b", "text": "second", "n": [1]}\n',
    )
    assert detect_format(path) == "jsonl"
    assert records(read_corpus(path)) == [
        {"id": "1", "text": "first", "topic": "a"},
        {"id": "b", "text": "second", "n": [1]},
    ]
    assert count_documents(path) == 2
    assert list(read_texts(path)) == ["first", "second"]


def test_jsonl_custom_fields_and_clashing_metadata(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.ndjson", '{"doc": "x", "body": "hello", "id": 7}\n')
    documents = records(read_corpus(path, id_field="doc", text_field="body"))
    assert documents == [{"id": "x", "text": "hello", "original_id": 7}]


def test_jsonl_gzip_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write('\ufeff{"id": "1", "text": "a"}\n')
    assert detect_format(path) == "jsonl"
    assert records(read_corpus(path)) == [{"id": "1", "text": "a"}]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "1", "text": "ok"}\n{"id": 2, "text": \n', "line 2: invalid JSON"),
        ('{"id": "1"}\n', "line 1: missing text field 'text'"),
        ('{"id": "1", "text": 5}\n', "line 1: text field 'text' must be a string"),
        ('{"text": "no id"}\n', "line 1: missing id field 'id'"),
        ("[1, 2]\n", "line 1: expected a JSON object"),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = _write(tmp_path / "bad.jsonl", content)
    with pytest.raises(CorpusError, match=message) as error:
        records(read_corpus(path))
    assert str(path) in str(error.value)
    assert "\n" not in str(error.value)


def test_jsonl_is_lazy(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", '{"id": "1", "text": "a"}\nnot json\n')
    documents = read_corpus(path)
    assert next(documents).to_dict() == {"id": "1", "text": "a"}
    with pytest.raises(CorpusError, match="line 2"):
        next(documents)


def test_invalid_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "1", "text": "a"}\n{"id": "2", "text": "\xff"}\n')
    with pytest.raises(CorpusError, match="line 2: not valid utf-8"):
        records(read_corpus(path))


def test_csv_and_tsv(tmp_path: Path) -> None:
    csv_path = _write(tmp_path / "c.csv", 'id,text,lang\n1,"hello, world",en\n2,"multi\nline",cs\n')
    assert detect_format(csv_path) == "csv"
    assert records(read_corpus(csv_path)) == [
        {"id": "1", "text": "hello, world", "lang": "en"},
        {"id": "2", "text": "multi\nline", "lang": "cs"},
    ]
    tsv_path = _write(tmp_path / "c.tsv", "key\tbody\na\tfirst text\n")
    documents = records(read_corpus(tsv_path, id_field="key", text_field="body"))
    assert documents == [{"id": "a", "text": "first text"}]


def test_csv_errors(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.csv", "id,body\n1,x\n")
    with pytest.raises(CorpusError, match=r"line 1: no column 'text' in the header \(id, body\)"):
        records(read_corpus(path))
    path = _write(tmp_path / "d.csv", "id,text\n1,x\n2,y,z\n")
    with pytest.raises(CorpusError, match="line 3: expected 2 fields, got 3"):
        records(read_corpus(path))
    path = _write(tmp_path / "e.csv", "")
    with pytest.raises(CorpusError, match="empty file"):
        records(read_corpus(path))


def test_directory_of_txt_files(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "news").mkdir(parents=True)
    _write(root / "b.txt", "second")
    _write(root / "news" / "a.txt", "first")
    _write(root / "ignored.md", "not a txt file")
    assert detect_format(root) == "dir"
    assert records(read_corpus(root)) == [
        {"id": "b", "text": "second"},
        {"id": "news/a", "text": "first"},
    ]
    assert count_documents(root) == 2


def test_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.txt", "first line\n\nthird line\r\n")
    assert detect_format(path) == "lines"
    assert records(read_corpus(path)) == [
        {"id": "1", "text": "first line"},
        {"id": "3", "text": "third line"},
    ]


def test_forced_format(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.data", json.dumps({"id": "x", "text": "y"}) + "\n")
    assert detect_format(path) == "lines"
    assert records(read_corpus(path, "jsonl")) == [{"id": "x", "text": "y"}]
    with pytest.raises(CorpusError, match="unknown corpus format 'xml'"):
        read_corpus(path, "xml")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such file or directory"):
        read_corpus(tmp_path / "nope.jsonl")
    with pytest.raises(CorpusError, match="not a directory"):
        read_corpus(_write(tmp_path / "f.txt", "x"), "dir")


def test_a_stray_quote_is_an_error_with_its_line_not_a_merge(tmp_path) -> None:
    rows = ["id,text", "1,first", '2,"a stray quote', "3,third row", '4,"quoted, fine"', "5,last"]
    path = _write(tmp_path / "stray.csv", "\n".join(rows) + "\n")
    with pytest.raises(CorpusError, match=r"stray\.csv, line 3: bad CSV"):
        records(read_corpus(path))
    at_the_end = _write(tmp_path / "end.csv", 'id,text\n1,first\n2,"never closed\n3,x\n')
    with pytest.raises(CorpusError, match="line 3: bad CSV"):
        records(read_corpus(at_the_end))
    multiline = _write(tmp_path / "ok.csv", 'id,text\n1,"two\nlines"\n2,"say ""hi"""\n')
    assert records(read_corpus(multiline)) == [
        {"id": "1", "text": "two\nlines"},
        {"id": "2", "text": 'say "hi"'},
    ]


def test_an_unknown_encoding_is_named(tmp_path) -> None:
    path = _write(tmp_path / "c.txt", "a line")
    with pytest.raises(CorpusError, match="unknown encoding 'bogus'"):
        read_corpus(path, encoding="bogus")


# -- BEIR corpora: _id and title ----------------------------------------------------------------


def test_jsonl_takes_beir_ids_and_searches_the_title_with_the_text(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "corpus.jsonl",
        '{"_id": "4983", "title": "White matter", "text": "Diffusion imaging.", "metadata": {}}\n'
        '{"_id": "5836", "title": "", "text": "No title here."}\n'
        '{"_id": "7", "title": "Only a title", "text": ""}\n',
    )
    assert records(read_corpus(path)) == [
        {"id": "4983", "text": "White matter\nDiffusion imaging.", "title": "White matter",
         "metadata": {}},
        {"id": "5836", "text": "No title here.", "title": ""},
        {"id": "7", "text": "Only a title", "title": "Only a title"},
    ]  # fmt: skip
    untitled = ["Diffusion imaging.", "No title here.", ""]
    assert list(read_texts(path, title_field=None)) == untitled
    assert list(read_texts(path, title_field="")) == untitled


def test_an_id_field_wins_over_id_and_a_custom_one_never_falls_back(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", '{"id": "a", "_id": "b", "text": "t"}\n')
    assert records(read_corpus(path)) == [{"id": "a", "text": "t", "_id": "b"}]
    path = _write(tmp_path / "d.jsonl", '{"_id": "b", "text": "t"}\n')
    with pytest.raises(CorpusError, match="line 1: missing id field 'doc'"):
        records(read_corpus(path, id_field="doc"))


def test_a_custom_title_field_and_one_that_is_not_a_string(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "c.jsonl",
        '{"id": 1, "headline": "Big news", "text": "Details.", "title": "ignored"}\n'
        '{"id": 2, "headline": 42, "text": "A number is no title."}\n',
    )
    assert list(read_texts(path, title_field="headline")) == [
        "Big news\nDetails.",
        "A number is no title.",
    ]


def test_csv_and_tsv_titles_and_beir_id_columns(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.tsv", "_id\ttitle\ttext\nx\tHeading\tBody text\ny\t\tBare\n")
    assert records(read_corpus(path)) == [
        {"id": "x", "text": "Heading\nBody text", "title": "Heading"},
        {"id": "y", "text": "Bare", "title": ""},
    ]
    path = _write(tmp_path / "c.csv", 'id,title,text\n1,"A, title",body\n')
    assert list(read_texts(path)) == ["A, title\nbody"]
    assert list(read_texts(path, title_field=None)) == ["body"]
    # the text column itself is never prepended to itself
    assert list(read_texts(path, text_field="title")) == ["A, title"]


def test_on_error_skip_yields_each_bad_record_and_reads_on(tmp_path: Path) -> None:
    csv_path = _write(
        tmp_path / "c.csv", 'id,text\n1,ok\n2,"bad"x\n3,fine\n,no id\n4,a,b\n5,last\n'
    )
    lines = tmp_path / "c.txt"
    lines.write_bytes(b"first\n\xff\xfe bad\nthird\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("fine", encoding="utf-8")
    (folder / "b.txt").write_bytes(b"\xff\xfe")
    expected = {
        csv_path: (["1", "3", "5"], [f"{csv_path}, line {n}" for n in (3, 5, 6)]),
        lines: (["1", "3"], [f"{lines}, line 2"]),
        folder: (["a"], [str(folder / "b.txt")]),
    }
    for path, (ids, bad) in expected.items():
        read = list(read_corpus(path, on_error="skip"))
        assert [r.id for r in read if isinstance(r, Document)] == ids
        assert [r.where for r in read if isinstance(r, InvalidRecord)] == bad
        assert all(r.reason for r in read if isinstance(r, InvalidRecord))
        with pytest.raises(CorpusError, match=f"^{bad[0]}: "):
            list(read_corpus(path))
    assert list(read_texts(csv_path, on_error="skip")) == ["ok", "fine", "last"]
    with pytest.raises(CorpusError, match="unknown on_error 'ignore'"):
        read_corpus(csv_path, on_error="ignore")
