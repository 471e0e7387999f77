/*===- runtime.h - txlc runtime C API ----------------------------*- C -*-===*\
|*                                                                          *|
|* The C API that a txlc-generated executable links. It holds no MLIR and   *|
|* no LLVM: the compiler emits the segment function and a model descriptor  *|
|* (`txl_model_info`), and this library loads checkpoints, carries memory   *|
|* across segments and calls the generated code.                            *|
|*                                                                          *|
|* Conventions (IREE-style): every call returns a txl_status_t, results come *|
|* back through `out_` parameters, objects come in create/release pairs.    *|
|*                                                                          *|
|* Threads: a session is used by one thread at a time (calls on one session *|
|* from two threads at once are a data race); different sessions may run on *|
|* different threads. A session's own worker threads (batch-parallel       *|
|* slices, txl_session_set_threads) are internal to its calls. Shared by   *|
|* every session of the process, and guarded: OpenBLAS's thread count,      *|
|* which a CPU call sets to its session's threads (1 per slice when slices  *|
|* run in parallel), so concurrent sessions should use the same count or    *|
|* see each other's; and on the GPU targets the one device context, its     *|
|* kernel cache and allocations (runtime/src/device/DeviceAbi.cpp).         *|
\*===----------------------------------------------------------------------===*/

#ifndef TXL_RUNTIME_H
#define TXL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * ABI between the generated object and the runtime
 *===----------------------------------------------------------------------===*/

/// Bumped whenever the layout below or the segment calling convention changes;
/// the runtime refuses a generated object with another version (10: the GPU
/// form of @grad_squared_norm's partials end in TXL_NORM_SUMS sums).
#define TXL_ABI_VERSION 10

/// Maximum rank of a parameter tensor.
#define TXL_MAX_RANK 4

/// One trainable or buffer tensor of the model, named as in the official
/// `MemTransformerLM.state_dict()` (e.g. `layers.0.dec_attn.qkv_net.weight`).
typedef struct txl_param_info {
  const char *name;              ///< official state_dict name
  int32_t rank;                  ///< 1..TXL_MAX_RANK
  int64_t shape[TXL_MAX_RANK];   ///< row-major shape, float32 elements
  int32_t trainable;             ///< 0 for buffers (`pos_emb.inv_freq`)
  /// Tied names also accepted in checkpoints (e.g. `crit.out_layers.0.weight`
  /// for `word_emb.emb_layers.0.weight`), a NULL-terminated list; never NULL.
  const char *const *aliases;
  /// 1 for a tensor only the backward segment reads (objective "alrfou"'s
  /// `aux_heads.*`): evaluation may load a checkpoint without it.
  int32_t training_only;
} txl_param_info_t;

/// The device the compiled code runs on (txlc --target).
typedef enum txl_backend {
  TXL_BACKEND_CPU = 0,    ///< host code only, the runtime's BLAS
  TXL_BACKEND_CUDA = 1,   ///< kernels in a fatbin, the CUDA driver, cuBLAS
  TXL_BACKEND_OPENCL = 2, ///< kernels as SPIR-V, OpenCL 3.0, CLBlast
} txl_backend_t;

/// The products' operand type (txlc --precision).
typedef enum txl_precision {
  TXL_PRECISION_F32 = 0,  ///< f32 throughout
  TXL_PRECISION_BF16 = 1, ///< bf16 operands, f32 accumulation
  /// fp16 operands, f32 accumulation (GPU targets); `train` scales the loss
  /// dynamically.
  TXL_PRECISION_FP16 = 2,
} txl_precision_t;

/// The names txlc's options give them: "cpu", "cuda", "opencl"; "f32",
/// "bf16", "fp16". NULL for a value outside the enum (any int32_t may be
/// asked: a table filled by hand holds what it holds).
const char *txl_backend_name(int32_t backend);
const char *txl_precision_name(int32_t precision);

