#!/usr/bin/env python
"""Benchmark how quickly the ``es-scm`` command starts: ``--help``, each command's ``--help``,
and one ``es-scm search`` beyond its search (issue 41's goals: ``es-scm --help`` ≤ 0.5 s, a
search's overhead ≤ 1.0 s, on an idle 2-core machine).

Every measure is a fresh process of the ``es-scm`` console script (the one beside this Python;
else ``python -m es_scm.cli``), started ``--repeats`` times, the commands interleaved round by
round so that the machine's noise hits them alike; medians are reported (and the minimum, the
least disturbed run), with the CPU time (user + system) of each process: on a busy machine the
wall time mostly waits for a core, and the CPU time is about what the wall time is on an idle
one. ``python -c pass`` is measured the same way: the interpreter's own start.

The search: ``es-scm search --model M --index I QUERY`` in its default mode (hybrid) and with
``--mode exact``. Its overhead is the process's wall time less the search's own time, the
``took`` that the command prints on stderr (``-- 10 hits, mode hybrid, ..., 38 ms``): the plan's
round trips. What that leaves counted as overhead is everything a one-off command pays:
starting Python, the imports, reading the model, making the client (the engine is asked of the
cluster), the index's check. ``python -X importtime`` of ``--help`` and of the search gives the
largest imports, recorded beside the times.

Without ``--model``/``--index``, the packaged demo corpus (250 documents) is built into a model
with ``--embeddings`` (default ``auto``: what a user gets) under ``results/tmp/bench-cli/``
once, and indexed into ``es-scm-bench-cli``; neither is timed.

es-scm's own modules are byte-compiled first (as ``pip install`` does; an editable install run
with ``PYTHONDONTWRITEBYTECODE=1`` would compile ~110 modules on every start, half a second).

Usage::

    ES_URL=http://127.0.0.1:9200 python scripts/bench_cli.py --repeats 15
    python scripts/bench_cli.py --model cisi-model --index cisi --query "computer indexing"

Writes ``results/bench_cli.json`` (``--json ''``: nothing).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402  (scripts/benchlib.py)

import es_scm  # noqa: E402

WORK = REPO / "results" / "tmp" / "bench-cli"
INDEX = "es-scm-bench-cli"
QUERY = "president greets the press"
#: The search's own time in the command's summary line on stderr.
TOOK = re.compile(r"^-- .* (\d+) ms$", re.MULTILINE)
GOALS = {"help_s": 0.5, "search_overhead_s": 1.0}
SEARCH = "es-scm search QUERY"


def es_scm_command() -> list[str]:
    """The console script beside this Python (what a user runs), else ``python -m es_scm.cli``."""
    script = Path(sys.executable).with_name("es-scm")
    return [str(script)] if script.exists() else [sys.executable, "-m", "es_scm.cli"]


def help_commands() -> list[list[str]]:
    """``--help`` and every command's and subcommand's ``--help``, as argv lists."""
    from es_scm.cli.main import build_parser

    def walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += [(*prefix, name), *walk(sub, (*prefix, name))]
        return found

    return [["--help"], *([*command, "--help"] for command in walk(build_parser(), ()))]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """The wall time of one run of ``argv``, the CPU time (user + system) its process used, and
    what it did. Only one child runs at a time, so the children's usage grows by its own."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def summary(times: list[float], cpu: list[float]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(times), 4),
        "min_s": round(min(times), 4),
        "max_s": round(max(times), 4),
        "median_cpu_s": round(statistics.median(cpu), 4),
        "runs_s": [round(t, 4) for t in times],
    }


def prepared_index(args: argparse.Namespace, env: dict[str, str]) -> tuple[str, str]:
    """The model folder and the index to search: the given ones, or the demo corpus's."""
    if args.model and args.index:
        return args.model, args.index
    from es_scm.demo import demo_corpus_path

    model = WORK / f"model-{args.embeddings.replace(':', '-')}"
    command = es_scm_command()
    if not (model / "model.json").exists():
        WORK.mkdir(parents=True, exist_ok=True)
        build = [*command, "model", "build", "--corpus", str(demo_corpus_path())]
        build += ["--out", str(model), "--embeddings", args.embeddings, "--force"]
        subprocess.run(build, env=env, check=True, capture_output=True)
    index = [*command, "index", "--model", str(model), "--index", INDEX]
    index += ["--corpus", str(demo_corpus_path()), "--recreate", "--no-progress"]
    subprocess.run(index, env=env, check=True, capture_output=True)
    return str(model), INDEX


