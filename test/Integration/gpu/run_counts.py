"""Checks TXL_PROFILE=counts lines against per-segment budgets.

usage: run_counts.py LOG --steady FIRST [--last N] [--what segment|update]
                     --max name=N[,name=N...]

Reads the `counts: segment <n>: ...` lines (with --what update, the
`counts: update <n>: ...` lines of `train`) a GPU executable prints with
TXL_PROFILE=counts (runtime/include/txl/device.h, txl_device_counters) and
checks, for every one from FIRST on but the last (which may be shorter;
with --last, up to N inclusive), that each named counter is at most its
budget. A line counts what happened since the line before it, of whatever
kind. Prints one line per checked segment or update and exits 1 with a
FAIL line naming the counter over budget.
"""
import argparse
import re
import sys

FIELDS = ["launches", "library calls", "uploads", "downloads",
          "device copies", "syncs", "allocations", "frees",
          "serial launches", "work-items", "product FLOPs", "product bytes"]
def parse(text, what="segment"):
    line_re = re.compile(r"^counts: " + what + r" (\d+): (.*)$")
    segments = {}
    for line in text.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        counts = {}
        for field in FIELDS:
            f = re.search(r"(\d+) " + field + r"\b", m.group(2))
            if not f:
                sys.exit(f"FAIL: no '{field}' in: {line}")
            counts[re.sub(r"[ -]", "_", field)] = int(f.group(1))
        segments[int(m.group(1))] = counts
    return segments


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--steady", type=int, default=2)
    ap.add_argument("--last", type=int,
                    help="the last one checked (default: all but the last)")
    ap.add_argument("--what", choices=["segment", "update"], default="segment")
    ap.add_argument("--max", required=True)
    args = ap.parse_args()
    budgets = {}
    for item in args.max.split(","):
        name, value = item.split("=")
        budgets[name] = int(value)
    segments = parse(open(args.log).read(), args.what)
    checked = [n for n in sorted(segments) if n >= args.steady]
    if args.last is None:
        checked = checked[:-1]
    else:
        checked = [n for n in checked if n <= args.last]
        if args.last not in segments:
            sys.exit(f"FAIL: no {args.what} {args.last} in the log")
    if not checked:
        sys.exit(f"FAIL: no steady {args.what} in the log")
    failed = False
    for n in checked:
        for name, budget in budgets.items():
            if segments[n][name] > budget:
                print(f"FAIL: {args.what} {n}: {segments[n][name]} {name}, "
                      f"budget {budget}")
                failed = True
        if not failed:
            print(f"{args.what} {n}: within budget")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
