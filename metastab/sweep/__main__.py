"""``python -m metastab.sweep CONFIG --out DIR``: the sweep command without the ``metastab`` CLI."""

import sys

from .command import main

if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, OSError) as exc:
        print(f"metastab sweep: {' '.join(str(exc).split())}", file=sys.stderr)
        sys.exit(2)
