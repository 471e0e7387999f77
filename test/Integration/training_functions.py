"""Checks the compiled training functions of a model (txl_squared_norm_part,
txl_optimizer_update, txl_learning_rate: the CPU target's) against numpy /
Python transcriptions of the official train.py (test/lib/torch_optim.py):

- three updates of every optimizer, with global-norm clipping active,
  inactive (clip above the norm) and disabled (clip = 0), each run as the
  CPU session runs it (per part: txl_squared_norm_part of every gradient,
  added in parameter order; then per part txl_optimizer_update of every
  parameter, written over the parameter and states passed in) in 1, 2 and
  3 parts, the new parameters and states checked after each, the gradients
  unchanged, and part 0 of 2 alone writing exactly its range of every
  tensor;
- the lr schedule of every scheduler over steps 0 .. max_step + 2 (so 0, 1,
  warmup_step - 1, warmup_step, warmup_step + 1 and max_step among them),
  each call given the lr the previous one returned, as the runtime does,
  for the model file's max_step and another (the run's --max-step).

Every model is compiled from its model file through `txlc --emit=txl` and the
txl-cpu-pipeline."""

import ctypes
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import torch_optim as ref  # noqa: E402
import txlrun  # noqa: E402

f32 = np.float32

MODEL = """
[model]
n_token = 10
n_layer = 1
d_model = 8
n_head = 2
d_head = 4
d_inner = 16

[segment]
tgt_len = 4
mem_len = 4

[train]
optim = "{optim}"
mom = {mom}
clip = {clip}
lr = {lr}
scheduler = "{scheduler}"
warmup_step = {warmup}
max_step = {max_step}
eta_min = {eta_min}
"""

# (optim, clip, scheduler, warmup_step): every optimizer with clipping active
# (0.25, below the gradient norm) and off (above it, or 0), and every
# scheduler, with and without warmup where train.py treats them apart.
CLIP_ACTIVE, CLIP_ABOVE = 0.25, 1000.0
CASES = [
    ("adam", CLIP_ACTIVE, "cosine", 10),
    ("adam", CLIP_ABOVE, "constant", 10),
    ("sgd", CLIP_ACTIVE, "inv_sqrt", 0),
    ("sgd", 0.0, "inv_sqrt", 8),
    ("adagrad", CLIP_ACTIVE, "dev_perf", 5),
    ("adagrad", CLIP_ABOVE, "cosine", 0),
]
MOM, LR, MAX_STEP, ETA_MIN = 0.9, 2.5e-4, 40, 1e-6
STATES = {"adam": 2, "sgd": 1, "adagrad": 1}


def compile_model(work, optim, clip, scheduler, warmup):
    """Returns the shared object and the trained parameters' flat shapes
    (numel,) in parameter order (the training functions take every tensor
    flat): @segment's parameters but its buffers."""
    toml = os.path.join(work, "model.toml")
    with open(toml, "w") as f:
        f.write(MODEL.format(optim=optim, mom=MOM, clip=clip, lr=LR,
                             scheduler=scheduler, warmup=warmup,
                             max_step=MAX_STEP, eta_min=ETA_MIN))
    mlir = os.path.join(work, "model.mlir")
    subprocess.run(["txlc", toml, "--emit=txl", "-o", mlir], check=True)
    with open(mlir) as f:
        text = f.read()
    signature = text[text.index("func.func @segment("):]
    signature = signature[:signature.index("\n")]
    shapes = [(int(np.prod([int(d) for d in dims.split("x")])),)
              for dims in re.findall(r"tensor<([0-9x]+)xf32> \{txl\.param", signature)]
    return txlrun.compile_module(mlir, work), shapes


def reference_step(optim, clip, params, grads, states, lr, step, norm):
    """One train.py update: clip_grad_norm_ (when clip > 0) given the global
    norm, then the optimizer. Returns new params and new state lists."""
    scale = ref.clip_coef(norm, clip) if clip > 0 else f32(1)
    new_params, new_states = [], [[] for _ in states]
    for i, (p, g) in enumerate(zip(params, grads)):
        g = g * scale
        if optim == "adam":
            p, m, v = ref.torch_adam(p, g, states[0][i], states[1][i], lr, step)
            got = [m, v]
        elif optim == "sgd":
            p, b = ref.torch_sgd(p, g, states[0][i], lr, MOM)
            got = [b]
        else:
            p, s = ref.torch_adagrad(p, g, states[0][i], lr)
            got = [s]
        new_params.append(p)
        for lst, value in zip(new_states, got):
            lst.append(value)
    return new_params, new_states


