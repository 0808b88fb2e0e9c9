r"""Token patterns that run in linear time: the safe set a :class:`~es_scm.model.text.Tokenizer`
compiles.

A token pattern is run by Python's backtracking ``re`` on every text a model reads: the corpus
when it is built and indexed, every query. A pattern such as ``(?:(?:[^\W_]+)+)+[^\W_]*#`` makes
``re`` try every way of splitting a word between its repeats before it fails, which for 22
letters takes minutes; and a model file can carry any pattern. So a pattern is parsed with the
standard library's own regular expression parser and compiled only if it is in this set, where
every attempt to match either fails within the fixed part of the pattern or succeeds:

* **the parts**: characters and escapes, classes (``[a-z]``, ``[^\W_]``, ``\w``, ``\d``,
  ``\s`` and their negations), ``.``, non-capturing groups ``(?:...)``, atomic groups, inline
  flags (``(?i)``, ``(?u)``, ``(?a)``, …), anchors (``^``, ``$``, ``\A``, ``\Z``, ``\b``,
  ``\B``);
* **repeats** (``*``, ``+``, ``?``, ``{m,n}``, lazy or possessive) and **alternatives** (``|``)
  only where nothing that can fail follows them: what comes after one, up to the end of the
  pattern, must be able to match nothing (an optional part, another such repeat), or be a
  ``\b`` right after a repeat of ``\w`` of one or more (``\b\w\w+\b``, scikit-learn's pattern);
* a repeated part (``(?:...)+``) holds only characters, classes and anchors: **no repeat or
  alternative inside a repeat**;
* **no backreference, lookahead, lookbehind or conditional** (nor capturing group);
* a count of at most :data:`MAX_COUNT` for the least number of repeats (``a{100}``) and at
  most :data:`MAX_LENGTH` characters in all.

The default ``[^\W_]+`` and the usual token patterns are in the set: ``\w+``, ``\w+'?``,
``(?u)\b\w\w+\b``, ``\S+``, ``[A-Za-z]+``, ``[a-z0-9]+(?:'[a-z]+)?``, ``\d+(?:\.\d+)?``,
``\w+|[^\w\s]``. One outside it can mostly be written inside: an optional part that precedes a
repeat becomes alternatives (``#?\w+`` is ``#\w+|\w+``), and a repeated group becomes a class
(``\w+(?:-\w+)*`` is ``\w[\w-]*``, which also takes a trailing hyphen).

Why this bounds the time: the parts before the first repeat or alternative have a fixed length,
so an attempt at a position that fails does so within them; after it, every part may match
nothing, so the attempt succeeds with the longest match it found, and ``findall`` goes on after
it. Scanning a text of n characters costs at most about n times the pattern's length.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

try:  # the standard library's own parser of regular expressions (private, hence Any)
    sre_constants: Any = importlib.import_module("re._constants")
    sre_parse: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - Python 3.10
    sre_constants = importlib.import_module("sre_constants")
    sre_parse = importlib.import_module("sre_parse")

__all__ = ["MAX_COUNT", "MAX_LENGTH", "pattern_problem"]

#: The most characters a token pattern may have.
MAX_LENGTH = 1000
#: The largest least count of a repeat (``{m}``, ``{m,n}``): each attempt may read that many.
MAX_COUNT = 100

_C = sre_constants
_SINGLE = {_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN}
_REPEATS = {_C.MAX_REPEAT, _C.MIN_REPEAT, getattr(_C, "POSSESSIVE_REPEAT", _C.MAX_REPEAT)}
_GREEDY = {_C.MAX_REPEAT, getattr(_C, "POSSESSIVE_REPEAT", _C.MAX_REPEAT)}
_GROUPS = {_C.SUBPATTERN, getattr(_C, "ATOMIC_GROUP", _C.SUBPATTERN)}
_REFUSED = {
    _C.GROUPREF: "a backreference",
    _C.GROUPREF_EXISTS: "a conditional (?(...)...)",
    _C.ASSERT: "a lookahead or lookbehind",
    _C.ASSERT_NOT: "a lookahead or lookbehind",
}
_WORD = [(_C.IN, [(_C.CATEGORY, _C.CATEGORY_WORD)])]

Item = tuple[Any, Any]


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` (a valid regular expression) is outside the safe set, or None.

    The reason is a phrase that follows "token_pattern ... has": e.g. ``"a repeat inside a
    repeat"``. What can never be safe (a construct, a nesting) is named before where a part is.
    """
    if len(pattern) > MAX_LENGTH:
        return f"{len(pattern)} characters, more than {MAX_LENGTH}"
    items = list(sre_parse.parse(pattern))
    return _structure(items, repeated=False) or _tails(items, free_after=True)


