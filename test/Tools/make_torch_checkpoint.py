#!/usr/bin/env python3
"""Test fixture for txl-convert: writes files in the formats torch.save produces,
without PyTorch.

The pickle is what torch.save emits (torch/serialization.py `_save` and
`_legacy_save`, pickle protocol 2): tensors are
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
OrderedDict())` with the storage as a persistent id; parameters are
`torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict())` (or,
PyTorch 0.4, `torch.nn.parameter.Parameter(tensor, requires_grad)`); a module
is pickled by reference to its class (NEWOBJ) with its `__dict__` as the BUILD
state (`_parameters`, `_buffers`, `_modules` OrderedDicts and its attributes);
an object pickled twice (a tied Parameter) is a memo reference, so tied
parameters share one storage. Zip format: `archive/data.pkl`,
`archive/byteorder`, `archive/data/<key>`, `archive/version`; persistent id
`('storage', torch.<T>Storage, key, 'cpu', numel)`. Legacy format: pickled
magic number, protocol version and sys info, the object pickle (persistent ids
`('storage', type, key, 'cpu', numel, None)` and, for nn.Module subclasses,
`('module', class, source_file, source)` on first use), the sorted storage
keys, then each storage as an int64 element count and its little-endian bytes.

  make_torch_checkpoint.py random OUTDIR
      small random models in every supported layout, each with
      <file>.expected.safetensors: the official state_dict as float32, every
      name (tied ones included).
  make_torch_checkpoint.py from-safetensors WEIGHTS MODEL_TOML OUT [--format F] [--layout L] [--hf-config C]
      the whole-module MemTransformerLM pickle of an official state_dict
      (--layout hf: the Hugging Face TransfoXLLMHeadModel state_dict instead;
      hf-untie-r: the same with untie_r, each layer holding a copy of the biases;
      --hf-config PATH also writes the model's config.json).
  make_torch_checkpoint.py malicious OUT [--format F] --marker PATH
      a pickle calling os.system (legacy) or builtins.eval (zip) that would
      create PATH if executed.
  make_torch_checkpoint.py load-unsafe FILE
      unpickles FILE with the plain pickle module (the control showing that a
      malicious file does run its code when it is not read safely).
"""

import argparse
import collections
import io
import json
import pickle
import random
import struct
import sys
import tomllib
import zipfile

import numpy as np

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001

STORAGE_NAMES = {"float32": "FloatStorage", "float16": "HalfStorage",
                 "bfloat16": "BFloat16Storage", "float64": "DoubleStorage",
                 "int64": "LongStorage"}


# --------------------------------------------------------------------------
# Objects to pickle.
# --------------------------------------------------------------------------

class Global:
    """A module-level name pickled by reference (GLOBAL opcode)."""
    _cache = {}

    def __new__(cls, module, name, source=None):
        key = (module, name)
        if key not in cls._cache:
            obj = super().__new__(cls)
            obj.module, obj.name = module, name
            # nn.Module subclasses get a ('module', ...) persistent id in the
            # legacy format; torch saves their source file and text.
            obj.is_module = source is not None
            obj.source = source
            cls._cache[key] = obj
        return cls._cache[key]

    def __call__(self, *args):  # pickle's save_reduce wants a callable
        raise TypeError("stand-in")


class Storage:
    def __init__(self, flat, dtype):
        self.dtype = dtype
        if dtype == "bfloat16":
            bits = np.ascontiguousarray(flat, dtype="<f4").view("<u4")
            self.data = (bits >> 16).astype("<u2").tobytes()
        else:
            self.data = np.ascontiguousarray(flat, dtype="<" + np.dtype(dtype).str[1:]).tobytes()
        self.numel = int(np.asarray(flat).size)
        self.type = Global("torch", STORAGE_NAMES[dtype])


class Tensor:
    def __init__(self, storage, offset, shape, stride):
        self.storage, self.offset = storage, offset
        self.shape, self.stride = tuple(shape), tuple(stride)


def contiguous_stride(shape):
    stride, acc = [], 1
    for d in reversed(shape):
        stride.append(acc)
        acc *= d
    return tuple(reversed(stride))


def tensor(array, dtype="float32"):
    array = np.asarray(array)
    return Tensor(Storage(array.ravel(), dtype), 0, array.shape, contiguous_stride(array.shape))


