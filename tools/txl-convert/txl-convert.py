#!/usr/bin/env python3
"""txl-convert: PyTorch Transformer-XL checkpoints -> float32 safetensors for txlc executables.

Reads, without PyTorch and without executing anything from the file:

  * the official training script's checkpoint (kimiyoung/transformer-xl
    pytorch/train.py: `torch.save(model, 'model.pt')`), a pickled
    `mem_transformer.MemTransformerLM` module object;
  * a `state_dict` saved with `torch.save`: official names, or the Hugging Face
    `TransfoXLLMHeadModel` layout of a `pytorch_model.bin` (`transformer.`
    prefix, `crit.*` softmax, per-layer `r_w_bias`/`r_r_bias` with untie_r);

in either PyTorch file format: the zip archive (PyTorch >= 1.6) or the legacy
stream (magic number, protocol version, sys info, object pickle, storage keys,
raw storages; PyTorch < 1.6).

Writes a safetensors file of F32 tensors named as in the official
`MemTransformerLM.state_dict()`; tied tensors (tie_weight, tie_projs) are
written once, under their `word_emb.*` name, unless --keep-tied is given.
Prints a summary with the hyper-parameters inferred from the tensor shapes and,
with --model-toml, writes a model file skeleton for txlc.

See docs/converter.md.
"""

import argparse
import collections
import io
import json
import mmap
import os
import pickle
import re
import struct
import sys
import zipfile
import zlib

import numpy as np

PROG = "txl-convert"

# torch/serialization.py
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001


class ConvertError(Exception):
    """A problem with the input, reported as `txl-convert: error: ...`."""


# ---------------------------------------------------------------------------
# Objects the restricted unpickler builds. Every one of them is inert: it has
# no behaviour beyond holding data, and refuses attribute assignment so that a
# pickle's BUILD opcode cannot change it.
# ---------------------------------------------------------------------------

class _Frozen:
    __slots__ = ()

    def __setattr__(self, key, value):
        raise pickle.UnpicklingError(
            f"refusing to set attribute '{key}' on {type(self).__name__}")

    def __delattr__(self, key):
        raise pickle.UnpicklingError(
            f"refusing to delete attribute '{key}' on {type(self).__name__}")

    def _init(self, **fields):
        for key, value in fields.items():
            object.__setattr__(self, key, value)


# Storage class name -> (dtype name, element size in bytes).
STORAGE_TYPES = {
    "FloatStorage": ("float32", 4),
    "DoubleStorage": ("float64", 8),
    "HalfStorage": ("float16", 2),
    "BFloat16Storage": ("bfloat16", 2),
    "LongStorage": ("int64", 8),
    "IntStorage": ("int32", 4),
    "ShortStorage": ("int16", 2),
    "CharStorage": ("int8", 1),
    "ByteStorage": ("uint8", 1),
    "BoolStorage": ("bool", 1),
    "UntypedStorage": ("uint8", 1),
}
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")


class StorageType(_Frozen):
    """`torch.FloatStorage` etc. as named in a persistent id."""
    __slots__ = ("name", "dtype", "itemsize")

    def __init__(self, name):
        dtype, itemsize = STORAGE_TYPES[name]
        self._init(name=name, dtype=dtype, itemsize=itemsize)


class StorageRef(_Frozen):
    """A storage of the file: its key, dtype and element count; `view` is
    (element offset, element count) into the root storage for legacy views."""
    __slots__ = ("key", "dtype", "itemsize", "numel", "view")

    def __init__(self, key, stype, numel, view=None):
        self._init(key=key, dtype=stype.dtype, itemsize=stype.itemsize,
                   numel=numel, view=view)


class TensorRef(_Frozen):
    """A strided view of a storage, as `_rebuild_tensor_v2` describes it."""
    __slots__ = ("storage", "offset", "size", "stride", "is_param")

    def __init__(self, storage, offset, size, stride, is_param=False):
        self._init(storage=storage, offset=offset, size=size, stride=stride,
                   is_param=is_param)

    def as_parameter(self):
        return TensorRef(self.storage, self.offset, self.size, self.stride, True)

    def identity(self):
        """Equal for two tensors that are the same view of the same storage."""
        s = self.storage
        return (s.key, s.view, s.dtype, self.offset, self.size, self.stride)


class _Opaque(_Frozen):
    """Placeholder for objects the converter has no use for (the THNN backend
    handle of PyTorch <= 1.1 modules)."""
    __slots__ = ("what",)

    def __init__(self, what):
        self._init(what=what)


class _SafeFunction(_Frozen):
    """A callable the unpickler may hand to REDUCE: one of our own functions."""
    __slots__ = ("qualname", "fn")

    def __init__(self, qualname, fn):
        self._init(qualname=qualname, fn=fn)

    def __call__(self, *args):
        return self.fn(*args)


class _StandInMeta(type):
    """Stand-in module classes cannot be modified once created."""

    def __setattr__(cls, key, value):
        raise pickle.UnpicklingError(
            f"refusing to set attribute '{key}' on class {cls.__qualname__}")

    def __delattr__(cls, key):
        raise pickle.UnpicklingError(
            f"refusing to delete attribute '{key}' on class {cls.__qualname__}")


class StandIn(metaclass=_StandInMeta):
    """Instance of a pickled torch.nn / Transformer-XL module class: records the
    state the pickle gives it (the module's `__dict__`) and nothing else."""
    __slots__ = ("txl_state",)
    txl_module = ""
    txl_name = ""

    def __setstate__(self, state):
        merged = {}
        if isinstance(state, tuple) and len(state) == 2:
            for part in state:
                if isinstance(part, dict):
                    merged.update(part)
        elif isinstance(state, dict):
            merged.update(state)
        else:
            raise pickle.UnpicklingError(
                f"unexpected state for {self.txl_module}.{self.txl_name}")
        if hasattr(self, "txl_state"):
            self.txl_state.update(merged)
        else:
            object.__setattr__(self, "txl_state", merged)

    def __setattr__(self, key, value):
        raise pickle.UnpicklingError(
            f"refusing to set attribute '{key}' on {self.txl_module}.{self.txl_name}")

    def state(self):
        return getattr(self, "txl_state", {})


def _standin_class(module, name):
    return _StandInMeta(name, (StandIn,), {
        "__slots__": (), "__module__": "txl_convert.standin",
        "__qualname__": f"{module}.{name}", "txl_module": module, "txl_name": name})


# ---------------------------------------------------------------------------
# torch._utils rebuild functions, reimplemented on TensorRef.
# ---------------------------------------------------------------------------

def _as_shape(value, what):
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise pickle.UnpicklingError(f"{what} is not a tuple of integers: {value!r}")
    return tuple(value)


def _rebuild_tensor(storage, storage_offset, size, stride, *rest):
    if not isinstance(storage, StorageRef):
        raise pickle.UnpicklingError("tensor data is not a storage of the file")
    if not isinstance(storage_offset, int) or storage_offset < 0:
        raise pickle.UnpicklingError(f"bad storage offset {storage_offset!r}")
    return TensorRef(storage, storage_offset, _as_shape(size, "tensor size"),
                     _as_shape(stride, "tensor stride"))


