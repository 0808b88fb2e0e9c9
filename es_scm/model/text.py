"""Text to terms: the deterministic tokenizer shared by indexing and querying.

A :class:`Tokenizer` maps a string to a list of terms in four steps:

1. Unicode normalization (NFC by default), so that a precomposed ``é`` and ``e`` followed by a
   combining acute accent give the same term;
2. splitting into word tokens, either with a regular expression (by default ``[^\\W_]+``: maximal
   runs of Unicode letters and digits, so ``"Caesar's 2nd"`` gives ``caesar``, ``s``, ``2nd``)
   or with a user callable;
3. lower-casing;
4. filtering: tokens shorter than ``min_length`` characters and stop words are dropped.

The terms are the basis vectors of the soft vector space model: every coordinate of a document
vector is indexed by one of them. Indexing and querying must therefore tokenize identically, which
is why the configuration (:meth:`Tokenizer.get_config`) is saved with the model and restored with
:meth:`Tokenizer.from_config`.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable
from functools import lru_cache
from importlib import resources
from itertools import filterfalse
from typing import Any

from es_scm.model.token_pattern import pattern_problem
from es_scm.validation import POSITIVE_INT, Boolean, Options, OrNone, check

__all__ = ["DEFAULT_TOKEN_PATTERN", "Tokenizer", "english_stop_words"]

#: Maximal runs of Unicode letters and digits (``\w`` without the underscore).
DEFAULT_TOKEN_PATTERN = r"[^\W_]+"
# On ASCII text the default pattern matches exactly the runs of ASCII letters and digits, which
# this simpler pattern finds about twice as fast (no Unicode category lookups).
_ASCII_DEFAULT = re.compile(r"[A-Za-z0-9]+")

_NORMALIZATIONS = ("NFC", "NFKC", "NFD", "NFKD")
_CONFIG_FORMAT = "es-scm-tokenizer"
_CONFIG_VERSION = 1


@lru_cache(maxsize=1)
def _english_stop_words() -> frozenset[str]:
    text = (
        resources.files("es_scm").joinpath("data").joinpath("stopwords_en.txt").read_text("utf-8")
    )
    lines = (line.strip() for line in text.splitlines())
    return frozenset(line for line in lines if line and not line.startswith("#"))


def english_stop_words() -> frozenset[str]:
    """Return the English stop-word list shipped in ``es_scm/data/stopwords_en.txt``.

    Returns
    -------
    frozenset of str
        Lower-case function words, and the fragments the default token pattern leaves from
        contractions (``don't`` gives ``don`` and ``t``).
    """
    return _english_stop_words()


def _qualified_name(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", None) or "<unknown>"
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}.{name}"


class Tokenizer:
    """Split text into lower-cased Unicode word terms, without stop words.

    Parameters
    ----------
    stop_words : {"english"}, iterable of str or None, default="english"
        Terms to drop. ``"english"`` is the list shipped with es-scm (see
        :func:`english_stop_words`); ``None`` keeps every token. Stop words are normalized and
        lower-cased like the text before comparison.
    min_length : int, default=1
        Tokens with fewer characters are dropped.
    lowercase : bool, default=True
        Lower-case tokens (``str.lower``).
    normalization : {"NFC", "NFKC", "NFD", "NFKD"} or None, default="NFC"
        Unicode normalization form applied to the text first; ``None`` skips it.
    token_pattern : str, default=DEFAULT_TOKEN_PATTERN
        Regular expression whose non-overlapping matches are the tokens. Ignored when
        ``tokenizer`` is given. Only a pattern that matches in linear time is compiled (from the
        API and from a saved model alike): repeats and alternatives only where nothing that can
        fail follows them, no repeat inside a repeat, no backreference or lookaround
        (:mod:`es_scm.model.token_pattern`).
    tokenizer : callable or None, default=None
        A function ``str -> iterable of str`` replacing the regular expression. Normalization,
        lower-casing and filtering still apply to its output. A callable cannot be serialized:
        :meth:`get_config` records only its qualified name and :meth:`from_config` then needs the
        callable again.

    Examples
    --------
    >>> Tokenizer()("When Antony found Julius Caesar dead")
    ['antony', 'found', 'julius', 'caesar', 'dead']
    >>> Tokenizer(stop_words=None)("Naïve café, 2018!")
    ['naïve', 'café', '2018']
    """

    def __init__(
        self,
        stop_words: str | Iterable[str] | None = "english",
        *,
        min_length: int = 1,
        lowercase: bool = True,
        normalization: str | None = "NFC",
        token_pattern: str = DEFAULT_TOKEN_PATTERN,
        tokenizer: Callable[[str], Iterable[str]] | None = None,
    ) -> None:
        self.normalization = check(normalization, "normalization", OrNone(Options(_NORMALIZATIONS)))
        self.lowercase = check(lowercase, "lowercase", Boolean())
        self.min_length = check(min_length, "min_length", POSITIVE_INT)
        self.token_pattern = token_pattern
        self.tokenizer = _check_tokenizer(tokenizer)
        self._regex = _compile_pattern(token_pattern) if tokenizer is None else None
        self._default_pattern = token_pattern == DEFAULT_TOKEN_PATTERN
        self.stop_words = stop_words
        self._stop_words = self._resolve_stop_words(stop_words)

    # -- configuration --------------------------------------------------------------------------

    def _resolve_stop_words(self, stop_words: str | Iterable[str] | None) -> frozenset[str]:
        if stop_words is None:
            return frozenset()
        if isinstance(stop_words, str):
            if stop_words != "english":
                raise ValueError(
                    f"stop_words must be 'english', an iterable of str or None, got {stop_words!r}"
                )
            words: Iterable[str] = english_stop_words()
        else:
            words = list(stop_words)
            bad = [word for word in words if not isinstance(word, str)]
            if bad:
                raise ValueError(f"stop_words must contain only str, got {bad[0]!r}")
        return frozenset(self._normalize(word) for word in words)

    @property
    def stop_word_set(self) -> frozenset[str]:
        """The resolved, normalized stop words this tokenizer drops."""
        return self._stop_words

    @property
    def serializable(self) -> bool:
        """Whether :meth:`from_config` can rebuild this tokenizer from its config alone."""
        return self.tokenizer is None

    def get_config(self) -> dict[str, Any]:
        """Return a JSON-serializable description of this tokenizer.

        The stop words are stored resolved (sorted), so a saved model keeps tokenizing the same
        even if the packaged list changes. A user callable is stored by qualified name only.

        Returns
        -------
        dict
            Keys ``format``, ``version``, ``normalization``, ``lowercase``, ``min_length``,
            ``token_pattern``, ``stop_words`` and ``tokenizer`` (``None`` or the qualified name).
        """
        return {
            "format": _CONFIG_FORMAT,
            "version": _CONFIG_VERSION,
            "normalization": self.normalization,
            "lowercase": self.lowercase,
            "min_length": self.min_length,
            "token_pattern": self.token_pattern if self.tokenizer is None else None,
            "stop_words": sorted(self._stop_words),
            "tokenizer": None if self.tokenizer is None else _qualified_name(self.tokenizer),
        }

    @classmethod
    def from_config(
        cls,
        config: dict[str, Any],
        *,
        tokenizer: Callable[[str], Iterable[str]] | None = None,
    ) -> Tokenizer:
        """Rebuild a tokenizer from :meth:`get_config` output.

        Parameters
        ----------
        config : dict
            A configuration produced by :meth:`get_config`.
        tokenizer : callable or None, default=None
            Required when the configuration was made with a user callable: that callable again.

        Returns
        -------
        Tokenizer

        Raises
        ------
        ValueError
            If the configuration is not a tokenizer configuration, or names a user callable and
            ``tokenizer`` is not given.
        """
        if not isinstance(config, dict) or config.get("format") != _CONFIG_FORMAT:
            raise ValueError(f"not a tokenizer configuration: {config!r}")
        if config.get("version") != _CONFIG_VERSION:
            raise ValueError(
                f"unsupported tokenizer configuration version {config.get('version')!r}"
            )
        name = config.get("tokenizer")
        if name is not None and tokenizer is None:
            raise ValueError(
                f"this tokenizer configuration uses the custom tokenizer callable {name!r}, which "
                "cannot be serialized; pass it again: Tokenizer.from_config(config, tokenizer=...)"
            )
        if name is None and tokenizer is not None:
            raise ValueError("this tokenizer configuration uses no callable; do not pass tokenizer")
        if tokenizer is not None and _qualified_name(tokenizer) != name:
            warnings.warn(
                f"the configuration was made with tokenizer {name!r}, "
                f"but {_qualified_name(tokenizer)!r} was passed",
                UserWarning,
                stacklevel=2,
            )
        return cls(
            stop_words=config["stop_words"],
            min_length=config["min_length"],
            lowercase=config["lowercase"],
            normalization=config["normalization"],
            token_pattern=config.get("token_pattern") or DEFAULT_TOKEN_PATTERN,
            tokenizer=tokenizer,
        )

    # -- tokenization ---------------------------------------------------------------------------

    def _normalize(self, text: str) -> str:
        if self.normalization is not None:
            text = unicodedata.normalize(self.normalization, text)
        return text.lower() if self.lowercase else text

    def _split(self, text: str) -> Iterable[str]:
        if self.tokenizer is None:
            assert self._regex is not None
            if self._default_pattern and text.isascii():
                return _ASCII_DEFAULT.findall(text)
            return self._regex.findall(text)
        tokens = self.tokenizer(text)
        if isinstance(tokens, str):
            raise TypeError("the tokenizer callable must return an iterable of str, not a str")
        return tokens

    def split(self, text: str) -> list[str]:
        """Return the normalized tokens of ``text`` before stop words and short tokens are dropped.

        :meth:`tokenize` is ``[t for t in split(text) if keeps(t)]``.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        tokens = self._split(self._normalize(text))
        if self.tokenizer is not None:  # a user callable's tokens are not normalized yet
            return [self._normalize(token) for token in tokens]
        return tokens if isinstance(tokens, list) else list(tokens)

    def keeps(self, term: str) -> bool:
        """Whether a normalized token is a term: long enough and not a stop word."""
        return len(term) >= max(self.min_length, 1) and term not in self._stop_words

    def tokenize(self, text: str) -> list[str]:
        """Return the terms of ``text`` in order of appearance, repeats kept.

        Parameters
        ----------
        text : str

        Returns
        -------
        list of str
        """
        min_length = max(self.min_length, 1)
        stop_words = self._stop_words
        if min_length == 1 and self.tokenizer is None:  # regex tokens are never empty
            return list(filterfalse(stop_words.__contains__, self.split(text)))
        return [t for t in self.split(text) if len(t) >= min_length and t not in stop_words]

    __call__ = tokenize

    def tokenize_many(self, texts: Iterable[str]) -> Iterable[list[str]]:
        """Lazily tokenize an iterable of texts (a generator: each text is read once)."""
        return (self.tokenize(text) for text in texts)

    def __repr__(self) -> str:
        if self.tokenizer is not None:
            split = f"tokenizer={_qualified_name(self.tokenizer)}"
        else:
            split = f"token_pattern={self.token_pattern!r}"
        stop = (
            self.stop_words
            if isinstance(self.stop_words, str) or self.stop_words is None
            else (f"<{len(self._stop_words)} words>")
        )
        return (
            f"Tokenizer(stop_words={stop!r}, min_length={self.min_length}, "
            f"lowercase={self.lowercase}, normalization={self.normalization!r}, {split})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.get_config() == other.get_config() and self.tokenizer is other.tokenizer

    __hash__ = None  # type: ignore[assignment]


def _check_tokenizer(
    tokenizer: Callable[[str], Iterable[str]] | None,
) -> Callable[[str], Iterable[str]] | None:
    if tokenizer is not None and not callable(tokenizer):
        raise ValueError(f"tokenizer must be a callable or None, got {tokenizer!r}")
    return tokenizer


def _compile_pattern(pattern: str) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"token_pattern must be a non-empty str, got {pattern!r}")
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ValueError(
            f"token_pattern {pattern!r} is not a valid regular expression: {error}"
        ) from error
    if regex.groups:
        raise ValueError(
            f"token_pattern must not contain capturing groups, got {pattern!r}; use (?:...)"
        )
    problem = None if pattern == DEFAULT_TOKEN_PATTERN else pattern_problem(pattern)
    if problem is not None:
        raise ValueError(
            f"token_pattern {pattern!r} has {problem}: only patterns that match in linear time "
            "are compiled (the parts es_scm.model.token_pattern lists, e.g. [^\\W_]+, \\w+'? or "
            "\\b\\w\\w+\\b; #?\\w+ is written #\\w+|\\w+)"
        )
    return regex
