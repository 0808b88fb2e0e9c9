"""Parameter validation in one declarative place, with errors that name the bad value.

Every public function and every command-line option checks its parameters against a
:class:`Constraint` from here, so that the API and the CLI accept exactly the same values and
say the same thing when a value is wrong::

    >>> check(0, "k", POSITIVE_INT)
    Traceback (most recent call last):
    ...
    ValueError: k must be an integer >= 1, got 0

The command line turns a constraint into an ``argparse`` type with :func:`argparse_type`.
"""

from __future__ import annotations

import argparse
import math
import numbers
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "FRACTION",
    "NON_NEGATIVE_INT",
    "POSITIVE_INT",
    "AnyOf",
    "Boolean",
    "Constraint",
    "Described",
    "Interval",
    "MappingOf",
    "Options",
    "OrNone",
    "Text",
    "argparse_type",
    "check",
    "check_dtype",
    "check_terms",
    "validate",
]

#: The float dtypes of a term similarity matrix, by name (``np.dtype(name)``): numpy is imported
#: when a dtype is checked, not with this module, which every command-line option uses.
FLOAT_DTYPES = ("float16", "float32", "float64")


def _is_bool(value: Any) -> bool:
    """Whether ``value`` is a ``bool`` or a numpy boolean. A numpy boolean exists only once numpy
    is imported, so numpy is not imported to ask."""
    if isinstance(value, bool):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.bool_)


