"""What an ingestion did: :class:`IngestReport`, and the errors that carry one when it stops."""

from __future__ import annotations

from dataclasses import dataclass, field

from es_scm.model.soft_cosine import TokenCounts

__all__ = ["IngestError", "IngestInterrupted", "IngestReport"]


@dataclass
class IngestReport:
    """What an ingestion did, document by document.

    ``indexed`` = ``created`` + ``updated`` documents that Elasticsearch accepted (``created``:
    the index did not hold the id before this run wrote it, even if a retried write was answered
    ``updated``); ``failed`` ones were rejected (``failures`` holds their ids, or where a bad
    corpus record was read, and reasons); ``skipped`` ones were read but not confirmed written
    because the run stopped (``stopped`` says why); ``duplicates`` count ids seen earlier in the
    same run (the later document is the one stored); ``empty`` documents have no vocabulary
    term (stored, never matched). ``index_count`` is what the index holds at the end (None when
    it could not be counted); ``warnings`` are problems that lost nothing. ``tokens`` counts the
    tokens of the documents read that are terms (not stop words), and ``unknown_tokens`` those
    of them that are not in the model's vocabulary (the SCM ignores them).
    """

    created: int = 0
    updated: int = 0
    failed: int = 0
    skipped: int = 0
    duplicates: int = 0
    empty: int = 0
    seconds: float = 0.0
    failures: list[tuple[str, str]] = field(default_factory=list)
    empty_ids: list[str] = field(default_factory=list)
    duplicate_ids: list[str] = field(default_factory=list)
    stopped: str | None = None
    index_count: int | None = None
    warnings: list[str] = field(default_factory=list)
    tokens: int = 0
    unknown_tokens: int = 0

    @property
    def indexed(self) -> int:
        return self.created + self.updated

    @property
    def unknown_share(self) -> float | None:
        """``unknown_tokens / tokens`` (None without tokens)."""
        return TokenCounts(self.tokens, self.unknown_tokens).unknown_share

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.skipped == 0 and self.stopped is None

    def summary(self) -> str:
        rate = self.indexed / self.seconds if self.seconds else 0.0
        text = (
            f"indexed {self.indexed} (created {self.created}, updated {self.updated}), "
            f"failed {self.failed}, skipped {self.skipped}, duplicates {self.duplicates}, "
            f"empty {self.empty} in {self.seconds:.1f}s ({rate:.0f} docs/s)"
        )
        if self.tokens:
            text += (
                f"; {self.unknown_tokens} of {self.tokens} tokens unknown to the model "
                f"({100 * self.unknown_tokens / self.tokens:.1f}%)"
            )
        if self.index_count is not None:
            text += f"; the index holds {self.index_count} documents"
        return text


class IngestError(RuntimeError):
    """The ingestion stopped early; ``report`` says what was done (``report.stopped``: why)."""

    def __init__(self, message: str, report: IngestReport) -> None:
        super().__init__(message)
        self.report = report


class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C (or the run's ``stop``) stopped the ingestion; ``report`` says what was done.

    The requests in flight were waited for, and what they wrote is counted, unless a second
    interruption came while waiting: then ``abandoned`` is True, and the report warns how many
    documents may still be written after the run returned.
    """

    def __init__(self, report: IngestReport, *, abandoned: bool = False) -> None:
        super().__init__("interrupted")
        self.report = report
        self.abandoned = abandoned
