"""`train --resume` on a tampered checkpoint: a clear error, nothing lost.

usage: resume_errors.py EXECUTABLE DATA_DIR WORK_ROOT

Trains 2 updates into WORK_ROOT/base, then for each case copies the work
directory, changes one thing in last.safetensors' metadata or tensors, and
resumes: the run must exit with status 1 and one `error:` line containing
the case's text, before step 1, and leave last.safetensors and the log as
they were. Prints "<case>: <error line>" for FileCheck.
"""

import json
import shutil
import struct
import subprocess
import sys
import os


def read(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    return header, data


def write(path, header, data):
    blob = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob + data)


def drop_tensor(header, data, name):
    """The header and data without tensor `name`, offsets kept contiguous."""
    begin, end = header.pop(name)["data_offsets"]
    for key, info in header.items():
        if key != "__metadata__" and info["data_offsets"][0] >= end:
            info["data_offsets"] = [o - (end - begin) for o in info["data_offsets"]]
    return header, data[:begin] + data[end:]


def main():
    exe, data_dir, root = sys.argv[1:4]
    common = [exe, "train", "--data", data_dir, "--threads", "1"]
    base = os.path.join(root, "base")
    subprocess.run(common + ["--work-dir", base, "--max-step", "2"],
                   check=True, stdout=subprocess.DEVNULL)
    cases = {
        "mem-rows-over-mem-len": ("meta", "mem_rows", "17"),
        "mem-rows-huge": ("meta", "mem_rows", "1000000000000"),
        "step-overflow": ("meta", "step", "99999999999999999999"),
        "rng": ("meta", "numpy_rng", "0 1 2"),
        "model": ("meta", "model", "other_model"),
        "threads": ("meta", "threads", "0"),
        "missing-memory": ("drop", "train.mems.chunk0.layer1", None),
        # Issue 48, item 15: a position past the stream started epoch 2,
        # and a step past max_step went straight to the test evaluation.
        "iterator-row-past-end": ("meta", "iterator_row", "99999999"),
        "step-past-max-step": ("meta", "step", "500"),
    }
    for name, (kind, key, value) in cases.items():
        work = os.path.join(root, name)
        shutil.copytree(base, work)
        last = os.path.join(work, "last.safetensors")
        header, data = read(last)
        if kind == "meta":
            header["__metadata__"][key] = value
        else:
            header, data = drop_tensor(header, data, key)
        write(last, header, data)
        before = {f: open(os.path.join(work, f), "rb").read()
                  for f in ("last.safetensors", "log.txt", "metrics.jsonl")}
        run = subprocess.run(common + ["--work-dir", work, "--resume"],
                             capture_output=True, text=True)
        errors = [l for l in run.stderr.splitlines() if "error:" in l]
        if run.returncode != 1 or len(errors) != 1:
            print("FAIL %s: status %d, stderr %r" % (name, run.returncode, run.stderr))
            sys.exit(1)
        if "| epoch" in run.stdout:
            print("FAIL %s: trained before the error" % name)
            sys.exit(1)
        for f, content in before.items():
            if open(os.path.join(work, f), "rb").read() != content:
                print("FAIL %s: %s changed" % (name, f))
                sys.exit(1)
        print("%s: %s" % (name, errors[0]))


if __name__ == "__main__":
    main()
