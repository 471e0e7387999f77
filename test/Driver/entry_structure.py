"""The segment entries' code per layer is a line of calls (issue #48).

usage: entry_structure.py MODEL_TOML WORK_DIR [TXLC_OPTION ...]

Compiles MODEL_TOML with n_layer 2 and 6 to optimized LLVM IR
(`txlc --emit=llvm`) and prints, for each packed entry `@txl_*(ptr)`, its
basic blocks and the loads in its first block at both depths, then three
verdicts that FileCheck reads:

- "blocks: constant": no entry of the forward or backward segment gains a
  basic block per layer (each layer's new memory is copied by a call of an
  outlined function, txl-outline-strided-copies, not by a loop nest in the
  entry);
- "first-block loads: constant": the entries load each layer's parameters
  where they are used, not all at their start (sinkPackedArgumentLoads);
- "frees between layer gradients: yes": @txl_segment_grad frees a layer's
  saved activations after that layer's @decoder_layer_grad call, before the
  next (txl-free-after-last-use), not all at its end;
- "largest entry function: constant": no function made of an entry (the
  entry and its parts, cutIntoParts) has more instructions at 6 layers than
  the largest at 2 layers plus a tenth: with --txl-entry-part-size small
  enough to cut the entries, what code generation sees grows in number of
  functions, not in size.

Each of the three made code generation grow with the square of the layers
(a 200-layer model of d_model 64: 55 s before, 26 s after).
"""

import os
import re
import subprocess
import sys

ENTRIES = ("txl_segment_forward", "txl_segment_grad", "txl_segment_log_probs",
           "txl_segment_kv", "txl_segment_log_probs_kv")


def functions(ir):
    """{name: body lines} of the functions defined in `ir`."""
    result, name, body = {}, None, []
    for line in ir.splitlines():
        m = re.match(r"define .*@([\w.]+)\(", line)
        if m:
            name, body = m.group(1), []
        elif name and line == "}":
            result[name] = body
            name = None
        elif name:
            body.append(line)
    return result


def shape(body):
    """(basic blocks, loads in the first block) of a function body."""
    blocks, loads, first = 1, 0, True
    for line in body:
        if re.match(r"^[\w.\-]+:", line):
            blocks += 1
            first = False
        elif first and " = load " in line:
            loads += 1
    return blocks, loads


def instructions(body):
    """Instructions in a function body (lines indented by two spaces)."""
    return sum(1 for line in body if line.startswith("  ") and
               not line.startswith("   "))


def largest_entry_function(functions_):
    """The most instructions of a function made of a packed entry."""
    return max(instructions(body) for name, body in functions_.items()
               if name.split(".")[0] in ENTRIES)


def frees_between_grads(body):
    """Whether a free follows every @decoder_layer_grad call but the last
    before the next one."""
    calls = [i for i, line in enumerate(body) if "@decoder_layer_grad(" in line]
    return len(calls) > 1 and all(
        any("@free(" in line for line in body[a:b])
        for a, b in zip(calls, calls[1:]))


def compile_ir(model, work, layers, options):
    path = os.path.join(work, "L%d.toml" % layers)
    with open(path, "w") as f:
        f.write(re.sub(r"(?m)^n_layer = .*$", "n_layer = %d" % layers,
                       open(model).read()))
    out = os.path.join(work, "L%d.ll" % layers)
    subprocess.run(["txlc", path, "--emit=llvm", "-o", out] + options,
                   check=True)
    return functions(open(out).read())


def main():
    model, work, options = sys.argv[1], sys.argv[2], sys.argv[3:]
    small = compile_ir(model, work, 2, options)
    large = compile_ir(model, work, 6, options)
    same_blocks = same_loads = True
    for name in ENTRIES:
        (b2, l2), (b6, l6) = shape(small[name]), shape(large[name])
        print("%s: blocks %d, %d; first-block loads %d, %d"
              % (name, b2, b6, l2, l6))
        same_blocks &= b2 == b6
        same_loads &= l2 == l6
    print("blocks: %s" % ("constant" if same_blocks else "GROW"))
    print("first-block loads: %s" % ("constant" if same_loads else "GROW"))
    print("frees between layer gradients: %s"
          % ("yes" if frees_between_grads(large["txl_segment_grad"]) else "NO"))
    i2, i6 = largest_entry_function(small), largest_entry_function(large)
    print("largest entry function: %d, %d instructions: %s"
          % (i2, i6, "constant" if i6 <= 1.1 * i2 else "GROW"))


if __name__ == "__main__":
    main()