def largest_imports(argv: list[str], env: dict[str, str], top: int) -> dict[str, Any]:
    """``python -X importtime`` of one command: the total, and the ``top`` packages by the time
    spent importing their own modules (the self times of ``numpy.*`` for numpy, wherever they
    were imported from), in ms. A refused import (es_scm.cli.startup) costs a few µs."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "es_scm.cli", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    by_package: dict[str, int] = {}
    modules = 0
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+\d+ \| *(\S+)", line)
        if match:
            modules += 1
            package = match[2].split(".")[0]
            by_package[package] = by_package.get(package, 0) + int(match[1])
    largest = sorted(by_package.items(), key=lambda item: -item[1])[:top]
    return {
        "total_ms": round(sum(by_package.values()) / 1000, 1),
        "modules": modules,
        "largest_packages_ms": {name: round(us / 1000, 1) for name, us in largest},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="runs of each command")
    parser.add_argument("--model", help="a model folder to search with (with --index)")
    parser.add_argument("--index", help="an index of that model")
    parser.add_argument("--embeddings", default="auto", help="the demo model's (no --model)")
    parser.add_argument("--query", default=QUERY)
    parser.add_argument("--no-compile", action="store_true", help="do not byte-compile es_scm")
    parser.add_argument("--json", default=str(REPO / "results" / "bench_cli.json"))
    args = parser.parse_args(argv)

    env = dict(os.environ)
    if not args.no_compile:
        compileall.compile_dir(Path(es_scm.__file__).parent, quiet=1)
    model, index = prepared_index(args, env)
    command = es_scm_command()
    search = [*command, "search", "--model", model, "--index", index]
    measured: dict[str, list[str]] = {"python -c pass": [sys.executable, "-c", "pass"]}
    measured |= {"es-scm " + " ".join(h): [*command, *h] for h in help_commands()}
    measured[SEARCH] = [*search, args.query]
    measured[f"{SEARCH} --mode exact"] = [*search, "--mode", "exact", args.query]

    load_before = os.getloadavg()
    times: dict[str, list[float]] = {name: [] for name in measured}
    cpus: dict[str, list[float]] = {name: [] for name in measured}
    took: dict[str, list[float]] = {name: [] for name in measured if name.startswith(SEARCH)}
    for argv_ in measured.values():  # one run each first, not timed: caches warm
        timed(argv_, env)
    for _ in range(args.repeats):
        for name, argv_ in measured.items():
            seconds, cpu, done = timed(argv_, env)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr.strip()}")
            times[name].append(seconds)
            cpus[name].append(cpu)
            if name in took:
                reported = TOOK.findall(done.stderr)
                if not reported:
                    raise SystemExit(f"{name}: no search time on stderr: {done.stderr.strip()}")
                took[name].append(int(reported[-1]) / 1000)
    load_after = os.getloadavg()

    results: dict[str, Any] = {name: summary(t, cpus[name]) for name, t in times.items()}
    searches = {}
    for name, tooks in took.items():
        overheads = [wall - own for wall, own in zip(times[name], tooks, strict=True)]
        searches[name] = {
            "median_wall_s": results[name]["median_s"],
            "median_search_s": round(statistics.median(tooks), 4),
            "median_overhead_s": round(statistics.median(overheads), 4),
            "min_overhead_s": round(min(overheads), 4),
            # the client's own CPU time: about what its wall time is on an idle machine, less
            # the node's part of the search (which runs in the node's process, not counted)
            "median_cpu_s": results[name]["median_cpu_s"],
        }
    helps = {name: r["median_s"] for name, r in results.items() if name.endswith("--help")}
    report = {
        "provenance": provenance(sys.argv),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after],
            "bytecode": "not compiled here" if args.no_compile else "es_scm byte-compiled first",
            "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE"),
        },
        "command": command,
        "model": model,
        "index": index,
        "query": args.query,
        "repeats": args.repeats,
        "goals": GOALS,
        "help": {
            "es-scm --help median_s": results["es-scm --help"]["median_s"],
            "slowest command --help": max(helps.items(), key=lambda item: item[1]),
        },
        "search": searches,
        "commands": results,
        "importtime": {
            "es-scm --help": largest_imports(["--help"], env, 12),
            SEARCH: largest_imports(
                ["search", "--model", model, "--index", index, args.query], env, 12
            ),
        },
    }
    width = max(map(len, results))
    print(f"{'command':<{width}}  median    min    CPU   (s, {args.repeats} runs)")
    for name, result in results.items():
        print(
            f"{name:<{width}}  {result['median_s']:6.3f}  {result['min_s']:6.3f}  "
            f"{result['median_cpu_s']:6.3f}"
        )
    for name, search_ in searches.items():
        print(
            f"{name}: overhead beyond its search {search_['median_overhead_s']:.3f} s (median; "
            f"the search {search_['median_search_s']:.3f} s of {search_['median_wall_s']:.3f}; "
            f"the process's CPU {search_['median_cpu_s']:.3f} s)"
        )
    print(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
