#!/usr/bin/env python
"""How long a piped ``es-scm model build`` stays silent: the longest gap between its lines.

A user who pipes a long build (``es-scm model build ... 2>&1 | tee build.log``, a CI log) must
see it working: issue 30 asks for a progress line at least every 10 s. This builds a model with
the defaults on the first ``--paragraphs`` paragraphs of the Wikipedia extract, its standard
error a pipe (no terminal: the line-per-stage form), stamps every line as it arrives, and
reports the longest silence — from the start, between two lines, and before the end.

Usage::

    python scripts/check_progress.py --paragraphs 20000 --json results/check_progress.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_build import write_wikipedia  # noqa: E402
from benchlib import provenance  # noqa: E402


def stamped_lines(command: list[str]) -> tuple[int, list[tuple[float, str]], float]:
    """Run ``command`` with its output piped; (exit code, (seconds, line) of each, total)."""
    started = time.monotonic()
    lines = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append((time.monotonic() - started, line.rstrip("\n")))
        code = process.wait()
    return code, lines, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paragraphs", type=int, default=20_000)
    parser.add_argument("--json", default=str(REPO / "results" / "check_progress.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / "wiki.jsonl"
        write_wikipedia(corpus, args.paragraphs)
        command = [sys.executable, "-m", "es_scm.cli", "model", "build", "--corpus", str(corpus)]
        command += ["--out", str(Path(scratch) / "model")]
        code, lines, total = stamped_lines(command)
    times = [0.0] + [seconds for seconds, _ in lines] + [total]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    longest = max(gaps)
    for seconds, line in lines:
        print(f"{seconds:7.1f}s  {line}")
    print(f"\nexit code {code}; {len(lines)} lines in {total:.0f}s; longest silence {longest:.1f}s")
    report = {
        "provenance": provenance(sys.argv),
        "paragraphs": args.paragraphs,
        "exit_code": code,
        "seconds": round(total, 1),
        "longest_silence_seconds": round(longest, 1),
        "lines": [{"at": round(s, 1), "line": line} for s, line in lines],
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
