"""Writes a copy of a safetensors checkpoint with one tensor edited.

usage: edit_checkpoint.py SRC DST TENSOR (nan|inf|perturb|huge)

nan / inf put that value into element 3 of TENSOR; perturb adds 1e-3 to
it (for a tied copy that must then disagree with its twin); huge puts the
finite 3e38 there (a checkpoint that loads but overflows the forward). Offsets and
the header stay as they were.
"""

import json
import struct
import sys

import numpy as np


def main():
    src, dst, name, how = sys.argv[1:5]
    with open(src, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    begin, end = header[name]["data_offsets"]
    data = bytearray(raw)
    base = 8 + n + begin
    values = np.frombuffer(bytes(data[base:8 + n + end]), "<f4").copy()
    values[3] = {"nan": np.nan, "inf": np.inf, "huge": 3e38}.get(
        how, values[3] + 1e-3)
    data[base:8 + n + end] = values.tobytes()
    with open(dst, "wb") as f:
        f.write(bytes(data))


if __name__ == "__main__":
    main()
