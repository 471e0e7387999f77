#!/usr/bin/env python3
"""Whether two builds of the runtime behave bit for bit the same.

Usage: scripts/compare_runtimes.py BASE_RUNTIME_DIR [--new DIR] [--txlc PATH]
                                   [--workdir DIR] [--no-opencl]
                                   [--base-exes DIR]

Issue 50's guard rail for a redesign of the runtime ("no behaviour change"):
the same compiled models are linked once against the libtxl_runtime*.a of
BASE_RUNTIME_DIR (for example a copy of build/lib taken before the change)
and once against --new (default build/lib), and every run below is made with
both executables. Across a change of the compiler-runtime ABI (whose
tables the base runtime refuses), --base-exes takes the base side's
executables from an earlier run's --workdir (`<name>_base`, linked by the
compiler of that time). The outputs must be equal byte for byte:

- ptb_small (../shared/reference/ptb_small, the official model): eval of the
  valid split with the key/value cache on one thread and two (batch
  slices), and without it (--dump-nll, every token's NLL);
- a 20-update training run of ptb_small (batch 16, dropout 0.1, two
  threads: slices and their gradient sums) validating at updates 10 and 20
  on 4 segments: last.safetensors and best.safetensors (parameters, Adam's
  state, memory, metadata) and metrics.jsonl without its timings;
- the official reference cases (../shared/reference/*/): run-segments'
  NLL and memories, and the backward segment's gradients;
- with OpenCL (unless --no-opencl or no OpenCL device): train_tiny for 10
  updates on the device (parameters, gradients, optimizer state and memory
  held there) and its eval of the valid split.

Prints one line per comparison and "same behaviour: N comparisons" at the
end; exits 1 at the first difference, naming the run and the file.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared")
PTB = os.path.join(SHARED, "data", "ptb")
REFERENCE = os.path.join(SHARED, "reference")


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"compare_runtimes: {' '.join(cmd)} failed "
                 f"({result.returncode}):\n{result.stderr[-2000:]}")
    return result


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# The wall-clock fields of metrics.jsonl's records (Train.cpp).
TIMINGS = ("ms_per_batch", "tokens_per_s")


def metrics_without_timings(path):
    """metrics.jsonl with the wall-clock fields left out."""
    records = []
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            for key in TIMINGS:
                record.pop(key, None)
            records.append(record)
    return json.dumps(records, sort_keys=True).encode()


class Comparer:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.count = 0

    def compile(self, model, name, extra=()):
        """The model linked against each runtime: {side: executable}."""
        exes = {}
        for side, runtime in (("base", self.args.base), ("new", self.args.new)):
            exe = os.path.join(self.work, f"{name}_{side}")
            if side == "base" and self.args.base_exes:
                exe = os.path.join(self.args.base_exes, f"{name}_base")
                if not os.access(exe, os.X_OK):
                    sys.exit(f"compare_runtimes: no base executable {exe}")
                exes[side] = exe
                continue
            run([self.args.txlc, model, "-o", exe, "--runtime-dir", runtime,
                 *extra])
            exes[side] = exe
        return exes

    def same(self, what, outputs):
        """outputs: {side: [(label, bytes)]}; fails at the first difference."""
        base, new = outputs["base"], outputs["new"]
        for (label, a), (_, b) in zip(base, new):
            self.count += 1
            if a != b:
                sys.exit(f"compare_runtimes: {what}: {label} differs between "
                         f"the runtimes")
            print(f"same: {what}: {label}")

    def both(self, exes, what, args, files, env=None):
        """Runs `exe args` for each side in its own directory; compares the
        files (relative to it) the run wrote."""
        outputs = {}
        for side, exe in exes.items():
            cwd = os.path.join(self.work, what.replace(" ", "_"), side)
            os.makedirs(cwd, exist_ok=True)
            run([exe, *args], cwd=cwd, env=env)
            outputs[side] = []
            for name in files:
                path = os.path.join(cwd, name)
                data = (metrics_without_timings(path)
                        if name.endswith("metrics.jsonl")
                        else open(path, "rb").read())
                outputs[side].append((name, data))
        self.same(what, outputs)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", help="directory of the base runtime's "
                        "libtxl_runtime.a and libtxl_runtime_main.a")
    parser.add_argument("--new", default=os.path.join(REPO, "build", "lib"))
    parser.add_argument("--txlc",
                        default=os.path.join(REPO, "build", "bin", "txlc"))
    parser.add_argument("--workdir")
    parser.add_argument("--no-opencl", action="store_true")
    parser.add_argument("--base-exes",
                        help="an earlier run's --workdir: its <name>_base "
                        "executables are the base side")
    args = parser.parse_args()
    args.base = os.path.abspath(args.base)
    args.new = os.path.abspath(args.new)
    work = args.workdir or tempfile.mkdtemp(prefix="compare_runtimes.")
    os.makedirs(work, exist_ok=True)
    c = Comparer(args, work)

    ptb = c.compile(os.path.join(REFERENCE, "ptb_small", "model.toml"), "ptb")
    checkpoint = os.path.join(REFERENCE, "ptb_small", "model.safetensors")
    for label, extra in (("kv cache, 1 thread", ["--threads", "1"]),
                         ("kv cache, 2 threads", ["--threads", "2"]),
                         ("no kv cache, 2 threads",
                          ["--threads", "2", "--no-kv-cache"])):
        c.both(ptb, f"ptb_small eval valid ({label})",
               ["eval", "--data", PTB, "--checkpoint", checkpoint,
                "--dump-nll", "nll.npy", *extra], ["nll.npy"])
    c.both(ptb, "ptb_small train 20 updates",
           ["train", "--data", PTB, "--work-dir", "run", "--max-step", "20",
            "--log-interval", "5", "--eval-interval", "10",
            "--max-eval-steps", "4", "--threads", "2"],
           ["run/last.safetensors", "run/best.safetensors",
            "run/metrics.jsonl"])

    cases = sorted(d for d in os.listdir(REFERENCE)
                   if os.path.exists(os.path.join(REFERENCE, d, "case.json")))
    for case in cases:
        folder = os.path.join(REFERENCE, case)
        with open(os.path.join(folder, "case.json")) as f:
            meta = json.load(f)
        exes = c.compile(os.path.join(folder, "model.toml"), case)
        settings = ["--mem-len", str(meta.get("mem_len", 0)),
                    "--threads", "1"]
        if "clamp_len" in meta:
            settings += ["--clamp-len", str(meta["clamp_len"])]
        if "same_length" in meta:
            settings += ["--same-length",
                         "true" if meta["same_length"] else "false"]
        files = ["nll.npy"]
        extra = ["--dump-nll", "nll.npy"]
        if meta.get("mem_len", 0) > 0:
            files.append("mems.safetensors")
            extra += ["--dump-mems", "mems.safetensors"]
        if os.path.exists(os.path.join(folder, "grads.safetensors")):
            files.append("grads.safetensors")
            extra += ["--grad-segment", str(meta.get("grad_segment", 0)),
                      "--dump-grads", "grads.safetensors"]
        c.both(exes, f"reference {case}",
               ["run-segments", "--checkpoint",
                os.path.join(folder, "weights.safetensors"), "--inputs",
                os.path.join(folder, "data.npy"), "--targets",
                os.path.join(folder, "target.npy"), *settings, *extra], files)

    # Intel's OpenCL CPU runtime as scripts/install-deps.sh installs it (and
    # as test/lit.cfg.py finds it).
    vendors = os.environ.get("TXL_OPENCL_VENDORS",
                             "/opt/txlc/intel-opencl/vendors")
    if not args.no_opencl and not os.path.isdir(vendors):
        print(f"compare_runtimes: no OpenCL runtime in {vendors}: "
              "the OpenCL runs are left out")
        args.no_opencl = True
    if not args.no_opencl:
        os.environ.setdefault("OCL_ICD_VENDORS", vendors)
        tiny = os.path.join(REPO, "test", "Integration", "Inputs",
                            "train_tiny.toml")
        ocl = c.compile(tiny, "tiny_ocl", ["--target=opencl"])
        c.both(ocl, "train_tiny opencl train 10 updates",
               ["train", "--data", PTB, "--work-dir", "run", "--max-step", "10",
                "--eval-interval", "5", "--max-eval-steps", "4"],
               ["run/last.safetensors", "run/best.safetensors",
                "run/metrics.jsonl"])
        outputs = {}
        for side, exe in ocl.items():
            cwd = os.path.join(work, "train_tiny_opencl_train_10_updates", side)
            run([exe, "eval", "--data", PTB, "--checkpoint",
                 "run/last.safetensors", "--dump-nll", "nll.npy"], cwd=cwd)
            outputs[side] = [("nll.npy", open(os.path.join(cwd, "nll.npy"),
                                              "rb").read())]
        c.same("train_tiny opencl eval valid", outputs)

    print(f"same behaviour: {c.count} comparisons ({work})")
    if not args.workdir:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
