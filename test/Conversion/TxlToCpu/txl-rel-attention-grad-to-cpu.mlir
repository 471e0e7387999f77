// RUN: txl-opt %s --txl-rel-attention-to-cpu=grad=true --split-input-file | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-cpu=grad=true --split-input-file \
// RUN:   | FileCheck %s --check-prefix=KERNEL
// RUN: txl-opt %s "--txl-rel-attention-to-cpu=grad=true vector-bits=0" --split-input-file \
// RUN:   | FileCheck %s --check-prefix=BOTH
// RUN: txl-opt %s --txl-rel-attention-to-cpu --split-input-file \
// RUN:   | FileCheck %s --check-prefix=NOGRAD

// With grad, txl.rel_attention_grad becomes the checks of the dynamic
// sizes the kernel indexes by, read-only views of the operands, one
// allocation per gradient and a call of the backward kernel of its element
// type and d_head. Without grad (negative case) the op stays for
// convert-txl-to-linalg.

// CHECK-LABEL: func.func @grad
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: pos_key must have as many rows as key (klen)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: d_result must have the query shape"
// CHECK-COUNT-7: bufferization.to_buffer {{.*}} read_only
// CHECK-COUNT-6: memref.alloc
// CHECK: call @txl_rel_attention_grad_cpu_f32_d16(
// CHECK-COUNT-6: bufferization.to_tensor {{.+}} restrict writable
// CHECK-NOT: txl.rel_attention_grad
// CHECK-LABEL: func.func private @txl_rel_attention_grad_cpu_f32_d16(
// CHECK-SAME: : index, %{{.+}}: i1, %{{.+}}: f32)

// The kernel: the forward's five packed operands and seven more (vᵀ, k,
// r and d_result rows, the dk, dv and dr accumulators), all O((qlen +
// klen)·d_head), nothing of size qlen × klen; per query tile the forward
// pass (online softmax), then per key tile P, dP in AC's register blocks,
// dS, and the gradient products (P·V's form: 2 vectors shared by 4 rows,
// 8 vector.fma a step).

// KERNEL-LABEL: func.func private @txl_rel_attention_grad_cpu_f32_d16(
// KERNEL-COUNT-12: memref.alloc({{.+}}) : memref<?x?xf32>
// KERNEL-NOT: memref.alloc(
// KERNEL: memref.alloca() : memref<64x64xf32>
// KERNEL: vector.reduction <maxnumf>
// KERNEL: math.exp {{.+}} : vector<8xf32>
// KERNEL: math.log
// KERNEL: arith.cmpi sle, {{.+}} : vector<8xi64>
// KERNEL: math.exp {{.+}} : vector<8xf32>
// KERNEL: arith.select {{.+}} : vector<8xi1>, vector<8xf32>
// KERNEL: scf.for {{.+}} iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// KERNEL-COUNT-8: vector.fma
// KERNEL: return

// BOTH-LABEL: func.func @grad
// BOTH: %[[V4:.+]] = llvm.load
// BOTH: scf.if
// BOTH-NEXT: call @txl_rel_attention_grad_cpu_f32_d16_v512(
// BOTH: } else {
// BOTH-NEXT: call @txl_rel_attention_grad_cpu_f32_d16(
// BOTH-LABEL: func.func private @txl_rel_attention_grad_cpu_f32_d16_v512(
// BOTH-SAME: target_cpu = "x86-64-v4"

// NOGRAD-LABEL: func.func @grad
// NOGRAD: txl.rel_attention_grad
// NOGRAD-NOT: call
// NOGRAD: return
func.func @grad(%do: tensor<?x?x2x16xf32>, %q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>,
                %v: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>,
                %vb: tensor<2x16xf32>, %m: index, %s: i1)
    -> (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>,
      tensor<?x?x2x16xf32>, tensor<?x2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}

// -----

// With the saved group (the training forward's lse and output, what
// txl-save-attention-stats gives every txlc target): the kernel form that
// reads them, the two more operands viewed as the others, where the form
// above runs the forward again for each query tile (the negative case:
// its math.log and running max, which this form has neither of).

// CHECK-LABEL: func.func @saved
// CHECK-COUNT-9: bufferization.to_buffer {{.*}} read_only
// CHECK: call @txl_rel_attention_grad_cpu_f32_d16_saved(
// CHECK-LABEL: func.func private @txl_rel_attention_grad_cpu_f32_d16_saved(
// CHECK-SAME: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %{{.+}}: memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, %{{.+}}: index, %{{.+}}: i1, %{{.+}}: f32)