def _rebuild_parameter(data, requires_grad=True, *rest):
    if not isinstance(data, TensorRef):
        raise pickle.UnpicklingError("parameter data is not a tensor")
    return data.as_parameter()


def _rebuild_from_type_v2(func, new_type, args, state):
    # torch._tensor._rebuild_from_type_v2: func(*args) then a subclass cast.
    if not isinstance(func, _SafeFunction) or not isinstance(args, tuple):
        raise pickle.UnpicklingError("unsupported tensor subclass rebuild")
    result = func(*args)
    if isinstance(result, TensorRef) and new_type is PARAMETER:
        result = result.as_parameter()
    return result


def _reconstructor(cls, base, state):
    # copyreg._reconstructor for protocol 0/1 pickles: only for stand-ins.
    if not (isinstance(cls, type) and issubclass(cls, StandIn) and base is object
            and state is None):
        raise pickle.UnpicklingError("unsupported copyreg._reconstructor call")
    return object.__new__(cls)


def _torch_size(*args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


REBUILD_TENSOR = _SafeFunction("torch._utils._rebuild_tensor", _rebuild_tensor)
REBUILD_TENSOR_V2 = _SafeFunction("torch._utils._rebuild_tensor_v2", _rebuild_tensor)
REBUILD_PARAMETER = _SafeFunction("torch._utils._rebuild_parameter", _rebuild_parameter)
REBUILD_PARAMETER_WITH_STATE = _SafeFunction(
    "torch._utils._rebuild_parameter_with_state", _rebuild_parameter)
REBUILD_FROM_TYPE_V2 = _SafeFunction("torch._tensor._rebuild_from_type_v2",
                                     _rebuild_from_type_v2)
# PyTorch 0.4 pickled a Parameter as `Parameter(tensor, requires_grad)`.
PARAMETER = _SafeFunction("torch.nn.parameter.Parameter", _rebuild_parameter)


def _not_callable(*args):
    raise pickle.UnpicklingError("torch.Tensor cannot be called from a pickle")


TENSOR = _SafeFunction("torch._tensor.Tensor", _not_callable)
TORCH_SIZE = _SafeFunction("torch.Size", _torch_size)
THNN_BACKEND = _SafeFunction("torch.nn.backends.thnn._get_thnn_function_backend",
                             lambda: _Opaque("thnn backend"))
RECONSTRUCTOR = _SafeFunction("copyreg._reconstructor", _reconstructor)

# Classes of kimiyoung/transformer-xl pytorch/: mem_transformer.py imports
# `proj_adaptive_softmax` and `log_uniform_sampler` from utils/ (sys.path).
OFFICIAL_CLASSES = {
    "mem_transformer": {
        "MemTransformerLM", "AdaptiveEmbedding", "PositionalEmbedding",
        "PositionwiseFF", "MultiHeadAttn", "RelMultiHeadAttn",
        "RelPartialLearnableMultiHeadAttn", "RelLearnableMultiHeadAttn",
        "DecoderLayer", "RelLearnableDecoderLayer", "RelPartialLearnableDecoderLayer"},
    "proj_adaptive_softmax": {"ProjectedAdaptiveLogSoftmax"},
    "log_uniform_sampler": {"LogUniformSampler"},
}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class RestrictedUnpickler(pickle._Unpickler):
    """The unpickler whose find_class hands out only the inert objects
    above; any other global is refused before anything is called.

    It is Python's pure-Python unpickler: the C one keeps its memo in an
    array sized by the largest index a PUT opcode names, so a few bytes
    (LONG_BINPUT 2^32 - 1) make it allocate tens of gigabytes (found by
    test/Fuzz/converter_fuzzer.py); this one keeps a dict. Checkpoint
    pickles are small (the tensors' data is outside them), so its speed
    does not matter."""

    def __init__(self, file, persistent_load=None, allow_globals=True):
        super().__init__(file, encoding="utf-8")
        self._persistent = persistent_load
        self._allow_globals = allow_globals
        self._standins = {}

    # BYTEARRAY8 is the one opcode whose reader allocates the length it is
    # given before reading (bytearray(n), then readinto): a few bytes that
    # claim gigabytes made it allocate them (found by
    # test/Fuzz/converter_fuzzer.py). Read first, bounded by the file, then
    # copy what was there.
    dispatch = dict(pickle._Unpickler.dispatch)

    def _load_bytearray8(self):
        (size,) = struct.unpack("<Q", self.read(8))
        data = self.read(size)
        if len(data) != size:
            raise pickle.UnpicklingError(
                f"BYTEARRAY8 of {size} bytes runs past the end of the pickle")
        self.append(bytearray(data))

    dispatch[pickle.BYTEARRAY8[0]] = _load_bytearray8

    def persistent_load(self, pid):
        if self._persistent is None:
            raise pickle.UnpicklingError("unexpected persistent id in this pickle")
        return self._persistent(pid)

    def find_class(self, module, name):
        # Protocol 2 pickles carry Python 2 module names (fix_imports).
        module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)
        found = self._lookup(module, name) if self._allow_globals else None
        if found is None:
            raise UnsupportedClass(f"{module}.{name}")
        return found

    def _lookup(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "builtins" and name in ("set", "frozenset"):
            return {"set": set, "frozenset": frozenset}[name]
        if (module, name) == ("builtins", "object"):
            return object
        if (module, name) == ("copyreg", "_reconstructor"):
            return RECONSTRUCTOR
        if module == "torch._utils":
            return {"_rebuild_tensor": REBUILD_TENSOR,
                    "_rebuild_tensor_v2": REBUILD_TENSOR_V2,
                    "_rebuild_parameter": REBUILD_PARAMETER,
                    "_rebuild_parameter_with_state": REBUILD_PARAMETER_WITH_STATE,
                    }.get(name)
        if module in ("torch._tensor", "torch.tensor"):
            return {"_rebuild_from_type_v2": REBUILD_FROM_TYPE_V2, "Tensor": TENSOR}.get(name)
        if module in ("torch", "torch.cuda", "torch.storage") and name in STORAGE_TYPES:
            return StorageType(name)
        if (module, name) == ("torch", "Tensor"):
            return TENSOR
        if (module, name) == ("torch", "Size"):
            return TORCH_SIZE
        if (module, name) == ("torch.nn.parameter", "Parameter"):
            return PARAMETER
        if (module, name) == ("torch.nn.backends.thnn", "_get_thnn_function_backend"):
            return THNN_BACKEND
        official = module.rsplit(".", 1)[-1]
        if ((module.startswith("torch.nn.modules.") and IDENTIFIER.match(name))
                or name in OFFICIAL_CLASSES.get(official, ())):
            key = (module, name)
            if key not in self._standins:
                self._standins[key] = _standin_class(module, name)
            return self._standins[key]
        return None


class UnsupportedClass(pickle.UnpicklingError):
    def __init__(self, qualname):
        super().__init__(qualname)
        self.qualname = qualname


# ---------------------------------------------------------------------------
# The two PyTorch file formats.
# ---------------------------------------------------------------------------

class Checkpoint:
    """The unpickled object plus access to the raw storages."""

    def __init__(self, path, fmt, obj, storage_reader):
        self.path = path
        self.format = fmt          # "zip" or "legacy"
        self.obj = obj
        self._read_storage = storage_reader
        self._cache = {}

    def flat(self, storage):
        """The storage's elements as a 1-D numpy array (little-endian order
        resolved; bfloat16 as uint16)."""
        if storage.key not in self._cache:
            self._cache[storage.key] = self._read_storage(storage)
        flat = self._cache[storage.key]
        if storage.view is not None:
            begin, count = storage.view
            if begin < 0 or count < 0 or begin + count > flat.size:
                raise ConvertError(f"storage view [{begin}, {begin + count}) is outside "
                                   f"storage '{storage.key}' of {flat.size} elements")
            flat = flat[begin:begin + count]
        return flat

    def array(self, tensor, name):
        """The tensor as a float32 numpy array, exactly (float16, bfloat16 and
        float64 values converted; float64 rounded to nearest)."""
        st = tensor.storage
        if st.dtype not in FLOAT_DTYPES:
            raise ConvertError(f"tensor '{name}' has dtype {st.dtype}; only floating "
                               "tensors can be converted")
        flat = self.flat(st)
        size, stride = tensor.size, tensor.stride
        if len(size) != len(stride) or any(d < 0 for d in size) or any(s < 0 for s in stride):
            raise ConvertError(f"tensor '{name}': bad size {list(size)} / stride {list(stride)}")
        numel = int(np.prod(size, dtype=np.int64)) if size else 1
        if numel == 0:
            values = np.zeros(size, dtype=flat.dtype)
        else:
            last = tensor.offset + sum((d - 1) * s for d, s in zip(size, stride))
            if last >= flat.size:
                raise ConvertError(
                    f"tensor '{name}': size {list(size)}, stride {list(stride)} and offset "
                    f"{tensor.offset} reach element {last} of a {flat.size}-element storage "
                    "(truncated or corrupt file)")
            base = flat[tensor.offset:]
            values = np.lib.stride_tricks.as_strided(
                base, shape=size, strides=[s * flat.itemsize for s in stride], writeable=False)
        if st.dtype == "bfloat16":
            return (np.ascontiguousarray(values).astype("<u4") << 16).view("<f4")
        return np.ascontiguousarray(values, dtype="<f4")


def _numpy_dtype(dtype, big_endian):
    code = {"float32": "f4", "float64": "f8", "float16": "f2", "bfloat16": "u2",
            "int64": "i8", "int32": "i4", "int16": "i2", "int8": "i1",
            "uint8": "u1", "bool": "?"}[dtype]
    return np.dtype((">" if big_endian else "<") + code)


def _unpickle(data, persistent_load, path):
    try:
        return RestrictedUnpickler(data, persistent_load).load()
    except UnsupportedClass as err:
        raise ConvertError(
            f"{path}: the pickle references '{err.qualname}', which is not allowed "
            "(only tensors, state dicts and torch.nn / official Transformer-XL module "
            "classes are read; nothing from the file is executed)") from None
    except ConvertError:
        raise
    except Exception as err:  # a malformed pickle: report it, never trace back
        raise ConvertError(f"{path}: cannot read the pickled object: "
                           f"{type(err).__name__}: {err}") from None


# What Python's zipfile raises on a damaged archive (found by fuzzing,
# test/Fuzz/converter_fuzzer.py): each becomes one ConvertError line.
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError,
               RuntimeError, ValueError, OSError, UnicodeDecodeError,
               struct.error, KeyError, IndexError, OverflowError)


