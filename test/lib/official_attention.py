"""The official Transformer-XL attention math in numpy, float64: the
_rel_shift (zero pad, reshape, slice), dec_attn_mask (causal with memory,
same_length) and the masked scores (AC + BD) of RelPartialLearnableMulti-
HeadAttn, the reference the attention kernels' harnesses compare with
(gpu/rel_attention_kernel.py, rel_attention_cpu.py), and its gradients
(gpu/rel_attention_grad_kernel.py, rel_attention_grad_cpu.py)."""

import numpy as np


def rel_shift(x):
    """The official _rel_shift of x [qlen, klen, ...]."""
    zero_pad = np.zeros((x.shape[0], 1) + x.shape[2:], x.dtype)
    x_padded = np.concatenate([zero_pad, x], axis=1)
    x_padded = x_padded.reshape((x.shape[1] + 1, x.shape[0]) + x.shape[2:])
    return x_padded[1:].reshape(x.shape)


def dec_attn_mask(qlen, klen, mem_len, same_length):
    """The official dec_attn_mask [qlen, klen]: True where hidden."""
    mlen = klen - qlen
    ones = np.ones((qlen, klen), bool)
    if same_length:
        mask_len = klen - mem_len
        shift = qlen - mask_len if mask_len > 0 else qlen
        return np.triu(ones, 1 + mlen) | np.tril(ones, -shift)
    return np.triu(ones, 1 + mlen)


def scores(q, k, r, u, vb, mem_len, same_length, scale):
    """The masked attention scores [qlen, klen, batch, n_head] (float64,
    -inf where dec_attn_mask hides the key) of q [qlen, batch, n_head,
    d_head], k [klen, batch, n_head, d_head], r (pos_key) [klen, n_head,
    d_head] and the biases u (r_w_bias), vb (r_r_bias) [n_head, d_head]."""
    qlen, klen = q.shape[0], k.shape[0]
    q, k, r = (x.astype(np.float64) for x in (q, k, r))
    ac = np.einsum("ibnd,jbnd->ijbn", q + u, k)
    bd = rel_shift(np.einsum("ibnd,jnd->ijbn", q + vb, r))
    score = (ac + bd) * scale
    score[dec_attn_mask(qlen, klen, mem_len, same_length)] = -np.inf
    return score


def probabilities(score):
    """The softmax over the keys (axis 1) of masked scores."""
    score = score - score.max(axis=1, keepdims=True)
    prob = np.exp(score)
    return prob / prob.sum(axis=1, keepdims=True)


def attention(q, k, v, r, u, vb, mem_len, same_length, scale):
    """The attention output [qlen, batch, n_head, d_head], float64."""
    prob = probabilities(scores(q, k, r, u, vb, mem_len, same_length, scale))
    return np.einsum("ijbn,jbnd->ibnd", prob, v.astype(np.float64))


def gradients(do, q, k, v, r, u, vb, mem_len, same_length, scale, mult=1.0):
    """The gradients of sum(out * do) with respect to q, k, v, r, u, vb
    (float64; dict keys dq, dk, dv, dr, du, dvb), the probabilities
    multiplied by `mult` [qlen, klen, batch, n_head] (dropatt's mask times
    1 / (1 - rate); 1.0 without dropatt)."""
    qlen, klen = q.shape[0], k.shape[0]
    do, q, k, v, r, u, vb = (x.astype(np.float64) for x in (do, q, k, v, r, u, vb))
    qu, qv = q + u, q + vb
    # m[i, j] = qlen - 1 - i + j: the r row of pair (i, j) (the official
    # rel-shift of a visible pair).
    m = qlen - 1 - np.arange(qlen)[:, None] + np.arange(klen)[None, :]
    hidden = dec_attn_mask(qlen, klen, mem_len, same_length)
    valid = ~hidden
    mc = np.clip(m, 0, klen - 1)
    ac = np.einsum("ibnd,jbnd->ijbn", qu, k)
    bd = np.einsum("ibnd,ijnd->ijbn", qv, r[mc])
    score = (ac + bd) * scale
    score[hidden] = -np.inf
    p = probabilities(score)
    dp = np.einsum("ibnd,jbnd->ijbn", do, v) * mult
    dv = np.einsum("ijbn,ibnd->jbnd", p * mult, do)
    ds = p * (dp - (p * dp).sum(axis=1, keepdims=True)) * scale
    ds[hidden] = 0.0
    dqu = np.einsum("ijbn,jbnd->ibnd", ds, k)
    dk = np.einsum("ijbn,ibnd->jbnd", ds, qu)
    dqv = np.einsum("ijbn,ijnd->ibnd", ds, r[mc])
    dr = np.zeros_like(r)
    for i in range(qlen):
        for j in np.nonzero(valid[i])[0]:
            dr[m[i, j]] += np.einsum("bn,bnd->nd", ds[i, j], qv[i])
    return {"dq": dqu + dqv, "dk": dk, "dv": dv, "dr": dr,
            "du": dqu.sum(axis=(0, 1)), "dvb": dqv.sum(axis=(0, 1))}