/// Model hyper-parameters and run-time defaults as resolved by txlc from the
/// model file. Defaults of `eval` follow the official eval.py: `[eval]` keys
/// override `[segment]`, the batch defaults to 10.
typedef struct txl_model_info {
  int32_t abi_version;           ///< TXL_ABI_VERSION of the emitting compiler
  const char *model_name;        ///< model file stem, e.g. "ptb_small"
  int64_t n_token, n_layer, d_model, n_head, d_head, d_inner, d_embed;
  int32_t pre_lnorm;
  /* [segment] */
  int64_t tgt_len, mem_len, ext_len, clamp_len;
  int32_t same_length;
  /* [eval], already merged with [segment] */
  int64_t eval_tgt_len, eval_mem_len, eval_clamp_len, eval_batch_size;
  int32_t eval_same_length;
  /* [data] */
  const char *dataset;           ///< "ptb", "wt2", ... or "" when unset
  const char *data_path;         ///< may be ""
  /* [model] regularization */
  double dropout, dropatt;
  /* [train], official train.py names and defaults */
  int64_t batch_size, batch_chunk;
  const char *optim;             ///< "adam", "sgd" or "adagrad"
  int32_t n_optim_states;        ///< state tensors per parameter: adam 2, else 1
  double lr, mom;
  const char *scheduler;         ///< "cosine", "inv_sqrt", "dev_perf", "constant"
  int64_t warmup_step, max_step;
  double eta_min, decay_rate, lr_min;
  int64_t patience;
  double clip;
  const char *init, *emb_init;   ///< "normal" or "uniform"
  double init_range, emb_init_range, init_std, proj_init_std;
  int64_t seed, log_interval, eval_interval, max_eval_steps;
  int32_t varlen;
  /// "lm" (train.py) or "alrfou": Al-Rfou et al. (2018)'s windows at
  /// random positions with its auxiliary losses, each on when its switch is
  /// nonzero (docs/alrfou.md); txl_segment_grad then takes the loss weights
  /// (below).
  const char *objective;
  int32_t multiple_positions, intermediate_layers, multiple_targets;
  /* parameters in the order the segment function takes them */
  int32_t n_params;
  const txl_param_info_t *params;
  /// A txl_backend_t: the device the compiled code runs on. The table holds
  /// the enums as int32_t so that a value outside them (a table filled by
  /// hand) is a value to refuse, not undefined behaviour.
  int32_t backend;
  int32_t precision; ///< a txl_precision_t: the products' operand type
} txl_model_info_t;

/// A memref argument is passed as a pointer to MLIR's descriptor for its
/// rank r: {void *allocated; void *aligned; int64_t offset; int64_t sizes[r];
/// int64_t strides[r];} — 3 + 2r machine words, row-major strides.
#define TXL_MEMREF_WORDS(rank) (3 + 2 * (rank))

/// The generated segment entry point, packed calling convention: `args[i]`
/// points at argument i. Arguments, in order:
///   params[n_params]          rank-r memref descriptors, static shapes
///   data, target              memref<?x?xi64>   [qlen, batch]
///   mems[n_layer + 1]         memref<?x?xDxf32> [mlen, batch, d_model]
///   mem_len, clamp_len, same_length   int64_t* (run-time settings)
///   dropout_seed, dropout_offset, dropout_column, training   int64_t*:
///                             training != 0 runs the official train-mode
///                             dropout (and dropatt); 0 is eval mode, the
///                             other three are then ignored. The masks are a
///                             pure function of (seed, offset, site, global
///                             batch column, element), the call's columns
///                             being the global columns [dropout_column,
///                             dropout_column + batch): the same values give
///                             the same masks, in txl_segment_grad too, and a
///                             batch split into column ranges draws the
///                             masks of the whole. Use a new offset per
///                             update (e.g. the step).
///   nll (out)                 memref<?x?xf32>   [qlen, batch]
///   new_mems[n_layer + 1] (out) memref<?x?xDxf32> [min(mem_len, mlen+qlen),
///   batch, d_model]
/// Outputs are allocated by the caller; the generated code never returns an
/// allocation it made.
typedef void (*txl_segment_fn)(void **args);

/// The generated backward segment (`@segment_grad`, paper §3.2: the memory
/// is a constant), packed like txl_segment_forward: the same arguments, one
/// more after `training`, loss_scale (float*: a power of two, 1 without
/// dynamic loss scaling), the same outputs, then one more output per
/// *trainable* parameter, in parameter order: float32 with the parameter's
/// shape, the gradient of loss_scale times the mean NLL of the segment.
/// Objective "alrfou" (txl_model_info.objective): target is memref<?x?xi64>
/// [qlen + 1, batch]; loss_weights memref<2·n_layer x f32> and
/// position_weights memref<?xf32> [qlen] come between `training` and
/// loss_scale; `nll` is the weighted loss (txl_run_options_t) and three
/// outputs memref<?x?xf32> [qlen, batch], its parts, follow new_mems.
#ifdef __GNUC__
#define TXL_WEAK __attribute__((weak))
#else
#define TXL_WEAK
#endif

