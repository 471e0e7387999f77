#!/usr/bin/env python3
"""CPU speed baseline: txlc-compiled executables against PyTorch eager.

Not a test (nothing here runs in CI).  Two benchmarks, each run as separate
processes so that every process's peak RSS can be read from the kernel
(os.wait4 rusage); txlc and PyTorch runs are interleaved:

  ptb     the trained ptb_small model on PTB valid, as the official eval.py
          (batch 10, tgt_len 64, mem_len 64, memory carried across the split).
          txlc: `build/ptb_small eval --threads T`; PyTorch: reference_txl.py
          over the same token stream (vocabulary built as the official
          data_utils.py does).  Both perplexities are printed: equal
          perplexity = same computation.
  enwik8  an enwik8-base-sized model (run_enwik8_base.sh: 12 layers, d_model
          512, 8 heads x 64, d_inner 2048, n_token 204, tgt_len = mem_len =
          512) at batch 4 with random weights and random tokens.  txlc: the
          model file is compiled with build/bin/txlc and run with
          `run-segments`; PyTorch: reference_txl.py on the same weights and
          tokens.  Max |NLL difference| is printed.

Throughput is tokens/s of the timed segment loop.  For ptb both sides time
the whole split (the executable prints its own time, which excludes corpus
loading; PyTorch's timer brackets the same loop).  For enwik8 the executable
does not time itself: it is run under `stdbuf -oL` and the arrival time of
each '| segment s |' line it prints times each segment; PyTorch times each
segment inside the process.  The steady state (memory full, 512 rows) is
segments 1..N; segment 0 (empty memory, and for txlc start-up + loading) is
reported but not counted.  "RSS - weights" is the peak resident set size minus the
bytes of the distinct parameters (tied embedding counted once).

    bench/bench.py ptb    [--threads 2] [--repeat 3]
    bench/bench.py enwik8 [--threads 2] [--segments 4] [--repeat 2]
    bench/bench.py all

Run it with the Python that has torch (see bench/README.md).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
sys.path.insert(0, HERE)

ENWIK8_TOML = """\
# enwik8_base: the sizes of the official run_enwik8_base.sh (benchmark only,
# random weights).

[model]
n_token = 204
n_layer = 12
d_model = 512
n_head = 8
d_head = 64
d_inner = 2048
d_embed = 512
attn_type = 0
pre_lnorm = false
dropout = 0.0
dropatt = 0.0
tie_weight = true
div_val = 1
cutoffs = []
tie_projs = [false]
same_length = false
clamp_len = -1

