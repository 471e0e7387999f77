"""How many memrefs one `bufferization.dealloc` frees, at two depths.

usage: dealloc_sizes.py SMALL_DUMP LARGE_DUMP

Each DUMP holds the output of `txlc --emit=llvm-mlir
--mlir-print-ir-before=txl-split-unique-deallocs,buffer-deallocation-simplification`
for one model at two depths (`// -----// IR Dump Before NAME (arg) //----- //`
headers). Prints, per dump, the pass and the most memrefs any one dealloc
frees, then for each pass whether that number is the same at both depths
("constant") or larger at the larger one ("GROW"). Upstream
buffer-deallocation simplification compares the memrefs of one dealloc
pairwise: it must receive deallocs whose size does not grow with the layers.
"""

import re
import sys


def sizes(path):
    """[(pass, most memrefs in one dealloc)] of the dumps in `path`."""
    dumps = re.split(r"(?m)^// -----// IR Dump Before (\S+).*$",
                     open(path).read())
    result = []
    for name, body in zip(dumps[1::2], dumps[2::2]):
        most = 0
        for m in re.finditer(r"bufferization\.dealloc \(([^:)]*)", body):
            most = max(most, len(m.group(1).split(",")))
        result.append((name, most))
    return result


def main():
    small, large = sizes(sys.argv[1]), sizes(sys.argv[2])
    for (name, a), (_, b) in zip(small, large):
        print("before %s: at most %d, %d memrefs per dealloc: %s"
              % (name, a, b, "constant" if a == b else "GROW"))


if __name__ == "__main__":
    main()
