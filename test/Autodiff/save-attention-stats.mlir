// RUN: txl-opt %s --txl-save-attention-stats --txl-generate-backward \
// RUN:   --canonicalize | FileCheck %s --check-prefix=GRAD
// RUN: txl-opt %s --txl-generate-backward | FileCheck %s --check-prefix=NOSAVE

// The backward of a txl.rel_attention with its lse result
// (--txl-save-attention-stats, RelAttentionAdjoint). The layer function
// has no argument attributes (its gradient function's activation
// arguments are then the first attributes it gets).
// Then the backward: the layer's forward variant returns the lse with the
// output (both a result and an activation its adjoint reads), and the layer's gradient
// function passes both to txl.rel_attention_grad as its saved group. The
// plain layer function (the evaluation segment's) loses the unused lse.
// Without the pass, the backward op has no saved group.
// GRAD-LABEL: func.func private @layer(
// GRAD: txl.rel_attention {{.*}} -> tensor<?x?x2x4xf32>{{$}}
// GRAD-LABEL: func.func private @layer_fwd(
// GRAD-SAME: -> (tensor<?x?x2x4xf32>, tensor<?x2x?xf32>)
// GRAD: %[[O:.+]], %[[LSE:.+]] = txl.rel_attention
// GRAD: return %[[O]], %[[LSE]]
// GRAD-LABEL: func.func private @layer_grad(
// GRAD-SAME: %[[SO:[^:]+]]: tensor<?x?x2x4xf32>, %[[SLSE:[^:]+]]: tensor<?x2x?xf32>, %[[DO:[^:]+]]: tensor<?x?x2x4xf32>)
// GRAD-NOT: txl.rel_attention %
// GRAD: txl.rel_attention_grad %[[DO]], {{.*}} saved(%[[SLSE]], %[[SO]] : tensor<?x2x?xf32>, tensor<?x?x2x4xf32>) {scale = 5.000000e-01 : f32}
// GRAD-LABEL: func.func @segment_grad(
// GRAD: %[[F:.+]]:2 = call @layer_fwd(
// GRAD: call @layer_grad({{.*}}, %[[F]]#0, %[[F]]#1, %{{.+}})
// NOSAVE-LABEL: func.func private @layer_grad(
// NOSAVE-NOT: saved(
// NOSAVE: return
func.func private @layer(%q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>,
                         %ml: index, %sl: i1) -> tensor<?x?x2x4xf32> {
  %o = txl.rel_attention %q, %q, %q, %r, %u, %u, %ml, %sl {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>,
        tensor<2x4xf32>, tensor<2x4xf32> -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}
func.func @segment(%q: tensor<?x?x2x4xf32> {txl.param = "q"}, %r: tensor<?x2x4xf32> {txl.param = "r"},
                   %u: tensor<2x4xf32> {txl.param = "u"}, %ml: index, %sl: i1) -> tensor<?x?x2x4xf32> {
  %o = call @layer(%q, %r, %u, %ml, %sl)
      : (tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, index, i1) -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}