class Parameter:
    def __init__(self, data, style="1.x"):
        self.data, self.style = data, style


class Reduce:
    """An object pickled as func(*args)."""

    def __init__(self, func, args):
        self.func, self.args = func, args


class Module:
    """An nn.Module instance: class reference plus its __dict__."""

    def __init__(self, cls, params=(), buffers=(), modules=(), attrs=None, style="1.x"):
        self.cls = cls
        self.params = collections.OrderedDict(params)
        self.buffers = collections.OrderedDict(buffers)
        self.modules = collections.OrderedDict(modules)
        self.attrs = attrs or {}
        self.style = style

    def state(self):
        OD = collections.OrderedDict
        if self.style == "1.0":   # torch 0.4 - 1.1 Module.__init__
            state = {"_backend": THNN_BACKEND, "_parameters": self.params,
                     "_buffers": self.buffers, "_backward_hooks": OD(),
                     "_forward_hooks": OD(), "_forward_pre_hooks": OD(),
                     "_state_dict_hooks": OD(), "_load_state_dict_pre_hooks": OD(),
                     "_modules": self.modules, "training": False}
        else:                     # torch 1.13 - 2.x
            state = {"training": False, "_parameters": self.params, "_buffers": self.buffers,
                     "_non_persistent_buffers_set": set(), "_backward_pre_hooks": OD(),
                     "_backward_hooks": OD(), "_is_full_backward_hook": None,
                     "_forward_hooks": OD(), "_forward_hooks_with_kwargs": OD(),
                     "_forward_hooks_always_called": OD(), "_forward_pre_hooks": OD(),
                     "_forward_pre_hooks_with_kwargs": OD(), "_state_dict_hooks": OD(),
                     "_state_dict_pre_hooks": OD(), "_load_state_dict_pre_hooks": OD(),
                     "_load_state_dict_post_hooks": OD(), "_modules": self.modules}
        state.update(self.attrs)
        return state


THNN_BACKEND = Reduce(Global("torch.nn.backends.thnn", "_get_thnn_function_backend"), ())


# --------------------------------------------------------------------------
# The pickler: protocol 2, the opcodes CPython's pickler writes for these
# objects when torch's own classes are pickled.
# --------------------------------------------------------------------------

class TorchPickler(pickle._Pickler):
    def __init__(self, file, legacy):
        super().__init__(file, protocol=2)
        self.legacy = legacy
        self.storages = collections.OrderedDict()   # key -> Storage
        self._keys = {}
        self._modules_seen = set()
        self._rng = random.Random(1234)

    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            key = self._keys.get(id(obj))
            if key is None:
                if self.legacy:   # str(storage._cdata): an address
                    key = str(self._rng.randrange(10 ** 13, 10 ** 14))
                else:             # _save: str(len(id_map))
                    key = str(len(self._keys))
                self._keys[id(obj)] = key
                self.storages[key] = obj
            if self.legacy:
                return ("storage", obj.type, key, "cpu", obj.numel, None)
            return ("storage", obj.type, key, "cpu", obj.numel)
        if self.legacy and isinstance(obj, Global) and obj.is_module \
                and obj not in self._modules_seen:
            self._modules_seen.add(obj)
            return ("module", obj, obj.module.replace(".", "/") + ".py", obj.source)
        return None

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, Global):
            pid = self.persistent_id(obj) if save_persistent_id else None
            if pid is not None:
                self.save_pers(pid)
                return
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
            self.memoize(obj)
            return
        if isinstance(obj, (Tensor, Parameter, Reduce, Module)):
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            if isinstance(obj, Tensor):
                args = (obj.storage, obj.offset, obj.shape, obj.stride, False,
                        collections.OrderedDict())
                self.save_reduce(Global("torch._utils", "_rebuild_tensor_v2"), args, obj=obj)
            elif isinstance(obj, Parameter):
                if obj.style == "0.4":
                    self.save_reduce(Global("torch.nn.parameter", "Parameter"),
                                     (obj.data, True), obj=obj)
                else:
                    self.save_reduce(Global("torch._utils", "_rebuild_parameter"),
                                     (obj.data, True, collections.OrderedDict()), obj=obj)
            elif isinstance(obj, Reduce):
                self.save_reduce(obj.func, obj.args, obj=obj)
            else:   # object.__reduce_ex__(2): copyreg.__newobj__ -> NEWOBJ, BUILD
                self.save(obj.cls)
                self.save(())
                self.write(pickle.NEWOBJ)
                self.memoize(obj)
                self.save(obj.state())
                self.write(pickle.BUILD)
            return
        super().save(obj, save_persistent_id)


