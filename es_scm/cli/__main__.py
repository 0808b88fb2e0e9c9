"""``python -m es_scm.cli``: the ``es-scm`` command without its console script."""

from es_scm.cli.main import run

run()
