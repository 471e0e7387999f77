#!/usr/bin/env python3
"""The issue-bound ceiling of the tensor-core attention forward on an
H100/H200 (sm_90a, bf16, d_head 64), from the SASS instructions a warp
issues per key tile of 32 keys (sass-budgets-attention.test's counts: an
interior tile, which skips the mask, and a masked one). A prediction from
the machine code, not a measurement.

The model: each workgroup (4 warps, 64 query rows: 4 subgroups of 16)
walks, per subgroup, the key tiles its last row sees (rows past qlen walk
too); a tile whose keys every row of the subgroup sees is interior, the
others (the diagonal, the tail tile) masked. An SM issues at most 4
warp-instructions a cycle; 132 SMs at 1.98 GHz (H100 SXM and H200 alike).
Useful work is 6 FLOPs per visible (query, key) pair and d_head element
(AC, BD and P·V). Latency is ignored: the kernel runs below the ceiling.

Where a row gives the loop's fixed stall cycles a tile (`sass_loops.py
--stall-cycles`: the stall counts ptxas writes into the control bits, the
cycles a warp waits before its next issue), a second ceiling counts them
too: each of an SM's 4 schedulers holds W warps (W workgroups of 4 warps
per SM: 2 at 255 registers a work-item, 3 at 168), so a warp's tile takes
at least max(instructions, stall cycles / W) of its scheduler's cycles.
Variable latencies (memory, the warpgroup products' waits) are still
ignored.

usage: attention_ceiling.py [--d-head 64|128] [INTERIOR MASKED [STALLS [W]]]
prints, for each row (default: the table of bench/gpu/README.md for that
d_head), the ceilings in TFLOP/s at qlen 512 / klen 1024 and at the
paper's 80 / 2180 (tgt_len 80, mem_len 2100)."""

import math
import sys

SMS, CLOCK_HZ, ISSUE_PER_CYCLE = 132, 1.98e9, 4


def ceiling(qlen, klen, interior, masked, d_head=64, stalls=None, warps=2):
    """TFLOP/s of useful work when only instruction issue bounds the kernel
    (and, given `stalls`, the fixed stall cycles a warp waits a tile, with
    `warps` warps per scheduler)."""
    if stalls is not None:
        interior = max(interior, stalls / warps)
        masked = max(masked, stalls / warps)
    mlen = klen - qlen
    issued = pairs = 0
    for i0 in range(0, math.ceil(qlen / 64) * 64, 16):
        last = min(klen, i0 + 15 + mlen + 1)  # keys the subgroup's last row sees
        whole = last // 32
        for t in range(math.ceil(last / 32)):
            inside = t < whole and 32 * t + 31 <= i0 + mlen  # its first row sees the tile
            issued += interior if inside else masked
        pairs += sum(min(klen, i + mlen + 1) for i in range(i0, i0 + 16) if i < qlen)
    seconds = issued / (ISSUE_PER_CYCLE * SMS * CLOCK_HZ)
    return 6 * d_head * pairs / seconds / 1e12


# (label, interior, masked[, fixed stall cycles of the loop[, warps per
# scheduler, 2 if not given]]): bench/gpu/README.md's rows.
TABLE = [
    ("commit 529c73f", 2255, 2255),
    ("2026-12-05, before", 782, 782),
    ("2026-12-05, interior tiles, 16-byte loads", 575, 625),
    ("2026-12-05, ldmatrix, paired rounding, one fence, scale in the fma", 506, 556),
    ("2026-12-06, packed bf16 key, value and pos_key", 417, 467),
    ("2026-12-06, asynchronous copies, a ring of r rows", 393, 443),
    ("2026-12-06, two stages: the next tile's copies in flight, one barrier", 390, 441),
    ("2026-12-06, AC's product asynchronous, waited for after X", 389, 440),
    ("2026-12-06, the previous tile's P·V in flight during this tile's (wait_group 1)", 396, 447, 1328),
    ("2026-12-07, X's product chains interleaved, 3 at a time", 379, 430, 948),
    ("2026-12-07, at most 168 registers: 3 workgroups per SM", 389, 440, 1134, 3),
    ("2026-12-07, X's entries stored in pairs (rows of 56 floats)", 376, 427, 1105, 3),
    ("2026-12-07, session 79: K's and V's copies on one address each (static-offset views, v_packed tile-major)", 367, 418, 1018, 3),
    ("2026-12-07, session 79: O's rescale skipped when no row's maximum moved (threshold 8)", 340, 382, 925, 3),
    ("2026-12-07, session 80: K and V packed as the image of the workgroup's tiles, chunk x to chunk x", 334, 377, 846, 3),
]


# d_head 128 (enwik8_large, text8_large, lm1b_base): the rolled staging
# loop counted 6 times where it runs 32 (so the old row is an upper bound
# on the ceiling), then the packed form (session 75).
TABLE_128 = [
    ("before session 75, rolled staging loops, r rows from global memory "
     "(a lower bound: the staging loop counted 6 of its 32 trips)", 2105, 2105),
    ("2026-12-06, packed form: asynchronous copies, the r ring, two stages, AC asynchronous", 525, 576, 1938),
    ("2026-12-07, X's product chains interleaved, 3 at a time", 482, 533, 1190),
    ("2026-12-07, X's entries stored in pairs (rows of 56 floats)", 470, 521, 1140),
    ("2026-12-07, X's 6 chains all interleaved", 470, 521, 1082),
    ("2026-12-07, session 79: K's and V's copies on one address each (static-offset views, v_packed tile-major)", 456, 507, 1045),
    ("2026-12-07, session 80: K and V packed as the image of the workgroup's tiles, chunk x to chunk x", 456, 507, 1036),
]


def main(argv):
    d_head = 64
    if argv[:1] == ["--d-head"]:
        d_head, argv = int(argv[1]), argv[2:]
    rows = TABLE if d_head == 64 else TABLE_128
    if argv:
        if len(argv) not in (2, 3, 4):
            sys.exit(__doc__)
        numbers = [int(a) for a in argv]
        rows = [("given counts", *numbers)]
    print("| kernel (interior / masked[; stall cycles]) | qlen 512, klen 1024 "
          "| 80/2180 | with fixed stalls: 512/1024 | 80/2180 |")
    print("|---|---|---|---|---|")
    for label, interior, masked, *rest in rows:
        stalls = rest[0] if rest else None
        warps = rest[1] if len(rest) > 1 else 2
        cells = [ceiling(512, 1024, interior, masked, d_head),
                 ceiling(80, 2180, interior, masked, d_head)]
        if stalls is not None:
            cells += [ceiling(512, 1024, interior, masked, d_head, stalls, warps),
                      ceiling(80, 2180, interior, masked, d_head, stalls, warps)]
        counts = f"{interior} / {masked}" + (
            f"; {stalls}, {warps} warps" if stalls else "")
        print(f"| {label} ({counts}) | " +
              " | ".join(f"{c:.0f} TFLOP/s" for c in cells) +
              " | –" * (4 - len(cells)) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
