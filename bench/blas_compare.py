#!/usr/bin/env python3
"""One txlc executable with each candidate BLAS, side by side (issue #49,
item 1: pick the BLAS by measurement on each CPU family).

  python3 bench/blas_compare.py [EXE] [--repeat 3] [--steps 40]
      [--threads 2] [--quiet-wait 60] [--cache DIR] [--only NAME ...]

EXE (default build/ptb_small, `txlc models/ptb_small.toml -o EXE`) is run
as side_by_side.py runs it (ptb_small eval tokens/s on PTB valid, train
ms/batch), once per BLAS, the BLAS runs interleaved in every round:

  debian-openblas   as linked (Debian 12's OpenBLAS 0.3.21; the runtime
                    restarts it on its AVX2/AVX-512 kernels when it falls
                    back to a generic one)
  debian-prescott   the same forced to its SSE3 kernels
                    (OPENBLAS_CORETYPE=Prescott: what a user got before the
                    runtime checked the kernel)
  debian-zen        the same on its AVX2 Zen kernels (OPENBLAS_CORETYPE=Zen)
  debian-haswell    the same on its AVX2 Haswell kernels
  debian-skylakex   the same on its AVX-512 SkylakeX kernels (CPUs with
                    AVX-512 only)
  debian-onemkl-1t  the runtime's route with TXL_SGEMM=mkl: oneMKL
                    (/opt/txlc/mkl) for the products made on one thread
                    (the batch slices), OpenBLAS for the others
  scipy-openblas    PyPI's scipy-openblas32 (a current OpenBLAS)
  mkl               PyPI's mkl (oneMKL), Intel OpenMP threads
  blis              Debian 12's BLIS 0.9.0 (libblis4-pthread)

The other libraries are answered through bench/blas/shim.c (preloaded: the
executable's cblas_sgemm, cblas_dgemm and OpenBLAS's thread and
version calls forwarded to the library under test). They are installed on
first use into --cache (pip --target; BLIS with apt-get). Prints the CPU,
each run's BLAS line and one table row per BLAS: best and median of each
measurement and the speed relative to debian-openblas. A benchmark, not a
test.
"""

import argparse
import glob
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(__file__))
from compile_time import wait_quiet  # noqa: E402
from side_by_side import eval_tok_s, train_ms  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BLIS = "/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4"


def cpu_name():
    with open("/proc/cpuinfo") as f:
        info = f.read()
    field = lambda k: info.split(f"\n{k}")[1].split(":", 1)[1].split("\n")[0].strip()  # noqa: E731
    return (f"{field('model name')} (family {field('cpu family')} model "
            f"{field('model')}), {os.cpu_count()} CPUs")


def pip_install(cache, package):
    target = os.path.join(cache, package)
    if not os.path.isdir(target):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        "--target", target, package], check=True)
    return target


def wheel_libs(cache, name, packages):
    """The shared libraries the wheels of `packages` install under their
    data directory (`*.data/data/lib/`; pip --target leaves them out),
    extracted into cache/name/lib."""
    libdir = os.path.join(cache, name, "lib")
    if not os.path.isdir(libdir):
        with tempfile.TemporaryDirectory() as download:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q",
                            "--no-deps", "-d", download] + packages,
                           check=True)
            os.makedirs(libdir + ".part", exist_ok=True)
            for wheel in glob.glob(os.path.join(download, "*.whl")):
                with zipfile.ZipFile(wheel) as z:
                    for member in z.namelist():
                        if "/data/lib/" in member and not member.endswith("/"):
                            target = os.path.join(libdir + ".part",
                                                  os.path.basename(member))
                            with z.open(member) as src, open(target, "wb") as dst:
                                dst.write(src.read())
            os.rename(libdir + ".part", libdir)
    return libdir


def build_shim(cache, kind):
    out = os.path.join(cache, f"shim-{kind}.so")
    if not os.path.exists(out):
        subprocess.run(["cc", "-O2", "-shared", "-fPIC",
                        f"-DTXL_SHIM_{kind.upper()}",
                        os.path.join(HERE, "blas", "shim.c"), "-o", out, "-ldl"],
                       check=True)
    return out


