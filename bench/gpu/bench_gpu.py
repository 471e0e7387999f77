#!/usr/bin/env python3
"""GPU speed: txlc's --target=cuda executables and attention kernel against
the official PyTorch model on the same GPU (a benchmark, not a test).

Three benchmarks (bench/gpu/README.md has the details):

  ptb        the trained ptb_small model on PTB valid as the official
             eval.py runs it (batch 10, tgt_len 64, mem_len 64): `EXE eval`
             tokens/s against reference_txl.py (the official formulation) in
             eager mode and under torch.compile; perplexities printed side
             by side (equal = same computation).
  enwik8     an enwik8-base-sized model (12 x 512, 8 heads x 64, random
             weights and tokens) at two settings: tgt_len = mem_len = 512,
             and the paper's evaluation setting tgt_len 80, mem_len 2100,
             clamp_len 820, same_length. `EXE run-segments` (each segment
             timed by its output line) against eager and torch.compile;
             steady state = segments with a full memory.
  attention  the rel_attention kernels alone at enwik8-base shapes (qlen 512,
             klen 1024, 8 heads x 64, batch 4): f32, and bf16 (tensor
             cores) with and without its packing kernel, launched through
             the runtime's device ABI, against the official attention math in
             PyTorch (einsum AC + BD, pad/view/slice rel-shift, mask,
             softmax) and PyTorch SDPA (flash attention where available)
             on plain causal attention of the same shape.
  train      enwik8-base sized training as run_enwik8_base.sh (batch 22,
             tgt_len = mem_len = 512, dropout 0.1, Adam, clip 0.25) on a
             synthetic 204-symbol corpus: `EXE train` tokens/s per
             --precision against reference_txl.py train steps in eager f32,
             torch.compile f32 and eager AMP (autocast bf16); and the
             attention's forward + backward per layer: txlc's kernels as
             TXL_PROFILE times them in that training, against the official
             attention math with autograd and SDPA causal, each forward and
             backward at the same shape.

    bench/gpu/bench_gpu.py all                     # on a GPU: --target cuda
    bench/gpu/bench_gpu.py train --train-shape 512,512,22
    bench/gpu/bench_gpu.py all --target opencl --torch-device cpu --smoke
                                                   # a run-through on a CPU

Run it with a Python that has torch (and, on a GPU, CUDA); the executables
come from build/bin/txlc.
"""

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
SHARED = os.environ.get("TXL_SHARED",
                        os.path.normpath(os.path.join(ROOT, "..", "shared")))
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "gpu"))

import bench  # noqa: E402  (ptb_stream, ENWIK8_TOML)


def sync(device):
    import torch
    if device == "cuda":
        torch.cuda.synchronize()


