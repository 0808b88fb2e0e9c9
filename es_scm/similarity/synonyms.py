r"""Curated synonym files as a source of S, so that a team's existing synonym list counts.

Two formats (chosen by the file's suffix: ``.tsv`` is a weighted TSV, anything else Solr's):

Solr/Elasticsearch synonyms (the ``synonym`` filter's default format), one rule a line
    ``car, automobile, auto`` — equivalent terms: every two of them are similar.
    ``tv, telly => television`` — an explicit mapping: each term on the left is similar to each
    term on the right (not the left terms to each other).
    A line starting with ``#`` is a comment, a blank line is skipped, and ``\,``, ``\=>`` and
    ``\\`` stand for a literal comma, arrow and backslash, as in Lucene's parser. Related terms
    get ``similarity`` (1 by default).
Weighted TSV, one pair a line
    ``term<TAB>term<TAB>similarity`` with a similarity in [−1, 1]; comments and blank lines as
    above.

Each entry is tokenized with the model's tokenizer (lower-cased, stop words dropped), then:

* one term: the entry is that term;
* no term (a stop word, punctuation): dropped, counted;
* several terms — a phrase such as ``united states``: skipped, counted, and one warning per file
  names the count and an example. S relates single terms: relating each word of a phrase to the
  other side would make ``united`` a synonym of ``usa``, so es-scm does not guess.

A rule relates each term to at most the model's ``nonzero_limit`` others, as every source of S
does: a larger group of equivalent terms (6,000 on one line) relates each term to the
``nonzero_limit`` terms written nearest it, so that it takes memory in proportion to its terms,
not to their pairs (:meth:`Relation.pairs`; a warning names the file and the line). Without a
limit, a rule of more than :data:`MAX_RULE_PAIRS` pairs is refused, naming its line. A byte that
is not UTF-8 is an error naming the file and the line.

A pair whose two terms are the model's terms enters S with ``similarity ** exponent`` if its
similarity is above ``threshold`` (:class:`~es_scm.options.SynonymOptions`, defaults
:data:`es_scm.options.defaults.SYNONYM_DEFAULTS`), in both directions when S is symmetric (the
model's ``symmetric``: an explicit mapping then counts both ways, as Elasticsearch's does when its
filter runs at index and at query time); a later pair overwrites an earlier one (the thesaurus
builder, :func:`es_scm.similarity.thesaurus.pairs_matrix`). A pair with a term outside the
vocabulary is counted and reported (``model.json``, ``es-scm model build``), and so are the
pairs really in S: a pair stated twice, or overwritten by one whose similarity is zero in S's
dtype, counts once or not at all. The matrix is mixed
into S with ``weight`` (:func:`es_scm.similarity.factory.build_similarity`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from es_scm.files import utf8_lines
from es_scm.options import SynonymOptions, check_fields
from es_scm.options.defaults import SIMILARITY_DEFAULTS, SYNONYM_DEFAULTS
from es_scm.similarity.thesaurus import pairs_matrix

__all__ = [
    "MAX_RULE_PAIRS",
    "Relation",
    "SynonymFile",
    "Synonyms",
    "as_synonyms",
    "pairs_in",
    "read_synonyms",
    "synonym_matrix",
]

logger = logging.getLogger(__name__)

#: A tokenizer: text → terms (the model's).
Tokenize = Callable[[str], list[str]]
_TSV_SUFFIXES = (".tsv", ".tab")


@dataclass(frozen=True)
class Synonyms:
    """Synonym files and how they enter S (the fields of :class:`~es_scm.options.SynonymOptions`,
    checked alike, with the defaults :data:`es_scm.options.defaults.SYNONYM_DEFAULTS`).

    Parameters
    ----------
    files : path or sequence of paths
        Solr-format files, or weighted TSV files (``.tsv``); read in order.
    weight, similarity, threshold, exponent
        See :class:`~es_scm.options.SynonymOptions`.
    """

    files: Any = ()  # a path or paths, kept as a tuple of Paths
    weight: float = SYNONYM_DEFAULTS.weight
    similarity: float = SYNONYM_DEFAULTS.similarity
    threshold: float = SYNONYM_DEFAULTS.threshold
    exponent: float = SYNONYM_DEFAULTS.exponent

    def __post_init__(self) -> None:
        files = self.files
        if isinstance(files, str | os.PathLike):
            files = (files,)
        files = tuple(Path(f) for f in files)
        if not files:
            raise ValueError("synonyms need at least one file")
        for path in files:
            if not path.is_file():
                raise ValueError(f"synonym file not found: {path}")
        object.__setattr__(self, "files", files)
        check_fields(self, SynonymOptions.CONSTRAINTS)
        if self.threshold < 0 and not float(self.exponent).is_integer():
            raise ValueError(
                f"a negative threshold ({self.threshold}) needs an integer exponent, "
                f"got {self.exponent}"
            )

    @property
    def options(self) -> SynonymOptions:
        """The options as their typed value."""
        return SynonymOptions(self.weight, self.similarity, self.threshold, self.exponent)

    def describe(self) -> dict[str, Any]:
        """The files and options as JSON values (a report's form)."""
        return {"files": [os.fspath(f) for f in self.files], **self.options.as_dict()}


def as_synonyms(value: Any) -> Synonyms | None:
    """``synonyms=`` of :meth:`SoftCosineModel.build`: None, a path, paths, or :class:`Synonyms`."""
    if value is None or isinstance(value, Synonyms):
        return value
    if isinstance(value, str | os.PathLike) or (
        isinstance(value, list | tuple) and all(isinstance(v, str | os.PathLike) for v in value)
    ):
        return Synonyms(value)
    raise ValueError(
        f"synonyms must be a path, a list of paths or Synonyms, got {type(value).__name__}"
    )


@dataclass(frozen=True)
class Relation:
    """One rule of a synonym file, as terms: ``left`` alone are equivalent terms (a group: every
    two of them related), ``left => right`` an explicit mapping (each left term related to each
    right term), ``similarity`` the similarity it gives. Kept as terms, not as pairs: a group of
    n terms states n(n − 1)/2 pairs, which :meth:`pairs` makes only as far as S may hold them."""

    line: int
    left: tuple[str, ...]
    right: tuple[str, ...] | None
    similarity: float

    def stated(self, known: Container[str] | None = None) -> int:
        """How many pairs of terms the rule states (of ``known`` terms only, if given)."""
        left = [t for t in self.left if known is None or t in known]
        if self.right is None:
            return len(left) * (len(left) - 1) // 2
        right = [t for t in self.right if known is None or t in known]
        shared = len(set(left) & set(right))  # a term mapped to itself: the diagonal
        return len(left) * len(right) - shared

    def neighbours(self, known: Container[str] | None = None) -> int:
        """The most terms the rule relates one left term to (of ``known`` terms only)."""
        left = [t for t in self.left if known is None or t in known]
        if self.right is None:
            return max(len(left) - 1, 0)
        return len([t for t in self.right if known is None or t in known])

    def pairs(
        self, known: Container[str] | None = None, limit: int | None = None
    ) -> Iterator[tuple[str, str, float]]:
        """The pairs of ``known`` terms (all terms if None) that the rule relates, each term of a
        group, and each left term of a mapping, related to at most ``limit`` terms (None: no
        limit).

        Within its limit a rule is whole. Beyond it — a group of n equivalent terms with
        n − 1 > ``limit`` — each term is related to the ``limit`` terms written nearest it on
        the line (⌊limit/2⌋ before and after it, the line read as a circle): equivalent terms
        are equally similar, so any ``limit`` of them are as good, and this choice is
        deterministic, symmetric (each term has exactly 2⌊limit/2⌋ neighbours) and takes
        n·⌊limit/2⌋ pairs instead of n(n − 1)/2. A left term of a mapping to more than
        ``limit`` right terms is related to ``limit`` of them, from its own position on (the
        right terms read as a circle), so that each right term gets its share.
        """
        left = [t for t in self.left if known is None or t in known]
        s = self.similarity
        if self.right is None:
            n = len(left)
            if limit is None or n - 1 <= limit:
                yield from ((a, b, s) for i, a in enumerate(left) for b in left[i + 1 :])
                return
            for at, term in enumerate(left):
                for step in range(1, limit // 2 + 1):
                    yield term, left[(at + step) % n], s
            return
        right = [t for t in self.right if known is None or t in known]
        width = len(right) if limit is None else min(limit, len(right))
        for at, term in enumerate(left):
            for step in range(width):
                other = right[(at + step) % len(right)]
                if other != term:
                    yield term, other, s


@dataclass
class SynonymFile:
    """One file's rules as terms, and what was left out, for the build record.

    Attributes
    ----------
    relations : list of Relation
        The rules, each entry a single term of the model's tokenizer.
    rules : int
        The lines that were rules (or pairs).
    multi_word : int
        Entries that were phrases (several terms), skipped.
    dropped : int
        Entries with no term left (stop words), dropped.
    """

    path: Path
    format: str
    relations: list[Relation] = field(default_factory=list)
    rules: int = 0
    multi_word: int = 0
    dropped: int = 0
    _phrase: str | None = None

    def pairs(
        self, known: Container[str] | None = None, limit: int | None = None
    ) -> Iterator[tuple[str, str, float]]:
        """Every rule's pairs, in the file's order (:meth:`Relation.pairs`)."""
        for relation in self.relations:
            yield from relation.pairs(known, limit)

    def record(self, known: Container[str] | None = None) -> dict[str, Any]:
        """The file as ``model.json`` records it (its path, content hash and counts: the pairs
        its rules state, and of them those of ``known`` terms, if given)."""
        digest = hashlib.sha256(self.path.read_bytes()).hexdigest()
        record = {
            "path": os.fspath(self.path),
            "sha256": digest,
            "format": self.format,
            "rules": self.rules,
            "pairs": sum(relation.stated() for relation in self.relations),
            "multi_word_entries": self.multi_word,
            "dropped_entries": self.dropped,
        }
        if known is not None:
            record["pairs_in_vocabulary"] = sum(r.stated(known) for r in self.relations)
        return record

    def term(self, entry: str, tokenize: Tokenize, line: int) -> str | None:
        """The single term of ``entry``, or None (counted) for a phrase or no term."""
        terms = tokenize(entry)
        if len(terms) == 1:
            return terms[0]
        if terms:
            self.multi_word += 1
            if self._phrase is None:
                self._phrase = f"{entry!r} (line {line})"
        else:
            self.dropped += 1
        return None

    def warn(self) -> None:
        if self.multi_word:
            logger.warning(
                "%s: %d multi-word entries skipped (S relates single terms), e.g. %s",
                self.path,
                self.multi_word,
                self._phrase,
            )


def read_synonyms(path: str | Path, tokenize: Tokenize, similarity: float = 1.0) -> SynonymFile:
    """The pairs of terms of one synonym file (the format by its suffix; module docstring).

    Parameters
    ----------
    path : path
    tokenize : callable
        The model's tokenizer.
    similarity : float
        The similarity of two terms a Solr-format rule relates.

    Raises
    ------
    ValueError
        ``"FILE:LINE: what is wrong"`` for a malformed line.
    """
    path = Path(path)
    tsv = path.suffix.lower() in _TSV_SUFFIXES
    read = SynonymFile(path, "tsv" if tsv else "solr")
    for number, line in _rule_lines(path):
        where = f"{path}:{number}"
        read.rules += 1
        if tsv:
            relation = _tsv_pair(line, where, read, tokenize, number)
        else:
            relation = _solr_rule(line, where, read, tokenize, number, similarity)
        if relation is not None:
            read.relations.append(relation)
    read.warn()
    return read


def _rule_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line that is neither blank nor a comment."""
    for number, line in utf8_lines(path, "a synonym file"):
        if line.strip() and not line.lstrip().startswith("#"):
            yield number, line


def _solr_rule(
    line: str, where: str, read: SynonymFile, tokenize: Tokenize, number: int, similarity: float
) -> Relation | None:
    sides = _split(line, "=>")
    if len(sides) > 2:
        raise ValueError(f"{where}: more than one '=>' in a rule")
    if "\t" in line:
        raise ValueError(f"{where}: a tab in a Solr-format rule (a weighted TSV? name it .tsv)")
    terms = []
    for side in sides:
        found = (read.term(entry, tokenize, number) for entry in _entries(side, where))
        terms.append([term for term in found if term is not None])
    left = tuple(dict.fromkeys(terms[0]))
    if len(terms) == 1:  # equivalent terms: every two of them
        return Relation(number, left, None, similarity) if len(left) > 1 else None
    right = tuple(dict.fromkeys(terms[1]))
    return Relation(number, left, right, similarity) if left and right else None


def _entries(side: str, where: str) -> list[str]:
    entries = [_unescape(entry).strip() for entry in _split(side, ",")]
    if any(not entry for entry in entries):
        raise ValueError(f"{where}: an empty entry (two commas, or a comma or '=>' at an end)")
    return entries


def _split(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` where it is not escaped by a backslash (escapes kept)."""
    parts, current, at = [], [], 0
    while at < len(text):
        if text[at] == "\\" and at + 1 < len(text):
            current.append(text[at : at + 2])
            at += 2
        elif text.startswith(separator, at):
            parts.append("".join(current))
            current, at = [], at + len(separator)
        else:
            current.append(text[at])
            at += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    out, at = [], 0
    while at < len(text):
        if text[at] == "\\" and at + 1 < len(text):
            at += 1
        out.append(text[at])
        at += 1
    return "".join(out)


def _tsv_pair(
    line: str, where: str, read: SynonymFile, tokenize: Tokenize, number: int
) -> Relation | None:
    fields = line.split("\t")
    if len(fields) != 3:
        raise ValueError(
            f"{where}: expected term<TAB>term<TAB>similarity, got {len(fields)} fields"
        )
    try:
        similarity = float(fields[2])
    except ValueError:
        raise ValueError(
            f"{where}: the similarity {fields[2].strip()!r} is not a number "
            "(a header line? start it with #)"
        ) from None
    if not math.isfinite(similarity) or not -1.0 <= similarity <= 1.0:
        raise ValueError(f"{where}: the similarity {similarity} is not in [-1, 1]")
    a, b = (read.term(entry.strip(), tokenize, number) for entry in fields[:2])
    return None if a is None or b is None or a == b else Relation(number, (a,), (b,), similarity)


def synonym_matrix(
    terms: Sequence[str],
    synonyms: Synonyms,
    tokenize: Tokenize,
    *,
    symmetric: bool,
    dtype: np.dtype,
    nonzero_limit: int | None = SIMILARITY_DEFAULTS.nonzero_limit,
) -> tuple[sparse.csc_matrix, dict[str, Any]]:
    """S over ``terms`` from synonym files, and the record of how it was built.

    A rule relates each term to at most ``nonzero_limit`` others (:meth:`Relation.pairs`: a
    larger group is cut to the terms written nearest each term, and said so in a warning that
    names the file and the line); with ``nonzero_limit`` None, a rule that would state more than
    :data:`MAX_RULE_PAIRS` pairs is refused. The record counts the pairs really in S (a pair
    repeated, or overwritten by a later one, once; one whose similarity rounds to zero in
    ``dtype`` not at all).

    Raises
    ------
    ValueError
        For a malformed line of a file (``"FILE:LINE: …"``), or, without a limit, a rule that
        states too many pairs.
    """
    known = set(terms)
    files, stated, inside, cut = [], 0, 0, 0
    reads = []
    for path in synonyms.files:
        read = read_synonyms(path, tokenize, synonyms.similarity)
        record = read.record(known)
        stated += record["pairs"]
        inside += record["pairs_in_vocabulary"]
        cut_here = _cut_rules(read, known, nonzero_limit)
        cut += cut_here
        files.append({**record, "rules_cut_to_nonzero_limit": cut_here})
        reads.append(read)
    counted = (
        (a, b, s**synonyms.exponent)
        for read in reads
        for a, b, s in read.pairs(known, nonzero_limit)
        if s > synonyms.threshold
    )
    matrix, _ = pairs_matrix(terms, counted, symmetric=symmetric, ignore_missing=False, dtype=dtype)
    outside = stated - inside
    if outside:
        logger.info("synonyms: %d pairs have a term outside the vocabulary (not in S)", outside)
    info = {
        "source": "synonyms",
        "files": files,
        "pairs": pairs_in(matrix),
        "pairs_outside_vocabulary": outside,
        "rules_cut_to_nonzero_limit": cut,
        "nonzero_limit": nonzero_limit,
        "similarity": synonyms.similarity,
        "threshold": synonyms.threshold,
        "exponent": synonyms.exponent,
        "symmetric": symmetric,
    }
    return matrix, info


#: The most pairs one rule may state when S has no ``nonzero_limit``: a group of 1,415 terms.
#: (A group of 2,000 made 2 million pairs and 1.4 GB before it was limited; issue 34, item 5.)
MAX_RULE_PAIRS = 1_000_000


def _cut_rules(read: SynonymFile, known: set[str], limit: int | None) -> int:
    """How many rules of ``read`` relate a term to more than ``limit`` terms of ``known`` (so
    are cut, with one warning naming the file and the first such line); without a limit, a
    rule that states more than :data:`MAX_RULE_PAIRS` pairs is an error."""
    if limit is None:
        for relation in read.relations:
            pairs = relation.stated(known)
            if pairs > MAX_RULE_PAIRS:
                raise ValueError(
                    f"{read.path}:{relation.line}: the rule relates {len(relation.left):,} terms "
                    f"into {pairs:,} pairs, more than the {MAX_RULE_PAIRS:,} a rule may make "
                    "with no nonzero_limit: split it, or set a nonzero_limit (each term then "
                    "gets at most that many neighbours of the rule)"
                )
        return 0
    cut = [r for r in read.relations if r.neighbours(known) > limit]
    if cut:
        first = cut[0]
        logger.warning(
            "%s: %d rule(s) relate a term to more terms than nonzero_limit=%d allows, e.g. line "
            "%d (%d terms): each term is related to the %d written nearest it",
            read.path,
            len(cut),
            limit,
            first.line,
            len(first.left) + len(first.right or ()),
            limit if first.right is None else min(limit, len(first.right)),
        )
    return len(cut)


def pairs_in(matrix: sparse.spmatrix) -> int:
    """The pairs of distinct terms that ``matrix`` relates: each unordered pair with a non-zero
    on either side of the diagonal, once."""
    coo = sparse.coo_matrix(matrix)
    off = (coo.row != coo.col) & (coo.data != 0)
    low = np.minimum(coo.row[off], coo.col[off]).astype(np.int64)
    high = np.maximum(coo.row[off], coo.col[off]).astype(np.int64)
    return int(np.unique(low * matrix.shape[0] + high).size)