def candidates(cache, only):
    """name -> environment additions, for the BLAS named in `only` (all
    when empty)."""
    want = lambda name: not only or name in only  # noqa: E731
    envs = {}
    if want("debian-openblas"):
        envs["debian-openblas"] = {}
    if want("debian-prescott"):
        envs["debian-prescott"] = {"OPENBLAS_CORETYPE": "Prescott"}
    if want("debian-zen"):
        # OpenBLAS's AVX2 kernels for AMD, against the AVX-512 ones it
        # takes on Zen 4 (Cooperlake): Zen 4 runs 512-bit vectors in two
        # 256-bit halves.
        envs["debian-zen"] = {"OPENBLAS_CORETYPE": "Zen"}
    if want("debian-skylakex"):
        # OpenBLAS's AVX-512 kernels, against the AVX2 ones (Haswell) that
        # 0.3.21 takes by itself on Zen 5 (family 26), which it does not know.
        envs["debian-skylakex"] = {"OPENBLAS_CORETYPE": "SkylakeX"}
    if want("debian-haswell"):
        envs["debian-haswell"] = {"OPENBLAS_CORETYPE": "Haswell"}
    if want("debian-onemkl-1t"):
        # The runtime's own route (runtime/src/device/host/HostGemm.cpp):
        # oneMKL for the calls made on one thread, OpenBLAS for the rest.
        envs["debian-onemkl-1t"] = {"TXL_SGEMM": "mkl"}
    # The shims report kernels the runtime does not know as OpenBLAS
    # kernels; the variable keeps it from restarting the process (it warns).
    # A kernel the CPU can run: SkylakeX (AVX-512) killed scipy-openblas
    # with SIGILL on a Zen 3; Haswell is OpenBLAS's AVX2 kernel set.
    with open("/proc/cpuinfo") as f:
        avx512 = " avx512f " in f.read()
    shimmed = {"OPENBLAS_CORETYPE": "SkylakeX" if avx512 else "Haswell"}
    if want("scipy-openblas"):
        root = pip_install(cache, "scipy-openblas32")
        lib = glob.glob(os.path.join(root, "scipy_openblas32", "lib",
                                     "libscipy_openblas*.so"))[0]
        envs["scipy-openblas"] = dict(shimmed, TXL_BLAS_LIBRARY=lib,
                                      LD_PRELOAD=build_shim(cache, "scipy"))
    if want("mkl"):
        libdir = wheel_libs(cache, "mkl", ["mkl", "intel-openmp"])
        rt = sorted(glob.glob(os.path.join(libdir, "libmkl_rt.so*")))[0]
        envs["mkl"] = dict(shimmed, TXL_BLAS_LIBRARY=rt,
                           LD_LIBRARY_PATH=libdir,
                           LD_PRELOAD=build_shim(cache, "mkl"))
    if want("blis"):
        if not os.path.exists(BLIS):
            subprocess.run(["apt-get", "install", "-y", "-q",
                            "libblis4-pthread"], check=True)
        envs["blis"] = dict(shimmed, TXL_BLAS_LIBRARY=BLIS,
                            LD_PRELOAD=build_shim(cache, "blis"))
    return envs


def blas_line(exe, env):
    out = subprocess.run([exe, "--version"], env=env, capture_output=True,
                         text=True)
    lines = [l for l in (out.stdout + out.stderr).splitlines()
             if l.startswith("blas:")]
    return lines[0] if lines else "?"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("exe", nargs="?", default="build/ptb_small")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quiet-wait", type=float, default=60)
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/txlc-blas"))
    p.add_argument("--only", nargs="*", default=[])
    a = p.parse_args()
    os.makedirs(a.cache, exist_ok=True)
    envs = {name: dict(os.environ, **extra)
            for name, extra in candidates(a.cache, a.only).items()}
    print(f"cpu: {cpu_name()}; {platform.platform()}")
    for name, env in envs.items():
        print(f"{name}: {blas_line(a.exe, env)}")
    res = {name: {"eval": [], "train": []} for name in envs}
    for _ in range(a.repeat):
        for name, env in envs.items():
            wait_quiet(a.quiet_wait)
            e = eval_tok_s(a.exe, a.threads, env)
            res[name]["eval"].append(e["tokens_per_s"])
            wait_quiet(a.quiet_wait)
            res[name]["train"].append(train_ms(a.exe, a.threads, a.steps, env))
            print(name, res[name]["eval"][-1], res[name]["train"][-1],
                  flush=True)
    base = next(iter(res.values()))
    print("| BLAS | eval tok/s best (median) | train ms/batch best (median) "
          "| eval speed | train speed |")
    print("|---|---|---|---|---|")
    for name, r in res.items():
        print(f"| {name} | {max(r['eval']):,.0f} ({statistics.median(r['eval']):,.0f}) "
              f"| {min(r['train']):.1f} ({statistics.median(r['train']):.1f}) "
              f"| {max(r['eval']) / max(base['eval']):.2f} "
              f"| {min(base['train']) / min(r['train']):.2f} |")


if __name__ == "__main__":
    main()
