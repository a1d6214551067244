#!/usr/bin/env python3
"""Regenerates docs/policies.md's table of every policy on every real trace.

For each trace of tests/data/real/traces (imported into a temporary folder): `memreplay compare --policy
all` plus the configurations users pick by hand, `memreplay fit` for each (the smallest cap
without OOM, 1 MiB resolution) and `memreplay bound` (the floor). Prints three Markdown tables
(reserved peak / requested peak, smallest fitting cap / requested peak, device calls); with
--readme docs/policies.md it replaces the text between the `policy-table` markers there.

  tools/bench/policy_table.py --memreplay build/tools/memreplay [--readme docs/policies.md] [--json out.json]
  tools/bench/policy_table.py --from-json out.json --readme docs/policies.md   # tables only, no replays
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

EXTRA = ["bfc:allow_growth:true", "pytorch:expandable_segments:True"]
BEGIN, END = "<!-- policy-table:begin -->", "<!-- policy-table:end -->"


def run(cli, *args, may_fail=False):
    result = subprocess.run([cli, *args], capture_output=True, text=True)
    if result.returncode != 0 and may_fail:
        print(f"policy_table: memreplay {' '.join(args)}: {result.stderr.strip()}", file=sys.stderr)
        return None
    if result.returncode != 0:
        sys.exit(f"policy_table: memreplay {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def measure(cli, shared, workdir):
    rows = {}
    for pickle in sorted((shared / "traces").glob("*.pickle.xz")):
        name = pickle.name[: -len(".pickle.xz")]
        trace = str(workdir / f"{name}.mrt")
        run(cli, "import", str(pickle), "-o", trace)
        bound = json.loads(run(cli, "bound", trace, "--json", "-"))
        compared = json.loads(run(cli, "compare", trace, "--policy", "all", *sum((["--policy", p] for p in EXTRA), []),
                                  "--json", "-"))
        results = {}
        for r in compared["results"]:
            # A bisection can fail outright (a ring-buffer trace whose starting state does not fit
            # under a probe cap is refused as input, not counted as an OOM): shown as "-".
            fit = run(cli, "fit", trace, "--policy", r["policy"], "--json", "-", may_fail=True)
            results[r["policy"]] = {
                "reserved_peak": r["reserved_peak"], "requested_peak": r["requested_peak"],
                "device_calls": r["device_calls"],
                "min_fit_bytes": json.loads(fit)["min_fit_bytes"] if fit else None}
            print(f"{name} {r['policy']}: {r['reserved_peak'] / r['requested_peak']:.4f}", file=sys.stderr)
        rows[name] = {"bound": bound, "policies": results}
    return rows


def tables(rows):
    traces = list(rows)
    policies = list(next(iter(rows.values()))["policies"])
    short = [t.replace("_pipeline", "").replace("_infer_varbatch", "").replace("_train", "") for t in traces]
    head = "| policy | " + " | ".join(short) + " |\n|---|" + "---:|" * len(traces) + "\n"

    def table(title, cell, floor):
        text = f"**{title}**\n\n" + head
        if floor:
            text += "| `bound`: requested peak (the floor) | " + " | ".join("1.000" for t in traces) + " |\n"
            text += "| `bound`: static placement, greedy by size | " + " | ".join(floor(rows[t]) for t in traces) + " |\n"
        for p in policies:
            text += f"| `{p}` | " + " | ".join(cell(rows[t]["policies"][p]) for t in traces) + " |\n"
        return text + "\n"

    ratio = lambda key: lambda r: f"{r[key] / r['requested_peak']:.3f}" if r[key] is not None else "-"
    bound = lambda r: f"{r['bound']['greedy_rounded'] / r['bound']['requested_peak']:.3f}"
    return (table("Reserved peak ÷ requested peak", ratio("reserved_peak"), bound)
            + table("Smallest capacity that fits ÷ requested peak", ratio("min_fit_bytes"), bound)
            + table("Device calls (mallocs + frees + maps + unmaps + pool grows and trims)", lambda r: str(r["device_calls"]),
                    None))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memreplay", default="build/tools/memreplay")
    parser.add_argument("--shared", default=os.environ.get("MEMREPLAY_REAL_DATA_DIR", "tests/data/real"))
    parser.add_argument("--readme")
    parser.add_argument("--json", help="also write the measurements here")
    parser.add_argument("--from-json", help="make the tables from an earlier --json, measuring nothing")
    args = parser.parse_args()
    if args.from_json:
        rows = json.loads(pathlib.Path(args.from_json).read_text())
        return output(args, rows)
    shared = pathlib.Path(args.shared)
    if not (shared / "traces").is_dir():
        sys.exit(f"policy_table: no traces in {shared / 'traces'}")
    with tempfile.TemporaryDirectory() as workdir:
        rows = measure(args.memreplay, shared, pathlib.Path(workdir))
    output(args, rows)


def output(args, rows):
    text = tables(rows)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    if args.readme:
        readme = pathlib.Path(args.readme)
        old = readme.read_text()
        if BEGIN not in old or END not in old:
            sys.exit(f"policy_table: {readme} has no {BEGIN} ... {END} markers")
        start, stop = old.index(BEGIN) + len(BEGIN), old.index(END)
        readme.write_text(old[:start] + "\n" + text + old[stop:])
    else:
        print(text)


if __name__ == "__main__":
    main()
