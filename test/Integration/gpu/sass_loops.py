#!/usr/bin/env python3
"""The loops of GPU kernels' machine code (SASS), and budgets on them.

Assembles PTX with ptxas for one architecture, disassembles each named
kernel with cuobjdump (which calls nvdisasm; both from PyPI, installed by
scripts/install-deps.sh under /opt/txlc/cuda-tools), and lists each loop:
a backward branch and the instructions from its target to it, with the
opcode families that matter (LDG global loads, MUFU special functions,
SHFL, BAR, ...). A budget bounds each loop's instructions per global load
(`--per-load KERNEL=N`): in a loop that streams an array, the instructions
issued per element loaded, whatever the unrolling.

`--per-tile KERNEL=N` bounds the instructions a warp issues per iteration
of a tiled kernel's main loop: the outermost loop holding tensor-core
products (HGMMA, HMMA), e.g. the attention's walk over key tiles, or in a
kernel without them (an f32 SIMT kernel) the outermost loop holding a
barrier. A loop nested in it fails the budget (its trip count is not in
the machine code) unless `--inner-trips KERNEL=T` says how often each
nested loop runs per iteration; each then counts T times
(`--inner-trips KERNEL=T1,T2,...`: one count per nested loop, in address
order).

`--per-tile-path KERNEL=N` bounds the fewest instructions of one iteration
of that main loop: the shortest path from its first instruction to its
backward branch, taking any forward branch inside it, i.e. what a warp
issues on a tile whose uniform branches skip code (the attention's
interior key tiles, which skip the mask and the bounds-checked staging).
With no loop nested in it, or with `--inner-trips` giving one count per
nested loop (each instruction of a nested loop then weighs its count).

`--ffma-share KERNEL=F` bounds from below the share of FFMA among the
instructions of that shortest path (weighted as above): an issue-bound
SIMT kernel runs at most that share of the f32 peak.

`--stall-cycles KERNEL=N` bounds the fixed stall cycles of one iteration
of that main loop (no loop nested in it): the sum over all its
instructions (those of every branch; the line also gives the fewest on a
path through it) of the stall count in each one's control bits (bits 41-44 of the second
64-bit word on sm_70 to sm_90: the cycles the scheduler waits before the
warp's next instruction, which ptxas sets to cover fixed-latency
dependences, such as an HMMA whose result the next HMMA accumulates
onto, and fills with NOPs when nothing independent is left). It is what
one warp alone takes per tile at least, scoreboard waits (memory,
variable-latency units) not counted; a loop whose stalls far exceed its
instructions is latency-bound, however few instructions it issues.

usage: sass_loops.py --ptxas PTXAS --arch sm_90a FILE.ptx
           [--per-load KERNEL=N ...] [--per-tile KERNEL=N ...]
           [--inner-trips KERNEL=T ...] [--per-tile-path KERNEL=N ...]
           [--stall-cycles KERNEL=N ...] [--ffma-share KERNEL=F ...]
           [--show KERNEL ...]

Prints one line per loop of each kernel named, then "ok"/"FAIL" per
budget; exits 1 if a budget fails or a kernel is missing.
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

# A family is the first whose name starts the opcode: LDSM (ldmatrix)
# before LDS, LDGSTS (cp.async) and LDGDEPBAR (its commit_group) before LDG.
FAMILIES = ["LDGSTS", "LDGDEPBAR", "LDG", "STG", "LDSM", "LDS", "STS", "HGMMA",
            "HMMA", "BAR", "MEMBAR", "MUFU", "SHFL", "BRA"]


def opcode(text):
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def family(text):
    """The family of the instruction `text`; "other" for one predicated on
    !PT, which issues but never runs (the placeholders ptxas puts around a
    cp.async wait: `@!PT LDS RZ, [RZ]`)."""
    if text.startswith("@!PT "):
        return "other"
    op = opcode(text)
    for f in FAMILIES:
        if op.startswith(f):
            return f
    return "other"


def sass(cuobjdump, cubin, kernel):
    """([(address, instruction)], {address: stall cycles}) of `kernel` in
    `cubin`: cuobjdump prints an instruction's two 64-bit words on its
    line and the next; the second holds the control bits."""
    out = subprocess.run([cuobjdump, "-sass", "-fun", kernel, cubin],
                         capture_output=True, text=True)
    if out.returncode != 0 or "/*0000*/" not in out.stdout:
        raise SystemExit(f"FAIL {kernel}: no SASS ({out.stderr.strip()[:200]})")
    code, stalls = [], {}
    lines = out.stdout.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if not m:
            continue
        address = int(m.group(1), 16)
        code.append((address, m.group(2).strip()))
        word = re.match(r"\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$",
                        lines[i + 1] if i + 1 < len(lines) else "")
        if word:
            stalls[address] = (int(word.group(1), 16) >> 41) & 0xF
    return code, stalls


def branch_target(text):
    """The target address of a BRA instruction, or None for another one."""
    if opcode(text) != "BRA":
        return None
    m = re.findall(r"0x([0-9a-f]+)", text.split("BRA", 1)[1])
    return int(m[-1], 16) if m else None


def loops(code):
    """Each backward branch's body: {start, end, n, ops, code}."""
    found = []
    for address, text in code:
        target = branch_target(text)
        if target is None or target >= address:
            continue
        body = [(a, t) for a, t in code if target <= a <= address]
        found.append({"start": target, "end": address, "n": len(body),
                      "ops": collections.Counter(family(t) for _, t in body),
                      "code": body})
    return sorted(found, key=lambda l: l["start"])


