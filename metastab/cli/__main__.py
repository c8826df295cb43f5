"""``python -m metastab.cli``: the ``metastab`` command."""

import sys

from .command import main

sys.exit(main())
