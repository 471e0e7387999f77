"""The runtime's include graph against its layers (runtime/README.md).

Each file under runtime/src/<layer>/ and runtime/include/txl/rt/<layer>/
belongs to <layer>; txl/runtime.h and txl/device.h are the ABI shared with
the compiler, below every layer. From the bottom:

  abi < support < data < device < collectives < session < commands

A file may include headers of its own layer and of the layers below it;
an include of a layer above, of a header outside the layers (the
compiler's txl/ headers included), or a file outside every layer folder is
a violation.

usage: runtime_layers.py RUNTIME_DIR
Prints each layer's files and the layers they include, then one FAIL line
per violation (exit status 1) or "ok: N files, no include of a layer
above".
"""

import os
import re
import sys

LAYERS = ["abi", "support", "data", "device", "collectives", "session",
          "commands"]
ABI = {"txl/runtime.h", "txl/device.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"(txl/[^"]+)"', re.M)


def layer_of_header(header):
    """The layer of an included "txl/..." header, or None."""
    if header in ABI:
        return "abi"
    parts = header.split("/")
    if len(parts) >= 4 and parts[1] == "rt" and parts[2] in LAYERS:
        return parts[2]
    return None


def layer_of_file(path):
    """The layer of a file of the runtime (path relative to runtime/), or
    None."""
    parts = path.split(os.sep)
    if parts[:2] == ["include", "txl"] and len(parts) == 3:
        return "abi" if "txl/" + parts[2] in ABI else None
    if parts[:3] == ["include", "txl", "rt"] and len(parts) >= 5:
        return parts[3] if parts[3] in LAYERS else None
    if parts[0] == "src" and len(parts) >= 3:
        return parts[1] if parts[1] in LAYERS else None
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    runtime = sys.argv[1]
    files = []
    for top in ("include", "src"):
        for root, _, names in os.walk(os.path.join(runtime, top)):
            for name in names:
                if name.endswith((".h", ".cpp", ".c", ".def")):
                    files.append(os.path.relpath(os.path.join(root, name),
                                                 runtime))
    failures = []
    uses = {layer: set() for layer in LAYERS}
    counts = {layer: 0 for layer in LAYERS}
    for path in sorted(files):
        layer = layer_of_file(path)
        if layer is None:
            failures.append("%s is in no layer's folder" % path)
            continue
        counts[layer] += 1
        with open(os.path.join(runtime, path), encoding="utf-8") as f:
            text = f.read()
        for header in INCLUDE.findall(text):
            target = layer_of_header(header)
            if target is None:
                failures.append("%s (%s) includes %s, outside the runtime's "
                                "layers" % (path, layer, header))
                continue
            uses[layer].add(target)
            if LAYERS.index(target) > LAYERS.index(layer):
                failures.append("%s (%s) includes %s (%s, a layer above)"
                                % (path, layer, header, target))
    for layer in LAYERS:
        below = [t for t in LAYERS if t in uses[layer] and t != layer]
        print("%-12s %3d files, includes %s" %
              (layer, counts[layer], ", ".join(below) or "nothing below"))
    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        return 1
    print("ok: %d files, no include of a layer above" % sum(counts.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
