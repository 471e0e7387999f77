#!/usr/bin/env python3
"""Writes a copy of a safetensors file with the rows of the named f32 tensors
reversed (txl-convert-hf.test's negative control: a Hugging Face checkpoint
converted without reordering its tail clusters).

usage: reverse_rows.py IN OUT NAME...
"""

import json
import struct
import sys

import numpy as np


def main():
    src, dst, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    data = bytearray(open(src, "rb").read())
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    for name in names:
        info = header[name]
        assert info["dtype"] == "F32", name
        begin, end = (8 + n + o for o in info["data_offsets"])
        rows = np.frombuffer(bytes(data[begin:end]), "<f4").reshape(info["shape"][0], -1)
        data[begin:end] = rows[::-1].tobytes()
    open(dst, "wb").write(data)


if __name__ == "__main__":
    main()
