// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 --verify-diagnostics
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=f16 --verify-diagnostics

// The tensor-core kernels evaluate only: they write no row log-sum-exp, so
// an op whose lse result the backward reads (txl-save-attention-stats, the
// f32 training path) has no kernel at bf16 or f16.
func.func @lse(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
               %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
               %mem_len: index, %same: i1) -> (tensor<?x?x4x32xf32>, tensor<?x4x?xf32>) {
  // expected-error-re @below {{'txl.rel_attention' op has an lse result, which the {{(bf16|f16)}} tensor-core GPU kernel does not write (it evaluates only; train at f32)}}
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x?x4x32xf32>, tensor<?x4x?xf32>
}