def _zip_member_offset(mm, info, path):
    """Start of a stored (uncompressed) member's data in the archive."""
    header = mm[info.header_offset:info.header_offset + 30]
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise ConvertError(f"{path}: corrupt zip entry '{info.filename}'")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


# The most a checkpoint's data.pkl may inflate to. The pickle of a state
# dict holds names and storage keys, not tensors (a few hundred KB for the
# largest official models); a compressed member that inflates past this is
# refused before it fills memory (a zip bomb: issue 48, item 16).
_MAX_PICKLE_BYTES = 256 << 20


def _read_member(archive, name, path, limit):
    """The bytes of zip member `name`, inflating no more than `limit` + 1 of
    them (a member's declared size is the file's word, not a bound): a
    member that holds more than `limit` bytes is a ConvertError, as is a
    damaged one (bad header, CRC, compressed stream, unsupported method)."""
    try:
        with archive.open(name) as member:
            data = member.read(limit + 1)
    except _ZIP_ERRORS as err:
        raise ConvertError(f"{path}: corrupt zip member '{name}': "
                           f"{type(err).__name__}: {err}") from None
    if len(data) > limit:
        raise ConvertError(f"{path}: zip member '{name}' inflates to more than "
                           f"{limit} bytes, the most it can need (a zip bomb?)")
    return data


def load_zip(path, f, mm):
    try:
        archive = zipfile.ZipFile(f)
        names = archive.namelist()
    except _ZIP_ERRORS as err:   # the central directory is damaged
        raise ConvertError(f"{path}: not a PyTorch checkpoint: bad zip archive "
                           f"({type(err).__name__}: {err})") from None
    pickles = [n for n in names if n.count("/") == 1 and n.endswith("/data.pkl")]
    if not pickles:
        raise ConvertError(f"{path}: not a PyTorch checkpoint: a zip archive without "
                           "<archive>/data.pkl")
    prefix = pickles[0][: -len("data.pkl")]
    if prefix + "constants.pkl" in names:
        raise ConvertError(f"{path}: a TorchScript archive (torch.jit.save), not a torch.save "
                           "checkpoint")
    big_endian = False
    if prefix + "byteorder" in names:
        order = _read_member(archive, prefix + "byteorder", path, 16)
        if order not in (b"little", b"big"):
            raise ConvertError(f"{path}: unknown byte order {order!r}")
        big_endian = order == b"big"

    storages = {}

    def persistent_load(pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r:.80}")
        _, stype, key, _location, numel = pid
        if not isinstance(stype, StorageType) or not isinstance(key, str) \
                or not isinstance(numel, int) or numel < 0:
            raise pickle.UnpicklingError(f"bad storage persistent id {pid!r:.80}")
        ref = StorageRef(key, stype, numel)
        known = storages.setdefault(key, ref)
        if known.dtype != ref.dtype:
            raise pickle.UnpicklingError(f"storage '{key}' is read with two dtypes")
        return known

    obj = _unpickle(io.BytesIO(_read_member(archive, pickles[0], path,
                                            _MAX_PICKLE_BYTES)),
                    persistent_load, path)

    def read_storage(ref):
        name = f"{prefix}data/{ref.key}"
        try:
            info = archive.getinfo(name)
        except KeyError:
            raise ConvertError(f"{path}: storage record '{name}' is missing") from None
        nbytes = ref.numel * ref.itemsize
        if info.file_size < nbytes:
            raise ConvertError(f"{path}: storage record '{name}' holds {info.file_size} bytes, "
                               f"{nbytes} needed")
        dtype = _numpy_dtype(ref.dtype, big_endian)
        if info.compress_type == zipfile.ZIP_STORED:
            start = _zip_member_offset(mm, info, path)
            if start + nbytes > len(mm):
                raise ConvertError(f"{path}: storage record '{name}' runs past the end "
                                   "of the file (truncated archive)")
            return np.frombuffer(mm, dtype=dtype, count=ref.numel, offset=start)
        # Only the bytes the tensors use: the pickle declared them.
        try:
            with archive.open(name) as member:
                data = member.read(nbytes)
        except _ZIP_ERRORS as err:
            raise ConvertError(f"{path}: corrupt zip member '{name}': "
                               f"{type(err).__name__}: {err}") from None
        if len(data) < nbytes:
            raise ConvertError(f"{path}: storage record '{name}' holds {len(data)} bytes, "
                               f"{nbytes} needed")
        return np.frombuffer(data, dtype=dtype, count=ref.numel)

    return Checkpoint(path, "zip", obj, read_storage)


