"""A quick command line: what the parser and ``--help`` never import (issue 41).

``es-scm --help`` and every command's ``--help`` build the whole parser, so they show what each
command module imports when it loads. None needs the client, numpy, scipy, an encoder, the
evaluation packages or the runner's modules: those are imported inside the commands that use
them (``es_scm.elastic``'s names on first use). Each check runs in a fresh interpreter, since
this test session has imported everything already. What a real ``es-scm index`` and ``es-scm
search`` import is checked against a node in tests/integration/test_cli_es.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Packages that no parser, no ``--help`` and no ``import es_scm`` may import: the clients and
#: their transports, the numeric stack, the encoders, the evaluation, the frameworks, the extras.
HEAVY = (
    "elasticsearch",
    "elastic_transport",
    "opensearchpy",
    "aiohttp",
    "httpx",
    "requests",
    "urllib3",
    "numpy",
    "scipy",
    "torch",
    "sentence_transformers",
    "transformers",
    "safetensors",
    "tokenizers",
    "gensim",
    "ir_measures",
    "matplotlib",
    "pyarrow",
    "pandas",
    "tqdm",
    "orjson",
    "rapidfuzz",
    "langchain_core",
    "llama_index",
)
#: es-scm's own modules that only running a command needs: the model, S, the searcher, the
#: client code, the encoder and the local runner's Maven, Java and process code.
HEAVY_OWN = (
    "es_scm.model",
    "es_scm.similarity",
    "es_scm.encoder",
    "es_scm.elastic.connection",
    "es_scm.search.query",
    "es_scm.index.schema",
    "es_scm.elastic._sync",
    "es_scm.tools.node",
    "es_scm.tools.cluster",
    "es_scm.evaluation.significance",
)

#: Runs the code of argv[1] (stdout silenced), then prints the heavy modules it imported.
PROBE = """
import contextlib, io, json, sys
heavy, own = json.loads(sys.argv[2]), json.loads(sys.argv[3])
with contextlib.redirect_stdout(io.StringIO()):
    exec(sys.argv[1])
loaded = [m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(tuple(own))]
print(json.dumps(sorted(loaded)))
"""


def imported_by(code: str) -> list[str]:
    """The modules of :data:`HEAVY` and :data:`HEAVY_OWN` that ``code`` imports in a new
    interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, code, json.dumps(HEAVY), json.dumps(HEAVY_OWN)],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_es_scm_and_its_command_line_imports_nothing_heavy():
    modules = "es_scm, es_scm.cli.main, es_scm.elastic, es_scm.tools.es_local"
    assert imported_by(f"import {modules}") == []


def test_every_help_imports_nothing_heavy():
    """``es-scm --help`` and each command's (and subcommand's) ``--help``, in one process."""
    code = """
import argparse
from es_scm.cli.main import build_parser, main

def commands(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from commands(sub, (*prefix, name))

assert main(["--help"]) == 0
every = list(commands(build_parser()))
assert ("search",) in every and ("es", "start") in every and ("eval", "collection") in every
for command in every:
    assert main([*command, "--help"]) == 0, command
"""
    assert imported_by(code) == []


def test_the_es_scm_script_starts_without_the_client():
    """``es-scm --version`` as the console script runs it (``run``, which also puts the
    finder of es_scm.cli.startup in place)."""
    code = """
import sys
from es_scm.cli.main import run
sys.argv = ["es-scm", "--version"]
try:
    run()
except SystemExit as exit_:
    assert exit_.code == 0
"""
    assert imported_by(code) == []
