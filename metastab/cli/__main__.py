"""``python -m metastab.cli``: the ``metastab`` command."""

import sys

from .exits import main

sys.exit(main())
