#!/usr/bin/env python3
"""txlc against PyTorch eager and torch.compile on this machine, in one run
(issue #49's side-by-side table; a benchmark, not a test).

Prints the CPU (model, family/model, the flags that pick kernels), the BLAS
and kernel the executable uses (its `--version` line), then for ptb_small:

  eval   the trained model on PTB valid as the official eval.py runs it
         (batch 10, tgt_len = mem_len = 64, memory carried over the split):
         tokens/s of `EXE eval --json` (its own timer, which excludes loading
         the corpus) against bench.py's PyTorch worker over the same token
         stream, eager and under torch.compile. Each PyTorch process first
         makes one untimed pass over the split (torch.compile compiles its
         three graphs there: empty memory, full memory, the shorter last
         segment), then times a second pass: PyTorch's steady state, which
         favours PyTorch. The perplexities must agree.
  train  ms per update (forward, backward, clipping, Adam; dropout on) of
         `EXE train` (bench_train.py: the best 10-step mean after the first
         window) against bench_train.py's PyTorch loop with the official
         initialisation, eager and with the model under torch.compile
         (the optimizer stays eager), best 10-step mean after warm-up steps.

Each eval run and each txlc train run is a separate process; PyTorch's train
steps run in this process (as bench_train.py runs them). The sides
alternate, each eval waiting for a quiet machine (--quiet-wait). Ratios are best-of-runs
(medians in brackets). txlc runs twice: f32 and `--precision=bf16` (its BLAS
products with bf16 operands and f32 accumulation; the header names where
they run: oneMKL's cblas_gemm_bf16bf16f32, on AMX or AVX512-BF16 where the
CPU has them, or the emulation). PyTorch stays f32.

    ../bench-scratch/venv/bin/python bench/vs_pytorch.py [--exe build/ptb_small]
        [--exe-bf16 build/ptb_small_bf16] [--repeat 3] [--threads 2]
        [--steps 40] [--no-compile] [--no-bf16] [--json FILE]

Goals (issue #49): eval >= 3x eager and >= 2x torch.compile; train >= 2.5x
eager. Run it with the Python that has torch (bench/setup_venv.sh).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
sys.path.insert(0, HERE)
import bench  # noqa: E402
import bench_train  # noqa: E402

KERNEL_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16",
                "avx512_fp16", "amx_bf16", "amx_tile")


def cpu_description():
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if not line.strip():
                break
            key, _, value = line.partition(":")
            info[key.strip()] = value.strip()
    flags = set(info.get("flags", "").split())
    have = [f for f in KERNEL_FLAGS if f in flags]
    return (f"{info.get('model name', 'unknown CPU')} (vendor "
            f"{info.get('vendor_id', '?')}, family {info.get('cpu family', '?')} "
            f"model {info.get('model', '?')}), {os.cpu_count()} CPUs; flags: "
            f"{' '.join(have) or 'none of ' + ' '.join(KERNEL_FLAGS)}")


def eval_runs(a):
    ref = os.path.join(SHARED, "reference", "ptb_small")
    data = os.path.join(SHARED, "data", "ptb")
    common = ["--data", data, "--split", "valid", "--batch-size", "10",
              "--tgt-len", "64", "--mem-len", "64"]
    txl_cmd = [a.exe, "eval", "--checkpoint", os.path.join(ref, "model.safetensors"),
               "--threads", str(a.threads), "--json"] + common
    py_cmd = bench.python_cmd("_worker_ptb", "--threads", str(a.threads),
                              "--model-toml", os.path.join(ref, "model.toml"),
                              "--checkpoint", os.path.join(ref, "model.safetensors"),
                              "--warmup-pass", *common)
    sides = [("txlc f32", txl_cmd)]
    if a.exe_bf16:
        sides.append(("txlc bf16", [a.exe_bf16] + txl_cmd[1:]))
    sides.append(("PyTorch eager", py_cmd))
    if not a.no_compile:
        sides.append(("torch.compile", py_cmd + ["--torch-compile"]))
    runs = {name: [] for name, _ in sides}
    ppl = {}
    for r in range(a.repeat):
        for name, cmd in sides:
            others = bench.quiet_point()
            res = bench.run_child(cmd)
            j = json.loads([l for l in res["stdout"].splitlines()
                            if l.startswith("{")][-1])
            runs[name].append(j["tokens_per_s"])
            ppl[name] = j["ppl"]
            extra = (f", warm-up pass {j['warmup_seconds']:.1f} s"
                     if j.get("warmup_seconds") else "")
            print(f"  eval run {r}: {name:14s} {j['tokens_per_s']:9.1f} tok/s "
                  f"ppl {j['ppl']:.4f} [others {max(others, res['others']):.2f} "
                  f"CPUs{extra}]", flush=True)
    for name, value in ppl.items():
        # bf16 products move ptb_small's perplexity by ~0.004 (of 96.88).
        bound = 0.05 if name == "txlc bf16" else 5e-3
        assert abs(value - ppl["txlc f32"]) < bound, (name, value, ppl)
    return runs


def train_runs(a):
    import logging
    import torch
    # torch.compile's graph-break warnings (the official model's
    # data-dependent `attn_mask.any().item()`) are not the benchmark's output.
    torch._logging.set_logs(dynamo=logging.ERROR)
    toml = os.path.join(ROOT, "models", "ptb_small.toml")
    data = os.path.join(SHARED, "data", "ptb")
    batch, tgt_len, interval = 16, 64, 10
    stream = bench_train.ptb_train_stream(data)
    sides = (["txlc f32"] + (["txlc bf16"] if a.exe_bf16 else []) +
             ["PyTorch eager"] + ([] if a.no_compile else ["torch.compile"]))
    runs = {name: [] for name in sides}
    work_root = tempfile.mkdtemp(prefix="vs_pytorch_")
    try:
        for r in range(a.repeat):
            for name in sides:
                if name.startswith("txlc"):
                    work = tempfile.mkdtemp(dir=work_root)
                    exe = a.exe if name == "txlc f32" else a.exe_bf16
                    res = bench_train.txlc_run(exe, data, a.steps + interval,
                                               interval, a.threads, work)
                    best = res["ms"]
                else:
                    res = bench_train.torch_run(
                        toml, stream, batch, tgt_len, a.steps, 3, a.threads,
                        compile=(name == "torch.compile"))
                    best = min(bench_train.window_means(res["ms_all"], interval))
                runs[name].append(best)
                print(f"  train run {r}: {name:14s} {best:7.1f} ms/update "
                      f"[others {res['others']:.2f} CPUs]", flush=True)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    return runs


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exe", default=os.path.join(ROOT, "build", "ptb_small"),
                   help="ptb_small executable (txlc models/ptb_small.toml -o EXE); "
                        "built with --txlc when missing")
    p.add_argument("--exe-bf16", default=os.path.join(ROOT, "build", "ptb_small_bf16"),
                   help="the same with --precision=bf16; built when missing")
    p.add_argument("--no-bf16", action="store_true", help="f32 txlc only")
    p.add_argument("--txlc", default=os.path.join(ROOT, "build", "bin", "txlc"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=40, help="timed train steps")
    p.add_argument("--no-compile", action="store_true",
                   help="leave torch.compile out (it compiles for minutes)")
    p.add_argument("--no-train", action="store_true")
    p.add_argument("--quiet-wait", type=float, default=60)
    p.add_argument("--json", help="write the table here")
    a = p.parse_args()
    bench.QUIET["timeout"] = a.quiet_wait
    import torch

    if a.no_bf16:
        a.exe_bf16 = None
    for exe, extra in [(a.exe, []), (a.exe_bf16, ["--precision=bf16"])]:
        if exe and not os.path.exists(exe):
            subprocess.run([a.txlc, os.path.join(ROOT, "models", "ptb_small.toml"),
                            "-o", exe] + extra, check=True)
    print(f"# cpu: {cpu_description()}")
    version = ""
    for exe in filter(None, [a.exe, a.exe_bf16]):
        text = subprocess.run([exe, "--version"], capture_output=True,
                              text=True, check=True).stdout.strip()
        version += text + "\n"
        print(f"# txlc executable {exe}: {' | '.join(text.splitlines())}")
    print(f"# torch {torch.__version__}, {a.threads} threads, MKL "
          f"{torch.backends.mkl.is_available()}, oneDNN "
          f"{torch.backends.mkldnn.is_available()}; no environment variable set "
          f"by this script", flush=True)
    table = {"eval": eval_runs(a)}
    if not a.no_train:
        table["train"] = train_runs(a)

    def line(kind, unit, better):
        runs = table[kind]
        pick = max if better == "higher" else min
        ours = [n for n in runs if n.startswith("txlc")]
        print(f"{kind} ({unit}, best of {a.repeat}, median in brackets):")
        for name, values in runs.items():
            best, med = pick(values), statistics.median(values)
            text = f"  {name:14s} {best:10.1f} ({med:.1f})"
            if not name.startswith("txlc"):
                for mine in ours:
                    base = runs[mine]
                    ratio = (pick(base) / best if better == "higher"
                             else best / pick(base))
                    mratio = (statistics.median(base) / med if better == "higher"
                              else med / statistics.median(base))
                    text += f"   {mine} is {ratio:.2f}x ({mratio:.2f}x)"
            print(text)
    line("eval", "tokens/s", "higher")
    if "train" in table:
        line("train", "ms/update", "lower")
    print("goals: eval >= 3x eager and >= 2x torch.compile; train >= 2.5x eager")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(cpu=cpu_description(), txlc=version, **table), f, indent=1)


if __name__ == "__main__":
    main()