/// One optimizer update runs as `parts` element ranges: part p of a tensor
/// of n elements is its row-major elements [n·p/parts, n·(p+1)/parts). With
/// T the trainable parameters in parameter order and S = n_optim_states:
///
/// Every tensor is passed flat, as memref<numel x f32>.
///
/// The CPU target's functions take one tensor per call (their code is
/// compiled once, whatever the number of parameters):
///
/// The clipping norm's partial sum of one gradient (`@squared_norm_part`),
/// packed:
///   grad                        float32 memref
///   part, parts                 int64_t*
///   sum (out)                   memref<1xf32>: Σ g² over part `part` of
///                               the gradient
/// The session adds the sums of the T gradients in parameter order (f32),
/// one total per part.
///
/// One parameter's update (`@optimizer_update`), packed:
///   param, grad                 float32 memrefs
///   states[S]                   adam: exp_avg then exp_avg_sq; sgd: the
///                               momentum buffer; adagrad: the sum
///   lr                          double* (the lr of this update)
///   step                        int64_t* (1 for the first update)
///   inv_loss_scale              float*: 1 / the loss scale the gradients
///                               carry (a power of two; 1 without scaling):
///                               the norm and every gradient read are
///                               multiplied by it
///   partials                    memref<?xf32>: the `parts` totals above, in
///                               part order
///   part, parts                 int64_t*
/// Gradients are clipped to the global norm `clip` (clip_grad_norm_) when
/// clip > 0; the norm is the square root of the partials added in order
/// (f32), times inv_loss_scale. The update is in place: part `part` of the
/// parameter and its states is overwritten and nothing else is written, so
/// the parts of one update may run concurrently once every partial sum is
/// known. The norm (so each result) depends on `parts` only through the
/// order of the partial sums.
///
/// GPU targets (txl_model_info.backend not TXL_BACKEND_CPU) take every tensor
/// in one call instead, each memref a device buffer:
///
/// The clipping norm's partial sums (`@grad_squared_norm`), packed:
///   grads[T]                    float32 memrefs
///   partials (out)              memref<?xf32>: all parts at once, part p
///                               being elements p, p + parts, ... of each
///                               tensor (parts = (its size − TXL_NORM_SUMS)
///                               / groups), then TXL_NORM_SUMS sums of the
///                               parts (txl/device.h), which the host reads
///
/// The update (`@optimizer_update` of every parameter, `@optimizer_step`),
/// packed:
///   params[T], grads[T]         float32 memrefs
///   states[S][T]                as above, state list by state list
///   lr, step, inv_loss_scale    as above
///   grad_norm                   float*: the global L2 norm of the
///                               gradients before clipping, unscaled: the
///                               square root of the sums above added in
///                               order, times inv_loss_scale (the host's;
///                               the step reads no device scalar back)
///   part, parts                 int64_t*: 0 and 1

/// The generated schedule (`@learning_rate`), packed: step (int64_t*, the
/// number of updates done), lr (double*, the lr in effect for update `step`),
/// max_step (int64_t*, the run's length: the cosine schedule's T_max),
/// out memref<1xf64>: the lr train.py sets after update `step` (step 0: the
/// lr of the first update).

/// The model's distribution (`@segment_log_probs`), packed like
/// txl_segment_forward without `target`: its `nll` output is
/// memref<?x?x?xf32> [qlen, batch, n_token], every token's log-probability
/// (log_softmax of the crit's logits, or the adaptive softmax's whole
/// distribution) at every position; the memory is carried as in the
/// forward.

/// The key/value-cache forms of the eval forward (CPU target, attn_type 0;
/// SegmentBuilder.h), packed:
///
/// `txl_segment_r_head_k`: params[n_params], klen, clamp_len (int64_t*),
///   then n_layer outputs memref<?x?xf32> [klen, n_head·d_head]: layer l's
///   r_head_k (official r_net of pos_emb over distances klen-1 ... 0).
/// `txl_segment_kv`: params[n_params], data, target as txl_segment_forward
///   (no memory: only its keys and values are read), then k_window[n_layer],
///   v_window[n_layer] (memref<?x?x?xf32> [mlen + qlen, batch,
///   n_head·d_head]: layer l's keys and values of its memory rows in rows
///   [0, mlen), and room in the last qlen rows, into which the entry writes
///   the segment's keys and values), r_head_k[n_layer] (as above, klen =
///   mlen + qlen), mem_len, same_length (int64_t*); outputs: nll, hids[n_layer
///   + 1] [qlen, batch, d_model] (the segment's rows of each memory: official
///   _update_mems appends them and keeps the last min(mem_len, mlen + qlen)
///   rows, and the caller keeps as many rows of each window). Eval mode
///   only; per-token NLL and memory as txl_segment_forward's.
/// `txl_segment_log_probs_kv`: txl_segment_kv without target, its nll
///   output [qlen, batch, n_token] log-probabilities as
///   txl_segment_log_probs.

/* Symbols a txlc-generated object defines: all but txl_accumulate_grads
   by default (that one only for a GPU target with batch_chunk > 1);
   txl_segment_grad is absent when the model was compiled with
   --backward=false, and the runtime then refuses `train` and
   --grad-segment; txl_segment_log_probs is absent from objects of a txlc
   from before it was emitted for every output layer, and the runtime then
   refuses `generate` and `score`. */
extern const txl_model_info_t txl_model_info;
void txl_segment_forward(void **args);
void txl_segment_grad(void **args) TXL_WEAK;
void txl_segment_log_probs(void **args) TXL_WEAK;
/* Absent for attn_type != 0 and txlc --kv-cache=false (and from GPU
   executables of a txlc before session 57); the runtime then evaluates
   through txl_segment_forward. */
