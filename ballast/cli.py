"""`ballast` console command.

Each component owns its subcommand: it exposes `register(subparsers)` in its own `cli.py`, which
adds a parser whose `func` default runs the command. This module only wires them together, and
imports each lazily so that `ballast sandbox` does not pay for importing the scheduler.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from shared.lifecycle import gc_paused

# subcommand -> module that defines it
COMMANDS: dict[str, str] = {
    "sandbox": "sandbox.cli",
    "watcher": "watcher.cli",
    "scheduler": "scheduler.cli",
    "rebalancer": "scheduler.rebalancer.cli",
    "top": "watcher.top",
    "explain": "ballast.explain",
    "simulator": "sandbox.load.simulator_cli",
    "demo": "sandbox.demo",
}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ballast",
        description="Load-aware Kubernetes scheduling: load-watcher, scheduler, sandbox.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = None
    if argv:
        wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, module_name in COMMANDS.items():
        if wanted in COMMANDS and name != wanted:
            # Only the chosen command's module is imported; the others get a stub for --help.
            subparsers.add_parser(name, help=f"see `ballast {name} --help`")
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Before numpy loads: no command does linear algebra, and OpenBLAS would start a thread per
    # core (and its buffers) at import. An operator's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The command's module imports hundreds of modules: long-lived objects, hardly any garbage,
    # yet the cyclic collector ran about 130 times meanwhile (about 0.1 s of a start's CPU);
    # frozen after, its later passes do not walk them again.
    with gc_paused(freeze=True):
        parser = build_parser(argv)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
