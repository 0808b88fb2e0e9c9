"""Curated synonym files as a source of S: both formats, their errors, and how they mix in."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import numpy as np
import pytest

from es_scm.cli import main
from es_scm.defaults import SIMILARITY_DEFAULTS, SYNONYM_DEFAULTS
from es_scm.model import SoftCosineModel, Tokenizer
from es_scm.options import SourceOptions, source_settings
from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings
from es_scm.similarity.synonyms import Synonyms, read_synonyms
from tests.support import assert_one_line_error

TEXTS = [
    "the car was parked on the road",
    "an automobile factory",
    "the physician examined the patient",
    "doctors and nurses",
    "the usa and america",
    "a television set",
]
SOLR = """\
# a comment, then a blank line

car, automobile, auto
tv, telly => television
united states, usa, america
  # an indented comment
the, car
foo\\,bar, baz
physician => physician, doctors
"""
TSV = "physician\tdoctors\t0.8\nkitten\tcat\t0.9\n# a comment\nnurses\tdoctors\t-0.5\n"
TOKENIZE = Tokenizer().tokenize


@pytest.fixture
def files(tmp_path):
    solr = tmp_path / "synonyms.txt"
    solr.write_text(SOLR, encoding="utf-8")
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(TSV, encoding="utf-8")
    return solr, tsv


def test_the_solr_format_equivalences_mappings_comments_and_escapes(files, caplog):
    solr, _ = files
    with caplog.at_level(logging.WARNING, logger="es_scm.similarity.synonyms"):
        read = read_synonyms(solr, TOKENIZE)
    assert read.pairs == [
        ("car", "automobile", 1.0),
        ("car", "auto", 1.0),
        ("automobile", "auto", 1.0),
        ("tv", "television", 1.0),
        ("telly", "television", 1.0),
        ("usa", "america", 1.0),
        ("physician", "doctors", 1.0),  # physician => physician is the diagonal: left out
    ]
    assert read.rules == 6
    assert read.multi_word == 2  # "united states", and "foo,bar" (the escaped comma is kept)
    assert read.dropped == 1  # "the": a stop word
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "2 multi-word entries skipped" in warning
    assert "'united states' (line 5)" in warning


def test_a_weighted_tsv_gives_each_pair_its_similarity(files):
    _, tsv = files
    read = read_synonyms(tsv, TOKENIZE)
    assert read.format == "tsv"
    assert read.pairs == [
        ("physician", "doctors", 0.8),
        ("kitten", "cat", 0.9),
        ("nurses", "doctors", -0.5),
    ]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.txt", "car, auto\na => b => c\n", ":2: more than one '=>' in a rule"),
        ("bad.txt", "car,, auto\n", ":1: an empty entry"),
        ("bad.txt", "car, auto =>\n", ":1: an empty entry"),
        ("bad.txt", "car\tauto\t0.5\n", ":1: a tab in a Solr-format rule (a weighted TSV?"),
        ("bad.tsv", "car\tauto\n", ":1: expected term<TAB>term<TAB>similarity, got 2 fields"),
        ("bad.tsv", "term\tterm\tsimilarity\n", ":1: the similarity 'similarity' is not a number"),
        ("bad.tsv", "# ok\ncar\tauto\t1.5\n", ":2: the similarity 1.5 is not in [-1, 1]"),
    ],
)
def test_a_malformed_line_is_an_error_that_names_the_file_and_the_line(
    tmp_path, name, text, message
):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="^" + str(path).replace("\\", "\\\\") + message[:1]) as e:
        read_synonyms(path, TOKENIZE)
    assert message in str(e.value)


def test_synonyms_alone_are_s_with_pairs_outside_the_vocabulary_counted(files):
    solr, tsv = files
    model = SoftCosineModel.build(TEXTS, synonyms=[solr, tsv])
    matrix = model.similarity_matrix

    def s(a: str, b: str) -> float:
        return float(matrix.matrix[matrix.term_id(a), matrix.term_id(b)])

    assert s("car", "automobile") == s("automobile", "car") == 1.0
    assert s("usa", "america") == 1.0
    assert s("physician", "doctors") == pytest.approx(0.8)  # the TSV comes later: it overwrites
    assert s("nurses", "doctors") == 0.0  # -0.5 is not above the threshold 0
    info = matrix.build_info
    assert info["source"] == "synonyms"
    assert info["pairs"] == 4  # car–automobile, usa–america, physician–doctors twice
    assert info["pairs_outside_vocabulary"] == 5  # auto twice, tv, telly, kitten
    first, second = info["files"]
    assert (first["format"], first["multi_word_entries"], first["pairs_in_vocabulary"]) == (
        "solr",
        2,
        3,
    )
    assert len(first["sha256"]) == 64
    assert second["format"] == "tsv"


def test_a_synonym_file_is_mixed_into_s_with_its_weight(files):
    solr, _ = files
    vectors = WordEmbeddings(
        ["car", "automobile", "road", "factory"],
        np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0]]),
    )
    plain = SoftCosineModel.build(TEXTS, vectors, threshold=0.5, exponent=1.0)
    mixed = SoftCosineModel.build(
        TEXTS, vectors, threshold=0.5, exponent=1.0, synonyms=Synonyms(solr, weight=0.3)
    )
    p, m = plain.similarity_matrix, mixed.similarity_matrix
    car, automobile, road = (p.term_id(t) for t in ("car", "automobile", "road"))
    assert p.matrix[car, automobile] == pytest.approx(0.8)
    assert m.matrix[car, automobile] == pytest.approx(0.7 * 0.8 + 0.3 * 1.0)
    assert m.matrix[car, road] == pytest.approx(0.7 * 0.6)  # vectors only
    usa, america = m.term_id("usa"), m.term_id("america")
    assert m.matrix[usa, america] == pytest.approx(0.3)  # synonyms only
    vectors_part, synonyms_part = m.build_info["parts"]
    assert (vectors_part["weight"], synonyms_part["weight"]) == pytest.approx((0.7, 0.3))
    assert (vectors_part["threshold"], vectors_part["exponent"]) == (0.5, 1.0)
    assert synonyms_part["threshold"] == SYNONYM_DEFAULTS.threshold


def test_unseen_words_weigh_what_the_vectors_weigh_in_s(files):
    solr, _ = files
    vectors = WordEmbeddings(["car", "vehicle"], np.array([[1.0, 0.0], [0.8, 0.6]]))
    plain = SoftCosineModel.build(TEXTS, vectors, threshold=0.5, exponent=1.0)
    mixed = SoftCosineModel.build(
        TEXTS, vectors, threshold=0.5, exponent=1.0, synonyms=Synonyms(solr, weight=0.25)
    )
    (_, alone), (_, shared) = plain.unseen.column("vehicle"), mixed.unseen.column("vehicle")
    assert alone == pytest.approx([0.8], rel=1e-3)  # unit vectors kept as float16
    assert shared == pytest.approx(0.75 * alone)


def test_each_source_has_its_own_threshold_exponent_and_budget():
    options = replace(SIMILARITY_DEFAULTS, nonzero_limit=7)
    kind = SourceOptions(threshold=0.2, exponent=3.0)
    assert (source_settings(options, kind).threshold, source_settings(options, kind).exponent) == (
        0.2,
        3.0,
    )
    given = replace(options, threshold=0.4)  # the model's, given: beats the kind's
    assert source_settings(given, kind).threshold == 0.4
    own = SourceOptions(threshold=0.6, nonzero_limit=3)  # the part's own: beats both
    settled = source_settings(given, kind, own)
    assert (settled.threshold, settled.exponent, settled.nonzero_limit) == (0.6, 3.0, 3)
    with pytest.raises(ValueError, match="threshold must be a real number in"):
        SourceOptions(threshold=2.0)


def test_the_synonym_builder_and_its_checks(files, tmp_path):
    solr, tsv = files
    terms = ["car", "automobile", "physician", "doctors"]
    matrix = TermSimilarityMatrix.from_synonyms(terms, [solr, tsv], TOKENIZE, exponent=2.0)
    assert matrix.matrix[1, 0] == 1.0
    assert matrix.matrix[3, 2] == pytest.approx(0.64)
    with pytest.raises(ValueError, match=r"synonym file not found: .*missing\.txt"):
        Synonyms(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match=r"weight must be a real number in \(0, 1\)"):
        Synonyms(solr, weight=1.0)


def test_the_command_line_mixes_synonym_files_and_names_a_bad_line(files, tmp_path, capsys):
    solr, tsv = files
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    out = tmp_path / "model"
    args = ["model", "build", "--corpus", str(corpus), "--out", str(out), "--embeddings", "none"]
    code = main([*args, "--synonyms", str(solr), "--synonyms", str(tsv), "--synonym-weight", "0.4"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "S: 1 × synonyms from" in printed
    assert "5 with a term outside the vocabulary, 2 multi-word entries skipped" in printed
    saved = json.loads((out / "model.json").read_text(encoding="utf-8"))
    assert [f["path"] for f in saved["similarity"]["files"]] == [str(solr), str(tsv)]
    assert main(["model", "info", str(out)]) == 0
    assert "S source" in capsys.readouterr().out
    bad = tmp_path / "bad.txt"
    bad.write_text("car, auto\ncar,,auto\n", encoding="utf-8")
    code = main([*args, "--force", "--synonyms", str(bad)])
    assert code != 0
    assert_one_line_error(capsys.readouterr().err, f"{bad}:2: an empty entry")


@pytest.mark.parametrize("suffix", [".txt", ".tsv"])
def test_a_synonym_file_that_is_a_pipe_is_refused_before_it_is_read(tmp_path, suffix):
    """A named pipe could block the build for ever; it is refused, naming the synonym file."""
    import os

    from es_scm.files import UnsafeFileError

    pipe = tmp_path / f"synonyms{suffix}"
    os.mkfifo(pipe)
    with pytest.raises(UnsafeFileError, match="synonym file") as refused:
        read_synonyms(pipe, TOKENIZE)
    assert str(pipe) in str(refused.value)
    assert "\n" not in str(refused.value)