def _structure(items: Sequence[Item], repeated: bool) -> str | None:
    """The parts outside the set, and what a repeat holds (``repeated``: inside a repeat of
    more than one)."""
    for op, value in items:
        if op in _SINGLE or op == _C.AT:
            continue
        if op in _REFUSED:
            return _REFUSED[op]
        if op == _C.SUBPATTERN and value[0] is not None:
            return "a capturing group"
        if op in _GROUPS:
            problem = _structure(_body(op, value), repeated)
        elif op == _C.BRANCH:
            if repeated:
                return "an alternative inside a repeat"
            problem = next(filter(None, (_structure(b, repeated) for b in value[1])), None)
        elif op in _REPEATS:
            least, most, body = value
            if least > MAX_COUNT:
                return f"a repeat of at least {least}, more than {MAX_COUNT}"
            if repeated and least != most:
                return "a repeat inside a repeat"
            problem = _structure(body, repeated or most > 1)
        else:
            return f"a construct outside the safe set ({op})"
        if problem is not None:
            return problem
    return None


def _tails(items: Sequence[Item], free_after: bool) -> str | None:
    """Where a repeat of varying length or an alternative is followed by a part that can fail
    (``free_after``: what follows ``items`` always matches)."""
    free = free_after
    for position in range(len(items) - 1, -1, -1):
        op, value = item = items[position]
        problem = None
        if op in _GROUPS:
            problem = _tails(_body(op, value), free)
        elif op == _C.BRANCH:
            if not free:
                return "an alternative (|) followed by a part that can fail"
            problem = next(filter(None, (_tails(b, free) for b in value[1])), None)
        elif op in _REPEATS:
            if value[0] != value[1] and not free:
                return "a repeat of varying length followed by a part that can fail"
            problem = _tails(value[2], free)
        if problem is not None:
            return problem
        free = free and _always_matches(item, items[position - 1] if position else None)
    return None


def _body(op: Any, value: Any) -> list[Item]:
    """The parts of a group."""
    return list(value[-1] if op == _C.SUBPATTERN else value)


def _always_matches(item: Item, previous: Item | None) -> bool:
    """Whether ``item`` matches at any position (if need be, nothing), after ``previous``."""
    op, value = item
    if op in _REPEATS:
        return bool(value[0] == 0)
    if op in _GROUPS:
        return _all_match(_body(op, value))
    if op == _C.BRANCH:
        return any(_all_match(list(branch)) for branch in value[1])
    if op == _C.AT:  # \b after the longest run of \w of one or more: the run's end is one
        return bool(value == _C.AT_BOUNDARY) and _is_word_run(previous)
    return False


def _all_match(items: list[Item]) -> bool:
    return all(_always_matches(part, items[n - 1] if n else None) for n, part in enumerate(items))


def _is_word_run(item: Item | None) -> bool:
    r"""Whether ``item`` is ``\w+`` (greedy or possessive, at least one)."""
    if item is None or item[0] not in _GREEDY:
        return False
    least, _, body = item[1]
    return bool(least >= 1) and list(body) == _WORD
