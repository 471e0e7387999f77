// RUN: txl-opt %s --txl-rel-attention-to-cpu --split-input-file | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-cpu --split-input-file \
// RUN:   | FileCheck %s --check-prefix=KERNEL
// RUN: txl-opt %s --txl-rel-attention-to-cpu=score-rows=2 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=ROWS2
// RUN: not txl-opt %s --txl-rel-attention-to-cpu=output-rows=0 --split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADROWS
// RUN: txl-opt %s --txl-rel-attention-to-cpu=vector-bits=512 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=V512
// RUN: not txl-opt %s --txl-rel-attention-to-cpu=vector-bits=128 --split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADBITS

// Each op becomes the checks of the dynamic sizes the kernel indexes by,
// one allocation of the output, read-only views of any layout of the
// operands and a call of the kernel of its element type and d_head, which
// both layers share.

// CHECK-LABEL: func.func @eval
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x4x32xf32>, %[[K:[^:]+]]: tensor<?x?x4x32xf32>, %[[V:[^:]+]]: tensor<?x?x4x32xf32>, %[[R:[^:]+]]: tensor<?x4x32xf32>, %[[U:[^:]+]]: tensor<4x32xf32>, %[[W:[^:]+]]: tensor<4x32xf32>, %[[MEM:[^:]+]]: index, %[[SAME:[^:]+]]: i1)
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: pos_key must have as many rows as key (klen)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: value must have as many rows as key (klen)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: query and key must agree on batch, n_head and d_head"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: query and value must agree on batch, n_head and d_head"
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x?x4x32xf32>
// CHECK: %[[QB:.+]] = bufferization.to_buffer %[[Q]] read_only
// CHECK: %[[QV:.+]] = memref.cast %[[QB]] {{.*}} to memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-COUNT-5: bufferization.to_buffer {{.*}} read_only
// CHECK: %[[OV:.+]] = memref.cast %[[OUT]]
// CHECK: %[[SCALE:.+]] = arith.constant 1.250000e-01 : f32
// CHECK: call @txl_rel_attention_cpu_f32_d32(%[[QV]], {{.+}}, %[[OV]], %[[MEM]], %[[SAME]], %[[SCALE]])
// CHECK: %[[O:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: call @txl_rel_attention_cpu_f32_d32(
// CHECK-NOT: txl.rel_attention
// CHECK-LABEL: func.func private @txl_rel_attention_cpu_f32_d32
// CHECK-NOT: func.func private

// The kernel: five packed operands (kT [d_head, klen + 64], rT [d_head,
// klen + 96], v [klen + 64, d_pad], q + u and q + v [qlen, d_pad]), the
// tile's scores [32, 64] and output rows [32, d_pad] and its row
// statistics on the stack, nothing of size qlen x klen; the score blocks
// of 4 rows x 2 vectors of keys, 16 vector.fma a step over d_head (8
// accumulators carried by the loop); the mask from the indices; an online
// softmax; the P·V blocks, 8 vector.fma a key.

// KERNEL-LABEL: func.func private @txl_rel_attention_cpu_f32_d32
// KERNEL-COUNT-5: memref.alloc({{.+}}) : memref<?x?xf32>
// KERNEL-NOT: memref.alloc
// KERNEL: memref.alloca() : memref<32x64xf32>
// KERNEL: memref.alloca() : memref<32x32xf32>
// KERNEL: scf.for {{.+}} iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// KERNEL-COUNT-2: vector.load {{.+}} : memref<?x?xf32>, vector<8xf32>
// KERNEL-COUNT-2: vector.fma
// KERNEL: arith.cmpi sle, {{.+}} : vector<8xi64>
// KERNEL: vector.reduction <maximumf>
// KERNEL: math.exp {{.+}} : vector<8xf32>
// KERNEL: vector.reduction <add>
// KERNEL: scf.for {{.+}} iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {

// ROWS2-LABEL: func.func private @txl_rel_attention_cpu_f32_d32_rows2x4
// ROWS2: scf.for {{.+}} iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {

// BADROWS: error: score-rows and output-rows must be >= 1

// With vector-bits=512 the vectors are vector<16xf32> (AVX-512), d_pad 32.
// V512-LABEL: func.func private @txl_rel_attention_cpu_f32_d32_v512
// V512: memref.alloca() : memref<32x32xf32>
// V512: scf.for {{.+}} iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {

// BADBITS: error: vector-bits must be 256 or 512

