"""``python -m metastab``: the ``metastab`` command, as ``python -m metastab.cli``."""

import sys

from .cli.command import main

sys.exit(main())