def path_of_fewest(loop, weight=None):
    """(cost, instructions) of the path with the fewest instructions from
    the loop's first instruction to its backward branch: each forward
    branch inside the loop may be taken (an unpredicated one must be), a
    branch out of it is not, a backward one (a nested loop's) is not
    taken. With `weight` ({address: cost}), the least total cost of such a
    path instead."""
    body = loop["code"]
    index = {a: i for i, (a, _) in enumerate(body)}
    cost_of = [1 if weight is None else weight[a] for a, _ in body]
    cost = [0] * len(body)
    after = [None] * len(body)
    cost[-1] = cost_of[-1]
    for i in range(len(body) - 2, -1, -1):
        text = body[i][1]
        target = branch_target(text)
        inside = target is not None and target > body[i][0] and \
            target in index
        options = []
        if not (inside and not text.startswith("@")):
            options.append((cost[i + 1], i + 1))
        if inside:
            options.append((cost[index[target]], index[target]))
        best = min(options)
        cost[i] = cost_of[i] + best[0]
        after[i] = best[1]
    path, i = [], 0
    while i is not None:
        path.append(body[i])
        i = after[i]
    return cost[0], path


def shortest_path(loop, weight=None):
    """path_of_fewest's cost."""
    return path_of_fewest(loop, weight)[0]


def main_loop(kernel_loops):
    """The outermost loop holding tensor-core products; in a kernel with
    none (an f32 SIMT kernel), the outermost loop holding a barrier (its
    walk over tiles); or None."""
    products = [l for l in kernel_loops
                if l["ops"]["HGMMA"] or l["ops"]["HMMA"]]
    if not products:
        products = [l for l in kernel_loops if l["ops"]["BAR"]]
    return max(products, key=lambda l: l["end"] - l["start"]) \
        if products else None


def nested_loops(main, kernel_loops):
    """The loops inside `main`, in address order."""
    return [l for l in kernel_loops if l is not main and
            main["start"] <= l["start"] and l["end"] <= main["end"]]


def trip_weights(kernel, main, kernel_loops, trips):
    """{address: times issued per iteration of `main`}: each instruction of
    the i-th nested loop (address order; an inner loop inside another
    multiplies) trips[i] times, or None (a line printed) when `trips` does
    not give one count per nested loop."""
    nested = nested_loops(main, kernel_loops)
    if len(trips) != len(nested):
        print(f"FAIL {kernel} main loop {main['start']:#x}: {len(nested)} "
              f"nested loop(s), {len(trips)} trip count(s) given")
        return None
    weight = {a: 1 for a, _ in main["code"]}
    for l, t in zip(nested, trips):
        for a, _ in l["code"]:
            weight[a] *= t
    return weight