// KERNEL-LABEL: func.func private @txl_rel_attention_grad_cpu_f32_d16_saved(
// KERNEL-NOT: vector.reduction <maxnumf>
// KERNEL: math.exp {{.+}} : vector<8xf32>
// KERNEL-NOT: math.log
// KERNEL-NOT: vector.reduction <maxnumf>
// KERNEL: return
func.func @saved(%do: tensor<?x?x2x16xf32>, %q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>,
                 %v: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>,
                 %vb: tensor<2x16xf32>, %lse: tensor<?x2x?xf32>, %o: tensor<?x?x2x16xf32>,
                 %m: index, %s: i1)
    -> (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s
      saved(%lse, %o : tensor<?x2x?xf32>, tensor<?x?x2x16xf32>) {scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>,
      tensor<?x?x2x16xf32>, tensor<?x2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}

// -----

// With dropatt: the kernel when not training (dropatt is the identity),
// the op itself (for convert-txl-to-linalg, which draws the masks) when
// training; the kernel's saved form, for the saved group.

// CHECK-LABEL: func.func @dropatt_saved
// CHECK-SAME: : i64, %[[TRAINING:[^:]+]]: i1, %{{[^:]+}}: i64)
// CHECK: %[[EVAL:.+]] = arith.xori %[[TRAINING]], %true
// CHECK: %[[G:.+]]:6 = scf.if %[[EVAL]] -> (
// CHECK: call @txl_rel_attention_grad_cpu_f64_d41_saved(
// CHECK: } else {
// CHECK-NEXT: %[[DQ:[^,]+]], {{.+}} = txl.rel_attention_grad {{.+}} dropatt({{.+}}) saved(
// CHECK-NEXT: scf.yield %[[DQ]], 
// CHECK: return %[[G]]#0
// CHECK-LABEL: func.func private @txl_rel_attention_grad_cpu_f64_d41_saved(
func.func @dropatt_saved(%do: tensor<?x?x2x41xf64>, %q: tensor<?x?x2x41xf64>, %k: tensor<?x?x2x41xf64>,
                         %v: tensor<?x?x2x41xf64>, %r: tensor<?x2x41xf64>, %u: tensor<2x41xf64>,
                         %vb: tensor<2x41xf64>, %lse: tensor<?x2x?xf64>, %o: tensor<?x?x2x41xf64>,
                         %m: index, %s: i1, %seed: i64, %offset: i64, %training: i1, %col: i64)
    -> (tensor<?x?x2x41xf64>, tensor<?x?x2x41xf64>, tensor<?x?x2x41xf64>, tensor<?x2x41xf64>,
        tensor<2x41xf64>, tensor<2x41xf64>) {
  %base = arith.constant 0 : i64
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s
      dropatt(%seed, %offset, %training, %base, %col)
      saved(%lse, %o : tensor<?x2x?xf64>, tensor<?x?x2x41xf64>)
      {dropatt = 1.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 0.25 : f32}
      : tensor<?x?x2x41xf64>, tensor<?x?x2x41xf64>, tensor<?x?x2x41xf64>, tensor<?x2x41xf64>,
        tensor<2x41xf64>, tensor<2x41xf64>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x2x41xf64>, tensor<?x?x2x41xf64>,
      tensor<?x?x2x41xf64>, tensor<?x2x41xf64>, tensor<2x41xf64>, tensor<2x41xf64>
}

// -----

// Negative case: a dynamic d_head keeps the op, and no kernel is made.

// CHECK-LABEL: func.func @dynamic_head_stays
// CHECK: txl.rel_attention_grad
// CHECK-NOT: func.func private
// CHECK: return
func.func @dynamic_head_stays(%do: tensor<?x?x2x?xf32>, %q: tensor<?x?x2x?xf32>, %k: tensor<?x?x2x?xf32>,
                              %v: tensor<?x?x2x?xf32>, %r: tensor<?x2x?xf32>, %u: tensor<2x?xf32>,
                              %vb: tensor<2x?xf32>, %m: index, %s: i1)
    -> (tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>, tensor<?x2x?xf32>,
        tensor<2x?xf32>, tensor<2x?xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.25 : f32}
      : tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>, tensor<?x2x?xf32>,
        tensor<2x?xf32>, tensor<2x?xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>,
      tensor<?x?x2x?xf32>, tensor<?x2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>
}
