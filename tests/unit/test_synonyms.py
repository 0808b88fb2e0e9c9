"""Curated synonym files as a source of S: both formats, their errors, and how they mix in."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace

import numpy as np
import pytest

from es_scm.cli import main
from es_scm.model import SoftCosineModel, Tokenizer
from es_scm.options import SourceOptions, source_settings
from es_scm.options.defaults import SIMILARITY_DEFAULTS, SYNONYM_DEFAULTS
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
    assert list(read.pairs()) == [
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
    assert list(read.pairs()) == [
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
    # the pairs really in S: physician–doctors is in both files but once in S (issue 34)
    assert info["pairs"] == 3  # car–automobile, usa–america, physician–doctors
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


def _group_line(n: int) -> str:
    return ", ".join(f"w{i:04d}" for i in range(n)) + "\n"


def test_a_group_of_6000_terms_is_cut_to_nonzero_limit_in_linear_memory(tmp_path, caplog):
    """One line of 6,000 equivalent terms (62 KB) made 18 million pairs and a MemoryError
    (issue 34, item 5). Each term is now related to the nonzero_limit terms written nearest it:
    S symmetric, every column exactly 50 neighbours, 150,000 pairs, built in bounded memory."""
    import tracemalloc

    path = tmp_path / "big.txt"
    path.write_text("# one huge group\n" + _group_line(6000) + "car, automobile\n")
    terms = [f"w{i:04d}" for i in range(6000)] + ["car", "automobile"]
    tracemalloc.start()
    try:
        with caplog.at_level(logging.WARNING, logger="es_scm.similarity.synonyms"):
            matrix = TermSimilarityMatrix.from_synonyms(terms, path, TOKENIZE, nonzero_limit=50)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 150 * 2**20, f"{peak / 2**20:.0f} MiB"
    s = matrix.matrix.tocsc()
    off = s - sparse_identity(s.shape[0])
    per_column = np.diff(off.tocsc().indptr)
    assert per_column[:6000].tolist() == [50] * 6000
    assert (off != off.T).nnz == 0
    # each term's neighbours are the 25 before and after it on the line, read as a circle
    w0 = {terms[i] for i in off.tocsc()[:, 0].indices}
    assert w0 == {f"w{i:04d}" for i in [*range(1, 26), *range(5975, 6000)]}
    assert float(s[matrix.term_id("car"), matrix.term_id("automobile")]) == 1.0
    assert matrix.build_info["pairs"] == 6000 * 25 + 1
    assert matrix.build_info["rules_cut_to_nonzero_limit"] == 1
    (warning,) = [r.getMessage() for r in caplog.records]
    assert f"{path}: 1 rule(s) relate a term to more terms than nonzero_limit=50" in warning
    assert "line 2 (6000 terms)" in warning


def sparse_identity(n: int):
    from scipy import sparse

    return sparse.identity(n, format="csc")


def test_without_a_limit_a_rule_of_too_many_pairs_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("car, automobile\n\n" + _group_line(2000))
    terms = [f"w{i:04d}" for i in range(2000)]
    with pytest.raises(ValueError, match=":3: the rule relates") as refused:
        TermSimilarityMatrix.from_synonyms(terms, path, TOKENIZE, nonzero_limit=None)
    assert str(refused.value) == (
        f"{path}:3: the rule relates 2,000 terms into 1,999,000 pairs, more than the 1,000,000 a "
        "rule may make with no nonzero_limit: split it, or set a nonzero_limit (each term then "
        "gets at most that many neighbours of the rule)"
    )


def test_groups_and_mappings_within_the_limit_are_whole_and_beyond_it_bounded(tmp_path):
    path = tmp_path / "rules.txt"
    path.write_text("ant, bee, cow, dog\nxray, yak => pig, quail, rat\n")
    terms = ["ant", "bee", "cow", "dog", "xray", "yak", "pig", "quail", "rat"]
    whole = TermSimilarityMatrix.from_synonyms(terms, path, TOKENIZE, nonzero_limit=3)
    assert whole.build_info["pairs"] == 6 + 6
    cut = TermSimilarityMatrix.from_synonyms(terms, path, TOKENIZE, nonzero_limit=2)
    off = cut.matrix - sparse_identity(len(terms))
    # the group: a ring (each term with the one before and after it); each left term of the
    # mapping with 2 right terms from its own position on
    assert {(terms[i], terms[j]) for i, j in zip(*off.nonzero(), strict=True) if i < j} == {
        ("ant", "bee"), ("bee", "cow"), ("cow", "dog"), ("ant", "dog"),
        ("xray", "pig"), ("xray", "quail"), ("yak", "quail"), ("yak", "rat"),
    }  # fmt: skip


def test_the_pairs_in_s_are_counted_once_and_only_if_they_are_there(tmp_path):
    """A pair stated three times counted three times, and one overwritten by a similarity that
    is zero in float32 counted as present (issue 34)."""
    path = tmp_path / "pairs.tsv"
    path.write_text(
        "car\tauto\t0.5\nauto\tcar\t0.5\ncar\tauto\t0.7\ncat\tkitten\t0.5\ncat\tkitten\t1e-320\n"
    )
    terms = ["car", "auto", "cat", "kitten"]
    matrix = TermSimilarityMatrix.from_synonyms(terms, path, TOKENIZE)
    assert float(matrix.matrix[0, 1]) == pytest.approx(0.7)
    assert float(matrix.matrix[2, 3]) == 0.0
    assert matrix.build_info["pairs"] == 1
    assert matrix.build_info["files"][0]["pairs"] == 5  # what the file states


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"car, auto\n# caf\xc3\xa9\ncaf\xe9, coffee\n",
            ":3: not valid UTF-8 (byte 0xe9 at column 4",
        ),
        ("car, auto\n".encode("utf-16"), ":1: not valid UTF-8 (byte 0xff at column 1"),
        ("car, auto\n".encode("utf-16-le"), ":1: a NUL byte, which UTF-8 text does not hold"),
    ],
    ids=["latin-1", "utf-16", "utf-16-without-mark"],
)
def test_a_synonym_file_that_is_not_utf8_names_the_file_and_the_line(
    tmp_path, capsys, content, message
):
    """``'utf-8' codec can't decode byte 0xe9 in position 4``, without the file or the line
    (issue 34, item 6); UTF-16 failed the same way."""
    path = tmp_path / "synonyms.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="^" + re.escape(f"{path}{message}")):
        read_synonyms(path, TOKENIZE)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS), encoding="utf-8")
    code = main([
        "model", "build", "--corpus", str(corpus), "--format", "lines", "--embeddings", "none",
        "--out", str(tmp_path / "model"), "--synonyms", str(path),
    ])  # fmt: skip
    assert code == 1
    assert_one_line_error(capsys.readouterr().err, f"{path}{message}")
