// A txl.rel_attention of d_head 256, past the packed widths (32, 64, 128):
// at precision=bf16 its tensor-core kernel stages K and V in rolled loops
// and each lane reads its r rows from global memory
// (sass-budgets-attention.test's nested-loop control).
func.func @eval_d256(%q: tensor<?x?x2x256xf32>, %k: tensor<?x?x2x256xf32>, %v: tensor<?x?x2x256xf32>,
                     %r: tensor<?x2x256xf32>, %u: tensor<2x256xf32>, %vb: tensor<2x256xf32>,
                     %mem_len: index, %same: i1) -> tensor<?x?x2x256xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.0625 : f32}
      : tensor<?x?x2x256xf32>, tensor<?x?x2x256xf32>, tensor<?x?x2x256xf32>,
        tensor<?x2x256xf32>, tensor<2x256xf32>, tensor<2x256xf32> -> tensor<?x?x2x256xf32>
  return %o : tensor<?x?x2x256xf32>
}
