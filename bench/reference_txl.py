"""A PyTorch eager reference of Transformer-XL (attn_type 0) for benchmarking.

Written for this benchmark following the formulation of the official
kimiyoung/transformer-xl `pytorch/mem_transformer.py` (`MemTransformerLM`
with `RelPartialLearnableDecoderLayer`), restricted to what txlc's reference
cases and the benchmark models use:

- attn_type 0 (relative positional encoding with the u / v biases
  `r_w_bias`, `r_r_bias`), pre_lnorm or post-LN, same_length, clamp_len;
- AdaptiveEmbedding and ProjectedAdaptiveLogSoftmax without cutoffs
  (div_val 1, one cluster; an optional d_embed != d_model projection);
- dropout at the official positions (word and position embedding, attention
  output, inside the feed-forward, final hidden); no dropatt. In eval mode
  (what the evaluation benchmarks use) it is the identity; bench_train.py
  times train-mode steps.

The computation is deliberately the official one, op for op: `torch.einsum`
for the attention scores, the official `_rel_shift` (zero pad + view + slice),
the `dec_attn_mask` built with triu/tril, masked_fill + softmax over the key
axis, and `_update_mems` for the memory.  Submodule and parameter names are
the official `state_dict` names, so the safetensors checkpoints of this
project load with `load_state_dict`.
"""

import math
import tomllib

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEmbedding(nn.Module):
    def __init__(self, demb):
        super().__init__()
        self.demb = demb
        inv_freq = 1 / (10000 ** (torch.arange(0.0, demb, 2.0) / demb))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, pos_seq):
        sinusoid = torch.outer(pos_seq, self.inv_freq)
        # [klen, 1, d_model]: broadcast over the batch.
        return torch.cat([sinusoid.sin(), sinusoid.cos()], dim=-1)[:, None, :]


class PositionwiseFF(nn.Module):
    def __init__(self, d_model, d_inner, pre_lnorm, dropout=0.0):
        super().__init__()
        # The official nn.Sequential (Linear, ReLU, Dropout, Linear, Dropout).
        self.CoreNet = nn.Sequential(
            nn.Linear(d_model, d_inner), nn.ReLU(inplace=True),
            nn.Dropout(dropout), nn.Linear(d_inner, d_model),
            nn.Dropout(dropout))
        self.layer_norm = nn.LayerNorm(d_model)
        self.pre_lnorm = pre_lnorm

    def forward(self, inp):
        if self.pre_lnorm:
            return self.CoreNet(self.layer_norm(inp)) + inp
        return self.layer_norm(inp + self.CoreNet(inp))


class RelPartialLearnableMultiHeadAttn(nn.Module):
    def __init__(self, n_head, d_model, d_head, pre_lnorm, dropout=0.0):
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_head
        self.drop = nn.Dropout(dropout)
        self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
        self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
        self.r_net = nn.Linear(d_model, n_head * d_head, bias=False)
        self.layer_norm = nn.LayerNorm(d_model)
        self.scale = 1 / (d_head ** 0.5)
        self.pre_lnorm = pre_lnorm

    @staticmethod
    def _rel_shift(x):
        # x: [qlen, klen, bsz, n_head].  Official trick: prepend a zero column,
        # reinterpret [qlen, klen+1] as [klen+1, qlen], drop the first row and
        # reinterpret back, which shifts row i left by (qlen - 1 - i).
        zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]),
                               device=x.device, dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=1)
        x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
        return x_padded[1:].view_as(x)

    def forward(self, w, r, r_w_bias, r_r_bias, attn_mask, mems):
        qlen, rlen, bsz = w.size(0), r.size(0), w.size(1)
        cat = torch.cat([mems, w], 0) if mems is not None else w
        if self.pre_lnorm:
            w_heads = self.qkv_net(self.layer_norm(cat))
        else:
            w_heads = self.qkv_net(cat)
        r_head_k = self.r_net(r)

        w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
        w_head_q = w_head_q[-qlen:]
        klen = w_head_k.size(0)

        w_head_q = w_head_q.view(qlen, bsz, self.n_head, self.d_head)
        w_head_k = w_head_k.view(klen, bsz, self.n_head, self.d_head)
        w_head_v = w_head_v.view(klen, bsz, self.n_head, self.d_head)
        r_head_k = r_head_k.view(rlen, self.n_head, self.d_head)

        # Content term (a)+(c) and position term (b)+(d) of the paper.
        rw_head_q = w_head_q + r_w_bias
        AC = torch.einsum("ibnd,jbnd->ijbn", (rw_head_q, w_head_k))
        rr_head_q = w_head_q + r_r_bias
        BD = torch.einsum("ibnd,jnd->ijbn", (rr_head_q, r_head_k))
        BD = self._rel_shift(BD)

        attn_score = AC + BD  # [qlen, klen, bsz, n_head]
        attn_score.mul_(self.scale)
        if attn_mask is not None and attn_mask.any().item():
            attn_score = attn_score.float().masked_fill(
                attn_mask[:, :, :, None], -float("inf")).type_as(attn_score)
        attn_prob = F.softmax(attn_score, dim=1)

        attn_vec = torch.einsum("ijbn,jbnd->ibnd", (attn_prob, w_head_v))
        attn_vec = attn_vec.contiguous().view(
            qlen, bsz, self.n_head * self.d_head)
        attn_out = self.drop(self.o_net(attn_vec))
        if self.pre_lnorm:
            return w + attn_out
        return self.layer_norm(w + attn_out)


