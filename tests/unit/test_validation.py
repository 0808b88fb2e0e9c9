"""es_scm.options.validation and es_scm.documents: one place that checks values and names the bad
one."""

from __future__ import annotations

import argparse
import re

import numpy as np
import pytest

from es_scm.documents import Document, as_document
from es_scm.options.validation import (
    FRACTION,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    AnyOf,
    Boolean,
    Interval,
    Options,
    OrNone,
    argparse_type,
    check,
    check_dtype,
    check_terms,
    validate,
)


@pytest.mark.parametrize(
    ("value", "constraint", "expected"),
    [
        (3, POSITIVE_INT, 3),
        (np.int64(0), NON_NEGATIVE_INT, 0),
        (0.5, FRACTION, 0.5),
        (1, FRACTION, 1.0),
        (None, OrNone(POSITIVE_INT), None),
        ("terms", Options(("terms", "vocabulary")), "terms"),
        (np.bool_(True), Boolean(), True),
        (7, AnyOf((NON_NEGATIVE_INT, FRACTION)), 7),
        (0.25, AnyOf((NON_NEGATIVE_INT, FRACTION)), 0.25),
    ],
)
def test_values_that_fit_are_returned_coerced(value, constraint, expected) -> None:
    result = check(value, "x", constraint)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("value", "constraint", "message"),
    [
        (0, POSITIVE_INT, "k must be an integer >= 1, got 0"),
        (True, POSITIVE_INT, "k must be an integer >= 1, got True"),
        (2.0, POSITIVE_INT, "k must be an integer >= 1, got 2.0"),
        (float("nan"), FRACTION, "k must be a real number in [0, 1], got nan"),
        (1.0, Interval(float, 0.0, 1.0, closed="left"), "in [0, 1), got 1.0"),
        (-1, Interval(float, -1.0, 1.0, closed="neither"), "in (-1, 1), got -1"),
        ("all", Options(("terms", "vocabulary")), "one of 'terms', 'vocabulary', got 'all'"),
        (1, Boolean(), "k must be True or False, got 1"),
        ([], Options(("a",)), "one of 'a', got []"),
    ],
)
def test_errors_name_the_parameter_and_the_bad_value(value, constraint, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        check(value, "k", constraint)


def test_validate_checks_only_the_constrained_parameters() -> None:
    assert validate({"k": 2, "other": "x"}, {"k": POSITIVE_INT}) == {"k": 2, "other": "x"}
    with pytest.raises(ValueError, match="k must be"):
        validate({"k": -1}, {"k": POSITIVE_INT})


def test_the_command_line_uses_the_same_constraints() -> None:
    convert = argparse_type(POSITIVE_INT)
    assert convert("5") == 5
    for text in ("0", "x", "1.5"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected an integer >= 1"):
            convert(text)
    assert argparse_type(FRACTION, float)("0.25") == 0.25


def test_terms_and_dtypes() -> None:
    assert check_terms(("a", "b")) == ["a", "b"]
    with pytest.raises(ValueError, match="single string"):
        check_terms("ab")
    with pytest.raises(ValueError, match="'a' occurs more than once"):
        check_terms(["a", "b", "a"])
    assert check_dtype("float32") == np.float32
    with pytest.raises(ValueError, match="int64"):
        check_dtype(np.int64)


def test_documents_from_mappings() -> None:
    document = Document.from_mapping({"id": 7, "text": "t", "lang": "en"})
    assert document == Document("7", "t", {"lang": "en"})
    assert document.to_dict() == {"id": "7", "text": "t", "lang": "en"}
    assert as_document(document) is document


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"text": "no id"}, "document #3 needs an 'id'"),
        ({"id": "", "text": "t"}, r"#3: the id must be .* got '' \(str\)"),
        ({"id": True, "text": "t"}, r"got True \(bool\)"),
        ({"id": 4.5, "text": "t"}, r"got 4.5 \(float\)"),
        ({"id": {"a": 1}, "text": "t"}, r"got \{'a': 1\} \(dict\)"),
        ({"id": "x"}, "document 'x' needs a 'text' string"),
        (["id", "text"], "document #3 must be a mapping"),
    ],
)
def test_bad_documents_are_named(record, message) -> None:
    with pytest.raises(ValueError, match=message):
        as_document(record, 3)
