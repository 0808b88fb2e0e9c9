"""``python -m es_scm.cli``: the ``es-scm`` command without its console script."""

import sys

from es_scm.cli.main import main

sys.exit(main())