class RelPartialLearnableDecoderLayer(nn.Module):
    def __init__(self, n_head, d_model, d_head, d_inner, pre_lnorm,
                 dropout=0.0):
        super().__init__()
        self.dec_attn = RelPartialLearnableMultiHeadAttn(
            n_head, d_model, d_head, pre_lnorm, dropout)
        self.pos_ff = PositionwiseFF(d_model, d_inner, pre_lnorm, dropout)

    def forward(self, dec_inp, r, r_w_bias, r_r_bias, dec_attn_mask, mems):
        out = self.dec_attn(dec_inp, r, r_w_bias, r_r_bias,
                            attn_mask=dec_attn_mask, mems=mems)
        return self.pos_ff(out)


class AdaptiveEmbedding(nn.Module):
    """div_val 1, no cutoffs: one table, an optional d_embed -> d_model projection."""

    def __init__(self, n_token, d_embed, d_proj):
        super().__init__()
        self.d_embed, self.d_proj = d_embed, d_proj
        self.emb_scale = d_proj ** 0.5
        self.emb_layers = nn.ModuleList([nn.Embedding(n_token, d_embed)])
        self.emb_projs = nn.ParameterList()
        if d_proj != d_embed:
            self.emb_projs.append(nn.Parameter(torch.empty(d_proj, d_embed)))

    def forward(self, inp):
        embed = self.emb_layers[0](inp)
        if self.d_proj != self.d_embed:
            embed = F.linear(embed, self.emb_projs[0])
        return embed.mul_(self.emb_scale)


class ProjectedAdaptiveLogSoftmax(nn.Module):
    """No cutoffs (n_clusters 0): a full softmax, per-token NLL."""

    def __init__(self, n_token, d_embed, d_proj):
        super().__init__()
        self.d_embed, self.d_proj = d_embed, d_proj
        self.out_layers = nn.ModuleList([nn.Linear(d_embed, n_token)])
        self.out_projs = nn.ParameterList()
        if d_proj != d_embed:
            self.out_projs.append(nn.Parameter(torch.empty(d_proj, d_embed)))

    def forward(self, hidden, target):
        if self.d_proj != self.d_embed:
            hidden = F.linear(hidden, self.out_projs[0].t().contiguous())
        logit = F.linear(hidden, self.out_layers[0].weight,
                         self.out_layers[0].bias)
        return -F.log_softmax(logit, dim=-1).gather(
            1, target.unsqueeze(1)).squeeze(1)