def flat_main_loop(kernel, kernel_loops, what):
    """The main loop when no loop is nested in it; else prints why `what`
    (a count of one iteration) cannot be taken, and returns None."""
    main = main_loop(kernel_loops)
    if main is None:
        print(f"FAIL {kernel}: no loop holds products or a barrier")
        return None
    if any(l is not main and main["start"] <= l["start"] and
           l["end"] <= main["end"] for l in kernel_loops):
        print(f"FAIL {kernel} main loop {main['start']:#x}: nested loops, "
              f"no {what}")
        return None
    return main


def per_tile_path(kernel, kernel_loops, budget, trips=None, share=None):
    """Checks the main loop's shortest path (with `trips`, one count per
    nested loop: each nested loop's instructions counted that often);
    with `share`, also that FFMA makes at least that fraction of the path's
    instructions; prints a line per check."""
    if trips is None:
        main = flat_main_loop(kernel, kernel_loops, "path count")
        if main is None:
            return False
        weight = {a: 1 for a, _ in main["code"]}
    else:
        main = main_loop(kernel_loops)
        if main is None:
            print(f"FAIL {kernel}: no loop holds products or a barrier")
            return False
        weight = trip_weights(kernel, main, kernel_loops, trips)
        if weight is None:
            return False
    n, path = path_of_fewest(main, weight)
    ok = budget is None or n <= budget
    if budget is not None:
        print(f"{'ok  ' if ok else 'FAIL'} {kernel} main loop "
              f"{main['start']:#x}: {n:g} instructions on its shortest path "
              f"(budget {budget:g}; {main['n']} in the loop)")
    if share is not None:
        ffma = sum(weight[a] for a, t in path
                   if family(t) == "other" and opcode(t).startswith("FFMA"))
        lds = sum(weight[a] for a, t in path if family(t) == "LDS")
        good = ffma >= share * n
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {kernel} main loop "
              f"{main['start']:#x}: FFMA {ffma:g} of {n:g} instructions on "
              f"its shortest path, {ffma / n:.3f} (budget >= {share:g}; "
              f"LDS {lds:g})")
    return ok


def per_tile(kernel, kernel_loops, budget, trips):
    """Checks the main loop's instructions per iteration; prints a line."""
    main = main_loop(kernel_loops)
    if main is None:
        print(f"FAIL {kernel}: no loop holds products or a barrier")
        return False
    nested = nested_loops(main, kernel_loops)
    if nested and trips is None:
        print(f"FAIL {kernel} main loop {main['start']:#x}: {len(nested)} "
              f"nested loop(s), trip count unknown")
        return False
    trips = trips or []
    if len(trips) == 1:
        trips = trips * len(nested)
    if nested and len(trips) != len(nested):
        print(f"FAIL {kernel} main loop {main['start']:#x}: {len(nested)} "
              f"nested loop(s), {len(trips)} trip count(s) given")
        return False
    n = main["n"] + sum((t - 1) * l["n"] for l, t in zip(nested, trips))
    ldg = main["ops"]["LDG"] + sum((t - 1) * l["ops"]["LDG"]
                                   for l, t in zip(nested, trips))
    verdict = "ok  " if n <= budget else "FAIL"
    print(f"{verdict} {kernel} main loop {main['start']:#x}: {n:g} "
          f"instructions per iteration (budget {budget:g}; "
          f"{len(nested)} nested loop(s); LDG {ldg:g}, "
          f"LDGSTS {main['ops']['LDGSTS']}, "
          f"BAR {main['ops']['BAR']}, LDS {main['ops']['LDS']}, "
          f"LDSM {main['ops']['LDSM']}, MEMBAR {main['ops']['MEMBAR']}, "
          f"STS {main['ops']['STS']})")
    return n <= budget