class _BoundedReader:
    """`f` for the unpickler, with reads capped at what is left of the file:
    an opcode that claims gigabytes (LONG4, BINBYTES8, ...) would otherwise
    make the file object allocate them before finding the file short (found
    by test/Fuzz/converter_fuzzer.py: 2.3 GB for a 24 KB file)."""

    def __init__(self, f, size):
        self._f = f
        self._size = size

    def _left(self, n):
        left = max(self._size - self._f.tell(), 0)
        return left if n is None or n < 0 else min(n, left)

    def read(self, n=-1):
        return self._f.read(self._left(n))

    def readinto(self, buffer):
        view = memoryview(buffer)
        return self._f.readinto(view[:self._left(len(view))])

    def readline(self, limit=-1):
        return self._f.readline(self._left(limit))

    def tell(self):
        return self._f.tell()


def load_legacy(path, f, mm):
    f = _BoundedReader(f, len(mm))

    def plain(what):
        try:
            return RestrictedUnpickler(f, allow_globals=False).load()
        except Exception as err:  # anything: this is not a torch.save stream
            raise ConvertError(f"{path}: not a PyTorch checkpoint (neither a torch.save zip "
                               f"archive nor a legacy torch.save file: cannot read the {what}: "
                               f"{type(err).__name__})") from None

    magic = plain("magic number")
    if magic != MAGIC_NUMBER:
        raise ConvertError(f"{path}: not a PyTorch checkpoint (neither a torch.save zip archive "
                           "nor a legacy torch.save file: wrong magic number)")
    version = plain("protocol version")
    if version != PROTOCOL_VERSION:
        raise ConvertError(f"{path}: unsupported legacy PyTorch protocol version {version!r}")
    sys_info = plain("system info")
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True

    roots = {}

    def persistent_load(pid):
        if not isinstance(pid, tuple) or not pid:
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r:.80}")
        if pid[0] == "module" and len(pid) == 4:
            cls = pid[1]
            if not (isinstance(cls, type) and issubclass(cls, StandIn)):
                raise pickle.UnpicklingError("module persistent id without a module class")
            return cls
        if pid[0] == "storage" and len(pid) == 6:
            _, stype, key, _location, numel, view = pid
            if not isinstance(stype, StorageType) or not isinstance(key, str) \
                    or not isinstance(numel, int) or numel < 0:
                raise pickle.UnpicklingError(f"bad storage persistent id {pid!r:.80}")
            root = roots.setdefault(key, StorageRef(key, stype, numel))
            if root.dtype != stype.dtype:
                raise pickle.UnpicklingError(f"storage '{key}' is read with two dtypes")
            if view is None:
                return root
            if not (isinstance(view, tuple) and len(view) == 3):
                raise pickle.UnpicklingError("bad storage view metadata")
            _view_key, offset, count = view
            return StorageRef(key, stype, numel, view=(offset, count))
        raise pickle.UnpicklingError(f"unsupported persistent id type {pid[0]!r:.40}")

    obj = _unpickle(f, persistent_load, path)
    keys = plain("storage key list")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ConvertError(f"{path}: bad storage key list")

    offsets = {}
    pos = f.tell()
    size_fmt = "<q" if little else ">q"
    for key in keys:
        if key not in roots:
            raise ConvertError(f"{path}: storage '{key}' is listed but never used")
        head = mm[pos:pos + 8]
        if len(head) != 8:
            raise ConvertError(f"{path}: file ends before storage '{key}' (truncated)")
        (numel,) = struct.unpack(size_fmt, head)
        ref = roots[key]
        nbytes = numel * ref.itemsize
        if numel != ref.numel or pos + 8 + nbytes > len(mm):
            raise ConvertError(f"{path}: storage '{key}' of {ref.numel} elements is truncated "
                               f"or corrupt (record says {numel})")
        offsets[key] = pos + 8
        pos += 8 + nbytes

    def read_storage(ref):
        if ref.key not in offsets:
            raise ConvertError(f"{path}: the data of storage '{ref.key}' is missing")
        # Storage data is written little-endian whatever the machine.
        return np.frombuffer(mm, dtype=_numpy_dtype(ref.dtype, False), count=ref.numel,
                             offset=offsets[ref.key])

    return Checkpoint(path, "legacy", obj, read_storage)


def load_checkpoint(path):
    try:
        f = open(path, "rb")
    except OSError as err:
        raise ConvertError(f"{path}: cannot open: {err.strerror}") from None
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        raise ConvertError(f"{path}: not a PyTorch checkpoint (empty file)")
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        is_zip = zipfile.is_zipfile(f)
    except _ZIP_ERRORS as err:   # an end record that zipfile refuses
        raise ConvertError(f"{path}: not a PyTorch checkpoint: bad zip archive "
                           f"({type(err).__name__}: {err})") from None
    if is_zip:
        f.seek(0)
        return load_zip(path, f, mm)
    f.seek(0)
    if mm[:1] != b"\x80":
        raise ConvertError(f"{path}: not a PyTorch checkpoint (neither a torch.save zip archive "
                           "nor a legacy torch.save file)")
    return load_legacy(path, f, mm)


# ---------------------------------------------------------------------------
# From the unpickled object to (name, TensorRef) in state_dict order.
# ---------------------------------------------------------------------------

