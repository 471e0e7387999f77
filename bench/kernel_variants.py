"""What the kernel benchmarks share (cpu_attention_kernel.py,
linear_nll_kernel.py): their command-line options for variants and shapes,
and a variant's module compiled through the CPU pipeline by test/lib/txlrun.py.

A variant is NAME=PIPELINE[@BINDIR]: the pass pipeline given to txl-opt
(`--pass-pipeline`'s body), with the txl-opt of BINDIR (default build/bin;
the runtime library is looked up in BINDIR/../lib), so that two builds can
be compared in one run.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
import txlrun  # noqa: E402


def add_arguments(ap, variants, shapes, march_help=""):
    """--variant (default `variants`), --shape (of `shapes`, default all)
    and --march on the argparse parser `ap`."""
    ap.add_argument("--variant", nargs="+", default=variants,
                    help="NAME=PIPELINE[@BINDIR]")
    ap.add_argument("--shape", nargs="+", default=list(shapes),
                    choices=list(shapes))
    ap.add_argument("--march", default="native",
                    help="clang -march for the generated code (%sdefault "
                    "native)" % march_help)


def compile_variant(spec, mlir, out, march):
    """(NAME, txlrun.Segment) of the variant `spec` of the module at path
    `mlir`, compiled in directory `out` with clang -O3 -march=`march`."""
    name, rest = spec.split("=", 1)
    pipeline, _, bindir = rest.partition("@")
    bindir = os.path.abspath(bindir or os.path.join(ROOT, "build", "bin"))
    path_env = os.environ.get("PATH", "")
    os.environ["PATH"] = bindir + os.pathsep + path_env
    try:
        os.makedirs(out, exist_ok=True)
        return name, txlrun.Segment(txlrun.compile_module(
            mlir, out, pipeline="pass-pipeline=" + pipeline,
            clang_flags=("-O3", "-march=" + march)))
    finally:
        os.environ["PATH"] = path_env
