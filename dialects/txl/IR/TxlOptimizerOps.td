//===- TxlOptimizerOps.td - txl ops of the training step ---*- tablegen -*-===//
//
// Optimizer updates and the gradient norm, compiled into the model like the
// segment (so that every target gets them). Each update is elementwise over
// one parameter and reads the gradient times `grad_scale`, the global-norm
// clipping coefficient (torch.nn.utils.clip_grad_norm_), so the clipped
// gradient is never written back. The formulas are PyTorch's
// (torch.optim.{Adam, SGD, Adagrad}, single-tensor path), which the official
// train.py uses with their defaults. Hyper-parameters are f64 attributes:
// PyTorch combines them in Python floats (1 - beta2, bias corrections)
// before rounding to the tensors' f32, and so is the learning rate, an f64
// operand (the schedule's Python float) rounded where PyTorch rounds it.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_OPTIMIZER_OPS
#define TXL_OPTIMIZER_OPS

def Txl_SquaredNormOp : Txl_Op<"squared_norm", [Pure]> {
  let summary = "sum of the squares of all elements";
  let description = [{
    `sum(x * x)` over every element of `input`, an f32 scalar: the square of
    one parameter's gradient norm, from which the global norm of
    `clip_grad_norm_` is formed. The CPU lowering squares and sums in f64
    and rounds the sum once, so that the result does not depend on the
    summation order (the order of the additions is unspecified).

    ```mlir
    %s = txl.squared_norm %g : tensor<512x128xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input);
  let results = (outs F32:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Txl_AdamUpdateOp : Txl_Op<"adam_update", [Pure,
    AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                   "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "one Adam step of one parameter (torch.optim.Adam)";
  let description = [{
    With `g = grad * grad_scale`, `t = step` (1 for the first update),
    `bc1 = 1 - beta1^t` and `bc2 = 1 - beta2^t`:
    `m' = lerp(m, g, 1 - beta1)`, `v' = v * beta2 + (1 - beta2) * g * g`,
    `p' = p - (lr / bc1) * m' / (sqrt(v') / sqrt(bc2) + eps)` — PyTorch's
    Adam without weight decay or amsgrad (official train.py: betas
    (0.9, 0.999), eps 1e-8). `m` and `v` are the optimizer state
    (`exp_avg`, `exp_avg_sq`), zero before the first step. `lr / bc1` is
    formed in f64 and rounded once to f32, as PyTorch's Python-float
    `step_size`.

    ```mlir
    %p1, %m1, %v1 = txl.adam_update %p, %g, %m, %v, %lr, %step, %scale
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64}
        : tensor<512x128xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$param, RankedTensorOf<[F32]>:$grad,
                       RankedTensorOf<[F32]>:$exp_avg,
                       RankedTensorOf<[F32]>:$exp_avg_sq, F64:$lr, I64:$step,
                       F32:$grad_scale, F64Attr:$beta1, F64Attr:$beta2,
                       F64Attr:$eps);
  let results = (outs RankedTensorOf<[F32]>:$new_param,
                      RankedTensorOf<[F32]>:$new_exp_avg,
                      RankedTensorOf<[F32]>:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step `,`
    $grad_scale attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Txl_SgdUpdateOp : Txl_Op<"sgd_update", [Pure,
    AllTypesMatch<["param", "grad", "momentum_buffer", "new_param",
                   "new_momentum_buffer"]>]> {
  let summary = "one SGD step with momentum of one parameter (torch.optim.SGD)";
  let description = [{
    With `g = grad * grad_scale`: `b' = momentum * b + g`, `p' = p - lr * b'`
    (no dampening, no Nesterov; official train.py `--optim sgd --mom`). The
    buffer is zero before the first step, which gives PyTorch's `b' = g`;
    with `momentum = 0` this is plain SGD. `-lr` is rounded to f32, as
    PyTorch rounds `alpha=-lr`.

    ```mlir
    %p1, %b1 = txl.sgd_update %p, %g, %b, %lr, %scale {momentum = 0.0 : f64}
        : tensor<512x128xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$param, RankedTensorOf<[F32]>:$grad,
                       RankedTensorOf<[F32]>:$momentum_buffer, F64:$lr,
                       F32:$grad_scale, F64Attr:$momentum);
  let results = (outs RankedTensorOf<[F32]>:$new_param,
                      RankedTensorOf<[F32]>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `,` $lr `,` $grad_scale attr-dict
    `:` type($param)
  }];
  let hasVerifier = 1;
}

def Txl_AdagradUpdateOp : Txl_Op<"adagrad_update", [Pure,
    AllTypesMatch<["param", "grad", "sum", "new_param", "new_sum"]>]> {
  let summary = "one Adagrad step of one parameter (torch.optim.Adagrad)";
  let description = [{
    With `g = grad * grad_scale`: `s' = s + g * g`,
    `p' = p - lr * g / (sqrt(s') + eps)` (PyTorch's defaults: no learning
    rate decay, initial accumulator 0, eps 1e-10); `-lr` is rounded to f32
    as PyTorch rounds `value=-clr`.

    ```mlir
    %p1, %s1 = txl.adagrad_update %p, %g, %s, %lr, %scale {eps = 1.0e-10 : f64}
        : tensor<512x128xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$param, RankedTensorOf<[F32]>:$grad,
                       RankedTensorOf<[F32]>:$sum, F64:$lr, F32:$grad_scale,
                       F64Attr:$eps);
  let results = (outs RankedTensorOf<[F32]>:$new_param,
                      RankedTensorOf<[F32]>:$new_sum);
  let assemblyFormat = [{
    $param `,` $grad `,` $sum `,` $lr `,` $grad_scale attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

#endif // TXL_OPTIMIZER_OPS