def module_state_dict(module, prefix=""):
    """What `module.state_dict()` would return, as [(name, TensorRef)], plus the
    set of buffer names and a dict of the modules' recorded attributes."""
    entries, buffers, modules = [], set(), {}

    def walk(mod, prefix):
        state = mod.state()
        modules[prefix[:-1]] = mod
        params = state.get("_parameters") or {}
        bufs = state.get("_buffers") or {}
        non_persistent = state.get("_non_persistent_buffers_set") or set()
        for table, is_buffer in ((params, False), (bufs, True)):
            if not isinstance(table, dict):
                raise ConvertError(f"module '{prefix[:-1] or '(root)'}': bad parameter table")
            for name, value in dict.items(table):
                if value is None or (is_buffer and name in non_persistent):
                    continue
                if not isinstance(value, TensorRef):
                    raise ConvertError(f"'{prefix}{name}' is not a tensor")
                entries.append((prefix + name, value))
                if is_buffer:
                    buffers.add(prefix + name)
        children = state.get("_modules") or {}
        if not isinstance(children, dict):
            raise ConvertError(f"module '{prefix[:-1] or '(root)'}': bad submodule table")
        for name, child in dict.items(children):
            if child is None:
                continue
            if not isinstance(child, StandIn):
                raise ConvertError(f"submodule '{prefix}{name}' is not a module")
            walk(child, prefix + name + ".")

    walk(module, prefix)
    return entries, buffers, modules


def _find_state_dict(obj):
    if isinstance(obj, dict):
        values = list(dict.values(obj))
        if values and all(isinstance(v, TensorRef) for v in values):
            return obj
        for key in ("state_dict", "model_state_dict", "model"):
            inner = dict.get(obj, key)
            if isinstance(inner, (dict, StandIn)):
                return inner
    return None


class Source:
    """The input reduced to official-looking names: entries [(name, TensorRef)]
    in state_dict order, before tie folding."""

    def __init__(self):
        self.kind = ""           # text for the summary
        self.layout = ""         # "module", "official", "hf"
        self.entries = []
        self.buffers = set()
        self.attrs = {}          # hyper-parameters recorded in the pickle / config
        self.value_ties = False  # look for ties by value too (state dicts)
        self.dropped = []        # input names not written (with the reason)
        self.reversed_rows = set()   # names written with their rows reversed


def read_source(ckpt):
    src = Source()
    obj = ckpt.obj
    fmt = {"zip": "PyTorch zip", "legacy": "PyTorch legacy"}[ckpt.format]
    if isinstance(obj, StandIn):
        qual = f"{obj.txl_module}.{obj.txl_name}"
        if obj.txl_name != "MemTransformerLM":
            raise ConvertError(f"{ckpt.path}: the pickled module is {qual}, not the official "
                               "mem_transformer.MemTransformerLM")
        src.kind = f"{fmt} checkpoint, whole module {qual}"
        src.layout = "module"
        src.entries, src.buffers, modules = module_state_dict(obj)
        src.attrs = module_attributes(modules)
        return src
    state = _find_state_dict(obj)
    if isinstance(state, StandIn):
        ckpt.obj = state
        return read_source(ckpt)
    if state is None:
        raise ConvertError(f"{ckpt.path}: holds neither a MemTransformerLM module nor a "
                           f"state_dict (top-level object: {type(obj).__name__})")
    entries = []
    for name, value in dict.items(state):
        if not isinstance(name, str) or not isinstance(value, TensorRef):
            raise ConvertError(f"{ckpt.path}: state_dict entry {name!r} is not a tensor")
        entries.append((name, value))
    src.value_ties = True
    if any(n.startswith("transformer.") for n, _ in entries):
        src.kind = f"{fmt} checkpoint, state_dict (Hugging Face TransfoXLLMHeadModel names)"
        src.layout = "hf"
        entries = hf_to_official(entries, src, ckpt)
    else:
        src.kind = f"{fmt} checkpoint, state_dict (official names)"
        src.layout = "official"
    if len(entries) > 1 and all(n.startswith("module.") for n, _ in entries):
        entries = [(n[len("module."):], t) for n, t in entries]   # nn.DataParallel
    src.entries = entries
    src.buffers = {n for n, _ in entries if n == "pos_emb.inv_freq"}
    return src


def hf_to_official(entries, src, ckpt):
    """Hugging Face TransfoXLLMHeadModel names -> official MemTransformerLM names.

    HF's TransfoXLModel is the official module under `transformer.` (word_emb,
    layers.{l}.dec_attn.{qkv_net,r_net,o_net,layer_norm}, layers.{l}.pos_ff.
    {CoreNet.0,CoreNet.3,layer_norm}, pos_emb.inv_freq) and its crit is the
    official ProjectedAdaptiveLogSoftmax, except for the order of the tail
    clusters' head columns: the official PyTorch code reads tail cluster i
    (1-based) from head column -i (`head_logprob_i[:, -i]`), Hugging Face
    (whose pretrained checkpoints come from the official TensorFlow code)
    from column cutoffs[0] + i - 1. So the rows of crit.cluster_weight and
    crit.cluster_bias are written reversed (a no-op with one tail cluster).
    With untie_r = false the model-level
    transformer.r_w_bias / r_r_bias are also registered in every layer's
    dec_attn (same tensor): those per-layer names are dropped. With untie_r =
    true only the per-layer ones exist and they are kept."""
    out = []
    names = {n for n, _ in entries}
    tied_r = "transformer.r_w_bias" in names or "transformer.r_r_bias" in names
    per_layer_r = re.compile(r"layers\.\d+\.dec_attn\.(r_w_bias|r_r_bias)\Z")
    for name, tensor in entries:
        if name.startswith("transformer."):
            name = name[len("transformer."):]
        elif not name.startswith("crit."):
            src.dropped.append((name, "not part of TransfoXLLMHeadModel's transformer/crit"))
            continue
        m = per_layer_r.match(name)
        if tied_r and m:
            shared = dict(entries).get("transformer." + m.group(1))
            if shared is None or not (
                    shared.identity() == tensor.identity() or np.array_equal(
                        ckpt.array(shared, m.group(1)).view(np.uint32),
                        ckpt.array(tensor, name).view(np.uint32))):
                raise ConvertError(f"{ckpt.path}: '{name}' differs from 'transformer."
                                   f"{m.group(1)}': the file mixes tied and untied biases")
            src.dropped.append((name, "copy of the model-level bias (untie_r = false)"))
            continue
        if name in ("crit.cluster_weight", "crit.cluster_bias") and tensor.size[0] > 1:
            src.reversed_rows.add(name)
        out.append((name, tensor))
    return out


def module_attributes(modules):
    """Hyper-parameters the official module objects record as attributes."""
    attrs = {}

    def get(path, key):
        mod = modules.get(path)
        if mod is None:
            return None
        value = mod.state().get(key)
        return value if isinstance(value, (int, float, bool, list)) or value is None else None

    for key in ("n_token", "d_embed", "d_model", "n_head", "d_head", "n_layer", "tgt_len",
                "mem_len", "ext_len", "attn_type", "same_length", "clamp_len", "sample_softmax"):
        value = get("", key)
        if value is not None:
            attrs[key] = value
    cutoffs = get("crit", "cutoffs") or get("word_emb", "cutoffs")
    if isinstance(cutoffs, list) and cutoffs:
        attrs["cutoffs"] = list(cutoffs[:-1])      # the official list ends with n_token
    div_val = get("word_emb", "div_val")
    if div_val is not None:
        attrs["div_val"] = div_val
    pre_lnorm = get("layers.0.dec_attn", "pre_lnorm")
    if pre_lnorm is not None:
        attrs["pre_lnorm"] = bool(pre_lnorm)
    dropout = get("drop", "p")
    if dropout is not None:
        attrs["dropout"] = dropout
    dropatt = get("layers.0.dec_attn.dropatt", "p")
    if dropatt is not None:
        attrs["dropatt"] = dropatt
    return attrs