def stall_cycles(kernel, kernel_loops, stalls, budget):
    """Checks the fixed stall cycles of one iteration of the main loop;
    prints a line."""
    main = flat_main_loop(kernel, kernel_loops, "stall count")
    if main is None:
        return False
    missing = [a for a, _ in main["code"] if a not in stalls]
    if missing:
        print(f"FAIL {kernel} main loop {main['start']:#x}: no control bits "
              f"at {missing[0]:#x}")
        return False
    n = sum(stalls[a] for a, _ in main["code"])
    nops = sum(1 for _, t in main["code"] if opcode(t) == "NOP")
    verdict = "ok  " if n <= budget else "FAIL"
    print(f"{verdict} {kernel} main loop {main['start']:#x}: {n} fixed "
          f"stall cycles per iteration (budget {budget:g}; {main['n']} "
          f"instructions, NOP {nops}; {shortest_path(main, stalls)} on the "
          f"path of fewest)")
    return n <= budget


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ptx")
    parser.add_argument("--ptxas", required=True)
    parser.add_argument("--cuobjdump", default="cuobjdump")
    parser.add_argument("--arch", required=True)
    parser.add_argument("--per-load", action="append", default=[],
                        metavar="KERNEL=N")
    parser.add_argument("--per-tile", action="append", default=[],
                        metavar="KERNEL=N")
    parser.add_argument("--inner-trips", action="append", default=[],
                        metavar="KERNEL=T")
    parser.add_argument("--per-tile-path", action="append", default=[],
                        metavar="KERNEL=N")
    parser.add_argument("--stall-cycles", action="append", default=[],
                        metavar="KERNEL=N")
    parser.add_argument("--ffma-share", action="append", default=[],
                        metavar="KERNEL=F")
    parser.add_argument("--show", action="append", default=[], metavar="KERNEL")
    args = parser.parse_args()

    def specs(values):
        out = {}
        for spec in values:
            name, _, n = spec.partition("=")
            out[name] = float(n)
        return out

    budgets = specs(args.per_load)
    tile_budgets = specs(args.per_tile)
    inner_trips = {}
    for spec in args.inner_trips:
        name, _, n = spec.partition("=")
        inner_trips[name] = [float(t) for t in n.split(",")]
    shares = specs(args.ffma_share)
    path_budgets = specs(args.per_tile_path)
    stall_budgets = specs(args.stall_cycles)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        subprocess.run([args.ptxas, f"-arch={args.arch}", "-O3", args.ptx,
                        "-o", cubin], check=True)
        ok = True
        for kernel in dict.fromkeys(args.show + list(budgets) +
                                    list(tile_budgets) + list(path_budgets) +
                                    list(stall_budgets) + list(shares)):
            code, stalls = sass(args.cuobjdump, cubin, kernel)
            kernel_loops = loops(code)
            for l in kernel_loops:
                ops = " ".join(f"{k} {v}" for k, v in sorted(l["ops"].items()))
                print(f"{kernel} loop {l['start']:#x}-{l['end']:#x}: {l['n']} "
                      f"instructions ({ops})")
            if kernel in tile_budgets:
                ok &= per_tile(kernel, kernel_loops, tile_budgets[kernel],
                               inner_trips.get(kernel))
            if kernel in path_budgets or kernel in shares:
                ok &= per_tile_path(kernel, kernel_loops,
                                    path_budgets.get(kernel),
                                    inner_trips.get(kernel),
                                    shares.get(kernel))
            if kernel in stall_budgets:
                ok &= stall_cycles(kernel, kernel_loops, stalls,
                                   stall_budgets[kernel])
            if kernel not in budgets:
                continue
            streaming = [l for l in kernel_loops if l["ops"]["LDG"]]
            if not streaming:
                print(f"FAIL {kernel}: no loop loads from global memory")
                ok = False
                continue
            for l in streaming:
                per = l["n"] / l["ops"]["LDG"]
                verdict = "ok  " if per <= budgets[kernel] else "FAIL"
                ok &= per <= budgets[kernel]
                print(f"{verdict} {kernel} loop {l['start']:#x}: {per:.2f} "
                      f"instructions per global load (budget "
                      f"{budgets[kernel]:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
