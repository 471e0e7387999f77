#!/usr/bin/env python3
"""Reads an OpenCL kernel image (runtime/include/txl/device.h, version 2:
per kernel its name, argument table and a SPIR-V module of its own).

usage:
  opencl_image.py split IMAGE DIR
      writes each kernel's SPIR-V module to DIR/<kernel>.spv and prints one
      line per kernel: "kernel NAME: N arguments, B bytes of SPIR-V"
  opencl_image.py compare IMAGE_A IMAGE_B
      for each kernel both images hold, "same NAME" when its SPIR-V is the
      same bytes in both, else "differs NAME"
  opencl_image.py validate IMAGE [SPIRV_VAL]
      runs spirv-val (or SPIRV_VAL) on each kernel's SPIR-V module, the one
      the runtime builds, and prints "valid NAME: B bytes" for each; exits 1
      with spirv-val's message on the first that does not validate. (The
      numerics tests validate the image they run rather than lower the
      kernels a second time with --kernels-to-spirv.)

Exits 1 on an image that does not parse to its last byte.
"""

import os
import struct
import subprocess
import sys
import tempfile


def kernels(path):
    """[(name, argument count, SPIR-V bytes)] of the image at `path`."""
    data = open(path, "rb").read()
    if data[:8] != b"TXLCLIMG":
        sys.exit(f"{path}: not an OpenCL kernel image")
    version, count = struct.unpack_from("<II", data, 8)
    if version != 2:
        sys.exit(f"{path}: image version {version}, expected 2")
    at, out = 16, []
    for _ in range(count):
        (length,) = struct.unpack_from("<I", data, at)
        name = data[at + 4:at + 4 + length].decode()
        at += 4 + length
        (args,) = struct.unpack_from("<I", data, at)
        at += 4 + 5 * args
        (size,) = struct.unpack_from("<Q", data, at)
        out.append((name, args, data[at + 8:at + 8 + size]))
        at += 8 + size
    if at != len(data):
        sys.exit(f"{path}: {len(data) - at} bytes after the last kernel")
    return out


def main():
    if sys.argv[1] == "split":
        os.makedirs(sys.argv[3], exist_ok=True)
        for name, args, spirv in kernels(sys.argv[2]):
            with open(os.path.join(sys.argv[3], name + ".spv"), "wb") as f:
                f.write(spirv)
            print(f"kernel {name}: {args} arguments, {len(spirv)} bytes of SPIR-V")
    elif sys.argv[1] == "compare":
        a = {name: spirv for name, _, spirv in kernels(sys.argv[2])}
        b = {name: spirv for name, _, spirv in kernels(sys.argv[3])}
        for name in sorted(a.keys() & b.keys()):
            print(f"{'same' if a[name] == b[name] else 'differs'} {name}")
    elif sys.argv[1] == "validate":
        tool = sys.argv[3] if len(sys.argv) > 3 else "spirv-val"
        found = kernels(sys.argv[2])
        if not found:
            sys.exit(f"{sys.argv[2]}: no kernel")
        with tempfile.TemporaryDirectory() as tmp:
            for name, _, spirv in found:
                path = os.path.join(tmp, name + ".spv")
                with open(path, "wb") as f:
                    f.write(spirv)
                run = subprocess.run([tool, path], capture_output=True,
                                     text=True)
                if run.returncode != 0:
                    sys.exit(f"{name}: {tool} failed:\n{run.stdout}"
                             f"{run.stderr}")
                print(f"valid {name}: {len(spirv)} bytes")
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