# --------------------------------------------------------------------------
# txlc side
# --------------------------------------------------------------------------
def compile_model(a, toml, name, precision="f32", backward=False):
    exe = os.path.join(a.workdir, f"{name}_{a.target}_{precision}")
    if a.prebuilt:
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"--prebuilt: no executable {exe}")
        print(f"  prebuilt: {exe}", flush=True)
        return exe
    cmd = [a.txlc, toml, f"--target={a.target}", f"--precision={precision}",
           f"--backward={'true' if backward else 'false'}", "-o", exe]
    if a.target == "cuda":
        cmd.append(f"--gpu-arch={a.gpu_arch}")
    print("  compile: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return exe


def run_exe(cmd):
    """Runs `cmd`, timestamping each stdout line; returns (lines with their
    arrival time in seconds, stderr)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(["stdbuf", "-oL"] + cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    lines = [(time.perf_counter() - t0, line) for line in p.stdout]
    err = p.stderr.read()
    if p.wait() != 0:
        raise SystemExit(f"{cmd[0]} failed:\n{err}")
    return lines, err


# --------------------------------------------------------------------------
# PyTorch side
# --------------------------------------------------------------------------
def torch_models(a, toml, weights, **overrides):
    """{'eager': model, 'compile': torch.compile(model)} on the device."""
    import torch
    import reference_txl as ref

    model = ref.load_model(toml, weights, **overrides).to(a.torch_device)
    models = {"eager": model}
    if not a.no_compile:
        models["compile"] = torch.compile(model, dynamic=True)
    return models


def torch_segments(model, data, target, device):
    """Runs data/target [S, tgt_len, bsz] with memory carried; returns the
    seconds of each segment and the NLL sum."""
    import torch
    times, total = [], 0.0
    with torch.inference_mode():
        mems = tuple()
        for s in range(data.shape[0]):
            sync(device)
            t0 = time.perf_counter()
            ret = model(data[s], target[s], *mems)
            mems = tuple(ret[1:])
            total += ret[0].double().sum().item()  # waits for the device
            times.append(time.perf_counter() - t0)
    return times, total


def official_attention(q, k, v, r, u, vb, mask):
    """mem_transformer.py's RelPartialLearnableMultiHeadAttn core, op for op:
    q [qlen, b, n, d], k and v [klen, b, n, d], r [klen, n, d], u and vb
    [n, d], mask [qlen, klen, 1, 1] (True: hidden); the output [qlen, b, n,
    d]."""
    import torch
    import torch.nn.functional as F
    ac = torch.einsum("ibnd,jbnd->ijbn", q + u, k)
    bd = torch.einsum("ibnd,jnd->ijbn", q + vb, r)
    zero = torch.zeros((bd.size(0), 1, *bd.size()[2:]), device=bd.device,
                       dtype=bd.dtype)
    padded = torch.cat([zero, bd], dim=1).view(bd.size(1) + 1, bd.size(0),
                                               *bd.size()[2:])
    bd = padded[1:].view_as(bd)
    score = (ac + bd) * (1 / q.size(-1) ** 0.5)
    prob = F.softmax(score.masked_fill(mask, -float("inf")), dim=1)
    return torch.einsum("ijbn,jbnd->ibnd", prob, v)


def timed_calls(fn, wait, iters):
    """Seconds per call of `fn` over `iters` calls after one warm-up."""
    fn()
    wait()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    wait()
    return (time.perf_counter() - t0) / iters


# --------------------------------------------------------------------------
# benchmarks
# --------------------------------------------------------------------------
def bench_ptb(a):
    import torch
    ref_dir = os.path.join(SHARED, "reference", "ptb_small")
    toml = os.path.join(ROOT, "models", "ptb_small.toml")
    weights = os.path.join(ref_dir, "model.safetensors")
    print("# ptb_small / PTB valid, batch 10, tgt_len 64, mem_len 64")
    rows = []
    for precision in a.precision:
        exe = compile_model(a, toml, "ptb_small", precision)
        for _ in range(a.repeat):
            lines, err = run_exe([exe, "eval", "--data",
                                  os.path.join(SHARED, "data", "ptb"),
                                  "--split", "valid", "--checkpoint", weights,
                                  "--batch-size", "10", "--tgt-len", "64",
                                  "--mem-len", "64", "--json"])
            result = json.loads(lines[-1][1])
            rows.append((f"txlc {precision}", result["tokens_per_s"],
                         result["ppl"]))
    ids, n_vocab = bench.ptb_stream(os.path.join(SHARED, "data", "ptb"), "valid")
    data = torch.tensor(ids, dtype=torch.long)
    n_step = data.size(0) // 10
    data = data[:n_step * 10].view(10, -1).t().contiguous().to(a.torch_device)
    if a.smoke:
        data = data[:64 * 4 + 1]
    segs = [(data[i:i + min(64, data.size(0) - 1 - i)],
             data[i + 1:i + 1 + min(64, data.size(0) - 1 - i)])
            for i in range(0, data.size(0) - 1, 64)]
    for label, model in torch_models(a, toml, weights, mem_len=64,
                                     tgt_len=64).items():
        # One pass to warm up (compile, allocator), then the timed ones.
        for run in range(1 + a.repeat):
            total, tokens = 0.0, 0
            with torch.inference_mode():
                mems = tuple()
                sync(a.torch_device)
                t0 = time.perf_counter()
                for inp, tgt in segs:
                    ret = model(inp, tgt, *mems)
                    mems = tuple(ret[1:])
                    total += ret[0].double().sum().item()
                    tokens += inp.numel()
                seconds = time.perf_counter() - t0
            if run:
                rows.append((f"pytorch {label}", tokens / seconds,
                             float(torch.tensor(total / tokens).exp())))
    for name, tps, ppl in rows:
        print(f"  {name:18s} {tps:10.0f} tok/s   ppl {ppl:.4f}")
    return rows


ENWIK8_SETTINGS = {
    # name: (tgt_len, mem_len, clamp_len, same_length, batch)
    "512/512": (512, 512, -1, False, 4),
    "paper eval 80/2100": (80, 2100, 820, True, 4),
}


def enwik8_weights(a, toml):
    """Random weights (official init shape, std 0.1) for the model file."""
    import torch
    import reference_txl as ref
    from safetensors.torch import save_file

    path = os.path.join(a.workdir, "enwik8_weights.safetensors")
    if os.path.exists(path):
        return path
    g = torch.Generator().manual_seed(1234)
    _, kw = ref.read_model_file(toml)
    state = {}
    for name, t in ref.MemTransformerLM(**kw).state_dict().items():
        if name == "pos_emb.inv_freq":
            state[name] = t.clone()
        elif "layer_norm.weight" in name:
            state[name] = 1 + 0.1 * torch.randn(t.shape, generator=g)
        elif "layer_norm.bias" in name or name.startswith("crit"):
            state[name] = torch.zeros(t.shape)
        else:
            state[name] = 0.1 * torch.randn(t.shape, generator=g)
    state["crit.out_layers.0.weight"] = state["word_emb.emb_layers.0.weight"]
    save_file({k: v.contiguous().clone() for k, v in state.items()}, path)
    return path


def print_enwik8_row(setting, who, tokens_per_s):
    """One row as it is measured (a cut-off run keeps what it measured)."""
    print(f"  {setting:20s} {who:18s} {tokens_per_s:10.0f} tok/s", flush=True)


def bench_enwik8(a):
    import numpy as np
    import torch

    toml = os.path.join(a.workdir, "enwik8_base.toml")
    with open(toml, "w") as f:
        f.write(bench.ENWIK8_TOML)
    exes = {p: compile_model(a, toml, "enwik8_base", p) for p in a.precision}
    weights = enwik8_weights(a, toml)
    rows = []
    for name, (tgt, mem, clamp, same, bsz) in ENWIK8_SETTINGS.items():
        if a.smoke:
            tgt, mem, bsz = min(tgt, 32), min(mem, 64), 2
        # Enough segments for the memory to fill, then `segments` more.
        warm = -(-mem // tgt)
        S = warm + a.segments
        rng = np.random.default_rng(5678)
        stream = rng.integers(0, 204, size=(S * tgt + 1, bsz), dtype=np.int64)
        inputs = os.path.join(a.workdir, f"enwik8_{tgt}_{mem}_in.npy")
        targets = os.path.join(a.workdir, f"enwik8_{tgt}_{mem}_tgt.npy")
        np.save(inputs, stream[:-1].reshape(S, tgt, bsz))
        np.save(targets, stream[1:].reshape(S, tgt, bsz))
        print(f"# enwik8-base sized, {name}: tgt_len {tgt}, mem_len {mem}, "
              f"clamp_len {clamp}, same_length {same}, batch {bsz}; "
              f"{warm} segments to fill the memory, {a.segments} timed")
        tokens = tgt * bsz
        for precision, exe in exes.items():
            for _ in range(a.repeat):
                lines, _ = run_exe([exe, "run-segments", "--checkpoint", weights,
                                    "--inputs", inputs, "--targets", targets,
                                    "--mem-len", str(mem), "--clamp-len", str(clamp),
                                    "--same-length", "true" if same else "false"])
                stamps = [t for t, line in lines if line.startswith("| segment ")]
                steady = [t1 - t0
                          for t0, t1 in zip(stamps[warm - 1:], stamps[warm:])]
                rows.append((name, f"txlc {precision}",
                             tokens * len(steady) / sum(steady)))
                print_enwik8_row(*rows[-1])
        data = torch.from_numpy(np.load(inputs)).to(a.torch_device)
        target = torch.from_numpy(np.load(targets)).to(a.torch_device)
        for label, model in torch_models(a, toml, weights, tgt_len=tgt,
                                         mem_len=mem, clamp_len=clamp,
                                         same_length=same).items():
            torch_segments(model, data, target, a.torch_device)  # warm-up
            for _ in range(a.repeat):
                times, _ = torch_segments(model, data, target, a.torch_device)
                steady = times[warm:]
                rows.append((name, f"pytorch {label}",
                             tokens * len(steady) / sum(steady)))
                print_enwik8_row(*rows[-1])
    return rows


def bench_attention(a):
    import numpy as np
    import torch
    import torch.nn.functional as F
    import rel_attention_kernel as rak

    qlen, mlen, bsz = a.attention_shape
    n_head, d_head = 8, 64
    if a.smoke:
        qlen, mlen, bsz = 64, 64, 2
    klen = qlen + mlen
    work = a.workdir
    toml = os.path.join(ROOT, "models", "enwik8_base.toml")
    txl = os.path.join(work, "enwik8_base.txl")
    bin_dir = os.path.dirname(a.txlc)
    if not a.prebuilt:
        subprocess.run([a.txlc, toml, "--emit=txl-opt", "-o", txl], check=True)

    def kernels(precision):
        """The attention kernels of `precision` (f32 or bf16): their MLIR
        text and device image (device_bundle.sh's with --prebuilt)."""
        stem = "enwik8_base_attention" + ("" if precision == "f32" else f"_{precision}")
        mlir = os.path.join(work, stem + ".mlir")
        if a.prebuilt:
            # device_bundle.sh wrote the kernels' MLIR and PTX (NUL-terminated).
            with open(os.path.join(work, f"{stem}.{a.gpu_arch}.ptx"), "rb") as f:
                return open(mlir).read(), f.read()
        subprocess.run([os.path.join(bin_dir, "txl-opt"), txl,
                        f"--txl-rel-attention-to-gpu=precision={precision}",
                        "-o", mlir], check=True)
        if a.target == "cuda":
            image = subprocess.run(
                [os.path.join(bin_dir, "txl-translate"), "--kernels-to-ptx",
                 f"--ptx-chip={a.gpu_arch}", mlir], check=True,
                capture_output=True).stdout + b"\0"  # PTX: NUL-terminated
        else:
            image = subprocess.run(
                [os.path.join(bin_dir, "txl-translate"),
                 "--kernels-to-opencl-image", mlir], check=True,
                capture_output=True).stdout
        return open(mlir).read(), image

    rng = np.random.default_rng(0)
    heads = rng.standard_normal((klen, bsz, n_head, 3 * d_head)).astype(np.float32)
    q, k, v = (heads[mlen:, :, :, :d_head], heads[:, :, :, d_head:2 * d_head],
               heads[:, :, :, 2 * d_head:])
    r = rng.standard_normal((klen, n_head, d_head)).astype(np.float32)
    u = rng.standard_normal((n_head, d_head)).astype(np.float32)
    vb = rng.standard_normal((n_head, d_head)).astype(np.float32)
    out = np.zeros((qlen, bsz, n_head, d_head), np.float32)
    want = rak.reference(q, k, v, r, u, vb, mlen, False, 1 / d_head ** 0.5)
    rows, errors = [], {}
    # The f32 kernel, then the bf16 tensor-core kernel after its packing
    # kernel (timed with it, as the host code launches them, and alone).
    for precision, name, resident in (("f32", f"rel_attention_d{d_head}", 4),
                                      ("bf16", f"rel_attention_bf16_d{d_head}", 2)):
        text, image = kernels(precision)
        layouts = rak.kernel_layouts(text)
        tiles, block = layouts[name]
        dev = rak.Device(a.device_lib, image, backend=a.target)
        args = dev.memref(q, heads)[1]
        pack = f"rel_attention_pack_{precision}_d{d_head}"
        if pack in layouts:
            packed, _, repack = rak.launch_pack(dev, pack, layouts[pack][1], heads,
                                                k, v, r, precision)
            for desc in packed:
                args += desc
        else:
            for x in (k, v):
                args += dev.memref(x, heads)[1]
            args += dev.memref(r)[1]
        for x in (u, vb):
            args += dev.memref(x)[1]
        out_buf, desc = dev.memref(out)
        args += desc
        if pack in layouts:
            args += [ctypes.c_int64(klen)]
        args += [ctypes.c_int64(mlen), ctypes.c_int32(0),
                 ctypes.c_float(1 / d_head ** 0.5)]
        kernel = dev.kernel(name)
        combine = dev.kernel("rel_attention_combine")
        grid = (-(-qlen // tiles[0][0]), bsz * n_head)
        # The parts of the keys the runtime chooses for this device (as the
        # executables' host code asks it), and their workspace.
        dev.lib.txl_device_attention_parts.restype = ctypes.c_int64
        parts = dev.lib.txl_device_attention_parts(
            ctypes.c_int64(grid[0] * grid[1]), ctypes.c_int64(resident),
            ctypes.c_int64(-(-klen // 32)))
        workspaces = {}
        for n in {1, parts}:
            slices = n if n > 1 else 0
            workspaces[n] = (
                dev.memref(np.zeros((slices, qlen, bsz, n_head, d_head), np.float32))[1]
                + dev.memref(np.zeros((slices, bsz, n_head, qlen), np.float32))[1])

        def ours(n=1, packing=True):
            if pack in layouts and packing:
                repack()
            dev.launch(kernel, (*grid, n), (block, 1, 1), args + workspaces[n])
            if n > 1:
                dev.launch(combine, (-(-out.size // rak.COMBINE_THREADS), 1, 1),
                           (rak.COMBINE_THREADS, 1, 1), workspaces[n] + desc)

        for n in sorted({1, parts}):
            label = f"txlc {precision} kernel" + (f", {n} key parts" if n > 1 else "")
            forms = [(label, True)]
            if pack in layouts:
                forms = [(label + " + packing", True), (label + " alone", False)]
            for row_name, packing in forms:
                rows.append((row_name, timed_calls(lambda: ours(n, packing),
                                                   dev.lib.txl_device_sync, a.iters)))
                dev.read(out, out_buf)
                errors[precision] = max(errors.get(precision, 0.0),
                                        float(np.abs(out - want).max()))
        dev.free()
        dev.lib.txl_device_close()

    t = lambda x: torch.from_numpy(np.ascontiguousarray(x)).to(a.torch_device)
    tq, tk, tv, tr, tu, tvb = map(t, (q, k, v, r, u, vb))
    mask = torch.triu(torch.ones(qlen, klen, device=a.torch_device),
                      diagonal=1 + mlen).bool()[:, :, None, None]

    def official():
        return official_attention(tq, tk, tv, tr, tu, tvb, mask)

    sq = tq.permute(1, 2, 0, 3).contiguous()
    sk = tk.permute(1, 2, 0, 3).contiguous()
    sv = tv.permute(1, 2, 0, 3).contiguous()

    def sdpa():
        return F.scaled_dot_product_attention(sq, sk, sv, is_causal=True)

    with torch.inference_mode():
        wait = lambda: sync(a.torch_device)  # noqa: E731
        rows.append(("pytorch official math", timed_calls(official, wait, a.iters)))
        rows.append(("pytorch SDPA causal", timed_calls(sdpa, wait, a.iters)))
    # Useful FLOPs of the relative attention: AC, BD and P.V over the
    # visible (causal) pairs, 2 flops per multiply-add.
    pairs = sum(min(klen, mlen + i + 1) for i in range(qlen))
    flops = 3 * 2 * pairs * d_head * bsz * n_head
    print(f"# attention alone: qlen {qlen}, klen {klen}, batch {bsz}, "
          f"{n_head} heads x {d_head}; our kernels vs the official math: max "
          f"abs err f32 {errors['f32']:.2g}, bf16 {errors['bf16']:.2g}")
    for name, seconds in rows:
        print(f"  {name:28s} {seconds * 1e3:9.3f} ms   "
              f"{flops / seconds / 1e12:7.3f} TFLOP/s (relative attention's)")
    return [(name, seconds) for name, seconds in rows]


def txlc_train(exe, data, steps, interval, work, profile=False):
    """`EXE train` for `steps` updates from a fresh `work`: the ms per
    update of its log intervals after the first (which holds the start-up)
    and its stderr (with `profile`, TXL_PROFILE's table)."""
    env = dict(os.environ, TXL_PROFILE="1" if profile else "0")
    cmd = [exe, "train", "--data", data, "--work-dir", work,
           "--max-step", str(steps), "--log-interval", str(interval),
           "--eval-interval", str(10 ** 9), "--checkpoint-interval",
           str(10 ** 9), "--no-progress", "--max-eval-steps", "1"]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"{exe} train failed:\n{run.stderr}")
    records = [json.loads(line)
               for line in open(os.path.join(work, "metrics.jsonl"))]
    ms = [r["ms_per_batch"] for r in records if r["kind"] == "train"][1:]
    return ms, run.stderr


def attention_kernels_ms(profile, updates, n_layer):
    """ms per layer per update of the training attention's kernels in
    TXL_PROFILE's table (seconds, %, launches, ms/launch, kernel): the
    forward's log-sum-exp form and its key parts' combine, and the
    backward's (rel_attention_*_lse*, rel_attention_grad_*); the final
    evaluation's forward kernels have no _lse."""
    seconds = 0.0
    for line in profile.splitlines():
        f = line.split()
        if (len(f) == 5 and f[4].startswith("rel_attention")
                and ("_lse" in f[4] or "_grad_" in f[4])):
            seconds += float(f[0])
    return seconds * 1e3 / (updates * n_layer)


def torch_train_ms(a, toml, stream, bsz, tgt, steps, mode):
    """ms of each of `steps` train steps of reference_txl.py on
    --torch-device after 3 warm-up steps, as train.py runs them (memory
    carried, mean NLL, backward, clip_grad_norm_ 0.25, Adam): `mode`
    'eager', 'compile' (torch.compile of the model) or 'amp' (eager under
    torch.autocast bf16, f32 master weights)."""
    import torch
    import bench_train

    model = bench_train.official_model(toml).to(a.torch_device).train()
    step_model = torch.compile(model, dynamic=True) if mode == "compile" else model
    opt = torch.optim.Adam(model.parameters(), lr=0.00025)
    n = stream.numel() // bsz
    grid = stream[:n * bsz].view(bsz, -1).t().contiguous().to(a.torch_device)
    mems, times, warmup = tuple(), [], 3
    for i in range(warmup + steps):
        s = (i * tgt) % (n - tgt - 1)
        data, target = grid[s:s + tgt], grid[s + 1:s + 1 + tgt]
        sync(a.torch_device)
        t0 = time.perf_counter()
        with torch.autocast(device_type=a.torch_device, dtype=torch.bfloat16,
                            enabled=mode == "amp"):
            ret = step_model(data, target, *mems)
        loss, mems = ret[0].float().mean(), tuple(m.detach() for m in ret[1:])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        sync(a.torch_device)
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def torch_attention_fwd_bwd_ms(a, qlen, mlen, bsz, n_head=8, d_head=64):
    """ms of one forward + backward (the gradient of every input for a
    random upstream gradient) of the official attention math and of SDPA
    causal at that shape, on --torch-device."""
    import torch
    import torch.nn.functional as F

    klen = qlen + mlen
    g = torch.Generator().manual_seed(0)
    make = lambda *shape: torch.randn(*shape, generator=g).to(
        a.torch_device).requires_grad_()
    q, k, v = (make(qlen, bsz, n_head, d_head), make(klen, bsz, n_head, d_head),
               make(klen, bsz, n_head, d_head))
    r, u, vb = make(klen, n_head, d_head), make(n_head, d_head), make(n_head, d_head)
    dout = torch.randn(qlen, bsz, n_head, d_head, generator=g).to(a.torch_device)
    mask = torch.triu(torch.ones(qlen, klen, device=a.torch_device),
                      diagonal=1 + mlen).bool()[:, :, None, None]
    sq, sk, sv = (make(bsz, n_head, qlen, d_head), make(bsz, n_head, klen, d_head),
                  make(bsz, n_head, klen, d_head))
    sdout = dout.permute(1, 2, 0, 3).contiguous()

    def official():
        official_attention(q, k, v, r, u, vb, mask).backward(dout)

    def sdpa():
        F.scaled_dot_product_attention(sq, sk, sv, is_causal=True).backward(sdout)

    wait = lambda: sync(a.torch_device)
    return {"pytorch official math": timed_calls(official, wait, a.iters) * 1e3,
            "pytorch SDPA causal": timed_calls(sdpa, wait, a.iters) * 1e3}


def train_model_file(tgt, mem, bsz):
    """The model file `train` compiles: enwik8-base sizes, dropout 0.1, and
    bench_train.py's [train] section (Adam, clip 0.25) at batch `bsz`."""
    import bench_train as bt
    return (bench.ENWIK8_TOML.replace("dropout = 0.0", "dropout = 0.1")
            .replace("tgt_len = 512", f"tgt_len = {tgt}")
            .replace("mem_len = 512", f"mem_len = {mem}")
            + bt.TRAIN_SECTION.format(batch=bsz))


def bench_train(a):
    import torch
    import bench_train as bt

    tgt, mem, bsz = a.train_shape
    steps, interval = a.train_steps, max(a.train_steps // 4, 1)
    if a.smoke:
        tgt, mem, bsz, steps, interval = 32, 32, 2, 4, 2
    toml = os.path.join(a.workdir, "enwik8_train.toml")
    with open(toml, "w") as f:
        f.write(train_model_file(tgt, mem, bsz))
    exes = {p: compile_model(a, toml, "enwik8_train", p, backward=True)
            for p in a.precision}
    data = os.path.join(a.workdir, "synthetic")
    bt.synthetic_corpus(data, bsz * tgt * (2 * (steps + interval) + 8))
    tokens = tgt * bsz
    print(f"# enwik8-base sized training: tgt_len {tgt}, mem_len {mem}, batch "
          f"{bsz}, dropout 0.1, Adam; {steps} updates timed after {interval}")
    rows, attention = [], {}
    for precision, exe in exes.items():
        for rep in range(a.repeat):
            work = os.path.join(a.workdir, f"train_{precision}_{rep}")
            shutil.rmtree(work, ignore_errors=True)
            ms, _ = txlc_train(exe, data, steps + interval, interval, work)
            rows.append(("train", f"txlc {precision}", tokens / min(ms) * 1e3))
            print_enwik8_row(*rows[-1])
        work = os.path.join(a.workdir, f"train_{precision}_profile")
        shutil.rmtree(work, ignore_errors=True)
        _, profile = txlc_train(exe, data, interval, interval, work,
                                profile=True)
        attention[f"txlc {precision} kernels"] = attention_kernels_ms(
            profile, interval, 12)
    words = []
    for line in open(os.path.join(data, "train.txt")):
        words += line.split() + ["<eos>"]
    vocab = {w: i for i, w in enumerate(sorted(set(words)))}
    stream = torch.tensor([vocab[w] for w in words], dtype=torch.long)
    modes = ["eager", "amp"] + ([] if a.no_compile else ["compile"])
    for mode in modes:
        for _ in range(a.repeat):
            times = torch_train_ms(a, toml, stream, bsz, tgt, steps, mode)
            label = {"eager": "pytorch eager f32", "amp": "pytorch AMP bf16",
                     "compile": "pytorch compile f32"}[mode]
            rows.append(("train", label, tokens / min(times) * 1e3))
            print_enwik8_row(*rows[-1])
    attention.update(torch_attention_fwd_bwd_ms(a, tgt, mem, bsz))
    print(f"# attention forward + backward per layer: qlen {tgt}, klen "
          f"{tgt + mem}, batch {bsz}, 8 heads x 64 (txlc: its kernels in the "
          f"training above; PyTorch: alone, SDPA on plain causal attention)")
    for name, ms in attention.items():
        print(f"  {name:28s} {ms:9.3f} ms", flush=True)
    return {"train_tokens_per_s": rows, "attention_fwd_bwd_ms": attention}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["ptb", "enwik8", "attention", "train", "all"])
    p.add_argument("--target", choices=["cuda", "opencl"], default="cuda")
    p.add_argument("--gpu-arch", default="sm_90a")
    p.add_argument("--precision", default="f32,bf16",
                   type=lambda v: v.split(","),
                   help="txlc --precision values to compile and time, comma "
                        "separated (bf16: tensor-core attention and cuBLAS "
                        "products; on opencl the kernel's mma is emulated)")
    p.add_argument("--torch-device", default="cuda")
    p.add_argument("--txlc", default=os.path.join(ROOT, "build", "bin", "txlc"))
    p.add_argument("--device-lib",
                   default=os.path.join(ROOT, "build", "lib", "libtxl_device.so"))
    p.add_argument("--workdir", default=os.path.join(ROOT, "..", "bench-scratch", "gpu"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--segments", type=int, default=8,
                   help="enwik8: timed segments after the memory is full")
    p.add_argument("--iters", type=int, default=20, help="attention: launches timed")
    p.add_argument("--attention-shape", default=(512, 512, 4),
                   type=lambda v: tuple(int(x) for x in v.split(",")),
                   help="attention: QLEN,MLEN,BATCH (8 heads of 64); the "
                        "paper's enwik8 evaluation is 80,2100,<batch>")
    p.add_argument("--train-shape", default=(512, 512, 22),
                   type=lambda v: tuple(int(x) for x in v.split(",")),
                   help="train: TGT_LEN,MEM_LEN,BATCH (run_enwik8_base.sh's "
                        "512,512,22)")
    p.add_argument("--train-steps", type=int, default=20,
                   help="train: updates timed, after a quarter as many")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--prebuilt", action="store_true",
                   help="use the executables and kernel image already in "
                        "--workdir (device_bundle.sh makes them) instead of "
                        "compiling: for a GPU machine without txlc's LLVM")
    p.add_argument("--smoke", action="store_true",
                   help="small shapes and data: checks the script runs")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    if a.smoke:
        a.repeat, a.segments, a.iters = 1, 2, 2
    os.makedirs(a.workdir, exist_ok=True)
    import torch
    print(f"# torch {torch.__version__} on {a.torch_device}"
          + (f" ({torch.cuda.get_device_name()})" if a.torch_device == "cuda" else "")
          + f"; txlc --target={a.target}")
    results = {}
    for what in (["ptb", "enwik8", "attention", "train"] if a.what == "all"
                 else [a.what]):
        results[what] = {"ptb": bench_ptb, "enwik8": bench_enwik8,
                         "attention": bench_attention,
                         "train": bench_train}[what](a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
