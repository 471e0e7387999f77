"""numpy transcriptions of what the official pytorch/train.py does around one
update: torch.nn.utils.clip_grad_norm_, the single-tensor updates of
torch.optim.Adam / SGD(momentum) / Adagrad, and train.py's step-wise learning
rate schedule (Python floats, in train.py's and torch's order of operations).

Shared by the lit tests that check the compiled ops and functions.
"""

import math

import numpy as np

f32 = np.float32


def torch_adam(p, g, m, v, lr, step, b1=0.9, b2=0.999, eps=1e-8):
    """torch.optim.adam._single_tensor_adam (no weight decay, no amsgrad)."""
    m = m + f32(1 - b1) * (g - m)                      # exp_avg.lerp_(grad, 1 - beta1)
    v = v * f32(b2) + f32(1 - b2) * g * g              # mul_(beta2).addcmul_(g, g, 1 - beta2)
    bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step          # Python floats
    denom = np.sqrt(v) / f32(np.sqrt(bc2)) + f32(eps)
    return p + f32(-(lr / bc1)) * (m / denom), m, v


def torch_sgd(p, g, buf, lr, mom):
    """torch.optim.sgd, momentum without dampening; the first step's buffer is g."""
    buf = buf * f32(mom) + g
    return p + f32(-lr) * buf, buf


def torch_adagrad(p, g, s, lr, eps=1e-10):
    """torch.optim.adagrad without lr decay, initial accumulator 0."""
    s = s + g * g
    return p + f32(-lr) * (g / (np.sqrt(s) + f32(eps))), s


def total_norm(grads):
    """clip_grad_norm_'s global L2 norm, as f32 (accumulated in f64 here)."""
    return f32(math.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2))
                             for g in grads)))


def clip_coef(norm, max_norm):
    """clip_grad_norm_'s scale: `max_norm / (norm + 1e-6)` is evaluated by
    torch as `(norm + 1e-6).reciprocal() * max_norm` in f32, then clamped to
    at most 1."""
    coef = (f32(1) / (norm + f32(1e-6))) * f32(max_norm)
    return min(coef, f32(1))


def lr_lambda(step, warmup_step):
    """train.py's inv_sqrt multiplier."""
    if step == 0 and warmup_step == 0:
        return 1.
    return 1. / (step ** 0.5) if step > warmup_step \
        else step / (warmup_step ** 1.5)


def initial_lr(scheduler, lr, warmup_step):
    """The lr of the first update: LambdaLR applies lambda(0) when built."""
    return lr * lr_lambda(0, warmup_step) if scheduler == "inv_sqrt" else lr


def lr_after_update(scheduler, current, train_step, lr, warmup_step, max_step,
                    eta_min):
    """The optimizer's lr after train.py's annealing for update `train_step`,
    `current` being the lr that update used."""
    if scheduler in ("cosine", "constant", "dev_perf"):
        if train_step < warmup_step:
            return lr * train_step / warmup_step
        if scheduler == "cosine":
            # CosineAnnealingLR(T_max = max_step, eta_min).step(train_step)
            return eta_min + (lr - eta_min) * \
                (1 + math.cos(math.pi * train_step / max_step)) / 2
        return current
    assert scheduler == "inv_sqrt"
    return lr * lr_lambda(train_step, warmup_step)
