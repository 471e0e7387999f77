#!/usr/bin/env python3
"""Assembles every GPU kernel of every model file for every CUDA architecture
with ptxas and checks it against its budget.

usage: ptxas_table.py --models DIR --ptxas PTXAS --out DIR
                      [--precision f32|bf16|fp16[:ARCH,...]] ...

For each models/*.toml and precision: `txlc --target=cuda
--gpu-arch=A,B,.. --emit=ptx` (one compile of the model, a PTX module per
architecture), then for each architecture `ptxas -arch=A -v -warn-spills -Werror` (spills are
errors; without -c an unresolved libdevice function fails). Per kernel it
records registers, workgroup (shared) memory (static, or the dynamic
bytes a launch passes), spills and barriers, and the
workgroups of 128 work-items an SM can hold from those (the occupancy), and
asserts the budgets below; any "Potential Performance Loss" ptxas reports
for a kernel (C7511: its wgmma serialized) is a problem too. Per precision, writes a Markdown table and the
lines below to OUT/<precision>.txt and prints them; exits 1 when a kernel
misses its budget or fails to assemble. Each model's PTX is emitted once
per precision, by one txlc run for all architectures. A model's
sm_90 PTX that is its sm_90a PTX but for the `.target` line (every f32
module) is not assembled again: ptxas makes the same code of it, and a
line "sm_90 PTX = sm_90a PTX ..." names those models.

A kernel whose PTX, its name and label numbers aside, is that of a
kernel already assembled for the same architecture under the same budget
is not assembled again (`ptxas -e` lists the others): the models share
most kernels (text8 and enwik8, the two Al-Rfou depths). With --precision
bf16 or fp16 the f32 PTX of the same model and architecture (emitted once,
shared with an f32 pass of the same run) is compared, and its kernels,
which the f32 pass assembles, count as assembled: only the kernels that differ from f32's (the attention kernels)
are assembled and listed. A line "not assembled again: N kernels" says how
many were left out, and a line per model and architecture names every
attention kernel of the module, assembled or not.
"""

import argparse
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

# Per SM: registers, shared memory usable by workgroups (bytes), resident
# workgroups (CUDA's occupancy limits for compute capability 8.0 and 9.0).
SM_LIMITS = {
    "sm_80": (65536, 164 * 1024, 32),
    "sm_90": (65536, 228 * 1024, 32),
    "sm_90a": (65536, 228 * 1024, 32),
}
REGISTER_GRANULE = 8          # registers are allocated per thread in 8s
SHARED_RESERVED = 1024        # the driver's shared memory per workgroup

