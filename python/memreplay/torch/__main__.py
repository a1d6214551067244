"""python -m memreplay.torch record -o run.mrt [options] -- train.py ARGS
   python -m memreplay.torch record -o run.mrt [options] -m package.module ARGS
   python -m memreplay.torch build            # compile the extension now (it is cached)

Runs a Python program with PyTorch's caching allocator recorded from its first allocation
(see memreplay.torch). The program's exit status is ours.
"""

from __future__ import annotations

import argparse
import runpy
import sys

from . import start
from ._native import RecorderUnavailable, extension


def _parse(argv):
    parser = argparse.ArgumentParser(prog="python -m memreplay.torch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="run a program and record its CUDA caching allocator")
    rec.add_argument("-o", "--output", required=True, help="trace file to write (.mrt)")
    rec.add_argument("--chunk-events", type=int, default=16384, help="events per chunk (default 16384)")
    rec.add_argument("--flush-ms", type=int, default=500, help="write at least this often (default 500)")
    rec.add_argument("--buffer-events", type=int, default=16384,
                     help="events a thread may have in flight before they are dropped (default 16384)")
    rec.add_argument("-m", dest="module", help="run a module (like python -m) instead of a script")
    rec.add_argument("program", nargs=argparse.REMAINDER, help="script and its arguments (after --)")
    commands.add_parser("build", help="compile the tracker extension against this torch now")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.command == "build":
        try:
            extension(verbose=True)
        except RecorderUnavailable as e:
            print(f"memreplay: {e}", file=sys.stderr)
            return 1
        print("memreplay: the PyTorch recorder extension is built")
        return 0

    program = [a for a in args.program]
    if program and program[0] == "--":
        program = program[1:]
    if not args.module and not program:
        print("memreplay: nothing to run: give a script (after --) or -m module", file=sys.stderr)
        return 2
    recording = start(args.output, chunk_events=args.chunk_events, flush_interval=args.flush_ms / 1000.0,
                      buffer_events=args.buffer_events)
    status = 0
    try:
        if args.module:
            sys.argv = [args.module, *program]
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = program
            sys.path.insert(0, str(__import__("pathlib").Path(program[0]).resolve().parent))
            runpy.run_path(program[0], run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    finally:
        stats = recording.stop()
        if recording.path and stats["recorded"]:
            print(f"memreplay: {stats['written']} events recorded to {recording.path}"
                  + (f" ({stats['dropped']} dropped)" if stats["dropped"] else ""), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