void txl_segment_kv(void **args) TXL_WEAK;
void txl_segment_log_probs_kv(void **args) TXL_WEAK;
void txl_segment_r_head_k(void **args) TXL_WEAK;
/* The GPU targets' update; the CPU's is the per-tensor pair below. */
void txl_grad_squared_norm(void **args) TXL_WEAK;
void txl_optimizer_step(void **args) TXL_WEAK;
void txl_squared_norm_part(void **args) TXL_WEAK;
void txl_optimizer_update(void **args) TXL_WEAK;
void txl_learning_rate(void **args) TXL_WEAK;
/* GPU targets with [train] batch_chunk > 1: grads[T], chunk_grads[T]
   (device memref<n x f32> each, T = the trainable parameters in order),
   scale (float*), first (int64_t*); grads[i] = chunk_grads[i] * scale when
   first != 0, else grads[i] + chunk_grads[i] * scale, in place. */
void txl_accumulate_grads(void **args) TXL_WEAK;

/*===----------------------------------------------------------------------===*
 * Status
 *===----------------------------------------------------------------------===*/

typedef enum txl_status_code {
  TXL_OK = 0,
  TXL_INVALID_ARGUMENT = 1,
  TXL_NOT_FOUND = 2,
  TXL_IO_ERROR = 3,
  TXL_DATA_ERROR = 4,
  /// A device, its driver or a device library is missing or failed (the
  /// message names which, with the driver's error name).
  TXL_UNAVAILABLE = 5,
} txl_status_code_t;

/// NULL means success; otherwise an owned error object.
typedef struct txl_status *txl_status_t;

txl_status_code_t txl_status_code(txl_status_t status);
/// The message, valid until txl_status_free.
const char *txl_status_message(txl_status_t status);
void txl_status_free(txl_status_t status);

/*===----------------------------------------------------------------------===*
 * Session: weights + memory + the compiled segment function
 *===----------------------------------------------------------------------===*/

typedef struct txl_session txl_session_t;

/// Run-time settings of one segment call (official eval.py's overrides, and
/// train mode). A zero-initialised tail means eval mode.
typedef struct txl_run_options {
  int64_t mem_len;      ///< rows of memory kept after the segment (0 = none)
  int64_t clamp_len;    ///< clamp relative distances when > 0
  int32_t same_length;  ///< official `same_length` mask; requires mem_len > 0
  int64_t dropout_seed; ///< Philox key of the dropout masks
  int64_t dropout_offset; ///< counter part: a new value per update
  int32_t training;       ///< nonzero: apply dropout/dropatt (train mode)
  /// Backward runs only: the gradients are those of 2^loss_scale_log2 times
  /// the mean NLL (dynamic loss scaling; 0: the plain gradient).
  int32_t loss_scale_log2;
  /// Backward runs of objective "alrfou" only (required there, ignored
  /// otherwise): the target then has qlen + 1 rows, row i + 1 being the
  /// character two positions after data row i, and the loss of position
  /// (i, b) is position_weights[i] · Σ_k loss_weights[k] · nll_k(i, b) over
  /// the 2·n_layer heads (k = l: layer l's next character, the last layer's
  /// being the crit; k = n_layer + l: its two-ahead head). `out_nll`
  /// receives that loss, the gradients are those of its mean.
  const float *loss_weights;     ///< [2·n_layer]
  const float *position_weights; ///< [qlen]
  /// When not NULL: [3, qlen, batch], the loss's parts (the crit's NLL, the
  /// intermediate layers' next-character heads, the two-ahead heads), each
  /// weighted as in the loss; they sum to `out_nll`.
  float *out_loss_parts;
  /// The global batch column of this call's column 0: the masks of column
  /// c are those column dropout_column + c draws in any call with the same
  /// seed and offset. A `batch_chunk` chunk or a data-parallel rank that
  /// runs columns [c0, c0 + n) of the global batch passes c0, and so draws
  /// the masks of the whole batch in one call (0 for the whole batch).
  int64_t dropout_column;
} txl_run_options_t;

/// Creates a session over a generated model. `segment_fn` may be NULL to use
/// the linked `txl_segment_forward`. The GPU targets open device
/// $TXL_DEVICE when set, else, for CUDA, the process's rank on its machine
/// under an MPI launcher (one GPU per rank: OMPI_COMM_WORLD_LOCAL_RANK and
/// the like), else device 0.
txl_status_t txl_session_create(const txl_model_info_t *info,
                                txl_segment_fn segment_fn,
                                txl_session_t **out_session);
void txl_session_release(txl_session_t *session);