HF_CONFIG_KEYS = {  # HF config.json key -> model-file key
    "vocab_size": "n_token", "n_token": "n_token", "cutoffs": "cutoffs", "d_model": "d_model",
    "d_embed": "d_embed", "n_head": "n_head", "d_head": "d_head", "d_inner": "d_inner",
    "div_val": "div_val", "pre_lnorm": "pre_lnorm", "n_layer": "n_layer", "tgt_len": "tgt_len",
    "ext_len": "ext_len", "mem_len": "mem_len", "clamp_len": "clamp_len",
    "same_length": "same_length", "attn_type": "attn_type", "dropout": "dropout",
    "dropatt": "dropatt", "untie_r": "untie_r", "sample_softmax": "sample_softmax",
}


def read_hf_config(path):
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as err:
        raise ConvertError(f"{path}: cannot read the config: {err}") from None
    attrs = {}
    for key, ours in HF_CONFIG_KEYS.items():
        if key in config and config[key] is not None:
            attrs[ours] = config[key]
    return attrs


# ---------------------------------------------------------------------------
# Ties, hyper-parameters, checks.
# ---------------------------------------------------------------------------

OUT_LAYER = re.compile(r"crit\.out_layers\.(\d+)\.weight\Z")
OUT_PROJ = re.compile(r"crit\.out_projs\.(\d+)\Z")
EMB_LAYER = re.compile(r"word_emb\.emb_layers\.(\d+)\.weight\Z")
EMB_PROJ = re.compile(r"word_emb\.emb_projs\.(\d+)\Z")
LAYER = re.compile(r"layers\.(\d+)\.")


def tie_targets(name, names):
    """The embedding tensors an output-layer tensor may be tied to."""
    m = OUT_LAYER.match(name)
    if m:
        return [f"word_emb.emb_layers.{m.group(1)}.weight"]
    m = OUT_PROJ.match(name)
    if m:
        # div_val > 1: out_projs.i = emb_projs.i; div_val = 1: emb_projs.0.
        n_emb_layers = sum(1 for n in names if EMB_LAYER.match(n))
        return [f"word_emb.emb_projs.{m.group(1) if n_emb_layers > 1 else 0}"]
    return []


def find_ties(ckpt, src):
    """{tied output-layer name: (embedding name, how)} for tensors that share
    storage (or, in state dicts, hold equal values)."""
    tensors = dict(src.entries)
    ties = {}
    for name, tensor in src.entries:
        for target in tie_targets(name, tensors):
            other = tensors.get(target)
            if other is None:
                continue
            if tensor.identity() == other.identity():
                ties[name] = (target, "same storage")
            elif src.value_ties and tensor.size == other.size:
                a, b = ckpt.array(tensor, name), ckpt.array(other, target)
                if np.array_equal(a.view(np.uint32), b.view(np.uint32)):
                    ties[name] = (target, "equal values")
    return ties


