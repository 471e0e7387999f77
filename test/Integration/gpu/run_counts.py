"""Checks TXL_PROFILE=counts lines against per-segment budgets.

usage: run_counts.py LOG --steady FIRST --max name=N[,name=N...]

Reads the `counts: segment <n>: ...` lines a GPU executable prints with
TXL_PROFILE=counts (runtime/include/txl/device.h, txl_device_counters) and
checks, for every segment from FIRST on but the last (which may be shorter),
that each named counter is at most its budget. Prints one line per checked
segment and exits 1 with a FAIL line naming the counter over budget.
"""
import argparse
import re
import sys

FIELDS = ["launches", "library calls", "uploads", "downloads",
          "device copies", "syncs", "allocations", "frees"]
LINE = re.compile(r"^counts: segment (\d+): (.*)$")


def parse(text):
    segments = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        counts = {}
        for field in FIELDS:
            f = re.search(r"(\d+) " + field + r"\b", m.group(2))
            if not f:
                sys.exit(f"FAIL: no '{field}' in: {line}")
            counts[field.replace(" ", "_")] = int(f.group(1))
        segments[int(m.group(1))] = counts
    return segments


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--steady", type=int, default=2)
    ap.add_argument("--max", required=True)
    args = ap.parse_args()
    budgets = {}
    for item in args.max.split(","):
        name, value = item.split("=")
        budgets[name] = int(value)
    segments = parse(open(args.log).read())
    checked = [n for n in sorted(segments) if n >= args.steady][:-1]
    if not checked:
        sys.exit("FAIL: no steady segment in the log")
    failed = False
    for n in checked:
        for name, budget in budgets.items():
            if segments[n][name] > budget:
                print(f"FAIL: segment {n}: {segments[n][name]} {name}, "
                      f"budget {budget}")
                failed = True
        if not failed:
            print(f"segment {n}: within budget")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