/// Threads of a segment call (default: OpenBLAS's default, all cores;
/// 0 restores it). The batch columns are independent streams, so a call of
/// `batch` columns runs as min(threads, batch) column slices in parallel,
/// each on its own thread with single-threaded BLAS; with one slice (batch 1
/// or threads 1) BLAS gets all the threads. Slices split the columns evenly
/// in order; the backward's gradient is the token-weighted sum of the
/// slices' mean-NLL gradients, summed in slice order. A slice draws the
/// dropout masks of its global columns (txl_run_options_t's
/// dropout_column), the masks of the one-slice call. Results are therefore
/// reproducible for a given thread count, and equal to the one-slice run up
/// to float rounding, in train mode too. Errors: negative threads.
txl_status_t txl_session_set_threads(txl_session_t *session, int32_t threads);
/// The thread count in effect (txl_session_set_threads, resolved).
int32_t txl_session_threads(txl_session_t *session);
/// The column slices a segment of `batch` columns runs in on this session:
/// min(threads, batch) where the session's device is the host (the CPU
/// target's batch-parallel slices), 1 on the GPU targets (one call over the
/// whole batch). A data-parallel run passes ranks × slices as the
/// optimizer step's `parts` (txl_session_optimizer_step). 0 for a NULL
/// session or a batch below 1.
int32_t txl_session_batch_slices(const txl_session_t *session, int64_t batch);

/// Loads every parameter from a safetensors checkpoint (official names, or the
/// tied alias). Errors name the file and the tensor: missing, wrong dtype,
/// wrong shape, truncated data, and a tensor that is none of this model's
/// (the official load_state_dict(strict=True) refuses them: a 4-layer
/// checkpoint loaded into a 3-layer model) unless
/// txl_session_allow_extra_tensors; the runtime's own training state
/// (`train.*`, `optim.*`) is never an extra.
txl_status_t txl_session_load_checkpoint(txl_session_t *session,
                                         const char *path);

/// With `allow` nonzero, txl_session_load_checkpoint passes over tensors
/// that are not this model's (load_state_dict(strict=False)); 0 (the
/// default) refuses them.
txl_status_t txl_session_allow_extra_tensors(txl_session_t *session,
                                             int32_t allow);

/// Initialises every parameter from `seed` as the official train.py
/// `weights_init` does ([train] init, init_std, init_range, proj_init_std;
/// see txl/rt/session/ParamInit.h). Errors: an unknown init scheme.
txl_status_t txl_session_init_parameters(txl_session_t *session,
                                         uint64_t seed);

/// Parameter `index` (txl_param_info_t order), float32 row-major with the
/// parameter's shape, owned by the session (on the GPU targets a host copy,
/// read back after device updates; writing to it does not reach the
/// device). Errors: no parameters loaded; index out of range.
txl_status_t txl_session_parameter(txl_session_t *session, int32_t index,
                                   float **out_data);

/// Replaces the memory: `layers[l]` (l = 0..n_layer) is row-major float32
/// [mlen, batch, d_model], copied. `layers` may be NULL when mlen = 0.
/// Errors: negative mlen, non-positive batch, a missing layer.
txl_status_t txl_session_set_memory(txl_session_t *session, int64_t mlen,
                                    int64_t batch, const float *const *layers);

/// What a run does, for txl_session_check_device_memory.
typedef enum txl_run_kind {
  TXL_RUN_EVAL = 0,      ///< per-token NLL of targets (eval, run-segments)
  TXL_RUN_TRAIN = 1,     ///< train: backward, update and validation
  TXL_RUN_LOG_PROBS = 2, ///< every token's log-probability (generate, score)
  TXL_RUN_GRADIENTS = 3, ///< NLL and gradients (run-segments --grad-segment)
} txl_run_kind_t;

/// The largest segments of a run, for txl_session_check_device_memory.
typedef struct txl_device_memory_plan {
  txl_run_kind_t kind;
  /// The longest segment's rows, the memory's rows (the memory grows to
  /// mem_len) and the columns of one segment run. Training: one chunk's
  /// columns (batch_size / batch_chunk of the rank's columns).
  int64_t qlen, mem_len, batch;
  /// Training: the batch_chunk chunks, each keeping its own memory of
  /// mem_len rows x `batch` columns on the device; 1 otherwise.
  int64_t chunks;
  /// Training: the validation's segment (train.py's evaluate(): eval
  /// tgt_len rows over eval mem_len memory rows, eval_batch columns; 0
  /// columns for none), run between updates with the training state kept.
  int64_t eval_qlen, eval_mem_len, eval_batch;
} txl_device_memory_plan_t;

/// GPU targets, before the checkpoint is loaded: checks that the run of
/// `plan` fits in the device's free memory and prints "device memory: the
/// run needs X MiB (N bytes): ...; Y MiB free of Z MiB" to stderr. First,
/// by arithmetic, the state a run keeps: the parameters, every chunk's
/// memory ((n_layer + 1) x mem_len x batch x d_model floats each), and
/// when training a gradient and the optimizer's state tensors per
/// trainable parameter (with chunks > 1 a second gradient, one chunk's).
/// Then the whole need, measured by a dry run (txl/device.h,
/// txl_device_begin_dry_run) of the compiled code on buffers no memory
/// backs, at the largest shapes of `plan`: one segment of qlen rows over
/// mem_len memory rows (training: its backward, the chunks' gradient sum
/// and the update, then the validation's segment with the other chunks'
/// memories kept). The need is the most bytes held at once: what
/// txl_session_report_device_memory measures at the end of a run whose
/// segments reach those shapes. Nothing is allocated, written or launched.
/// Errors: TXL_UNAVAILABLE "the run needs X MiB of device memory ... but
/// the device has Y MiB free of Z MiB" (the state alone, or everything);
/// TXL_INVALID_ARGUMENT for qlen, batch or chunks < 1, eval_qlen < 1 with
/// eval_batch > 0, or a negative mem_len, eval_mem_len or eval_batch.
/// Does nothing on the CPU target.
txl_status_t
txl_session_check_device_memory(txl_session_t *session,
                                const txl_device_memory_plan_t *plan);