def infer_hparams(shapes, ties, attrs, cutoffs_override):
    """Hyper-parameters from the tensor shapes (names after tie folding are not
    needed: `shapes` holds every official name present in the input)."""
    hp, notes = {}, []

    def shape(name):
        return shapes.get(name)

    layers = sorted({int(m.group(1)) for n in shapes for m in [LAYER.match(n)] if m})
    hp["n_layer"] = len(layers)
    if layers and layers != list(range(len(layers))):
        raise ConvertError(f"layer indices are not 0..n-1: {layers}")
    if shape("r_w_bias") is not None:
        hp["untie_r"] = False
        bias = shape("r_w_bias")
    else:
        bias = shape("layers.0.dec_attn.r_w_bias")
        hp["untie_r"] = bias is not None
    if bias is not None and len(bias) == 2:
        hp["n_head"], hp["d_head"] = bias
    elif attrs.get("n_head") and attrs.get("d_head"):
        hp["n_head"], hp["d_head"] = attrs["n_head"], attrs["d_head"]
    o_net = shape("layers.0.dec_attn.o_net.weight")
    if o_net is not None:
        hp["d_model"] = o_net[0]
    elif shape("pos_emb.inv_freq") is not None:
        hp["d_model"] = 2 * shape("pos_emb.inv_freq")[0]
    core = shape("layers.0.pos_ff.CoreNet.0.weight")
    if core is not None:
        hp["d_inner"] = core[0]

    emb = []
    while shape(f"word_emb.emb_layers.{len(emb)}.weight") is not None:
        emb.append(shape(f"word_emb.emb_layers.{len(emb)}.weight"))
    if not emb:
        raise ConvertError("missing tensor 'word_emb.emb_layers.0.weight'")
    hp["d_embed"] = emb[0][1]
    cluster_weight = shape("crit.cluster_weight")
    n_clusters = (cluster_weight[0] + 1) if cluster_weight is not None else 1
    if len(emb) > 1:
        hp["n_token"] = sum(e[0] for e in emb)
        hp["cutoffs"] = list(np.cumsum([e[0] for e in emb[:-1]]).tolist())
        div = emb[0][1] // emb[1][1] if emb[1][1] else 0
        if div < 2 or any(e[1] != emb[0][1] // div ** i for i, e in enumerate(emb)):
            raise ConvertError("embedding sizes " + str([e[1] for e in emb]) +
                               " are not d_embed // div_val**i")
        hp["div_val"] = div
        if len(emb) != n_clusters:
            raise ConvertError(f"{len(emb)} embedding clusters but crit has {n_clusters}")
    else:
        hp["n_token"] = emb[0][0]
        # div_val > 1 with a single cluster always has emb_projs.0; div_val = 1
        # has it only when d_embed != d_model.
        if (shape("word_emb.emb_projs.0") is not None and hp.get("d_model") == hp["d_embed"]
                and n_clusters == 1):
            hp["div_val"] = attrs.get("div_val", 2)
            notes.append("div_val > 1 with a single cluster: any value > 1 builds the same "
                         "model")
        else:
            hp["div_val"] = 1
        if n_clusters > 1:
            cutoffs = cutoffs_override or attrs.get("cutoffs")
            if cutoffs is None:
                notes.append(f"cutoffs: {n_clusters - 1} values not recorded in the tensor "
                             "shapes (div_val = 1); give --cutoffs or --config")
                hp["cutoffs"] = None
            else:
                hp["cutoffs"] = list(cutoffs)
        else:
            hp["cutoffs"] = []
    if cutoffs_override is not None and hp.get("cutoffs") not in (None, list(cutoffs_override)):
        raise ConvertError(f"--cutoffs {cutoffs_override} disagrees with the embedding sizes "
                           f"(cutoffs {hp['cutoffs']})")
    if hp.get("cutoffs") is not None and len(hp["cutoffs"]) != n_clusters - 1:
        raise ConvertError(f"{len(hp['cutoffs'])} cutoffs given for {n_clusters} clusters")

    out_layers = [n for n in shapes if OUT_LAYER.match(n)]
    emb_count = len(emb)
    tied_layers = [i for i in range(emb_count)
                   if f"crit.out_layers.{i}.weight" in ties
                   or f"crit.out_layers.{i}.weight" not in shapes]
    hp["tie_weight"] = len(tied_layers) == emb_count
    if 0 < len(tied_layers) < emb_count:
        notes.append(f"only output layers {tied_layers} are tied to the embedding")
    if not out_layers and emb_count:
        notes.append("crit.out_layers.*.weight absent: taken as tied to the embedding")
    projected = hp["div_val"] != 1 or hp["d_embed"] != hp.get("d_model")
    tie_projs = []
    for i in range(n_clusters):
        name = f"crit.out_projs.{i}"
        tie_projs.append(projected and (name in ties or name not in shapes))
    hp["tie_projs"] = tie_projs
    hp["attn_type"] = 0 if shape("layers.0.dec_attn.r_net.weight") is not None \
        else attrs.get("attn_type", -1)

    for key in ("n_token", "d_model", "n_head", "d_head", "n_layer", "d_embed", "div_val"):
        if key in attrs and key in hp and attrs[key] != hp[key] and attrs[key] is not None:
            notes.append(f"{key}: the shapes say {hp[key]}, the recorded attribute says "
                         f"{attrs[key]}; using the shapes")
    if "untie_r" in attrs and bool(attrs["untie_r"]) != hp["untie_r"]:
        notes.append(f"untie_r: the tensors say {hp['untie_r']}, the config says "
                     f"{attrs['untie_r']}; using the tensors")
    return hp, notes


def expected_names(hp):
    """The official state_dict names and shapes for attn_type 0 (as
    MemTransformerLM builds them), tied names included."""
    out = collections.OrderedDict()
    d_model, d_embed, div = hp["d_model"], hp["d_embed"], hp["div_val"]
    cutoffs = hp["cutoffs"] if hp["cutoffs"] is not None else []
    ends = [0] + list(cutoffs) + [hp["n_token"]]
    clusters = len(ends) - 1
    if not hp["untie_r"]:
        out["r_w_bias"] = [hp["n_head"], hp["d_head"]]
        out["r_r_bias"] = [hp["n_head"], hp["d_head"]]
    sliced = div == 1
    for i in range(1 if sliced else clusters):
        rows = hp["n_token"] if sliced else ends[i + 1] - ends[i]
        out[f"word_emb.emb_layers.{i}.weight"] = [rows, d_embed // div ** i]
    if not sliced or d_embed != d_model:
        for i in range(1 if sliced else clusters):
            out[f"word_emb.emb_projs.{i}"] = [d_model, d_embed // div ** i]
    hd = hp["n_head"] * hp["d_head"]
    for l in range(hp["n_layer"]):
        p = f"layers.{l}."
        out[p + "dec_attn.qkv_net.weight"] = [3 * hd, d_model]
        out[p + "dec_attn.o_net.weight"] = [d_model, hd]
        out[p + "dec_attn.layer_norm.weight"] = [d_model]
        out[p + "dec_attn.layer_norm.bias"] = [d_model]
        out[p + "dec_attn.r_net.weight"] = [hd, d_model]
        if hp["untie_r"]:
            out[p + "dec_attn.r_w_bias"] = [hp["n_head"], hp["d_head"]]
            out[p + "dec_attn.r_r_bias"] = [hp["n_head"], hp["d_head"]]
        out[p + "pos_ff.CoreNet.0.weight"] = [hp["d_inner"], d_model]
        out[p + "pos_ff.CoreNet.0.bias"] = [hp["d_inner"]]
        out[p + "pos_ff.CoreNet.3.weight"] = [d_model, hp["d_inner"]]
        out[p + "pos_ff.CoreNet.3.bias"] = [d_model]
        out[p + "pos_ff.layer_norm.weight"] = [d_model]
        out[p + "pos_ff.layer_norm.bias"] = [d_model]
    if clusters > 1:
        out["crit.cluster_weight"] = [clusters - 1, d_embed]
        out["crit.cluster_bias"] = [clusters - 1]
    for i in range(1 if sliced else clusters):
        rows = hp["n_token"] if sliced else ends[i + 1] - ends[i]
        out[f"crit.out_layers.{i}.weight"] = [rows, d_embed // div ** i]
        out[f"crit.out_layers.{i}.bias"] = [rows]
    if not sliced or d_embed != d_model:
        for i in range(clusters):
            out[f"crit.out_projs.{i}"] = [d_model, d_embed // div ** (0 if sliced else i)]
    out["pos_emb.inv_freq"] = [d_model // 2]
    return out


# ---------------------------------------------------------------------------
# Output.
# ---------------------------------------------------------------------------

def write_safetensors(path, tensors, metadata):
    """tensors: [(name, float32 array)]. Header padded with spaces to 8 bytes."""
    header, offset = {}, 0
    for name, array in tensors:
        nbytes = array.size * 4
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    header["__metadata__"] = metadata
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(blob)))
            f.write(blob)
            for _, array in tensors:
                f.write(np.ascontiguousarray(array, dtype="<f4").tobytes())
        os.replace(tmp, path)
    except OSError as err:
        raise ConvertError(f"{path}: cannot write: {err.strerror}") from None


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_model_toml(path, input_path, hp, attrs):
    stem = os.path.splitext(os.path.basename(path))[0]
    lines = [f"# {stem}: converted from {os.path.basename(input_path)} by txl-convert.",
             "# Sizes come from the tensor shapes; a value marked 'not in the checkpoint' is the",
             "# official train.py default: set it to the value the model was trained with.",
             "", "[model]"]

    def key(name, value, known=True):
        line = f"{name} = {toml_value(value)}"
        if not known:
            line += "  # not in the checkpoint"
        lines.append(line)

    for name in ("n_token", "n_layer", "d_model", "n_head", "d_head", "d_inner", "d_embed"):
        key(name, hp[name])
    key("attn_type", hp["attn_type"] if hp["attn_type"] >= 0 else 0, hp["attn_type"] >= 0)
    defaults = {"pre_lnorm": False, "dropout": 0.0, "dropatt": 0.0}
    for name, default in defaults.items():
        value = attrs.get(name, default)
        key(name, float(value) if isinstance(default, float) else bool(value), name in attrs)
    key("tie_weight", hp["tie_weight"])
    key("div_val", hp["div_val"])
    key("cutoffs", hp["cutoffs"])
    key("tie_projs", hp["tie_projs"])
    key("same_length", bool(attrs.get("same_length", False)), "same_length" in attrs)
    key("clamp_len", int(attrs.get("clamp_len", -1)), "clamp_len" in attrs)
    if hp["untie_r"]:
        lines.append("untie_r = true  # per-layer r_w_bias / r_r_bias (Hugging Face untie_r)")
    lines += ["", "[segment]"]
    # train.py defaults: --tgt_len 70 --mem_len 0 --ext_len 0.
    for name, default in (("tgt_len", 70), ("mem_len", 0), ("ext_len", 0)):
        value = attrs.get(name)
        key(name, int(value) if value is not None else default, value is not None)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    except OSError as err:
        raise ConvertError(f"{path}: cannot write: {err.strerror}") from None


# ---------------------------------------------------------------------------

def convert(args):
    ckpt = load_checkpoint(args.input)
    src = read_source(ckpt)
    attrs = dict(src.attrs)
    origin = {key: "recorded in the module" for key in attrs}
    if args.config:
        config = read_hf_config(args.config)
        attrs.update(config)
        origin.update({key: "from the config" for key in config})
    if src.layout == "module" and attrs.get("sample_softmax", -1) > 0:
        raise ConvertError(f"{args.input}: a sampled-softmax model (sample_softmax > 0) has no "
                           "adaptive softmax; not supported")

    names = [n for n, _ in src.entries]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ConvertError(f"{args.input}: tensor names repeat: {', '.join(dup)}")
    tensors = dict(src.entries)
    shapes = {n: list(t.size) for n, t in src.entries}
    ties = find_ties(ckpt, src)
    hp, notes = infer_hparams(shapes, ties, attrs, args.cutoffs)
    if args.model_toml and hp.get("cutoffs") is None:
        raise ConvertError(f"{args.input}: --model-toml needs the cutoffs, which a div_val = 1 "
                           "checkpoint does not record: give --cutoffs (or --config)")

    # The official names of this model (attn_type 0): every one must be there,
    # except tied output-layer names that the file may leave out.
    expected = None
    if hp["attn_type"] == 0:
        for key in ("n_head", "d_model", "d_inner"):
            if key not in hp:
                what = {"n_head": "r_w_bias", "d_model": "layers.0.dec_attn.o_net.weight",
                        "d_inner": "layers.0.pos_ff.CoreNet.0.weight"}[key]
                raise ConvertError(f"{args.input}: missing tensor '{what}'")
        expected = expected_names(hp) if hp["cutoffs"] is not None else None
    if expected is not None:
        for name, shape in expected.items():
            if name in tensors:
                if shapes[name] != shape:
                    raise ConvertError(f"{args.input}: tensor '{name}' has shape {shapes[name]}, "
                                       f"expected {shape} for the inferred hyper-parameters")
            elif not (tie_targets(name, tensors) and
                      (hp["tie_weight"] if OUT_LAYER.match(name) else True)):
                raise ConvertError(f"{args.input}: missing tensor '{name}'")
        if src.layout != "module":
            extra = [n for n in names if n not in expected]
            for name in extra:
                src.dropped.append((name, "not in the official state_dict"))
            src.entries = [(n, t) for n, t in src.entries if n in expected]

    # Output order: the official state_dict order for the folded names.
    out_entries = []
    written = set()
    for name, tensor in src.entries:
        if name in ties and not args.keep_tied:
            continue
        out_entries.append((name, tensor))
        written.add(name)
    if args.keep_tied and expected is not None:
        # Tied names absent from the file are written from their embedding.
        for name in expected:
            if name not in tensors:
                target = tie_targets(name, tensors)[0]
                out_entries.append((name, tensors[target]))

    # Parameters: each storage view once, buffers excluded.
    seen, n_params = set(), 0
    for name, tensor in src.entries:
        if name in src.buffers or name in ties or tensor.identity() in seen:
            continue
        seen.add(tensor.identity())
        n_params += int(np.prod(tensor.size, dtype=np.int64))

    print(f"{PROG}: {args.input}: {src.kind}")
    for name, reason in src.dropped:
        print(f"dropped: {name} ({reason})")
    for name, (target, how) in ties.items():
        verb = "kept as a copy of" if args.keep_tied else "folded into"
        print(f"tied: {name} {verb} {target} ({how})")
    if expected is not None:
        for name in expected:
            if name not in tensors:
                print(f"tied: {name} absent from the file, tied to {tie_targets(name, tensors)[0]}")
    for name in sorted(src.reversed_rows):
        print(f"reversed: {name} rows (Hugging Face orders the tail clusters' head "
              "columns first to last, the official PyTorch code last to first)")
    for note in notes:
        print(f"note: {note}")
    print(f"tensors: {len(out_entries)}")
    print(f"parameters: {n_params}")
    for key in ("n_layer", "n_head", "d_head", "d_model", "d_inner", "n_token", "cutoffs",
                "div_val", "d_embed", "tie_weight", "tie_projs", "untie_r"):
        value = hp.get(key)
        print(f"{key} = {toml_value(value) if value is not None else 'unknown'}")
    for key in ("pre_lnorm", "same_length", "clamp_len", "tgt_len", "mem_len", "ext_len",
                "dropout", "dropatt"):
        if key in attrs:
            print(f"{key} = {toml_value(attrs[key])} ({origin[key]})")

    if args.output:
        arrays = [(name, ckpt.array(tensor, name)[::-1].copy()
                   if name in src.reversed_rows else ckpt.array(tensor, name))
                  for name, tensor in out_entries]
        metadata = {"format": "official-pytorch-state-dict", "converter": PROG,
                    "source_format": src.layout}
        write_safetensors(args.output, arrays, metadata)
        print(f"wrote {args.output}")
    if args.model_toml:
        write_model_toml(args.model_toml, args.input, hp, attrs)
        print(f"wrote {args.model_toml}")


def parse_cutoffs(text):
    try:
        return [int(v) for v in text.replace("[", "").replace("]", "").split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Convert a Transformer-XL PyTorch checkpoint (official train.py model.pt, "
                    "or a Hugging Face TransfoXLLMHeadModel pytorch_model.bin) into a float32 "
                    "safetensors file with the official state_dict names. PyTorch is not needed "
                    "and nothing in the file is executed.")
    parser.add_argument("input", help="model.pt / pytorch_model.bin (zip or legacy format)")
    parser.add_argument("-o", "--output", help="safetensors file to write (without it, only the "
                        "summary is printed)")
    parser.add_argument("--keep-tied", action="store_true",
                        help="write tied tensors under every official name (crit.out_layers.i."
                             "weight, crit.out_projs.i) instead of once under word_emb.*")
    parser.add_argument("--model-toml", metavar="OUT",
                        help="write a txlc model file skeleton with the inferred hyper-parameters")
    parser.add_argument("--config", metavar="CONFIG_JSON",
                        help="Hugging Face config.json: supplies values the tensors do not hold "
                             "(cutoffs with div_val = 1, same_length, clamp_len, mem_len, ...)")
    parser.add_argument("--cutoffs", type=parse_cutoffs, metavar="LIST",
                        help="adaptive softmax cutoffs, e.g. 20000,40000,200000 (needed only "
                             "for a div_val = 1 state_dict with several clusters)")
    args = parser.parse_args(argv)
    try:
        convert(args)
    except ConvertError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:   # summary piped into `head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