def max_rel_err(ours, want):
    return max(float(np.max(np.abs(a - b) / (np.abs(b) + 1e-6)))
               for a, b in zip(ours, want))


def part_range(n, part, parts):
    """Part `part` of `parts` of n elements (runtime.h)."""
    return n * part // parts, n * (part + 1) // parts


def partial_sums(norm_fn, grads, parts):
    """Each part's sum of squares, as the session adds them: one call per
    gradient, added in parameter order in f32."""
    partials = []
    for part in range(parts):
        total = None
        for g in grads:
            square = norm_fn([g, part, parts], [(1,)])[0][0]
            total = square if total is None else f32(total + square)
        partials.append(total)
    return np.array(partials, f32)


def update_part(update_fn, params, grads, states, lr, step, inv_loss_scale,
                partials, part, parts):
    """Part `part` of the update of every parameter, in place."""
    for i, (p, g) in enumerate(zip(params, grads)):
        update_fn([p, g] + [lst[i] for lst in states] +
                  [lr, step, f32(inv_loss_scale), partials, part, parts], [])


def run_update(update_fn, norm_fn, params, grads, states, lr, step, parts,
               inv_loss_scale=1.0):
    """One update as the session runs it, its parts one after the other:
    every part's sum of squares, then every part's update in place. Returns
    the norm the session reports (the square root of the partials added in
    order, unscaled). The gradients carry a loss scale of
    1 / inv_loss_scale."""
    partials = partial_sums(norm_fn, grads, parts)
    for p in range(parts):
        update_part(update_fn, params, grads, states, lr, step,
                    inv_loss_scale, partials, p, parts)
    total = f32(0)
    for x in partials:
        total = f32(total + x)
    return f32(np.sqrt(total) * f32(inv_loss_scale))


def check_part_alone(update_fn, norm_fn, params, grads, states, lr, step):
    """Part 0 of 2, run alone, writes the first half of every parameter and
    state and nothing of the second (the parts run concurrently)."""
    before = [a.copy() for a in params] + [a.copy() for lst in states
                                           for a in lst]
    partials = partial_sums(norm_fn, grads, 2)
    new_params = [a.copy() for a in params]
    new_states = [[a.copy() for a in lst] for lst in states]
    update_part(update_fn, new_params, grads, new_states, lr, step, 1.0,
                partials, 0, 2)
    after = new_params + [a for lst in new_states for a in lst]
    for k, (a, b) in enumerate(zip(after, before)):
        lo, hi = part_range(a.size, 0, 2)
        if not np.array_equal(a.reshape(-1)[hi:], b.reshape(-1)[hi:]):
            return f"part 0 of 2 wrote past its range in tensor {k}"
        if hi > lo and np.array_equal(a.reshape(-1)[lo:hi],
                                      b.reshape(-1)[lo:hi]):
            return f"part 0 of 2 left its range of tensor {k} unchanged"
    return None