/// GPU targets: prints "device memory: peak X MiB (N bytes) in use ..."
/// (parameters, memory state and the largest segment workspace so far) to
/// stderr. Does nothing on the CPU target.
txl_status_t txl_session_report_device_memory(txl_session_t *session);

/// Drops the memory (mlen = 0) for a stream of `batch` columns.
txl_status_t txl_session_reset_memory(txl_session_t *session, int64_t batch);

/// Turns the key/value cache (see txl_session_run_segment) on (the default)
/// or off (`enabled` 0: every run goes through txl_segment_forward, as
/// `--no-kv-cache` asks). Turning it off drops the cache.
txl_status_t txl_session_set_kv_cache(txl_session_t *session, int32_t enabled);

/// Nonzero when the session's eval-mode runs can use the key/value cache:
/// it is on, the session runs the linked segment (it was created with a
/// NULL segment_fn), the executable has txl_segment_kv,
/// txl_segment_log_probs_kv and txl_segment_r_head_k (txlc builds them for
/// the CPU target), and its device's buffer handles can be offset to a
/// window (the host, CUDA; not OpenCL).
int32_t txl_session_kv_cache_active(const txl_session_t *session);

/// Nonzero when the next eval-mode run goes through the key/value cache:
/// it is active and describes the current memory.
int32_t txl_session_kv_cache_ready(const txl_session_t *session);

/// Floats the key/value cache holds at most for a memory of `mem_len` rows
/// and `batch` columns, segments of at most mem_len positions: each layer's
/// keys and values of the memory rows with room for mem_len more rows to
/// append into, 2·n_layer·2·mem_len·batch·n_head·d_head (the memory itself
/// is kept the same way); r_head_k adds n_layer·klen·n_head·d_head, klen =
/// mem_len + qlen, shared by the batch. Writes the count to `out_floats`.
/// Errors (TXL_INVALID_ARGUMENT): a null argument, a negative `mem_len` or
/// `batch`, a count past INT64_MAX.
txl_status_t txl_kv_cache_floats(const txl_model_info_t *info, int64_t mem_len,
                                 int64_t batch, int64_t *out_floats);

/// The most memories a session keeps (txl_session_select_memory).
#define TXL_MAX_MEMORY_SLOTS 1024

/// Makes memory slot `slot` the session's memory, the one every run, reset,
/// set and read uses, and keeps the current one under its own slot (slot 0
/// at creation): official train.py keeps one `mems` per batch chunk. On the
/// GPU targets every slot's memory stays on the device, and selecting one
/// moves nothing. A slot not selected before holds no memory: reset or set
/// it before a run. Errors: slot outside [0, TXL_MAX_MEMORY_SLOTS).
txl_status_t txl_session_select_memory(txl_session_t *session, int64_t slot);

/// Runs one segment: `data`/`target` are row-major int64 [qlen, batch];
/// `out_nll` receives row-major float32 [qlen, batch] per-token NLL in nats.
/// Memory is carried: the new memory replaces the old one.
///
/// Key/value cache: an eval-mode run (options->training == 0) goes through
/// txl_segment_kv when txl_session_kv_cache_active, and then projects only
/// its own qlen rows through each layer's qkv_net; the session keeps the
/// memory rows' keys and values next to the memory (txl_kv_cache_floats)
/// and every layer's r_head_k for the last (klen, clamp_len). The cache
/// describes the memory from txl_session_reset_memory on, as long as every
/// run goes through it: txl_session_set_memory, txl_session_select_memory,
/// a training or backward run, and anything that may change the parameters
/// (loading, initialising, an optimizer step, txl_session_parameter) drop
/// it, and eval runs then go through txl_segment_forward until the next
/// reset. Both paths give the same NLL and memory (within float rounding:
/// the products group the rows differently).
txl_status_t txl_session_run_segment(txl_session_t *session,
                                     const int64_t *data,
                                     const int64_t *target, int64_t qlen,
                                     int64_t batch,
                                     const txl_run_options_t *options,
                                     float *out_nll);