[segment]
tgt_len = 512
mem_len = 512
ext_len = 0
"""


# --------------------------------------------------------------------------
# process helpers
# --------------------------------------------------------------------------
def cpu_busy_seconds():
    """Machine-wide busy CPU seconds so far (all CPUs, from /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / hz


def wait_quiet(max_busy, timeout):
    """Wait (up to timeout s) until the other processes use at most max_busy
    CPUs, measured over 2 s; returns the last measurement."""
    deadline = time.time() + timeout
    while True:
        b0, t0 = cpu_busy_seconds(), time.perf_counter()
        time.sleep(2.0)
        busy = (cpu_busy_seconds() - b0) / (time.perf_counter() - t0)
        if busy <= max_busy or time.time() >= deadline:
            return busy
        time.sleep(3.0)


def run_child(cmd, env=None):
    """Run cmd, reaping it with wait4 for its rusage.  Returns stdout, wall,
    user, sys, peak RSS, and `others`: the CPUs used by *other* processes
    during the run (machine busy time minus the child's own CPU time)."""
    busy0 = cpu_busy_seconds()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    # Read both pipes without deadlock, then reap with wait4 for the rusage.
    import threading
    chunks = {"out": [], "err": []}
    stamps = []  # (seconds since start, line) of each stdout line

    def pump(stream, key):
        if key == "out":
            for line in iter(stream.readline, b""):
                stamps.append((time.perf_counter() - t0, line.decode()))
                chunks[key].append(line)
            return
        for block in iter(lambda: stream.read(65536), b""):
            chunks[key].append(block)

    threads = [threading.Thread(target=pump, args=(p.stdout, "out")),
               threading.Thread(target=pump, args=(p.stderr, "err"))]
    for t in threads:
        t.start()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    others = max(0.0, (cpu_busy_seconds() - busy0 - ru.ru_utime - ru.ru_stime)
                 / wall)
    for t in threads:
        t.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    out = b"".join(chunks["out"]).decode()
    err = b"".join(chunks["err"]).decode()
    if p.returncode != 0:
        sys.stderr.write(out + err)
        raise SystemExit(f"command failed ({p.returncode}): {' '.join(cmd)}")
    return dict(stdout=out, stderr=err, wall=wall, user=ru.ru_utime,
                sys=ru.ru_stime, maxrss=ru.ru_maxrss * 1024,
                nvcsw=ru.ru_nvcsw, nivcsw=ru.ru_nivcsw, others=others,
                stamps=stamps)


QUIET = dict(max_busy=0.25, timeout=0.0)


def quiet_point():
    """Wait for a quiet machine (see --quiet); return the others' CPU use."""
    return wait_quiet(QUIET["max_busy"], QUIET["timeout"])


def mib(x):
    return x / 2 ** 20


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


# --------------------------------------------------------------------------
# PTB corpus, as the official data_utils.py (dataset 'ptb')
# --------------------------------------------------------------------------
def ptb_stream(data_dir, split):
    """Vocab: special ['<eos>'], lower_case, counted over train+valid+test
    without eos, most_common order (ties: first seen); the split is encoded
    with one '<eos>' per line."""
    from collections import Counter

    def tokens(line, add_eos):
        syms = line.strip().lower().split()
        return syms + ["<eos>"] if add_eos else syms

    counter = Counter()
    for name in ("train", "valid", "test"):
        with open(os.path.join(data_dir, f"{name}.txt"), encoding="utf-8") as f:
            for line in f:
                counter.update(tokens(line, False))
    idx2sym = ["<eos>"]
    sym2idx = {"<eos>": 0}
    for sym, _ in counter.most_common():
        if sym not in sym2idx:
            sym2idx[sym] = len(idx2sym)
            idx2sym.append(sym)
    unk = sym2idx.get("<unk>")
    ids = []
    with open(os.path.join(data_dir, f"{split}.txt"), encoding="utf-8") as f:
        for line in f:
            ids.extend(sym2idx.get(s, unk) for s in tokens(line, True))
    return ids, len(idx2sym)


# --------------------------------------------------------------------------
# PyTorch workers (run in a child process; print one JSON line)
# --------------------------------------------------------------------------
def current_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def worker_ptb(args):
    import torch
    import reference_txl as ref

    torch.set_num_threads(args.threads)
    rss_import = current_rss()
    ids, n_vocab = ptb_stream(args.data, args.split)
    model = ref.load_model(args.model_toml, args.checkpoint,
                           mem_len=args.mem_len, tgt_len=args.tgt_len)
    assert n_vocab == model.n_token, (n_vocab, model.n_token)
    rss_model = current_rss()
    # LMOrderedIterator: batchify, then fixed-length segments (last shorter).
    data = torch.tensor(ids, dtype=torch.long)
    n_step = data.size(0) // args.batch_size
    data = data[:n_step * args.batch_size].view(args.batch_size, -1).t().contiguous()
    if args.torch_compile:
        model = torch.compile(model)

    def split_pass():
        total_nll, total_len = 0.0, 0
        mems = tuple()
        for i in range(0, data.size(0) - 1, args.tgt_len):
            seq_len = min(args.tgt_len, data.size(0) - 1 - i)
            inp, tgt = data[i:i + seq_len], data[i + 1:i + 1 + seq_len]
            ret = model(inp, tgt, *mems)
            mems = tuple(ret[1:])
            total_nll += ret[0].double().sum().item()
            total_len += seq_len * args.batch_size
        return total_nll, total_len

    with torch.inference_mode():
        warmup_seconds = None
        if args.warmup_pass:
            # Untimed: torch.compile compiles here (the first segment, the
            # full-memory ones and the shorter last one are three graphs).
            t0 = time.perf_counter()
            split_pass()
            warmup_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        total_nll, total_len = split_pass()
        seconds = time.perf_counter() - t0
    loss = total_nll / total_len
    print(json.dumps(dict(loss=loss, ppl=float(torch.tensor(loss).exp()),
                          tokens=total_len, seconds=seconds,
                          tokens_per_s=total_len / seconds,
                          weight_bytes=ref.param_bytes(model),
                          rss_import=rss_import, rss_model=rss_model,
                          torch=torch.__version__, warmup_seconds=warmup_seconds,
                          threads=torch.get_num_threads())))


def worker_segments(args):
    import numpy as np
    import torch
    import reference_txl as ref

    torch.set_num_threads(args.threads)
    rss_import = current_rss()
    model = ref.load_model(args.model_toml, args.checkpoint)
    rss_model = current_rss()
    data = torch.from_numpy(np.load(args.inputs))
    target = torch.from_numpy(np.load(args.targets))
    S, tgt_len, bsz = data.shape
    times, nlls = [], []
    with torch.inference_mode():
        mems = tuple()
        for s in range(S):
            t0 = time.perf_counter()
            ret = model(data[s], target[s], *mems)
            mems = tuple(ret[1:])
            nll = ret[0].numpy().copy()
            times.append(time.perf_counter() - t0)
            nlls.append(nll)
    if args.dump_nll:
        np.save(args.dump_nll, np.stack(nlls).astype(np.float32))
    steady = times[1:] if S > 1 else times
    tok = tgt_len * bsz
    print(json.dumps(dict(segment_seconds=times,
                          steady_tokens_per_s=tok * len(steady) / sum(steady),
                          all_tokens_per_s=tok * S / sum(times),
                          weight_bytes=ref.param_bytes(model),
                          rss_import=rss_import, rss_model=rss_model,
                          torch=torch.__version__,
                          threads=torch.get_num_threads())))


# --------------------------------------------------------------------------
# benchmarks
# --------------------------------------------------------------------------
def python_cmd(*args):
    return [sys.executable, os.path.abspath(__file__)] + list(args)


def bench_ptb(a):
    import tomllib
    with open(a.ptb_toml, "rb") as f:
        ev = tomllib.load(f).get("eval", {})
    batch, tgt_len, mem_len = (ev.get("batch_size", 10), ev.get("tgt_len", 64),
                               ev.get("mem_len", 64))
    if a.recompile:
        cmd = [a.txlc, os.path.join(ROOT, "models", "ptb_small.toml"),
               "--mcpu=" + a.mcpu, "-o", a.ptb_exe]
        print("  compile: " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    exe_cmd = [a.ptb_exe, "eval", "--data", a.ptb_data, "--split", "valid",
               "--checkpoint", a.ptb_checkpoint, "--threads", str(a.threads),
               "--batch-size", str(batch), "--tgt-len", str(tgt_len),
               "--mem-len", str(mem_len), "--json"]
    py_cmd = python_cmd("_worker_ptb", "--threads", str(a.threads),
                        "--data", a.ptb_data, "--split", "valid",
                        "--model-toml", a.ptb_toml,
                        "--checkpoint", a.ptb_checkpoint,
                        "--batch-size", str(batch), "--tgt-len", str(tgt_len),
                        "--mem-len", str(mem_len))
    print(f"# ptb_small on PTB valid: batch {batch}, tgt_len {tgt_len}, "
          f"mem_len {mem_len}, {a.threads} thread(s), {a.repeat} run(s) each, "
          "interleaved")
    print("  txlc:    " + " ".join(exe_cmd))
    print("  pytorch: " + " ".join(py_cmd))
    txl_runs, py_runs = [], []
    for r in range(a.repeat):
        load = quiet_point()
        res = run_child(exe_cmd)
        j = json.loads([l for l in res["stdout"].splitlines()
                        if l.startswith("{")][-1])
        res.update(ppl=j["ppl"], loss=j["loss"], tokens=j["tokens"],
                   seconds=j["seconds"], tokens_per_s=j["tokens_per_s"],
                   load=load)
        txl_runs.append(res)
        print(f"  run {r}: txlc    ppl {res['ppl']:.4f} {res['tokens_per_s']:9.1f} tok/s "
              f"({res['seconds']:.2f}s; user {res['user']:.2f}s sys {res['sys']:.2f}s "
              f"wall {res['wall']:.2f}s) peak RSS {mib(res['maxrss']):.1f} MiB "
              f"[others: {load:.2f} CPUs before, {res['others']:.2f} during]", flush=True)
        load = quiet_point()
        res = run_child(py_cmd)
        res.update(json.loads(res["stdout"].strip().splitlines()[-1]), load=load)
        py_runs.append(res)
        print(f"  run {r}: pytorch ppl {res['ppl']:.4f} {res['tokens_per_s']:9.1f} tok/s "
              f"({res['seconds']:.2f}s; user {res['user']:.2f}s sys {res['sys']:.2f}s "
              f"wall {res['wall']:.2f}s) peak RSS {mib(res['maxrss']):.1f} MiB "
              f"[others: {load:.2f} CPUs before, {res['others']:.2f} during]", flush=True)
    weights = py_runs[0]["weight_bytes"]
    ppl_diff = abs(txl_runs[0]["ppl"] - py_runs[0]["ppl"])
    assert txl_runs[0]["tokens"] == py_runs[0]["tokens"], "token counts differ"
    assert ppl_diff < 5e-3, f"perplexities differ: {ppl_diff}"
    return summarize("ptb_small / PTB valid (batch 10, 64/64)", txl_runs,
                     py_runs, weights,
                     extra=f"ppl txlc {txl_runs[0]['ppl']:.4f} vs pytorch "
                           f"{py_runs[0]['ppl']:.4f} (official 96.8755)")


def enwik8_setup(a):
    """Model file, compiled executable, random weights and tokens."""
    import numpy as np
    import torch
    import reference_txl as ref
    from safetensors.torch import save_file

    os.makedirs(a.workdir, exist_ok=True)
    toml = os.path.join(a.workdir, "model.toml")
    exe = os.path.join(a.workdir, "enwik8_base")
    if not (os.path.exists(toml) and open(toml).read() == ENWIK8_TOML):
        with open(toml, "w") as f:
            f.write(ENWIK8_TOML)
        if os.path.exists(exe):
            os.remove(exe)
    if not os.path.exists(exe) or a.recompile:
        cmd = [a.txlc, toml, "--mcpu=" + a.mcpu, "-o", exe]
        print("  compile: " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)

    weights = os.path.join(a.workdir, "weights.safetensors")
    if not os.path.exists(weights):
        # Official train.py init, with init_std 0.1 / proj 0.05 (instead of
        # 0.02 / 0.01) so that attention is not nearly uniform.
        g = torch.Generator().manual_seed(1234)
        _, kw = ref.read_model_file(toml)
        model = ref.MemTransformerLM(**kw)
        std = 0.1
        state = {}
        for name, t in model.state_dict().items():
            if name == "pos_emb.inv_freq":
                state[name] = t.clone()
            elif "layer_norm.weight" in name:
                state[name] = 1 + std * torch.randn(t.shape, generator=g)
            elif name.endswith(".bias") and name not in ("r_w_bias", "r_r_bias"):
                state[name] = torch.zeros(t.shape) if "layer_norm" in name or \
                    "crit" in name else std * torch.randn(t.shape, generator=g)
            else:
                state[name] = std * torch.randn(t.shape, generator=g)
        # Tied: the same tensor under both official names.
        state["crit.out_layers.0.weight"] = state["word_emb.emb_layers.0.weight"]
        save_file({k: v.contiguous().clone() for k, v in state.items()}, weights)

    S = 1 + a.segments
    inputs = os.path.join(a.workdir, f"data_S{S}.npy")
    targets = os.path.join(a.workdir, f"target_S{S}.npy")
    if not os.path.exists(inputs):
        rng = np.random.default_rng(5678)
        tgt_len, bsz = 512, 4
        stream = rng.integers(0, 204, size=(S * tgt_len + 1, bsz), dtype=np.int64)
        np.save(inputs, stream[:-1].reshape(S, tgt_len, bsz))
        np.save(targets, stream[1:].reshape(S, tgt_len, bsz))
    return toml, exe, weights, inputs, targets


def bench_enwik8(a):
    import numpy as np

    print(f"# enwik8-base sized model, batch 4, tgt_len = mem_len = 512, "
          f"random weights/tokens, 1 + {a.segments} segments, {a.threads} "
          f"thread(s), {a.repeat} run(s) each, interleaved")
    toml, exe, weights, inputs, targets = enwik8_setup(a)
    S = 1 + a.segments
    nll_txl = os.path.join(a.workdir, "nll_txlc.npy")
    nll_py = os.path.join(a.workdir, "nll_pytorch.npy")
    # stdbuf -oL: the executable prints '| segment s |' after each segment;
    # line-buffered, the arrival time of each line times each segment.
    exe_cmd = ["stdbuf", "-oL", exe, "run-segments", "--checkpoint", weights,
               "--inputs", inputs, "--targets", targets,
               "--threads", str(a.threads), "--dump-nll", nll_txl]
    py_cmd = python_cmd("_worker_segments", "--threads", str(a.threads),
                        "--model-toml", toml, "--checkpoint", weights,
                        "--inputs", inputs, "--targets", targets,
                        "--dump-nll", nll_py)
    print("  txlc:    " + " ".join(exe_cmd))
    print("  pytorch: " + " ".join(py_cmd))
    tok_seg = 512 * 4
    txl_runs, py_runs = [], []
    for r in range(a.repeat):
        load = quiet_point()
        res = run_child(exe_cmd)
        ends = [t for t, line in res["stamps"] if line.startswith("| segment ")]
        assert len(ends) == S, res["stdout"]
        seg_times = [ends[0]] + [b - e for e, b in zip(ends, ends[1:])]
        steady = sum(seg_times[1:]) / (S - 1)
        res.update(tokens_per_s=tok_seg / steady, load=load,
                   segment_seconds=seg_times)
        txl_runs.append(res)
        segs = ", ".join(f"{x:.2f}" for x in seg_times)
        print(f"  run {r}: txlc    {res['tokens_per_s']:8.1f} tok/s steady "
              f"(segments {segs} s, the first including start-up and loading; "
              f"process wall {res['wall']:.2f}s user {res['user']:.2f}s sys "
              f"{res['sys']:.2f}s) peak RSS {mib(res['maxrss']):.1f} MiB "
              f"[others: {load:.2f} CPUs before, {res['others']:.2f} during]",
              flush=True)
        load = quiet_point()
        res = run_child(py_cmd)
        res.update(json.loads(res["stdout"].strip().splitlines()[-1]), load=load)
        res["tokens_per_s"] = res["steady_tokens_per_s"]
        py_runs.append(res)
        segs = ", ".join(f"{x:.2f}" for x in res["segment_seconds"])
        print(f"  run {r}: pytorch {res['tokens_per_s']:8.1f} tok/s steady "
              f"(segments {segs} s; process wall {res['wall']:.2f}s user "
              f"{res['user']:.2f}s sys {res['sys']:.2f}s) peak RSS "
              f"{mib(res['maxrss']):.1f} MiB [others: {load:.2f} CPUs before, {res['others']:.2f} during]", flush=True)
    a_nll, b_nll = np.load(nll_txl), np.load(nll_py)
    diff = float(np.abs(a_nll.astype(np.float64) - b_nll).max())
    print(f"  NLL: txlc mean {a_nll.mean():.6f}, pytorch mean {b_nll.mean():.6f}, "
          f"max |diff| {diff:.2e}")
    assert diff < 1e-3, f"NLLs differ by {diff}"
    weights_bytes = py_runs[0]["weight_bytes"]
    return summarize("enwik8-base size (batch 4, 512/512)", txl_runs, py_runs,
                     weights_bytes, extra=f"max |NLL diff| {diff:.1e}")


def summarize(label, txl_runs, py_runs, weights, extra=""):
    # Only runs during which the other processes used <= --quiet-busy CPUs
    # count, where each side has at least one such run.
    def quiet(runs):
        q = [r for r in runs if r["others"] <= QUIET["max_busy"]]
        return q or runs
    all_t, all_p = len(txl_runs), len(py_runs)
    txl_runs, py_runs = quiet(txl_runs), quiet(py_runs)
    print(f"  (counted: {len(txl_runs)}/{all_t} txlc runs and {len(py_runs)}/"
          f"{all_p} pytorch runs with others <= {QUIET['max_busy']} CPUs)")
    t_best = max(r["tokens_per_s"] for r in txl_runs)
    p_best = max(r["tokens_per_s"] for r in py_runs)
    t_med = median([r["tokens_per_s"] for r in txl_runs])
    p_med = median([r["tokens_per_s"] for r in py_runs])
    t_rss = max(r["maxrss"] for r in txl_runs)
    p_rss = max(r["maxrss"] for r in py_runs)
    row = dict(label=label, txlc_best=t_best, pytorch_best=p_best,
               ratio_best=t_best / p_best, txlc_median=t_med,
               pytorch_median=p_med, ratio_median=t_med / p_med,
               weights_mib=mib(weights), txlc_rss_mib=mib(t_rss),
               pytorch_rss_mib=mib(p_rss),
               txlc_rss_minus_weights_mib=mib(t_rss - weights),
               pytorch_rss_minus_weights_mib=mib(p_rss - weights),
               pytorch_rss_after_import_mib=mib(py_runs[0]["rss_import"]),
               pytorch_rss_minus_import_minus_weights_mib=mib(
                   p_rss - py_runs[0]["rss_import"] - weights),
               txlc_runs=[r["tokens_per_s"] for r in txl_runs],
               pytorch_runs=[r["tokens_per_s"] for r in py_runs],
               extra=extra)
    print(f"  => {label}: txlc {t_best:.1f} tok/s, pytorch {p_best:.1f} tok/s, "
          f"ratio {t_best / p_best:.2f}x (best of runs; medians "
          f"{t_med:.1f} / {p_med:.1f} = {t_med / p_med:.2f}x)")
    print(f"     weights {mib(weights):.1f} MiB; peak RSS - weights: txlc "
          f"{mib(t_rss - weights):.1f} MiB, pytorch {mib(p_rss - weights):.1f} MiB "
          f"(pytorch RSS right after `import torch`: "
          f"{mib(py_runs[0]['rss_import']):.1f} MiB, so peak - import - weights "
          f"{mib(p_rss - py_runs[0]['rss_import'] - weights):.1f} MiB)", flush=True)
    print(f"     {extra}", flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", choices=["ptb", "enwik8", "all", "_worker_ptb",
                                      "_worker_segments"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--segments", type=int, default=4,
                    help="enwik8: timed steady-state segments after the first")
    ap.add_argument("--json", help="write the summary rows here")
    ap.add_argument("--quiet-wait", type=float, default=0.0, metavar="S",
                    help="before each run, wait up to S s for the other "
                         "processes to use <= --quiet-busy CPUs")
    ap.add_argument("--quiet-busy", type=float, default=0.25)
    # ptb
    ap.add_argument("--ptb-exe", default=os.path.join(ROOT, "build", "ptb_small"))
    ap.add_argument("--ptb-data", default=os.path.join(SHARED, "data", "ptb"))
    ap.add_argument("--ptb-toml", default=os.path.join(
        SHARED, "reference", "ptb_small", "model.toml"))
    ap.add_argument("--ptb-checkpoint", default=os.path.join(
        SHARED, "reference", "ptb_small", "model.safetensors"))
    # enwik8
    ap.add_argument("--txlc", default=os.path.join(ROOT, "build", "bin", "txlc"))
    ap.add_argument("--workdir", default="/work/bench-scratch/enwik8")
    ap.add_argument("--recompile", action="store_true",
                    help="rebuild the enwik8 executable, and build --ptb-exe "
                         "from models/ptb_small.toml")
    ap.add_argument("--mcpu", default="native",
                    help="txlc --mcpu for the executables --recompile builds "
                         "(PyTorch picks its AVX-512 kernels at run time)")
    # worker-only
    ap.add_argument("--data"), ap.add_argument("--split")
    ap.add_argument("--model-toml"), ap.add_argument("--checkpoint")
    ap.add_argument("--batch-size", type=int), ap.add_argument("--tgt-len", type=int)
    ap.add_argument("--mem-len", type=int)
    ap.add_argument("--inputs"), ap.add_argument("--targets")
    ap.add_argument("--dump-nll")
    ap.add_argument("--torch-compile", action="store_true",
                    help="_worker_ptb: the model under torch.compile")
    ap.add_argument("--warmup-pass", action="store_true",
                    help="_worker_ptb: one untimed pass over the split first")
    a = ap.parse_args()

    QUIET.update(max_busy=a.quiet_busy, timeout=a.quiet_wait)
    if a.which == "_worker_ptb":
        return worker_ptb(a)
    if a.which == "_worker_segments":
        return worker_segments(a)

    print(f"# machine: {os.cpu_count()} CPUs, {cpu_model()}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = []
    if a.which in ("ptb", "all"):
        rows.append(bench_ptb(a))
    if a.which in ("enwik8", "all"):
        rows.append(bench_enwik8(a))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
