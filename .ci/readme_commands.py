"""The README's two set-up commands, read from README.md so that CI runs them as written.

``python3 .ci/readme_commands.py demo`` prints the command that installs the package and runs the
demo, ``... test`` the one that installs the test extras and runs the tests. The section
``## Set-up`` must hold exactly two fenced blocks of one line each, the first ending in
``metastab demo`` and the second running pytest: anything else exits 1 with what was found, so
a README whose set-up changes shape fails CI instead of being skipped. Standard library only
(it runs before any environment exists).
"""

import re
import sys
from pathlib import Path

WHICH = ("demo", "test")


def commands(readme: str) -> dict[str, str]:
    """{"demo": ..., "test": ...} from the text of README.md; ValueError where its set-up
    section does not have the expected shape."""
    section = re.search(r"^## Set-up\n(.*?)(?=^## )", readme, flags=re.S | re.M)
    if section is None:
        raise ValueError("no '## Set-up' section")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", section.group(1), flags=re.S | re.M)
    lines = [b.strip() for b in blocks]
    if len(lines) != 2 or any("\n" in line or not line for line in lines):
        raise ValueError(f"expected two one-line commands in '## Set-up', found {blocks!r}")
    demo, test = lines
    if not demo.endswith("metastab demo"):
        raise ValueError(f"the first set-up command does not run 'metastab demo': {demo!r}")
    if "pytest" not in test:
        raise ValueError(f"the second set-up command does not run pytest: {test!r}")
    return {"demo": demo, "test": test}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in WHICH:
        print(f"usage: readme_commands.py {{{'|'.join(WHICH)}}}", file=sys.stderr)
        return 2
    try:
        found = commands(Path("README.md").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"README.md: {exc}", file=sys.stderr)
        return 1
    print(found[argv[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