/// txl_session_run_segment without waiting for the device (issue 51: no
/// host synchronisation per segment on the GPU targets): the segment is
/// enqueued on the session's device and `out_nll` is written by the time
/// the next txl_session_synchronize(session) returns. Until then the
/// caller keeps `out_nll` valid and does not read it; `data` and `target`
/// may be reused when this returns. Where the session's device is the host
/// (the CPU target) the segment runs now and `out_nll` is written on
/// return. The same segment, memory, key/value cache and errors as
/// txl_session_run_segment; a failure on the device may surface at the
/// synchronisation instead.
txl_status_t
txl_session_enqueue_segment(txl_session_t *session, const int64_t *data,
                            const int64_t *target, int64_t qlen, int64_t batch,
                            const txl_run_options_t *options, float *out_nll);

/// Waits for everything enqueued on the session's device: the `out_nll` of
/// every txl_session_enqueue_segment and txl_session_enqueue_train_segment
/// before it is written when it returns.
/// Errors: no session; TXL_UNAVAILABLE from the device.
txl_status_t txl_session_synchronize(txl_session_t *session);

/// txl_session_run_segment returning the model's distribution instead of
/// the NLL of given targets (generation, scoring): `out_log_probs` receives
/// row-major float32 [qlen, batch, n_token], every token's log-probability
/// at every position. Memory is carried as in txl_session_run_segment.
/// Errors: those of txl_session_run_segment; TXL_INVALID_ARGUMENT when the
/// executable has no txl_segment_log_probs (built by an older txlc).
txl_status_t txl_session_run_segment_log_probs(txl_session_t *session,
                                               const int64_t *data,
                                               int64_t qlen, int64_t batch,
                                               const txl_run_options_t *options,
                                               float *out_log_probs);

/// txl_session_run_segment through the backward segment: also writes, for
/// every trainable parameter i, the gradient of the mean NLL of this segment
/// into `out_grads[i]` (float32, the parameter's shape; entries of buffers
/// are ignored and may be NULL). The memory is carried as in the forward run.
/// Errors: those of txl_session_run_segment; TXL_INVALID_ARGUMENT when the
/// executable has no backward segment or a gradient buffer is NULL.
txl_status_t txl_session_run_segment_grad(txl_session_t *session,
                                          const int64_t *data,
                                          const int64_t *target, int64_t qlen,
                                          int64_t batch,
                                          const txl_run_options_t *options,
                                          float *out_nll,
                                          float *const *out_grads);

/// Training. The session keeps the update's gradients and the optimizer
/// states (zero until set), on the device for the GPU targets, where the
/// parameters, gradients and states then never leave it during training.

/// One chunk's backward for the next update (train.py: torch.chunk of the
/// batch into `chunks` column chunks, the backward of loss / chunks per
/// chunk, the gradients accumulating): txl_session_run_segment_grad into
/// the session's gradients, chunk 0 replacing them, chunk c > 0 adding to
/// them. `data`, `target`, `qlen`, `batch` (the chunk's columns) and
/// `out_nll` as in txl_session_run_segment. Errors: those of
/// txl_session_run_segment_grad; no compiled optimizer; chunk not in [0,
/// chunks). The chunk's gradient and the sum stay on the session's device:
/// txl_accumulate_grads adds them where the executable has it (a GPU
/// target's with batch_chunk > 1), the host adds them otherwise (on a GPU
/// target without it, through copies of both).
txl_status_t txl_session_train_segment(txl_session_t *session,
                                       const int64_t *data,
                                       const int64_t *target, int64_t qlen,
                                       int64_t batch,
                                       const txl_run_options_t *options,
                                       int64_t chunk, int64_t chunks,
                                       float *out_nll);

/// txl_session_train_segment without waiting for the device (issue 51: no
/// host synchronisation per training segment on the GPU targets): the
/// chunk's backward is enqueued on the session's device and `out_nll` is
/// written by the time the next txl_session_synchronize(session) returns;
/// until then the caller keeps `out_nll` valid and does not read it. The
/// loss's parts of objective "alrfou" (options->out_loss_parts) are
/// written on return, as with txl_session_train_segment. Where the
/// session's device is the host (the CPU target) the chunk runs now and
/// `out_nll` is written on return. The same arguments, gradients and
/// errors as txl_session_train_segment; a failure on the device may surface
/// at the synchronisation instead.
txl_status_t txl_session_enqueue_train_segment(
    txl_session_t *session, const int64_t *data, const int64_t *target,
    int64_t qlen, int64_t batch, const txl_run_options_t *options,
    int64_t chunk, int64_t chunks, float *out_nll);