class Constraint:
    """What a parameter may be; :meth:`coerce` returns the value, or None when it does not fit."""

    def coerce(self, value: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


_MISSING = object()


@dataclass(frozen=True)
class Interval(Constraint):
    """A number of ``kind`` (``int`` or ``float``) between ``low`` and ``high``.

    ``closed`` says which ends belong to the interval: ``"both"``, ``"left"``, ``"right"`` or
    ``"neither"``. Booleans and NaN never fit; an ``int`` interval takes integers only.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"

    def coerce(self, value: Any) -> Any:
        if _is_bool(value):
            return _MISSING
        if self.kind is int:
            if not isinstance(value, numbers.Integral):
                return _MISSING
            number: float = int(value)
        else:
            if not isinstance(value, numbers.Real):
                return _MISSING
            number = float(value)
            if math.isnan(number):
                return _MISSING
        if self.low is not None:
            below = number < self.low if self.closed in ("both", "left") else number <= self.low
            if below:
                return _MISSING
        if self.high is not None:
            above = number > self.high if self.closed in ("both", "right") else number >= self.high
            if above:
                return _MISSING
        return number

    def describe(self) -> str:
        noun = "an integer" if self.kind is int else "a real number"
        if self.low is not None and self.high is not None:
            left = "[" if self.closed in ("both", "left") else "("
            right = "]" if self.closed in ("both", "right") else ")"
            return f"{noun} in {left}{_number(self.low)}, {_number(self.high)}{right}"
        if self.low is not None:
            sign = ">=" if self.closed in ("both", "left") else ">"
            return f"{noun} {sign} {_number(self.low)}"
        if self.high is not None:
            sign = "<=" if self.closed in ("both", "right") else "<"
            return f"{noun} {sign} {_number(self.high)}"
        return f"a finite {noun[2:] if noun.startswith('a ') else noun}"


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of values (compared with ``==``)."""

    values: tuple[Any, ...]

    def coerce(self, value: Any) -> Any:
        try:
            return value if value in self.values else _MISSING
        except TypeError:  # an unhashable or incomparable value
            return _MISSING

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Boolean(Constraint):
    """``True`` or ``False`` (numpy booleans too; not 0 or 1)."""

    def coerce(self, value: Any) -> Any:
        return bool(value) if _is_bool(value) else _MISSING

    def describe(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class OrNone(Constraint):
    """``None`` or a value of ``inner``."""

    inner: Constraint

    def coerce(self, value: Any) -> Any:
        return None if value is None else self.inner.coerce(value)

    def describe(self) -> str:
        return f"None or {self.inner.describe()}"


@dataclass(frozen=True)
class AnyOf(Constraint):
    """A value that fits one of ``constraints`` (the first that fits coerces it)."""

    constraints: tuple[Constraint, ...]

    def coerce(self, value: Any) -> Any:
        for constraint in self.constraints:
            result = constraint.coerce(value)
            if result is not _MISSING:
                return result
        return _MISSING

    def describe(self) -> str:
        return " or ".join(c.describe() for c in self.constraints)


@dataclass(frozen=True)
class Text(Constraint):
    """A non-empty string that matches ``pattern`` (all of it), described as ``what``."""

    pattern: str | None = None
    what: str = "a non-empty string"

    def coerce(self, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            return _MISSING
        if self.pattern is not None and re.fullmatch(self.pattern, value) is None:
            return _MISSING
        return value

    def describe(self) -> str:
        return self.what


@dataclass(frozen=True)
class MappingOf(Constraint):
    """A mapping (a JSON object) whose keys fit ``keys`` and values fit ``values`` (any value
    when None), returned as a ``dict``; described as ``what`` if given."""

    keys: Constraint
    values: Constraint | None = None
    what: str | None = None

    def coerce(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return _MISSING
        result = {}
        for key, item in value.items():
            key = self.keys.coerce(key)
            item = item if self.values is None else self.values.coerce(item)
            if key is _MISSING or item is _MISSING:
                return _MISSING
            result[key] = item
        return result

    def describe(self) -> str:
        if self.what is not None:
            return self.what
        values = "any value" if self.values is None else self.values.describe()
        return f"a mapping of {self.keys.describe()} to {values}"


@dataclass(frozen=True)
class Described(Constraint):
    """A value that fits ``inner``, described in the words ``what`` (e.g. "a positive integer")."""

    inner: Constraint
    what: str

    def coerce(self, value: Any) -> Any:
        return self.inner.coerce(value)

    def describe(self) -> str:
        return self.what


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else str(value)


POSITIVE_INT = Interval(int, 1)
NON_NEGATIVE_INT = Interval(int, 0)
FRACTION = Interval(float, 0.0, 1.0)


def check(value: Any, name: str, constraint: Constraint) -> Any:
    """Return ``value`` (coerced: ``int``, ``float`` or ``bool``) if it fits ``constraint``.

    Raises
    ------
    ValueError
        ``"{name} must be {what it may be}, got {value!r}"``.
    """
    result = constraint.coerce(value)
    if result is _MISSING:
        raise ValueError(f"{name} must be {constraint.describe()}, got {value!r}")
    return result


def validate(params: Mapping[str, Any], constraints: Mapping[str, Constraint]) -> dict[str, Any]:
    """Check every parameter that has a constraint; return them coerced (the others unchanged)."""
    return {
        name: check(value, name, constraints[name]) if name in constraints else value
        for name, value in params.items()
    }


def argparse_type(constraint: Constraint, parse: Callable[[str], Any] = int) -> Callable:
    """An ``argparse`` ``type=`` that parses a string with ``parse`` and checks ``constraint``."""

    def convert(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            value = _MISSING
        result = _MISSING if value is _MISSING else constraint.coerce(value)
        if result is _MISSING:
            raise argparse.ArgumentTypeError(f"expected {constraint.describe()}, got {text!r}")
        return result

    convert.__name__ = getattr(parse, "__name__", "value")  # argparse names it in messages
    return convert


def check_terms(terms: Iterable[str]) -> list[str]:
    """Distinct strings, as a list; a single string is refused (it would be its characters)."""
    if isinstance(terms, str):
        raise ValueError("terms must be a sequence of strings, not a single string")
    terms = list(terms)
    for term in terms:
        if not isinstance(term, str):
            raise ValueError(f"terms must be strings, got {term!r}")
    if len(set(terms)) != len(terms):
        seen: set[str] = set()
        duplicate = next(t for t in terms if t in seen or seen.add(t))  # type: ignore[func-returns-value]
        raise ValueError(f"the term {duplicate!r} occurs more than once")
    return terms


def check_dtype(dtype: Any) -> np.dtype:
    """A float16, float32 or float64 numpy dtype."""
    import numpy as np

    try:
        result = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"dtype must be float16, float32 or float64, got {dtype!r}") from None
    if result not in [np.dtype(d) for d in FLOAT_DTYPES]:
        raise ValueError(f"dtype must be float16, float32 or float64, got {result}")
    return result
