"""`txlc --emit=txl` memory grows linearly in n_layer, not quadratically.

usage: emit_scaling.py MODEL_TOML WORK_DIR

Emits MODEL_TOML with n_layer 100 and 400 and compares the peak resident
memory of the two runs: linear growth (the layers' IR, about 0.1 MB each
here) keeps the ratio near 1.3; the quadratic attribute rebuilding fixed in
SegmentBuilder/TrainingBuilder made it 9 (0.30 GB against 2.7 GB).
"""

import os
import re
import resource
import subprocess
import sys


def peak_kb(model, work, layers):
    path = os.path.join(work, "deep%d.toml" % layers)
    with open(path, "w") as f:
        f.write(re.sub(r"(?m)^n_layer = .*$", "n_layer = %d" % layers,
                       open(model).read()))
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: run each
    # size in a child of its own.
    code = ("import resource, subprocess, sys; "
            "subprocess.run(sys.argv[1:], check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, "txlc", path,
                          "--emit=txl", "-o", os.devnull],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def main():
    model, work = sys.argv[1:3]
    small = peak_kb(model, work, 100)
    large = peak_kb(model, work, 400)
    ratio = large / small
    print("n_layer 100: %d KB, 400: %d KB, ratio %.2f: %s"
          % (small, large, ratio, "linear" if ratio < 2.0 else "SUPERLINEAR"))


if __name__ == "__main__":
    main()