/// One update with the session's gradients (the generated
/// @squared_norm_part and @optimizer_update per tensor on the CPU,
/// @grad_squared_norm and @optimizer_step on the GPU targets:
/// clip_grad_norm_ then the
/// optimizer's step at `lr`, `step` counting updates from 1); writes the
/// gradient norm before clipping to `out_grad_norm`. The gradients carry a
/// loss scale of 2^loss_scale_log2 (the txl_run_options_t value of the
/// backward runs; 0 without loss scaling), which the norm and the update
/// divide out. When the norm is not finite (an Inf or NaN gradient, as an
/// f16 product's overflow gives) nothing is updated: `*out_grad_norm` is
/// that Inf or NaN and the status TXL_OK, so the caller decides (skip the
/// step and lower the scale, or stop). On the CPU the update runs as
/// `parts` element ranges, one per thread, and the norm depends on `parts`
/// through the order of its partial sums; the GPU targets use their own
/// fixed split (one work-item per part) and ignore `parts`. Errors
/// (TXL_INVALID_ARGUMENT): `lr` not finite or negative, `step` below 1,
/// loss_scale_log2 outside [0, 120], `parts` below 1.
txl_status_t txl_session_optimizer_step(txl_session_t *session, double lr,
                                        int64_t step, int32_t loss_scale_log2,
                                        int32_t parts, float *out_grad_norm);

/// The session's gradients for the next update as one flat float32 array:
/// the trainable parameters' gradients (as txl_session_train_segment left
/// them) concatenated in parameter order, txl_session_gradient_floats
/// floats in all (0 before the session's first training call allocates
/// its training state). Data-parallel
/// training (DataParallel.h) reads them after the backward, sums them over
/// the ranks and writes the sum back before txl_session_optimizer_step.
int64_t txl_session_gradient_floats(txl_session_t *session);

/// Copies floats [offset, offset + count) of the flat gradient into `out`
/// (from the device on the GPU targets). Errors: no training state; a
/// range outside [0, txl_session_gradient_floats); a null `out`.
txl_status_t txl_session_read_gradients(txl_session_t *session, int64_t offset,
                                        int64_t count, float *out);

/// Replaces floats [offset, offset + count) of the flat gradient with
/// `data` (to the device on the GPU targets). Errors as
/// txl_session_read_gradients.
txl_status_t txl_session_write_gradients(txl_session_t *session, int64_t offset,
                                         int64_t count, const float *data);

/// The buffer of the session's device holding trainable parameter
/// `index`'s gradient for the next update, float32 with the parameter's
/// shape, for collectives that sum it in place (NCCL): a txl_device_*
/// handle on the GPU targets, its host address on the CPU (whose device is
/// the host). NULL for a parameter that is not trainable or out of range,
/// and before the session's first training call.
void *txl_session_device_gradient(txl_session_t *session, int32_t index);

/// The generated schedule (@learning_rate): the lr train.py sets after
/// update `step` when `lr` was in effect (step 0: the first update's lr), in
/// a run of `max_step` updates (train.py's args.max_step: the cosine
/// schedule's T_max). Errors: TXL_INVALID_ARGUMENT for a null argument,
/// step < 0 or max_step < 1.
txl_status_t txl_session_learning_rate(txl_session_t *session, int64_t step,
                                       double lr, int64_t max_step,
                                       double *out_lr);

/// Optimizer state `state` (adam: 0 exp_avg, 1 exp_avg_sq; sgd: the
/// momentum buffer; adagrad: the sum) of parameter `index`, float32 with
/// the parameter's shape: a host copy owned by the session (read back from
/// the device), valid until the next update. Errors: state out of range;
/// a parameter that is out of range or not trainable.
txl_status_t txl_session_optimizer_state(txl_session_t *session,
                                         int32_t state, int32_t index,
                                         const float **out_data);

/// Replaces optimizer state `state` of parameter `index` (a resumed run);
/// `data` as txl_session_optimizer_state returns it. Errors as there.
txl_status_t txl_session_set_optimizer_state(txl_session_t *session,
                                             int32_t state, int32_t index,
                                             const float *data);

/// The current memory of layer `layer` (0 = embedding output, l = output of
/// layer l), row-major float32 [*out_mlen, batch, d_model]; owned by the
/// session, valid until the next run/reset.
txl_status_t txl_session_memory(txl_session_t *session, int64_t layer,
                                const float **out_data, int64_t *out_mlen);

/// The CPU code's heap allocations (txl-check-host-allocations renames the
/// generated code's malloc / aligned_alloc to these): the C library's
/// result, except that a failed allocation of a non-zero size prints
/// "error: out of memory (<size> bytes for the compiled model's working
/// buffers)" to stderr and exits with status 1 instead of returning NULL,
/// which the generated code has no path to handle.
void *txl_rt_malloc(size_t size);
void *txl_rt_aligned_alloc(size_t alignment, size_t size);

/// Where a failed run-time check of the host code ends (txl-lower-host-asserts
/// lowers each `cf.assert` to a call of it): prints "error: run-time check
/// failed: <message>" to stderr and exits with status 1. The checks are the
/// dynamic sizes a verifier could not compare, e.g. "txl.rel_attention:
/// pos_key must have as many rows as key (klen)"; a model compiled by txlc
/// always passes them.
#if defined(__cplusplus)
[[noreturn]]
#endif
void txl_rt_assert_failed(const char *message);

#ifdef __cplusplus
}
#endif

#endif /* TXL_RUNTIME_H */