# Budgets per kernel, by name: (pattern, work-items per workgroup, max
# registers, max static shared memory, min workgroups per SM). The
# attention kernels (with or without dropatt, with or without the lse
# output of training): the kernel's nvvm.maxnreg,
# CUDA's 48 KiB, 4 workgroups of 128 (d_head 128: its 44.9 KB of tiles fit
# 3 times in sm_80's 164 KB). The fused attention backward kernels (`_q`,
# `_q_saved`, `_kv`, `_r`, with or without dropatt): their nvvm.maxnreg, up to 48 KiB
# of tiles, 3 workgroups of 128 per SM (sm_80's 164 KB hold three of the
# widest, 48.9 KB); d_head 128's `_kv` and `_r`, whose tiles pass 48 KiB:
# up to 80 KiB of dynamic shared memory, 2 workgroups per SM. The loop kernels (txl-parallel-loops-to-gpu): 64
# registers and at most the 32 bytes of a workgroup-spread reduction's
# partials (8 subgroups' f32) keep 4 workgroups of 256 work-items on an
# SM; the one-work-item serial kernels: 64 registers. The layer norm
# kernels (a subgroup per row, 256 work-items; with the residual add, the
# product's bias and the sum's store taken in or not): 32 registers and no
# shared memory, 8 workgroups; the one with all three (training's second
# norm of a layer) takes 38 registers at sm_80 for d 1024 (lm1b_base):
# 40 and 6 workgroups (1,536 work-items an SM). The tensor-core attention kernels
# (--precision=bf16 and fp16): 128 work-items, the P·V accumulators and
# the query fragments in registers, with or without the lse
# output of training: without dropatt up to d_head 64 (32, 41 and 64) at
# most 168 registers (nvvm.maxnreg; ptxas takes 139 to 187 at sm_90a and
# 252 at sm_80 when free, and spills nothing at 168), so that 3
# workgroups fit an SM and each scheduler has 3 warps to issue from
# during the walk's fixed stalls; otherwise up to 255 (the dropatt forms
# hold the Philox draws and spill at 168; d_head 80 and 128 hold twice
# the accumulators), which leaves 2 workgroups per SM (the launch
# geometry plans the key parts for the kernel's own count); 14 KB of X tile (64 rows of 56 f32), the key
# tile's K and V in bf16 or f16 (4 d_head bytes per key: 16 KB at d_head
# 128) and at d_head 32, 64 and 128 a second buffer of each, which the next
# key tile's copies fill during this tile's products, and a third of V,
# which the previous tile's P·V reads meanwhile (20 KB at 64), and the
# ring of r rows (128 rows of d_head + 8: 18 KB at 64): 53,248 bytes at
# 64, past PTX's 48 KiB of static shared memory (on CUDA in dynamic
# shared memory, txl-dynamic-shared-memory), three workgroups in sm_80's
# 164 KB; at d_head 128 (and 80, padded to 128) the packed form too, with
# two buffers of V (its P·V not carried): 81,920 bytes, 80 KiB,
# still two workgroups. The tensor-core `_kv` backward kernels (d_head up to 80):
# 128 work-items, dk's and dv's accumulators in registers, up to 255 of
# nvvm.maxnreg, 2 workgroups per SM; 29 KB of X, P and dS tiles and the
# query tile's dO and q in bf16 or f16 (128 bytes per column of the
# workgroup's part of d_head: 10 KB at d_head 80). The
# tensor-core `_q_saved` and `_r` kernels likewise, with d(q + u)'s and
# d(q + v)'s (or dr's) accumulators and 33 KB of tiles (X, dS and skewed
# dS; Z, V and dS) and the B tile of their warpgroup product in bf16 or
# f16 (the key tile's k, the query tile's q + v: 64 bytes per column of
# the part of d_head, 5 KB at d_head 80). The packing of the
# tensor-core kernels' key, value and pos_key (rel_attention_pack_<type>_d<d>:
# 128 work-items, 8 f32 loads a chunk): 48 registers, no shared memory, 8
# workgroups; at d_head 128, 4 chunks of each operand a work-item (32
# loads in flight: a copy bound by memory), and at the widths padded past
# d_head (41 to 64, 80 to 128), whose every element is checked against
# d_head, up to 136 registers, 3 workgroups. The
# combine of the attention's key parts: 48 registers, 8
# workgroups of 128. The embedding gradient's sort (256 work-items, a 2 KiB tile
# of token ids): 32 registers, 8 workgroups; its rows kernel (a subgroup
# per sorted position): 48 registers and no shared memory, 5 workgroups.
# The output layer's row kernels (a workgroup of up to 256 work-items per
# row) and its d_logits kernel (256, one element each): 32 registers, the
# row kernel's two 8-float parts of shared memory, 8 workgroups. The bias
# gradients' split column sums (256 work-items, a column each): 32
# registers, no shared memory, 8 workgroups.
BUDGETS = [
    (r"sum_rows_parts?_c\d+", 256, 32, 0, 8),
    (r"linear_nll_rows_w\d_v\d+(_nobias)?(_lse)?", 256, 32, 64, 8),
    (r"linear_nll_dlogits_v\d+(_nobias)?", 256, 32, 0, 8),
    (r"embedding_grad_sort", 256, 32, 2048, 8),
    (r"embedding_grad_rows", 256, 48, 0, 5),
    (r"rel_attention_grad_(kv|r)(_dropatt)?_d128", 128, 128, 80 * 1024, 2),
    (r"rel_attention_grad_(q|q_saved|kv|r)(_dropatt)?_d\d+", 128, 128, 48 * 1024, 3),
    (r"rel_attention_grad_kv_(bf16|f16)(_dropatt)?_d\d+", 128, 255, 39 * 1024, 2),
    (r"rel_attention_grad_(q_saved|r)_(bf16|f16)(_dropatt)?_d\d+", 128, 255, 38 * 1024, 2),
    (r"rel_attention_pack_(bf16|f16)_d(32|64)", 128, 48, 0, 8),
    (r"rel_attention_pack_(bf16|f16)_d\d+", 128, 136, 0, 3),
    (r"rel_attention_(bf16|f16)(_dropatt)?(_lse)?_d(80|128)", 128, 255, 80 * 1024, 2),
    (r"rel_attention_(bf16|f16)(_lse)?_d\d+", 128, 168, 52 * 1024, 3),
    (r"rel_attention_(bf16|f16)(_dropatt)?(_lse)?_d\d+", 128, 255, 52 * 1024, 2),
    (r"rel_attention(_dropatt)?(_lse)?_d128", 128, 128, 48 * 1024, 3),
    (r"rel_attention(_dropatt)?(_lse)?_d\d+", 128, 128, 48 * 1024, 4),
    (r"rel_attention_combine(_lse)?", 128, 48, 0, 8),
    (r"layer_norm_add_bias_sum_d\d+", 256, 40, 0, 6),
    (r"layer_norm(_add)?(_bias)?(_sum)?_d\d+", 256, 32, 0, 8),
    (r"\w+_loop\d+", 256, 64, 32, 4),
    (r"\w+_serial\d+", 1, 64, 0, 1),
]


