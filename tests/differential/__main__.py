"""`python -m tests.differential --seed N [--pods M]`: one or more seeds on a sandbox of its own.

Starts a control plane on free ports, kube-scheduler with the recording extender and Ballast's
view, runs each seed and prints every mismatch as it is found, then a summary per seed.
`--json FILE` also writes the mismatches (with the placements each was judged on).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sandbox.cluster.controlplane import ControlPlane, Ports
from tests.differential.ballast_side import BallastView
from tests.differential.report import summary
from tests.differential.runner import Environment, run_seed
from tests.differential.upstream import RecordingExtender, start_judge, stop_judge
from tests.integration.scheduler_support import running


@contextmanager
def environment(plane: ControlPlane) -> Iterator[Environment]:
    """The judge, its extender and Ballast's view on `plane`, stopped on exit."""
    extender = RecordingExtender()
    extender.start()
    view = None
    try:
        start_judge(plane, extender)
        with plane.api_client() as api:
            view = BallastView(api)
            view.start()
            yield Environment(api, extender, view, lambda: running(api))
    finally:
        if view is not None:
            view.stop()
        stop_judge(plane)
        extender.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential", description=__doc__)
    parser.add_argument("--seed", type=int, action="append", required=True)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=24)
    parser.add_argument("--no-validity", action="store_true", help="skip phase 2")
    parser.add_argument("--json", type=Path, help="also write the mismatches here")
    args = parser.parse_args(argv)
    found = []
    with tempfile.TemporaryDirectory(prefix="ballast-diff-") as work:
        plane = ControlPlane(Path(work), Ports.free(), die_with_parent=True)
        plane.start()
        try:
            with environment(plane) as env:
                for seed in args.seed:
                    result = run_seed(env, seed, args.pods, args.nodes, not args.no_validity, print)
                    found += result.mismatches
                    times = ", ".join(f"{k} {v:.1f} s" for k, v in result.seconds.items())
                    print(
                        f"seed {seed}: {args.pods} pods, upstream bound {result.upstream_bound},"
                        f" ballast bound {result.ballast_bound}; {times}; "
                        f"{summary(result.mismatches)}"
                    )
        finally:
            plane.stop()
    if args.json:
        args.json.write_text(json.dumps([m.as_json() for m in found], indent=1))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
