"""``metastab study``: run a reproduction study (data, figures, report)."""

from __future__ import annotations

import argparse

from .parser import add_common

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``study`` sub-parser."""
    study = sub.add_parser(
        "study",
        help="run a reproduction study (data, figures, report)",
        description="Run studies/NAME: compute into data/NAME, draw its "
        "figures and write data/NAME/report.md.",
    )
    study.add_argument("name", nargs="?", metavar="NAME", help="the study (see --list)")
    study.add_argument(
        "--quick", action="store_true", help="the reduced run (default output data/NAME/quick)"
    )
    study.add_argument(
        "--config", metavar="TOML", help="another config (same keys as studies/NAME/config.toml)"
    )
    study.add_argument("--out", metavar="DIR", help="output folder (default data/NAME)")
    study.add_argument("--list", action="store_true", help="list the studies and exit")
    study.add_argument(
        "--render",
        action="store_true",
        help="do not simulate: redo the analysis, checks, "
        "figures and report from the tables already in the output folder",
    )
    add_common(study)
    study.set_defaults(handler=run)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run ``metastab study``; returns the exit status."""
    from ..engine.progress import compile_notice
    from ..studies import list_studies, run_study, study_about
    from . import output

    if args.list or args.name is None:
        for name in list_studies():
            about = study_about(name)
            times = "/".join(
                f"{about[k]:.0f} s" if k in about else "?"
                for k in ("seconds_quick", "seconds_full")
            )
            print(f"{name:<18} {about.get('description', '')} [quick/full: {times}]")
        return 0
    # the study's runs draw no bars: with --progress, the first that compiles says so
    with compile_notice(output.progress(args)):
        run_study(args.name, quick=args.quick, out=args.out, config=args.config, render=args.render)
    return 0