func.func @eval(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %w: tensor<4x32xf32>,
                %mem_len: index, %same: i1) -> tensor<?x?x4x32xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %w, %mem_len, %same {scale = 0.125 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  %o2 = txl.rel_attention %o, %k, %v, %r, %u, %w, %mem_len, %same {scale = 0.125 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o2 : tensor<?x?x4x32xf32>
}

// -----

// An op with the lse result calls the _lse form, which takes a [batch,
// n_head, qlen] buffer after the output; f64 and d_head 41 have their own
// kernels (d_pad 48).

// CHECK-LABEL: func.func @lse_f64
// CHECK: %[[LSE:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x2x?xf64>
// CHECK: call @txl_rel_attention_cpu_f64_d41_lse(
// CHECK: bufferization.to_tensor {{.+}} restrict writable : memref<?x?x2x41xf64>
// CHECK: bufferization.to_tensor %[[LSE]] restrict writable : memref<?x2x?xf64>
// CHECK-LABEL: func.func private @txl_rel_attention_cpu_f64_d41_lse(
// CHECK-SAME: memref<?x?x?xf64, strided<[?, ?, ?], offset: ?>>, %{{.+}}: index, %{{.+}}: i1, %{{.+}}: f64)
// KERNEL-LABEL: func.func private @txl_rel_attention_cpu_f64_d41_lse(
// KERNEL: memref.alloca() : memref<32x48xf64>
// KERNEL: math.log
func.func @lse_f64(%q: tensor<?x?x2x41xf64>, %k: tensor<?x?x2x41xf64>, %v: tensor<?x?x2x41xf64>,
                   %r: tensor<?x2x41xf64>, %u: tensor<2x41xf64>, %w: tensor<2x41xf64>,
                   %mem_len: index, %same: i1) -> (tensor<?x?x2x41xf64>, tensor<?x2x?xf64>) {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %w, %mem_len, %same {scale = 0.125 : f32}
      : tensor<?x?x2x41xf64>, tensor<?x?x2x41xf64>, tensor<?x?x2x41xf64>,
        tensor<?x2x41xf64>, tensor<2x41xf64>, tensor<2x41xf64> -> tensor<?x?x2x41xf64>, tensor<?x2x?xf64>
  return %o, %lse : tensor<?x?x2x41xf64>, tensor<?x2x?xf64>
}

// -----

// With dropatt, the kernel when evaluating (dropatt is the identity) and
// the op itself, for convert-txl-to-linalg, which draws the masks, when
// training.

// CHECK-LABEL: func.func @dropatt
// CHECK-SAME: %[[TRAINING:[^:]+]]: i1, %{{[^:]+}}: i64)
// CHECK: %[[O:.+]] = scf.if %[[TRAINING]] -> (tensor<?x?x2x16xf32>) {
// CHECK-NEXT: %[[D:.+]] = txl.rel_attention {{.+}} dropatt(
// CHECK-NEXT: scf.yield %[[D]]
// CHECK-NEXT: } else {
// CHECK: call @txl_rel_attention_cpu_f32_d16(
// CHECK: %[[K:.+]] = bufferization.to_tensor
// CHECK-NEXT: scf.yield %[[K]]
// CHECK: return %[[O]]
// CHECK-LABEL: func.func private @txl_rel_attention_cpu_f32_d16(
func.func @dropatt(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                   %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                   %mem_len: index, %same: i1, %seed: i64, %offset: i64, %training: i1,
                   %col: i64) -> tensor<?x?x2x16xf32> {
  %base = arith.constant 0 : i64
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same
      dropatt(%seed, %offset, %training, %base, %col)
      {dropatt = 1.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>,
        tensor<?x2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// Negative case: an op with a dynamic d_head stays for
// convert-txl-to-linalg, and no kernel is made.

// CHECK-LABEL: func.func @dynamic_head_stays
// CHECK: txl.rel_attention
// CHECK-NOT: func.call
// CHECK-NOT: func.func private
// CHECK: return
func.func @dynamic_head_stays(%q: tensor<?x?x2x?xf32>, %k: tensor<?x?x2x?xf32>, %v: tensor<?x?x2x?xf32>,
                              %r: tensor<?x2x?xf32>, %u: tensor<2x?xf32>, %vb: tensor<2x?xf32>,
                              %mem_len: index, %same: i1) -> tensor<?x?x2x?xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.25 : f32}
      : tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>,
        tensor<?x2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<?x?x2x?xf32>
  return %o : tensor<?x?x2x?xf32>
}