def budget_for(name):
    """(index, budget) of the first BUDGETS pattern `name` matches, the
    budget as {threads, registers, smem, occupancy}; (None, None) when none
    does. The index tells kernels under different budgets apart."""
    for i, (pattern, threads, registers, smem, occ) in enumerate(BUDGETS):
        if re.fullmatch(pattern, name):
            return i, {"threads": threads, "registers": registers,
                       "smem": smem, "occupancy": occ}
    return None, None


def occupancy(arch, registers, smem, threads):
    regs_per_sm, smem_per_sm, max_blocks = SM_LIMITS[arch]
    regs = -(-max(registers, 1) // REGISTER_GRANULE) * REGISTER_GRANULE
    by_regs = regs_per_sm // (regs * max(threads, 32))
    by_smem = smem_per_sm // (smem + SHARED_RESERVED) if smem else max_blocks
    return min(by_regs, by_smem, max_blocks)


def dynamic_shared(ptx):
    """{kernel: bytes} from the `// txl.dynamic_shared_memory NAME BYTES`
    lines txlc writes at the top of --emit=ptx (ptxas reports static shared
    memory only)."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(
        r"^// txl\.dynamic_shared_memory (\w+) (\d+)$", ptx, re.M)}


def parse_ptxas(output):
    """{kernel: {registers, smem, spill_stores, spill_loads, barriers}}."""
    kernels, current = {}, None
    for line in output.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = kernels.setdefault(m.group(1), {})
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            current["spill_stores"], current["spill_loads"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current["registers"] = int(m.group(1))
            b = re.search(r"used (\d+) barriers", line)
            current["barriers"] = int(b.group(1)) if b else 0
            s = re.search(r"(\d+) bytes smem", line)
            current["smem"] = int(s.group(1)) if s else 0
    return kernels


def performance_losses(output):
    """{kernel: [ptxas's "Potential Performance Loss" messages]}: the info
    lines ptxas -v prints when it gives up an optimization of a kernel, e.g.
    (C7511) when it serializes a kernel's wgmma (each waited for where it
    is issued) for want of registers for the pipeline."""
    losses = {}
    for line in output.splitlines():
        m = re.search(r"\((C\d+)\) Potential Performance Loss: (.*?) in the "
                      r"function '(\w+)'", line)
        if m:
            losses.setdefault(m.group(3), []).append(
                f"{m.group(1)} {m.group(2)}")
    return losses


def entry_bodies(ptx):
    """{kernel name: its PTX text up to the next kernel}, without the
    `// .globl NEXT` comment that ends it, which names the next kernel."""
    parts = re.split(r"(?m)^(?=(?:\.visible )?\.entry )", ptx)
    return {re.match(r"(?:\.visible )?\.entry (\w+)", part).group(1):
            re.sub(r"(?m)^\s*// \.globl\s.*$", "", part)
            for part in parts[1:]}


def anonymous(name, body):
    """A kernel's PTX without what depends on its place in the module: its
    name (also in its parameters' names) and the function number in its
    labels ($L__BB<function>_<block>)."""
    return re.sub(r"\$L__BB\d+_", "$L__BB_", body.replace(name, "@kernel"))


def without_target(ptx):
    """PTX without its `.target` line."""
    return re.sub(r"(?m)^\.target .*$", "", ptx)


# Seconds spent in txlc and in ptxas, printed at the end (a test's cost is
# part of its design: the CI log shows where this one's goes).
SECONDS = {"txlc": 0.0, "ptxas": 0.0}


def emit_ptx(txlc, model, archs, precision, out):
    """{arch: PTX} of `model` at `precision` from one txlc run for all of
    `archs`: its output split at the `// txl.ptx_module <arch>` lines, each
    module's text after the `// txl.dynamic_shared_memory` lines, which
    come once, first, and hold for every architecture."""
    start = time.monotonic()
    subprocess.run([txlc, str(model), "--target=cuda",
                    f"--gpu-arch={','.join(archs)}",
                    f"--precision={precision}", "--emit=ptx", "-o", str(out)],
                   check=True)
    SECONDS["txlc"] += time.monotonic() - start
    parts = re.split(r"(?m)^// txl\.ptx_module (\w+)\n", out.read_text())
    header, modules = parts[0], parts[1:]
    ptx = {modules[i]: header + modules[i + 1]
           for i in range(0, len(modules), 2)}
    if sorted(ptx) != sorted(archs):
        raise RuntimeError(f"{model.stem} {precision}: modules for "
                           f"{sorted(ptx)}, asked for {sorted(archs)}")
    return ptx


def run_ptxas(ptxas, arch, entries, ptx):
    """ptxas -v on `ptx` for `arch` (only `entries` if any), as a
    CompletedProcess."""
    start = time.monotonic()
    run = subprocess.run(
        [ptxas, f"-arch={arch}", "-v", "-warn-spills", "-Werror",
         *(["-e", ",".join(entries)] if entries else []),
         str(ptx), "-o", str(ptx.with_suffix(".cubin"))],
        capture_output=True, text=True)
    SECONDS["ptxas"] += time.monotonic() - start
    return run


def check_precision(precision, archs, models, emit, ptxas, tmp, pool):
    """Assembles and checks every kernel of every model at one precision;
    returns (the text to print, problems). `emit(model, arch, precision)`
    gives the module's PTX (memoized: the f32 PTX a bf16 or fp16 pass
    compares against is the f32 pass's own)."""
    rows, problems = [], []
    jobs = []  # (model, arch, PTX, ptxas's future), in order
    same_as_before = 0
    assembled = {}  # arch -> {(anonymous PTX, budget)} assembled so far
    attention = {}
    # sm_90a's PTX is assembled before sm_90's, which is then only compared.
    order = sorted(archs, key=lambda a: (a != "sm_90a", archs.index(a)))
    same_target = []
    for model in models:
        texts = {}
        for arch in order:
            text = emit(model, arch, precision)
            texts[arch] = text
            if arch == "sm_90" and "sm_90a" in texts and (
                    without_target(text) == without_target(texts["sm_90a"])):
                # ptxas makes the same code of the same PTX for sm_90
                # and sm_90a (the "a" only admits more instructions).
                same_target.append(model.stem)
                continue
            bodies = entry_bodies(text)
            # A kernel whose PTX, its own name and label numbers aside,
            # is that of a kernel already assembled for this arch under
            # the same budget (an earlier model's, or for bf16/fp16 the
            # f32 module's) is not assembled again. Loop kernels are
            # numbered, and the numbers move between modules.
            known = assembled.setdefault(arch, set())
            seen = known
            if precision != "f32":
                f32 = entry_bodies(emit(model, arch, "f32"))
                seen = known | {(anonymous(k, body), budget_for(k)[0])
                                for k, body in f32.items()}
            entries = sorted(
                k for k, body in bodies.items()
                if (anonymous(k, body), budget_for(k)[0]) not in seen)
            known.update((anonymous(k, body), budget_for(k)[0])
                         for k, body in bodies.items())
            # Every attention kernel of the module, assembled here or not
            # (a test can check which ones exist).
            attention[(model.stem, arch)] = sorted(
                k for k in bodies if k.startswith("rel_attention"))
            same_as_before += len(bodies) - len(entries)
            if not entries:
                continue  # nothing new (attn_type 2, 3 at bf16/fp16)
            if len(entries) == len(bodies):
                entries = []  # all of them: no -e
            ptx = pathlib.Path(tmp) / f"{model.stem}.{arch}.{precision}.ptx"
            ptx.write_text(text)
            jobs.append((model, arch, text,
                         pool.submit(run_ptxas, ptxas, arch, entries, ptx)))
    # ptxas runs on every core; its reports are read in the order above.
    for model, arch, text, job in jobs:
        run = job.result()
        if run.returncode != 0:
            problems.append(f"{model.stem} {arch}: ptxas failed:\n{run.stderr}")
        kernels = parse_ptxas(run.stderr + run.stdout)
        if not kernels:
            problems.append(f"{model.stem} {arch}: no kernel")
        for name, messages in sorted(
                performance_losses(run.stderr + run.stdout).items()):
            problems += [f"{model.stem} {arch} {name}: ptxas: {message}"
                         for message in messages]
        dynamic = dynamic_shared(text)
        for name, k in sorted(kernels.items()):
            k["smem"] += dynamic.get(name, 0)
            _, budget = budget_for(name)
            if budget is None:
                problems.append(f"{name}: no budget")
                continue
            occ = occupancy(arch, k["registers"], k["smem"], budget["threads"])
            smem = (f"{k['smem']} (dynamic)" if name in dynamic
                    else k["smem"])
            rows.append((model.stem, arch, name, k["registers"], smem,
                         k["spill_stores"] + k["spill_loads"], k["barriers"], occ))
            if k["spill_stores"] or k["spill_loads"]:
                problems.append(f"{model.stem} {arch} {name}: spills")
            if k["registers"] > budget["registers"]:
                problems.append(f"{model.stem} {arch} {name}: {k['registers']} "
                                f"registers > {budget['registers']}")
            if k["smem"] > budget["smem"]:
                problems.append(f"{model.stem} {arch} {name}: {k['smem']} B "
                                f"shared > {budget['smem']}")
            if occ < budget["occupancy"]:
                problems.append(f"{model.stem} {arch} {name}: {occ} workgroups/SM "
                                f"< {budget['occupancy']}")
    rows.sort(key=lambda row: (row[0], archs.index(row[1])))  # stable
    lines = ["| model | arch | kernel | registers | shared memory (B) | spill bytes "
             "| barrier ids | workgroups/SM |",
             "|---|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    if same_target:
        lines.append(f"sm_90 PTX = sm_90a PTX but for .target, assembled as sm_90a: "
                     f"{' '.join(same_target)}")
    for (model, arch), names in attention.items():
        lines.append(f"attention kernels of {model} {arch}: {' '.join(names)}")
    lines.append(f"not assembled again: {same_as_before} kernels, each the same PTX "
                 f"as one assembled before" + (" or as an f32 kernel"
                                               if precision != "f32" else ""))
    lines += [f"BUDGET: {p}" for p in problems]
    return "\n".join(lines) + "\n", problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", required=True)
    parser.add_argument("--ptxas", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--txlc", default="txlc")
    parser.add_argument("--precision", action="append",
                        help="PRECISION[:ARCH,...] (default archs: sm_80, "
                             "sm_90, sm_90a); repeat for several")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    models = sorted(pathlib.Path(args.models).glob("*.toml"))
    failed = False
    specs = []
    for spec in args.precision or ["f32"]:
        precision, _, arch_list = spec.partition(":")
        specs.append((precision, arch_list.split(",") if arch_list
                      else ["sm_80", "sm_90", "sm_90a"]))
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        # Every module's PTX, emitted by txlc processes on every core ahead
        # of the checks, in the order they ask for them (the checks and
        # ptxas stay in order: what counts as assembled before depends on
        # it). A lit worker otherwise spends most of this test's time on one
        # core in txlc. One txlc run per model and precision gives every
        # architecture's module (the f32 ones also those a bf16 or fp16
        # pass compares with).
        wanted = {}  # precision -> the architectures it is emitted for
        for precision, archs in specs:
            for prec in dict.fromkeys([precision, "f32"]):
                wanted.setdefault(prec, [])
                wanted[prec] += [a for a in archs if a not in wanted[prec]]
        emitted = {}
        for prec, archs in wanted.items():
            for model in models:
                emitted[(model.stem, prec)] = pool.submit(
                    emit_ptx, args.txlc, model, archs, prec,
                    pathlib.Path(tmp) / f"emit.{model.stem}.{prec}.ptx")

        def emit(model, arch, precision):
            return emitted[(model.stem, precision)].result()[arch]

        for precision, archs in specs:
            text, problems = check_precision(precision, archs, models, emit,
                                             args.ptxas, tmp, pool)
            (out / f"{precision}.txt").write_text(text)
            print(f"== {precision}: {', '.join(archs)}")
            print(text, end="")
            failed = failed or bool(problems)
    print(f"== seconds: txlc {SECONDS['txlc']:.0f}, ptxas {SECONDS['ptxas']:.0f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