def dumps(obj, legacy):
    buf = io.BytesIO()
    pickler = TorchPickler(buf, legacy)
    pickler.dump(obj)
    return buf.getvalue(), pickler.storages


def save(obj, path, fmt):
    data, storages = dumps(obj, legacy=(fmt == "legacy"))
    write_container(path, fmt, data, storages)


def write_container(path, fmt, data, storages):
    if fmt == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
            z.writestr("archive/data.pkl", data)
            z.writestr("archive/byteorder", "little")
            for key, storage in storages.items():
                z.writestr(f"archive/data/{key}", storage.data)
            z.writestr("archive/version", "3\n")
        return
    sys_info = dict(protocol_version=PROTOCOL_VERSION, little_endian=True,
                    type_sizes=dict(short=2, int=4, long=8))
    with open(path, "wb") as f:
        pickle.dump(MAGIC_NUMBER, f, protocol=2)
        pickle.dump(PROTOCOL_VERSION, f, protocol=2)
        pickle.dump(sys_info, f, protocol=2)
        f.write(data)
        keys = sorted(storages.keys())
        pickle.dump(keys, f, protocol=2)
        for key in keys:
            f.write(struct.pack("<q", storages[key].numel))
            f.write(storages[key].data)


# --------------------------------------------------------------------------
# safetensors (expected values).
# --------------------------------------------------------------------------

def write_safetensors(path, arrays):
    header, offset, blobs = {}, 0, []
    for name, array in arrays.items():
        blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(array)),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    head = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = collections.OrderedDict()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(blob[8 + n + begin:8 + n + end], dtype="<f4").reshape(
            info["shape"])
    return out


# --------------------------------------------------------------------------
# Models.
# --------------------------------------------------------------------------

NN = "torch.nn.modules."
SRC = "class {}(nn.Module):\n    pass\n"


def nn(module, name):
    return Global(NN + module, name, SRC.format(name))


def official(module, name):
    return Global(module, name, SRC.format(name))


