"""``python -m tcbench.capacity search|report``: see the package doc."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import cli
from . import __doc__ as DOC
from .probe import run_search
from .report import load_results, report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcbench.capacity", description=DOC,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("search", help="one search (workload x precision)")
    s.add_argument("--plan", required=True, help="the search as a JSON object (see plan())")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--reference", type=Path, help="the result of the same search without this "
                   "one's setting: its limit is probed first (a check, two probes where the "
                   "setting changes nothing)")
    r = sub.add_parser("report", help="capacity.csv, capacity.md and figures/capacity.{pdf,png}")
    r.add_argument("results", type=Path, nargs="+")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--figures", type=Path, required=True)
    args = ap.parse_args(argv)

    def command():
        if args.command == "search":
            from ..host import gpus

            # The search claims one GPU for all its probes (they inherit CUDA_VISIBLE_DEVICES),
            # so searches on a multi-GPU host run side by side, one per device.
            gpus.pin()
            reference = load_results([args.reference])[0] if args.reference else None
            doc = run_search(json.loads(args.plan), args.out, reference=reference)
            print(f"{doc['workload']} {doc['precision']}: {doc['status']}, largest batch "
                  f"{doc['largest_ok']}, first out of memory {doc['smallest_oom']}")
        else:
            report(args.results, args.out, args.figures)

    return cli.main("tcbench.capacity", command, (ValueError, json.JSONDecodeError))


if __name__ == "__main__":
    sys.exit(main())
