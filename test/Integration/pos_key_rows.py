"""txl.rel_attention with a dynamic klen checks at run time that pos_key has
klen rows (the positional product reads r row qlen - 1 - i + j for every
key j).

Compiles one @segment holding a txl.rel_attention through the CPU pipeline,
calls it with r of klen rows (runs, finite output) and, in a child process,
with r one row short: the child must exit with status 1 and the check's
message on stderr (txl-lower-host-asserts, txl_rt_assert_failed) instead of
reading past the end of r or raising a signal.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import txlrun  # noqa: E402

MODULE = """
func.func @segment(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>, %v: tensor<?x?x2x4xf32>,
                   %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %vb: tensor<2x4xf32>,
                   %mem_len: index, %same_length: i1) -> tensor<?x?x2x4xf32>
    attributes {llvm.emit_c_interface, txl.entry = "txl_segment_forward"} {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>,
        tensor<2x4xf32>, tensor<2x4xf32> -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}
"""

QLEN, MLEN, BSZ = 3, 2, 2
KLEN = QLEN + MLEN


def call(shared, rlen):
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    inputs = [f(QLEN, BSZ, 2, 4), f(KLEN, BSZ, 2, 4), f(KLEN, BSZ, 2, 4),
              f(rlen, 2, 4), f(2, 4), f(2, 4), MLEN, False]
    return txlrun.Segment(shared)(inputs, [(QLEN, BSZ, 2, 4)])[0]


def main():
    if len(sys.argv) == 3:  # the child: call with r of argv[2] rows
        call(sys.argv[1], int(sys.argv[2]))
        print("child: returned")
        return
    work = tempfile.mkdtemp()
    path = os.path.join(work, "segment.mlir")
    with open(path, "w") as f:
        f.write(MODULE)
    shared = txlrun.compile_module(path, work)
    out = call(shared, KLEN)
    print("klen rows: finite output:", bool(np.isfinite(out).all()))
    child = subprocess.run([sys.executable, __file__, shared, str(KLEN - 1)],
                           capture_output=True, text=True)
    print("one row short: exit status", child.returncode)
    print("one row short: stdout:", repr(child.stdout))
    print("one row short: stderr:", child.stderr.strip())


if __name__ == "__main__":
    main()
