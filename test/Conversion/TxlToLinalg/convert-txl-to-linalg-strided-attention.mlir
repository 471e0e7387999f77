// RUN: txl-opt %s --convert-txl-to-linalg=strided-attention=true | FileCheck %s
// RUN: txl-opt %s --convert-txl-to-linalg | FileCheck %s --check-prefix=HEADS

// strided-attention (the CPU target's txl-to-linalg): txl.rel_attention
// reads the key and the value [klen, batch, n_head, d_head] in place, each
// the B operand of a linalg.contract (txl-linalg-to-blas: a cblas_sgemm per
// (head, batch column) on its strided rows), and the second contract
// writes the result in its [qlen, batch, n_head, d_head] layout: no
// heads-major copy (linalg.transpose) of k, v or the output. AC = (q + u)
// kᵀ accumulates onto the shifted view of the padded positional scores;
// pos_key is still transposed per head (one copy of klen·n_head·d_head)
// for the one product per head of BD.
// CHECK-LABEL: func.func @rel_attention
// CHECK-SAME: (%{{[^:]+}}: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>, %[[V:[^:]+]]: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>
// CHECK-NOT: linalg.transpose
// CHECK: linalg.transpose ins(%[[R]] : tensor<?x2x16xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.batch_matmul
// CHECK-NOT: linalg.transpose
// CHECK: %[[AC:.+]] = linalg.contract indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] ins(%{{.+}}, %[[K]] : tensor<2x?x?x16xf32>, tensor<?x?x2x16xf32>) outs(%{{.+}} : tensor<2x?x?x?xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x?x2x16xf32>)
// CHECK: %[[OUT:.+]] = linalg.contract indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] ins(%{{.+}}, %[[V]] : tensor<2x?x?x?xf32>, tensor<?x?x2x16xf32>) outs(%[[ZERO]] : tensor<?x?x2x16xf32>)
// CHECK-NEXT: return %[[OUT]] : tensor<?x?x2x16xf32>
// The default (GPU targets' fallback, whose device products are
// batch_matmuls): heads-major copies of k, v and the output.
// HEADS-LABEL: func.func @rel_attention
// HEADS-NOT: linalg.contract
// HEADS: linalg.transpose ins(%{{.+}} : tensor<2x?x?x16xf32>) outs(%{{.+}} : tensor<?x?x2x16xf32>) permutation = [2, 1, 0, 3]
// HEADS-NOT: linalg.contract
// HEADS: return
func.func @rel_attention(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                         %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                         %mem_len: index, %same_length: i1) -> tensor<?x?x2x16xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}
