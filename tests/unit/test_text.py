"""Tests for es_scm.model.text.Tokenizer."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from es_scm.model.text import DEFAULT_TOKEN_PATTERN, Tokenizer, english_stop_words


def shout_split(text: str) -> list[str]:
    return text.split("|")


def test_default_drops_stop_words_and_lowercases():
    assert Tokenizer()("When Antony found Julius Caesar dead") == [
        "antony",
        "found",
        "julius",
        "caesar",
        "dead",
    ]


def test_punctuation_digits_and_underscore_split():
    tokenizer = Tokenizer(stop_words=None)
    assert tokenizer("Hello, world! It's 2018: v2.0 foo_bar") == [
        "hello",
        "world",
        "it",
        "s",
        "2018",
        "v2",
        "0",
        "foo",
        "bar",
    ]


def test_unicode_letters_and_normalization():
    tokenizer = Tokenizer(stop_words=None)
    decomposed = "Cafe\u0301 NAÏVE Straße Σίσυφος Прага 東京"
    assert tokenizer(decomposed) == ["café", "naïve", "straße", "σίσυφος", "прага", "東京"]
    # NFC: the decomposed and precomposed spellings give the same term
    assert tokenizer("cafe\u0301") == tokenizer("caf\u00e9") == ["caf\u00e9"]


def test_without_normalization_combining_mark_splits():
    assert Tokenizer(stop_words=None, normalization=None)("cafe\u0301") == ["cafe"]


def test_lowercase_false_keeps_case():
    assert Tokenizer(stop_words=None, lowercase=False)("Julius CAESAR") == ["Julius", "CAESAR"]


def test_repeats_kept_in_order():
    assert Tokenizer(stop_words=None)("saint saint paul") == ["saint", "saint", "paul"]


def test_min_length():
    assert Tokenizer(stop_words=None, min_length=3)("I am an ox in a zoo") == ["zoo"]


def test_custom_stop_words_are_normalized():
    tokenizer = Tokenizer(stop_words=["Paul", "SAINT"])
    assert tokenizer("Saint Paul Tribune and the post") == ["tribune", "and", "the", "post"]


def test_english_stop_words_shipped():
    words = english_stop_words()
    assert {"the", "and", "of", "i", "t", "don"} <= words
    assert "caesar" not in words
    assert all(word == word.lower() and word.strip() == word for word in words)
    assert not any(word.startswith("#") for word in words)


def test_no_stop_words():
    assert Tokenizer(stop_words=None)("the the") == ["the", "the"]


def test_empty_text():
    assert Tokenizer()("") == []
    assert Tokenizer()("  ,;!  ") == []


def test_custom_token_pattern():
    tokenizer = Tokenizer(stop_words=None, token_pattern=r"\w+'?")
    assert tokenizer("killed i' the") == ["killed", "i'", "the"]


def test_callable_tokenizer_output_is_filtered():
    tokenizer = Tokenizer(tokenizer=shout_split, min_length=2)
    assert tokenizer("The|Big Apple|x|OF") == ["big apple"]


def test_tokenize_many_is_lazy():
    consumed = []

    def texts():
        for text in ["a b", "c d"]:
            consumed.append(text)
            yield text

    result = Tokenizer(stop_words=None).tokenize_many(texts())
    assert consumed == []
    assert list(result) == [["a", "b"], ["c", "d"]]


def test_config_round_trip_is_json():
    tokenizer = Tokenizer(stop_words=["foo"], min_length=2, normalization="NFKC")
    config = json.loads(json.dumps(tokenizer.get_config()))
    restored = Tokenizer.from_config(config)
    assert restored == tokenizer
    assert restored.get_config() == tokenizer.get_config()
    text = "Foo ﬁne BAR x"  # NFKC folds the ligature
    assert restored(text) == tokenizer(text) == ["fine", "bar"]


def test_config_stores_resolved_english_list():
    config = Tokenizer().get_config()
    assert config["stop_words"] == sorted(english_stop_words())
    assert config["tokenizer"] is None
    assert config["token_pattern"] == DEFAULT_TOKEN_PATTERN


def test_callable_config_needs_the_callable_again():
    tokenizer = Tokenizer(tokenizer=shout_split)
    assert not tokenizer.serializable
    config = json.loads(json.dumps(tokenizer.get_config()))
    assert config["tokenizer"].endswith("shout_split")
    with pytest.raises(ValueError, match=r"shout_split.*pass it again"):
        Tokenizer.from_config(config)
    restored = Tokenizer.from_config(config, tokenizer=shout_split)
    assert restored("A|b") == tokenizer("A|b") == ["b"]


def test_callable_passed_to_regex_config_is_refused():
    with pytest.raises(ValueError, match="uses no callable"):
        Tokenizer.from_config(Tokenizer().get_config(), tokenizer=shout_split)


def test_callable_with_other_name_warns():
    config = Tokenizer(tokenizer=shout_split).get_config()
    with pytest.warns(UserWarning, match="shout_split"):
        Tokenizer.from_config(config, tokenizer=str.split)


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"min_length": 0}, "0"),
        ({"min_length": 1.5}, "1.5"),
        ({"stop_words": "french"}, "'french'"),
        ({"stop_words": ["ok", 3]}, "3"),
        ({"normalization": "NFX"}, "'NFX'"),
        ({"lowercase": "yes"}, "'yes'"),
        ({"token_pattern": "("}, "'('"),
        ({"token_pattern": "(a)b"}, "'(a)b'"),
        ({"tokenizer": 42}, "42"),
    ],
)
def test_bad_parameters_name_the_value(kwargs, bad):
    with pytest.raises(ValueError, match=re.escape(bad)):
        Tokenizer(**kwargs)


def test_non_str_text_raises():
    with pytest.raises(TypeError, match="str"):
        Tokenizer()(b"bytes")  # type: ignore[arg-type]


def test_bad_config_raises():
    with pytest.raises(ValueError, match="not a tokenizer configuration"):
        Tokenizer.from_config({"format": "other"})


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii"), max_size=80))
def test_the_ascii_fast_path_splits_like_the_default_pattern(text: str) -> None:
    tokenizer = Tokenizer(stop_words=None, lowercase=False)
    assert tokenizer.split(text) == re.findall(DEFAULT_TOKEN_PATTERN, text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_tokenize_is_split_filtered_by_keeps(text: str) -> None:
    tokenizer = Tokenizer(min_length=2)
    assert tokenizer.tokenize(text) == [t for t in tokenizer.split(text) if tokenizer.keeps(t)]
    assert all(tokenizer.keeps(term) for term in tokenizer.tokenize(text))


@pytest.mark.parametrize(
    "pattern",
    [
        r"[^\W_]+",
        r"\w+",
        r"\w+'?",
        r"(?u)\b\w\w+\b",  # scikit-learn's
        r"\S+",
        r"(?i)[a-z]+",
        r"[a-z0-9]+(?:'[a-z]+)?",
        r"\d+(?:\.\d+)?",
        r"\w+|[^\w\s]",
        r"#\w+|\w+",
        r"\w[\w-]*",
        r"[A-Z][a-z]+",
    ],
)
def test_the_usual_token_patterns_are_in_the_safe_set(pattern):
    tokenizer = Tokenizer(stop_words=None, token_pattern=pattern)
    assert tokenizer.split("x") == re.findall(pattern, "x")


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(?:(?:[^\W_]+)+)+[^\W_]*#", "a repeat inside a repeat"),
        (r"\w+(?:-\w+)*", "a repeat inside a repeat"),
        (r"(?:a|ab)+", "an alternative inside a repeat"),
        (r"[^\W_]+[^\W_]+#", "a repeat of varying length followed by a part that can fail"),
        (r"#?\w+", "a repeat of varying length followed by a part that can fail"),
        (r"[a-z]+\b", "a repeat of varying length followed by a part that can fail"),
        (r"(?:ab|cd)e", "an alternative (|) followed by a part that can fail"),
        (r"\w+(?=s)", "a lookahead or lookbehind"),
        (r"(?<!#)\w+", "a lookahead or lookbehind"),
        (r"a{101}", "a repeat of at least 101, more than 100"),
        ("a" * 1001, "1001 characters, more than 1000"),
    ],
)
def test_token_patterns_that_can_backtrack_are_refused_naming_why(pattern, reason):
    with pytest.raises(ValueError, match=re.escape(f"{pattern!r} has {reason}")):
        Tokenizer(token_pattern=pattern)
    config = {**Tokenizer().get_config(), "token_pattern": pattern}  # as a saved model has it
    with pytest.raises(ValueError, match=re.escape(reason)):
        Tokenizer.from_config(config)
