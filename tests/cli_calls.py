"""Call the command line in-process (shared by the command-line tests)."""

from metastab.cli import main


def run(capsys, *argv):
    """main(argv) -> (exit status, stdout, stderr)."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err
