"""The product loops of an object file's x86-64 machine code: each innermost
loop (a backward branch whose range holds no other) with FMAs and without
a float-to-integer conversion (the softmax's exp, whose 2^n is built from
integer bits, has one; its loop stores the probabilities by design), with
its instructions, FMAs, instructions that read memory and instructions
that write it.

usage: cpu_kernel_loops.py OBJECT [FUNCTION] [--check] [--op OP]
       cpu_kernel_loops.py OBJECT [FUNCTION] --exp-budget N

Prints one line per product loop; with --check, a verdict line and exit
status 1 unless every product loop writes nothing (its accumulators stay
in registers: no spill) and reads at most 1.5 operands per FMA. With --op,
the loops with that instruction instead of FMAs (e.g. vdpbf16ps, the
runtime's bf16 product), counted as the FMAs are.

With --exp-budget, the exp loops instead: each innermost loop with FMAs
and float-to-integer conversions (one per vector exp: 2^n from integer
bits), with its instructions per conversion; a verdict line and exit
status 1 unless the main loops (those with the most exps a step: the
unrolled ones, not the remainder loops after them) take at most N
instructions per exp and none writes anything.
"""

import argparse
import re
import subprocess
import sys


def instructions(obj, function):
    which = ["--disassemble=" + function] if function else ["-d"]
    text = subprocess.run(["objdump", "--no-show-raw-insn"] + which + [obj],
                          check=True, capture_output=True, text=True).stdout
    out = []
    for line in text.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(\S+)\s*(.*)", line)
        if m:
            out.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return out


def innermost_loops(ins):
    """[(start, end)] address ranges of backward branches holding none."""
    loops = []
    for addr, op, args in ins:
        m = re.match(r"([0-9a-f]+) <", args)
        if op.startswith("j") and m and int(m.group(1), 16) < addr:
            loops.append((int(m.group(1), 16), addr))
    return [(s, e) for s, e in loops
            if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e
                       for s2, e2 in loops)]


def exp_loops(ins, budget):
    found = []
    for start, end in innermost_loops(ins):
        body = [(op, a) for addr, op, a in ins if start <= addr <= end]
        fmas = sum("fmadd" in op for op, _ in body)
        exps = sum(op.startswith("vcvt") and op.endswith("2dq")
                   for op, _ in body)
        if not fmas or not exps:
            continue
        writes = sum("(" in a and a.rstrip().endswith(")")
                     for op, a in body if not op.startswith(("lea", "nop")))
        found.append((start, end, len(body), exps, writes))
    most = max((f[3] for f in found), default=0)
    ok = bool(found)
    for start, end, count, exps, writes in found:
        per_exp = count / exps
        print("exp loop %x-%x: %d instructions, %d exp, %.1f per exp, "
              "%d writes" % (start, end, count, exps, per_exp, writes))
        ok &= writes == 0 and (exps < most or per_exp <= budget)
    print("%s: %d exp loops" % ("ok" if ok else "FAIL", len(found)))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("object")
    ap.add_argument("function", nargs="?", default="",
                    help="default: every function")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--exp-budget", type=float, default=0)
    ap.add_argument("--op", default="",
                    help="the product instruction (default: any fmadd)")
    args = ap.parse_args()
    product = ((lambda op: op == args.op) if args.op
               else (lambda op: "fmadd" in op))
    ins = instructions(args.object, args.function)
    if args.exp_budget:
        return exp_loops(ins, args.exp_budget)
    ok = True
    loops = 0
    for start, end in innermost_loops(ins):
        body = [(op, a) for addr, op, a in ins if start <= addr <= end]
        fmas = sum(product(op) for op, _ in body)
        if not fmas or any("cvt" in op for op, _ in body):
            continue
        memory = [(op, a) for op, a in body
                  if "(" in a and not op.startswith(("lea", "nop"))]
        # AT&T syntax: the destination is the last operand.
        writes = sum(a.rstrip().endswith(")") for _, a in memory)
        reads = len(memory) - writes
        print("loop %x-%x: %d instructions, %d fma, %d reads, %d writes" %
              (start, end, len(body), fmas, reads, writes))
        ok &= writes == 0 and reads <= 1.5 * fmas
        loops += 1
    if args.check:
        ok &= loops > 0
        print("%s: %d product loops" % ("ok" if ok else "FAIL", loops))
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