class MemTransformerLM(nn.Module):
    def __init__(self, n_token, n_layer, n_head, d_model, d_head, d_inner,
                 d_embed=None, tie_weight=True, tie_projs=(False,),
                 pre_lnorm=False, tgt_len=None, ext_len=0, mem_len=0,
                 same_length=False, clamp_len=-1, dropout=0.0):
        super().__init__()
        d_embed = d_model if d_embed is None else d_embed
        self.n_token, self.d_model, self.d_embed = n_token, d_model, d_embed
        self.n_layer, self.n_head, self.d_head = n_layer, n_head, d_head
        self.word_emb = AdaptiveEmbedding(n_token, d_embed, d_model)
        self.layers = nn.ModuleList([
            RelPartialLearnableDecoderLayer(n_head, d_model, d_head, d_inner,
                                            pre_lnorm, dropout)
            for _ in range(n_layer)])
        self.crit = ProjectedAdaptiveLogSoftmax(n_token, d_embed, d_model)
        if tie_weight:
            self.crit.out_layers[0].weight = self.word_emb.emb_layers[0].weight
        if tie_projs and tie_projs[0] and d_model != d_embed:
            self.crit.out_projs[0] = self.word_emb.emb_projs[0]
        self.tgt_len, self.ext_len, self.mem_len = tgt_len, ext_len, mem_len
        self.same_length, self.clamp_len = same_length, clamp_len
        self.pos_emb = PositionalEmbedding(d_model)
        self.drop = nn.Dropout(dropout)
        self.r_w_bias = nn.Parameter(torch.empty(n_head, d_head))
        self.r_r_bias = nn.Parameter(torch.empty(n_head, d_head))

    # -- memory ---------------------------------------------------------------
    def init_mems(self):
        if self.mem_len <= 0:
            return None
        param = next(self.parameters())
        return [torch.empty(0, dtype=param.dtype, device=param.device)
                for _ in range(self.n_layer + 1)]

    def _update_mems(self, hids, mems, qlen, mlen):
        # NB: like the official code, the caller passes (mlen, qlen) into
        # (qlen, mlen); with ext_len = 0 the result is the same.
        if mems is None:
            return None
        assert len(hids) == len(mems)
        with torch.no_grad():
            end_idx = mlen + max(0, qlen - 0 - self.ext_len)
            beg_idx = max(0, end_idx - self.mem_len)
            return [torch.cat([m, h], dim=0)[beg_idx:end_idx].detach()
                    for m, h in zip(mems, hids)]

    # -- forward --------------------------------------------------------------
    def _forward(self, dec_inp, mems=None):
        qlen, bsz = dec_inp.size()
        word_emb = self.word_emb(dec_inp)
        mlen = mems[0].size(0) if mems is not None else 0
        klen = mlen + qlen
        if self.same_length:
            all_ones = word_emb.new_ones(qlen, klen)
            mask_len = klen - self.mem_len
            mask_shift_len = qlen - mask_len if mask_len > 0 else qlen
            dec_attn_mask = (torch.triu(all_ones, 1 + mlen)
                             + torch.tril(all_ones, -mask_shift_len)
                             ).bool()[:, :, None]
        else:
            dec_attn_mask = torch.triu(word_emb.new_ones(qlen, klen),
                                       diagonal=1 + mlen).bool()[:, :, None]

        pos_seq = torch.arange(klen - 1, -1, -1.0, device=word_emb.device,
                               dtype=word_emb.dtype)
        if self.clamp_len > 0:
            pos_seq.clamp_(max=self.clamp_len)
        pos_emb = self.drop(self.pos_emb(pos_seq))

        core_out = self.drop(word_emb)
        hids = [core_out]
        for i, layer in enumerate(self.layers):
            mems_i = None if mems is None else mems[i]
            core_out = layer(core_out, pos_emb, self.r_w_bias, self.r_r_bias,
                             dec_attn_mask=dec_attn_mask, mems=mems_i)
            hids.append(core_out)
        core_out = self.drop(core_out)
        new_mems = self._update_mems(hids, mems, mlen, qlen)
        return core_out, new_mems

    def forward(self, data, target, *mems):
        """Returns [per-token NLL [tgt_len, bsz]] + new memory (official API)."""
        if not mems:
            mems = self.init_mems()
        tgt_len = target.size(0)
        hidden, new_mems = self._forward(data, mems=mems)
        pred_hid = hidden[-tgt_len:]
        loss = self.crit(pred_hid.reshape(-1, pred_hid.size(-1)),
                         target.reshape(-1)).view(tgt_len, -1)
        return [loss] if new_mems is None else [loss] + new_mems


# -- loading ---------------------------------------------------------------------
def read_model_file(path):
    with open(path, "rb") as f:
        cfg = tomllib.load(f)
    m, seg = cfg["model"], cfg.get("segment", {})
    if m.get("attn_type", 0) != 0:
        raise ValueError("reference_txl supports attn_type 0 only")
    if m.get("cutoffs", []) or m.get("div_val", 1) != 1:
        raise ValueError("reference_txl supports div_val 1 without cutoffs only")
    return cfg, dict(
        n_token=m["n_token"], n_layer=m.get("n_layer", 12),
        n_head=m.get("n_head", 10), d_model=m.get("d_model", 500),
        d_head=m.get("d_head", 50), d_inner=m.get("d_inner", 1000),
        d_embed=m.get("d_embed", -1) if m.get("d_embed", -1) > 0 else None,
        tie_weight=m.get("tie_weight", True),
        tie_projs=tuple(m.get("tie_projs", [False])),
        pre_lnorm=m.get("pre_lnorm", False),
        tgt_len=seg.get("tgt_len", 70), ext_len=seg.get("ext_len", 0),
        mem_len=seg.get("mem_len", 0),
        same_length=m.get("same_length", False),
        clamp_len=m.get("clamp_len", -1), dropout=m.get("dropout", 0.0))


def load_model(model_toml, weights, **overrides):
    """Build the model from a model file and load a safetensors checkpoint."""
    from safetensors.torch import load_file

    _, kwargs = read_model_file(model_toml)
    kwargs.update(overrides)
    model = MemTransformerLM(**kwargs)
    state = load_file(weights)
    # A tied tensor may be stored under either name (txlc accepts both).
    for a, b in [("word_emb.emb_layers.0.weight", "crit.out_layers.0.weight"),
                 ("word_emb.emb_projs.0", "crit.out_projs.0")]:
        if a in state and b not in state:
            state[b] = state[a]
        elif b in state and a not in state:
            state[a] = state[b]
    expected = set(model.state_dict().keys())
    state = {k: v for k, v in state.items() if k in expected}
    model.load_state_dict(state, strict=True)
    model.eval()
    return model


def run_segments(model, data, target):
    """data/target: int64 [S, tgt_len, bsz]; memory carried from empty.
    Returns the per-token NLL [S, tgt_len, bsz] as a float32 tensor."""
    mems = tuple()
    out = []
    for s in range(data.shape[0]):
        ret = model(data[s], target[s], *mems)
        out.append(ret[0])
        mems = tuple(ret[1:])
    return torch.stack(out)


def param_bytes(model):
    """Bytes of the distinct parameters and buffers (tied tensors once)."""
    seen, total = set(), 0
    for t in list(model.parameters()) + list(model.buffers()):
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
    return total