def random_state_dict(cfg, seed, bf16_exact=False):
    """An official MemTransformerLM.state_dict() (attn_type 0) with random
    values; tied names hold the same array object as their embedding."""
    rng = np.random.default_rng(seed)

    def rand(*shape):
        return rng.normal(0.0, 0.2, size=shape).astype(np.float32)

    n_token, d_model, d_embed, div = cfg["n_token"], cfg["d_model"], cfg["d_embed"], cfg["div_val"]
    ends = [0] + cfg["cutoffs"] + [n_token]
    clusters = len(ends) - 1
    sliced = div == 1
    hd = cfg["n_head"] * cfg["d_head"]
    sd = collections.OrderedDict()
    sd["r_w_bias"] = rand(cfg["n_head"], cfg["d_head"])
    sd["r_r_bias"] = rand(cfg["n_head"], cfg["d_head"])
    for i in range(1 if sliced else clusters):
        rows = n_token if sliced else ends[i + 1] - ends[i]
        sd[f"word_emb.emb_layers.{i}.weight"] = rand(rows, d_embed // div ** i)
    if not sliced or d_embed != d_model:
        for i in range(1 if sliced else clusters):
            sd[f"word_emb.emb_projs.{i}"] = rand(d_model, d_embed // div ** i)
    for l in range(cfg["n_layer"]):
        p = f"layers.{l}."
        sd[p + "dec_attn.qkv_net.weight"] = rand(3 * hd, d_model)
        sd[p + "dec_attn.o_net.weight"] = rand(d_model, hd)
        sd[p + "dec_attn.layer_norm.weight"] = 1 + rand(d_model)
        sd[p + "dec_attn.layer_norm.bias"] = rand(d_model)
        sd[p + "dec_attn.r_net.weight"] = rand(hd, d_model)
        sd[p + "pos_ff.CoreNet.0.weight"] = rand(cfg["d_inner"], d_model)
        sd[p + "pos_ff.CoreNet.0.bias"] = rand(cfg["d_inner"])
        sd[p + "pos_ff.CoreNet.3.weight"] = rand(d_model, cfg["d_inner"])
        sd[p + "pos_ff.CoreNet.3.bias"] = rand(d_model)
        sd[p + "pos_ff.layer_norm.weight"] = 1 + rand(d_model)
        sd[p + "pos_ff.layer_norm.bias"] = rand(d_model)
    if clusters > 1:
        sd["crit.cluster_weight"] = rand(clusters - 1, d_embed)
        sd["crit.cluster_bias"] = rand(clusters - 1)
    for i in range(1 if sliced else clusters):
        rows = n_token if sliced else ends[i + 1] - ends[i]
        sd[f"crit.out_layers.{i}.weight"] = (sd[f"word_emb.emb_layers.{i}.weight"]
                                             if cfg["tie_weight"] else rand(rows, d_embed // div ** i))
        sd[f"crit.out_layers.{i}.bias"] = rand(rows)
    if not sliced or d_embed != d_model:
        for i in range(clusters):
            if cfg["tie_projs"][i]:
                sd[f"crit.out_projs.{i}"] = sd[f"word_emb.emb_projs.{0 if sliced else i}"]
            else:
                sd[f"crit.out_projs.{i}"] = rand(d_model, d_embed // div ** (0 if sliced else i))
    # PositionalEmbedding: 1 / (10000 ** (arange(0, d, 2) / d)) in float32.
    sd["pos_emb.inv_freq"] = (1 / (10000 ** (np.arange(0.0, d_model, 2.0, dtype=np.float32)
                                             / np.float32(d_model)))).astype(np.float32)
    if bf16_exact:   # values a bfloat16 holds exactly (in place: ties stay one array)
        for array in {id(a): a for a in sd.values()}.values():
            array.view(np.uint32)[...] &= 0xFFFF0000
    return sd


def official_module(sd, cfg, style="1.x", dtype="float32", param_style="1.x", drop=()):
    """MemTransformerLM as train.py builds it, holding the arrays of `sd`;
    arrays that are the same object become one shared Parameter."""
    params = {}

    def P(name):
        if name in drop:   # registered as None: absent from the state_dict
            return None
        key = id(sd[name])
        if key not in params:
            params[key] = Parameter(tensor(sd[name], dtype), param_style)
        return params[key]

    def M(cls, params=(), buffers=(), modules=(), attrs=None):
        return Module(cls, params, buffers, modules, attrs, style)

    n_token, d_model, d_embed, div = cfg["n_token"], cfg["d_model"], cfg["d_embed"], cfg["div_val"]
    cutoffs = cfg["cutoffs"] + [n_token]
    clusters = len(cutoffs)
    sliced = div == 1

    def linear(prefix, bias=True):
        w = sd[prefix + ".weight"]
        return M(nn("linear", "Linear"),
                 [("weight", P(prefix + ".weight")),
                  ("bias", P(prefix + ".bias") if bias else None)],
                 attrs={"in_features": w.shape[1], "out_features": w.shape[0]})

    def layer_norm(prefix):
        return M(nn("normalization", "LayerNorm"),
                 [("weight", P(prefix + ".weight")), ("bias", P(prefix + ".bias"))],
                 attrs={"normalized_shape": (d_model,), "eps": 1e-5,
                        "elementwise_affine": True})

    def dropout(p):
        return M(nn("dropout", "Dropout"), attrs={"p": p, "inplace": False})

    emb_layers = M(nn("container", "ModuleList"), modules=[
        (str(i), M(nn("sparse", "Embedding"),
                   [("weight", P(f"word_emb.emb_layers.{i}.weight"))],
                   attrs={"num_embeddings": sd[f"word_emb.emb_layers.{i}.weight"].shape[0],
                          "embedding_dim": sd[f"word_emb.emb_layers.{i}.weight"].shape[1],
                          "padding_idx": None, "max_norm": None, "norm_type": 2.0,
                          "scale_grad_by_freq": False, "sparse": False}))
        for i in range(1 if sliced else clusters)])
    emb_projs = M(nn("container", "ParameterList"), [
        (str(i), P(f"word_emb.emb_projs.{i}"))
        for i in range(1 if sliced else clusters) if f"word_emb.emb_projs.{i}" in sd])
    word_emb = M(official("mem_transformer", "AdaptiveEmbedding"),
                 modules=[("emb_layers", emb_layers), ("emb_projs", emb_projs)],
                 attrs={"n_token": n_token, "d_embed": d_embed, "cutoffs": cutoffs,
                        "div_val": div, "d_proj": d_model, "emb_scale": d_model ** 0.5,
                        "cutoff_ends": [0] + cutoffs})

    layers = []
    for l in range(cfg["n_layer"]):
        p = f"layers.{l}."
        attn = M(official("mem_transformer", "RelPartialLearnableMultiHeadAttn"), modules=[
            ("qkv_net", linear(p + "dec_attn.qkv_net", bias=False)),
            ("drop", dropout(cfg["dropout"])), ("dropatt", dropout(cfg["dropatt"])),
            ("o_net", linear(p + "dec_attn.o_net", bias=False)),
            ("layer_norm", layer_norm(p + "dec_attn.layer_norm")),
            ("r_net", linear(p + "dec_attn.r_net", bias=False))],
            attrs={"n_head": cfg["n_head"], "d_model": d_model, "d_head": cfg["d_head"],
                   "dropout": cfg["dropout"], "scale": 1 / cfg["d_head"] ** 0.5,
                   "pre_lnorm": cfg["pre_lnorm"]})
        core = M(nn("container", "Sequential"), modules=[
            ("0", linear(p + "pos_ff.CoreNet.0")),
            ("1", M(nn("activation", "ReLU"), attrs={"inplace": True})),
            ("2", dropout(cfg["dropout"])),
            ("3", linear(p + "pos_ff.CoreNet.3")),
            ("4", dropout(cfg["dropout"]))])
        ff = M(official("mem_transformer", "PositionwiseFF"),
               modules=[("CoreNet", core), ("layer_norm", layer_norm(p + "pos_ff.layer_norm"))],
               attrs={"d_model": d_model, "d_inner": cfg["d_inner"], "dropout": cfg["dropout"],
                      "pre_lnorm": cfg["pre_lnorm"]})
        layers.append((str(l), M(official("mem_transformer", "RelPartialLearnableDecoderLayer"),
                                 modules=[("dec_attn", attn), ("pos_ff", ff)])))

    crit_params = []
    if clusters > 1:
        crit_params = [("cluster_weight", P("crit.cluster_weight")),
                       ("cluster_bias", P("crit.cluster_bias"))]
    out_layers = M(nn("container", "ModuleList"), modules=[
        (str(i), linear(f"crit.out_layers.{i}")) for i in range(1 if sliced else clusters)])
    # div_val = 1 and d_proj == d_embed: out_projs.append(None).
    out_projs = M(nn("container", "ParameterList"), [
        (str(i), P(f"crit.out_projs.{i}") if f"crit.out_projs.{i}" in sd else None)
        for i in range(clusters)])
    crit = M(official("proj_adaptive_softmax", "ProjectedAdaptiveLogSoftmax"), crit_params,
             modules=[("out_layers", out_layers), ("out_projs", out_projs)],
             attrs={"n_token": n_token, "d_embed": d_embed, "d_proj": d_model,
                    "cutoffs": cutoffs, "cutoff_ends": [0] + cutoffs, "div_val": div,
                    "shortlist_size": cutoffs[0], "n_clusters": clusters - 1,
                    "head_size": cutoffs[0] + clusters - 1, "keep_order": False})
    pos_emb = M(official("mem_transformer", "PositionalEmbedding"),
                buffers=[("inv_freq", tensor(sd["pos_emb.inv_freq"], dtype))],
                attrs={"demb": d_model})
    return M(official("mem_transformer", "MemTransformerLM"),
             [("r_w_bias", P("r_w_bias")), ("r_r_bias", P("r_r_bias"))],
             modules=[("word_emb", word_emb), ("drop", dropout(cfg["dropout"])),
                      ("layers", M(nn("container", "ModuleList"), modules=layers)),
                      ("crit", crit), ("pos_emb", pos_emb)],
             attrs={"n_token": n_token, "d_embed": d_embed, "d_model": d_model,
                    "n_head": cfg["n_head"], "d_head": cfg["d_head"], "n_layer": cfg["n_layer"],
                    "tgt_len": cfg["tgt_len"], "mem_len": cfg["mem_len"],
                    "ext_len": cfg["ext_len"],
                    "max_klen": cfg["tgt_len"] + cfg["ext_len"] + cfg["mem_len"],
                    "attn_type": 0, "sample_softmax": -1, "same_length": cfg["same_length"],
                    "clamp_len": cfg["clamp_len"]})


def hf_state_dict(sd, cfg, untie_r, dtype="float32", omit_tied=False, seed=7,
                  copy_shared_r=False):
    """TransfoXLLMHeadModel.state_dict() of the same model, as torch.save writes
    it (an OrderedDict with _metadata). Tied output layers: crit.out_projs.i is
    the embedding projection's tensor (shared storage), crit.out_layers.i.weight
    an equal copy; `omit_tied` leaves both out (save_pretrained's
    _tied_weights_keys). untie_r: per-layer r_w_bias / r_r_bias, random or
    (`copy_shared_r`) copies of the model-level ones."""
    rng = np.random.default_rng(seed)
    out = collections.OrderedDict()
    tensors = {}

    def T(name, copy=False):
        key = id(sd[name])
        if copy or key not in tensors:
            t = tensor(sd[name], dtype)
            if copy:
                return t
            tensors[key] = t
        base = tensors[key]   # state_dict(): a new tensor object on the same storage
        return Tensor(base.storage, base.offset, base.shape, base.stride)

    per_layer = {}
    expected = collections.OrderedDict()
    if untie_r:
        for l in range(cfg["n_layer"]):
            for b in ("r_r_bias", "r_w_bias"):
                a = (sd[b].copy() if copy_shared_r
                     else rng.normal(0, 0.2, size=sd[b].shape).astype(np.float32))
                if dtype == "bfloat16":
                    a.view(np.uint32)[...] &= 0xFFFF0000
                per_layer[(l, b)] = a
    else:
        out["transformer.r_w_bias"] = T("r_w_bias")
        out["transformer.r_r_bias"] = T("r_r_bias")
    for name in sd:
        if name.startswith("crit.") or name in ("r_w_bias", "r_r_bias"):
            continue
        m = name.startswith("layers.") and name.split(".")
        if m and name.endswith("dec_attn.qkv_net.weight"):
            l = int(m[1])
            for b in ("r_r_bias", "r_w_bias"):
                key = f"transformer.layers.{l}.dec_attn.{b}"
                if untie_r:
                    out[key] = tensor(per_layer[(l, b)], dtype)
                else:   # the shared Parameter, registered in every layer too
                    out[key] = T(b)
        out["transformer." + name] = T(name)
    for name in sd:
        if not name.startswith("crit."):
            continue
        tied = any(sd[name] is sd[e] for e in sd if e.startswith("word_emb."))
        if tied and omit_tied:
            continue
        if name in ("crit.cluster_weight", "crit.cluster_bias"):
            # Hugging Face's order of the tail clusters' head columns: first
            # to last (the official code reads them last to first).
            out[name] = tensor(sd[name][::-1].copy(), dtype)
            continue
        out[name] = T(name, copy=name.startswith("crit.out_layers."))
    for name, array in sd.items():
        if untie_r and name in ("r_w_bias", "r_r_bias"):
            continue
        expected[name] = array
    if untie_r:
        for (l, b), array in per_layer.items():
            expected[f"layers.{l}.dec_attn.{b}"] = array
    meta = collections.OrderedDict([("", {"version": 1}), ("transformer", {"version": 1}),
                                    ("crit", {"version": 1})])
    out._metadata = meta
    return out, expected


def as_dtype(sd, dtype):
    """The values a checkpoint stored in `dtype` holds, as float32."""
    if dtype == "float16":
        return collections.OrderedDict((n, a.astype(np.float16).astype(np.float32))
                                       for n, a in sd.items())
    return sd


def cmd_random(args):
    out = args.outdir.rstrip("/") + "/"
    cfg = {"n_token": 100, "cutoffs": [20, 50], "div_val": 2, "d_model": 16, "d_embed": 16,
           "n_head": 2, "d_head": 8, "d_inner": 32, "n_layer": 2, "tie_weight": True,
           "tie_projs": [False, True, True], "pre_lnorm": True, "same_length": True,
           "clamp_len": 20, "tgt_len": 8, "mem_len": 12, "ext_len": 0, "dropout": 0.1,
           "dropatt": 0.05}
    sd = random_state_dict(cfg, seed=1, bf16_exact=True)

    # train.py's model.pt: PyTorch >= 1.6 (zip) and PyTorch 1.0 (legacy).
    save(official_module(sd, cfg), out + "module.zip.pt", "zip")
    save(official_module(sd, cfg, style="1.0"), out + "module.legacy.pt", "legacy")
    write_safetensors(out + "module.expected.safetensors", sd)
    # train.py --fp16 (model.half()) under PyTorch 0.4: Parameter(tensor, True).
    save(official_module(sd, cfg, style="1.0", dtype="float16", param_style="0.4"),
         out + "module-half.legacy.pt", "legacy")
    write_safetensors(out + "module-half.expected.safetensors", as_dtype(sd, "float16"))
    # A tensor missing.
    save(official_module(sd, cfg, drop=["layers.1.pos_ff.layer_norm.bias"]),
         out + "module-missing.zip.pt", "zip")

    # div_val = 1, d_embed != d_model: every tied crit.out_projs.i is emb_projs.0;
    # the cutoffs come from the module's attributes.
    cfg1 = dict(cfg, n_token=60, cutoffs=[20, 40], div_val=1, d_embed=8, pre_lnorm=False,
                same_length=False, clamp_len=-1, tie_projs=[False, True, True])
    sd1 = random_state_dict(cfg1, seed=2)
    save(official_module(sd1, cfg1), out + "div1.zip.pt", "zip")
    write_safetensors(out + "div1.expected.safetensors", sd1)
    # ... and not tied at all.
    cfg2 = dict(cfg1, tie_weight=False, tie_projs=[False, False, False])
    sd2 = random_state_dict(cfg2, seed=3)
    save(official_module(sd2, cfg2), out + "untied.legacy.pt", "legacy")
    write_safetensors(out + "untied.expected.safetensors", sd2)

    # Hugging Face pytorch_model.bin: untie_r (per-layer biases), legacy format.
    hf, expected = hf_state_dict(sd, cfg, untie_r=True)
    save(hf, out + "hf.legacy.bin", "legacy")
    write_safetensors(out + "hf.expected.safetensors", expected)
    # ... zip format, bfloat16, tied output layers left out (save_pretrained).
    hf, expected = hf_state_dict(sd, cfg, untie_r=True, dtype="bfloat16", omit_tied=True)
    save(hf, out + "hf-bf16.zip.bin", "zip")
    write_safetensors(out + "hf-bf16.expected.safetensors", expected)
    # ... untie_r = false: model-level biases, shared by every layer's dec_attn.
    hf, expected = hf_state_dict(sd, cfg, untie_r=False)
    save(hf, out + "hf-tiedr.zip.bin", "zip")
    write_safetensors(out + "hf-tiedr.expected.safetensors", expected)


def cmd_from_safetensors(args):
    sd = read_safetensors(args.weights)
    with open(args.model_toml, "rb") as f:
        toml = tomllib.load(f)
    m, s = toml["model"], toml.get("segment", {})
    cfg = {"n_token": m["n_token"], "cutoffs": list(m.get("cutoffs", [])),
           "div_val": m.get("div_val", 1), "d_model": m["d_model"],
           "d_embed": m["d_model"] if m.get("d_embed", -1) < 0 else m["d_embed"],
           "n_head": m["n_head"], "d_head": m["d_head"], "d_inner": m["d_inner"],
           "n_layer": m["n_layer"], "tie_weight": m.get("tie_weight", True),
           "tie_projs": m.get("tie_projs", [False]), "pre_lnorm": m.get("pre_lnorm", False),
           "same_length": m.get("same_length", False), "clamp_len": m.get("clamp_len", -1),
           "tgt_len": s.get("tgt_len", 70), "mem_len": s.get("mem_len", 0),
           "ext_len": s.get("ext_len", 0), "dropout": m.get("dropout", 0.0),
           "dropatt": m.get("dropatt", 0.0)}
    # The file lists tied tensors under every name: make them one array again.
    for name in list(sd):
        if name.startswith("crit.out_layers.") and name.endswith(".weight") and cfg["tie_weight"]:
            emb = name.replace("crit.out_layers.", "word_emb.emb_layers.")
            assert np.array_equal(sd[name], sd[emb]), name
            sd[name] = sd[emb]
        elif name.startswith("crit.out_projs."):
            i = int(name.rsplit(".", 1)[1])
            if cfg["tie_projs"][i]:
                emb = f"word_emb.emb_projs.{0 if cfg['div_val'] == 1 else i}"
                assert np.array_equal(sd[name], sd[emb]), name
                sd[name] = sd[emb]
    if args.hf_config:   # the Hugging Face config.json of the model
        config = {"vocab_size": cfg["n_token"], "cutoffs": cfg["cutoffs"],
                  "d_model": cfg["d_model"], "d_embed": cfg["d_embed"], "n_head": cfg["n_head"],
                  "d_head": cfg["d_head"], "d_inner": cfg["d_inner"], "div_val": cfg["div_val"],
                  "pre_lnorm": cfg["pre_lnorm"], "n_layer": cfg["n_layer"],
                  "tgt_len": cfg["tgt_len"], "ext_len": cfg["ext_len"],
                  "mem_len": cfg["mem_len"], "clamp_len": cfg["clamp_len"],
                  "same_length": cfg["same_length"], "attn_type": 0, "sample_softmax": -1,
                  "adaptive": True, "dropout": cfg["dropout"], "dropatt": cfg["dropatt"],
                  "untie_r": args.layout == "hf-untie-r", "model_type": "transfo-xl"}
        with open(args.hf_config, "w") as f:
            json.dump(config, f, indent=2)
    if args.layout == "hf":   # TransfoXLLMHeadModel state_dict, untie_r = false
        save(hf_state_dict(sd, cfg, untie_r=False)[0], args.out, args.format)
        return
    if args.layout == "hf-untie-r":   # untie_r = true, every layer a copy of the biases
        save(hf_state_dict(sd, cfg, untie_r=True, copy_shared_r=True)[0], args.out, args.format)
        return
    save(official_module(sd, cfg, style="1.0" if args.format == "legacy" else "1.x"),
         args.out, args.format)


def cmd_malicious(args):
    # What an attacker would write: a global resolving to a function that runs
    # a command, called by REDUCE while unpickling.
    if args.format == "legacy":
        call = (pickle.GLOBAL + b"os\nsystem\n" + pickle.BINUNICODE +
                struct.pack("<I", len(f"touch {args.marker}")) + f"touch {args.marker}".encode())
    else:
        code = f"open({args.marker!r}, 'w').close()"
        call = (pickle.GLOBAL + b"__builtin__\neval\n" + pickle.BINUNICODE +
                struct.pack("<I", len(code)) + code.encode())
    data = pickle.PROTO + b"\x02" + call + pickle.TUPLE1 + pickle.REDUCE + pickle.STOP
    write_container(args.out, args.format, data, {})


def cmd_load_unsafe(args):
    """Positive control for the malicious files: plain pickle runs their code."""
    if zipfile.is_zipfile(args.file):
        with zipfile.ZipFile(args.file) as z:
            pickle.loads(z.read("archive/data.pkl"))
        return
    with open(args.file, "rb") as f:
        for _ in range(3):
            pickle.load(f)
        pickle.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("random")
    p.add_argument("outdir")
    p = sub.add_parser("from-safetensors")
    p.add_argument("weights")
    p.add_argument("model_toml")
    p.add_argument("out")
    p.add_argument("--format", choices=["legacy", "zip"], default="legacy")
    p.add_argument("--layout", choices=["module", "hf", "hf-untie-r"], default="module")
    p.add_argument("--hf-config", help="also write the model's Hugging Face config.json here")
    p = sub.add_parser("malicious")
    p.add_argument("out")
    p.add_argument("--format", choices=["legacy", "zip"], default="legacy")
    p.add_argument("--marker", required=True)
    p = sub.add_parser("load-unsafe")
    p.add_argument("file")
    args = parser.parse_args()
    {"random": cmd_random, "from-safetensors": cmd_from_safetensors,
     "malicious": cmd_malicious, "load-unsafe": cmd_load_unsafe}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