def check_optimizer(lib, shapes, optim, clip, rng):
    step_fn = txlrun.Segment(lib, entry="txl_optimizer_update")
    norm_fn = txlrun.Segment(lib, entry="txl_squared_norm_part")
    n_states = STATES[optim]
    params = [rng.randn(*s).astype(f32) for s in shapes]
    states = [[np.zeros(s, f32) for s in shapes] for _ in range(n_states)]
    ours = (params, states)
    want = (params, states)
    worst = 0.0
    for step in (1, 2, 3):
        grads = [rng.randn(*s).astype(f32) for s in shapes]
        lr = LR * (4 - step)  # a Python float, as the schedule gives it
        norm = ref.total_norm(grads)
        # The cases must exercise what they claim.
        active = clip > 0 and ref.clip_coef(norm, clip) < 1
        if active != (clip == CLIP_ACTIVE):
            sys.exit(f"FAIL: {optim} clip {clip}: norm {norm} does not "
                     "give the intended clipping")
        grads_before = [g.copy() for g in grads]
        error = check_part_alone(step_fn, norm_fn, ours[0], grads, ours[1],
                                 lr, step)
        if error:
            sys.exit(f"FAIL: {optim} clip {clip} step {step}: {error}")
        # The update is in place: the parameters and states passed in (here
        # copies of the previous step's) are overwritten, and it has no
        # output. Split into 1, 2 and 3 parts, each result is checked; the
        # run in 3 parts carries on.
        for parts in (1, 2, 3):
            new_params = [a.copy() for a in ours[0]]
            new_states = [[a.copy() for a in lst] for lst in ours[1]]
            got_norm = run_update(step_fn, norm_fn, new_params, grads,
                                  new_states, lr, step, parts)
            if not all(np.array_equal(a, b)
                       for a, b in zip(grads, grads_before)):
                sys.exit(f"FAIL: {optim} clip {clip} step {step}: the "
                         "update wrote a gradient")
            if not abs(got_norm - norm) <= 1e-6 * norm:
                sys.exit(f"FAIL: {optim} clip {clip} step {step} parts "
                         f"{parts}: grad_norm {got_norm} vs {norm}")
            # Dynamic loss scaling: gradients 2^12 times larger with
            # inv_loss_scale 2^-12 give the same norm and the same update,
            # bit for bit (powers of two scale exactly).
            scaled_params = [a.copy() for a in ours[0]]
            scaled_states = [[a.copy() for a in lst] for lst in ours[1]]
            scaled_norm = run_update(
                step_fn, norm_fn, scaled_params, [g * f32(4096) for g in grads],
                scaled_states, lr, step, parts, inv_loss_scale=2.0 ** -12)
            if scaled_norm != got_norm or not all(
                    np.array_equal(a, b) for a, b in
                    zip(scaled_params + sum(scaled_states, []),
                        new_params + sum(new_states, []))):
                sys.exit(f"FAIL: {optim} clip {clip} step {step} parts "
                         f"{parts}: the loss-scaled update differs")
            # The reference clips with the compiled norm: a last-bit
            # difference of the summation order would otherwise be
            # amplified where a state nearly cancels.
            expect = reference_step(optim, clip, want[0], grads, want[1], lr,
                                    step, got_norm)
            for what, a, b in [("params", new_params, expect[0])] + [
                    (f"state {k}", new_states[k], expect[1][k])
                    for k in range(n_states)]:
                err = max_rel_err(a, b)
                worst = max(worst, err)
                if not err <= 1e-5:
                    sys.exit(f"FAIL: {optim} clip {clip} step {step} parts "
                             f"{parts}: {what} rel err {err:.3g}")
        ours = (new_params, new_states)
        want = expect
    return worst


def check_schedule(lib, scheduler, warmup):
    lr_fn = txlrun.Segment(lib, entry="txl_learning_rate")

    def call(step, current, max_step=MAX_STEP):
        return float(lr_fn([step, current, max_step], [], [],
                           scalar_result=ctypes.c_double))

    # dev_perf's ReduceLROnPlateau is the runtime's: halve the lr once past
    # the warmup, as it would, and expect the schedule to keep it. The
    # schedule follows the run's max_step (train --max-step, train.py's
    # args.max_step), the model file's and another one.
    plateau = warmup + 3 if scheduler == "dev_perf" else None
    worst = 0.0
    for max_step in (MAX_STEP, 2 * MAX_STEP + 1):
        want = ref.initial_lr(scheduler, LR, warmup)
        got = call(0, float("nan"), max_step)
        for step in range(0, max_step + 3):
            if step > 0:
                want = ref.lr_after_update(scheduler, want, step, LR, warmup,
                                           max_step, ETA_MIN)
                got = call(step, current, max_step)
            err = abs(got - want) / want if want else abs(got)
            worst = max(worst, err)
            if not err <= 1e-15:
                sys.exit(f"FAIL: {scheduler} warmup {warmup} max_step "
                         f"{max_step}: lr after step {step} is {got!r}, "
                         f"train.py has {want!r}")
            current = got
            if step == plateau:
                current = want = got * 0.5
    # The quirk kept on purpose: after warmup a constant schedule stays at
    # the last warmup value, not at lr.
    if scheduler == "constant" and got != LR * (warmup - 1) / warmup:
        sys.exit(f"FAIL: constant after warmup is {got!r}")
    return worst


def main():
    rng = np.random.RandomState(0)
    worst_opt = worst_lr = 0.0
    for optim, clip, scheduler, warmup in CASES:
        with tempfile.TemporaryDirectory() as work:
            lib, shapes = compile_model(work, optim, clip, scheduler, warmup)
            if len(shapes) < 10:
                sys.exit(f"FAIL: only {len(shapes)} trained parameters found")
            worst_opt = max(worst_opt, check_optimizer(lib, shapes, optim,
                                                       clip, rng))
            worst_lr = max(worst_lr, check_schedule(lib, scheduler, warmup))
    print(f"training functions ok: {len(CASES)} models, updates within "
          f"{worst_opt:.2e}, schedules within {worst_lr:.2e} relative")


if __name__ == "__main__":
    main()
