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
// RUN: txl-opt %s --txl-rel-attention-to-cpu=vector-bits=0 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=BOTH
// RUN: txl-opt %s --txl-rel-attention-to-cpu=min-score-bytes=1000 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=AUTO
// RUN: txl-opt %s "--txl-rel-attention-to-cpu=query-tile=32 pack-prefetch=0" --split-input-file \
// RUN:   | FileCheck %s --check-prefix=TILE32
// RUN: txl-opt %s "--txl-rel-attention-to-cpu=boundary-masks=false math-exp=true" --split-input-file \
// RUN:   | FileCheck %s --check-prefix=ALLMASKS
// RUN: not txl-opt %s --txl-rel-attention-to-cpu=query-tile=0 --split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADTILE
// RUN: not txl-opt %s --txl-rel-attention-to-cpu=query-tile=257 --split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADTILE
// RUN: not txl-opt %s --txl-rel-attention-to-cpu=pack-prefetch=-1 --split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADPREFETCH

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
// klen + 64 + 64 + 4 vectors], v [klen + 64, d_pad], q + u and q + v [qlen, d_pad]), the
// tile's scores [64, 64] and output rows [64, d_pad] and its row
// statistics on the stack, nothing of size qlen x klen; the packing of k
// (then v) prefetching the cache lines of the row 32 rows ahead, clamped
// to the last row; the score blocks of 4 rows x 2 vectors of keys, 16
// vector.fma a step over d_head (8 accumulators carried by the loop); the
// online softmax of a row, the mask computed (from the indices, one i32
// compare per bound and vector) only where the row does not see the whole
// key tile: an scf.if on "the tile's last key visible and, with
// same_length, its first", whose then branch has no vector compare; the
// P·V blocks, 8 vector.fma a key.

// KERNEL-LABEL: func.func private @txl_rel_attention_cpu_f32_d32
// KERNEL-COUNT-5: memref.alloc({{.+}}) : memref<?x?xf32>
// KERNEL-NOT: memref.alloc
// KERNEL: memref.alloca() : memref<64x64xf32>
// KERNEL: memref.alloca() : memref<64x32xf32>
// KERNEL: %[[AHEAD:.+]] = arith.addi %{{.+}}, %c32{{(_[0-9]+)?}} : index
// KERNEL: %[[LAST:.+]] = arith.subi %{{.+}}, %c1{{(_[0-9]+)?}} : index
// KERNEL: %[[ROW:.+]] = arith.minsi %[[AHEAD]], %[[LAST]] : index
// KERNEL: memref.prefetch %{{.+}}[%[[ROW]], %c0{{(_[0-9]+)?}}], read, locality<3>, data
// KERNEL: memref.prefetch %{{.+}}[%[[ROW]], %c16{{(_[0-9]+)?}}], read, locality<3>, data
// KERNEL: scf.for {{.+}} iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// KERNEL-COUNT-2: vector.load {{.+}} : memref<?x?xf32>, vector<8xf32>
// KERNEL-COUNT-2: vector.fma
// KERNEL: %[[LAST_SEEN:.+]] = arith.cmpi sle, {{.+}} : index
// KERNEL: %[[NOT_SAME:.+]] = arith.xori %{{.+}}, %true{{(_[0-9]+)?}} : i1
// KERNEL: %[[FIRST:.+]] = arith.cmpi sgt, {{.+}} : index
// KERNEL: %[[FIRST_SEEN:.+]] = arith.ori %[[NOT_SAME]], %[[FIRST]] : i1
// KERNEL: %[[SEEN:.+]] = arith.andi %[[LAST_SEEN]], %[[FIRST_SEEN]] : i1
// KERNEL: scf.if %[[SEEN]] {
// KERNEL-NOT: arith.cmpi {{.+}} : vector
// KERNEL: vector.reduction <maxnumf>, {{.+}} fastmath<nnan>
// KERNEL-NOT: arith.cmpi {{.+}} : vector
// KERNEL: %[[X:.+]] = math.fma {{.+}} : vector<8xf32>
// KERNEL-NOT: math.exp {{.+}} : vector
// KERNEL: %[[LOW:.+]] = arith.cmpf olt, %[[X]], %{{.+}} : vector<8xf32>
// KERNEL: arith.select %[[LOW]], %{{.+}}, %[[X]] : vector<8xi1>, vector<8xf32>
// KERNEL: math.roundeven {{.+}} : vector<8xf32>
// KERNEL-NOT: arith.cmpi {{.+}} : vector
// KERNEL: vector.reduction <add>, {{.+}} fastmath<reassoc>
// KERNEL-NOT: arith.cmpi {{.+}} : vector
// KERNEL: } else {
// KERNEL: arith.cmpi sle, {{.+}} : vector<8xi32>
// KERNEL: arith.cmpi sgt, {{.+}} : vector<8xi32>
// KERNEL: arith.select {{.+}} : vector<8xi1>, vector<8xf32>
// KERNEL: vector.reduction <maxnumf>, {{.+}} fastmath<nnan>
// KERNEL: math.exp {{.+}} : vector<8xf32>
// KERNEL: vector.reduction <add>, {{.+}} fastmath<reassoc>
// KERNEL: scf.for {{.+}} iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {

// ROWS2-LABEL: func.func private @txl_rel_attention_cpu_f32_d32_rows2x4
// ROWS2: scf.for {{.+}} iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {

// BADROWS: error: score-rows and output-rows must be >= 1

// With vector-bits=512 the vectors are vector<16xf32> (AVX-512), d_pad 32,
// and a register block holds up to 20 of the 32 registers: AC's 4 rows x
// the tile's 4 key vectors (16 accumulators), the BD window's 4 x 5 (20;
// the fifth read by 3 rows), P·V's 4 x d_pad's 2 vectors (8).
// V512-LABEL: func.func private @txl_rel_attention_cpu_f32_d32_v512
// V512: memref.alloca() : memref<64x32xf32>
// V512: scf.for {{.+}} iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// V512-COUNT-4: vector.load {{.+}} : memref<?x?xf32>, vector<16xf32>
// V512-COUNT-16: vector.fma
// V512: scf.for {{.+}} iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// V512-COUNT-5: vector.load {{.+}} : memref<?x?xf32>, vector<16xf32>
// V512-COUNT-20: vector.fma
// V512: scf.for {{.+}} iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {

// BADBITS: error: vector-bits must be 0, 256 or 512

// With vector-bits=0 both kernels, the 512-bit one compiled for
// x86-64-v4, the call choosing by the runtime's byte.
// BOTH: llvm.mlir.global external @txl_rt_x86_64_v4() {addr_space = 0 : i32} : i8
// BOTH-LABEL: func.func @eval
// BOTH: %[[ADDR:.+]] = llvm.mlir.addressof @txl_rt_x86_64_v4 : !llvm.ptr
// BOTH: %[[FLAG:.+]] = llvm.load %[[ADDR]] : !llvm.ptr -> i8
// BOTH: %[[WIDE:.+]] = arith.cmpi ne, %[[FLAG]], %{{.+}} : i8
// BOTH: scf.if %[[WIDE]] {
// BOTH-NEXT: func.call @txl_rel_attention_cpu_f32_d32_v512(
// BOTH-NEXT: } else {
// BOTH-NEXT: func.call @txl_rel_attention_cpu_f32_d32(
// BOTH-LABEL: func.func private @txl_rel_attention_cpu_f32_d32_v512(
// BOTH-SAME: attributes {target_cpu = "x86-64-v4"}
// BOTH-LABEL: func.func private @txl_rel_attention_cpu_f32_d32(
// BOTH-SAME: f32) {

// query-tile=32 (the tile of sessions 50-57) and pack-prefetch=0: tile
// buffers of 32 rows and no prefetch (the negative case of the two
// KERNEL checks above); the name says both.
// boundary-masks=false: the mask on every tile (no scf.if on the row
// seeing the whole tile); math-exp=true: math.exp in every softmax.
// ALLMASKS-LABEL: func.func private @txl_rel_attention_cpu_f32_d32_allmasks_mathexp
// ALLMASKS-NOT: math.roundeven
// ALLMASKS: arith.cmpi sle, {{.+}} : vector<8xi32>
// ALLMASKS: vector.reduction <maxnumf>, {{.+}} fastmath<nnan>
// ALLMASKS-NOT: scf.if
// ALLMASKS: math.exp {{.+}} : vector<8xf32>
// ALLMASKS: vector.reduction <add>, {{.+}} fastmath<reassoc>

// TILE32-LABEL: func.func private @txl_rel_attention_cpu_f32_d32_q32_pf0
// TILE32-NOT: memref.prefetch
// TILE32: memref.alloca() : memref<32x64xf32>
// TILE32-NOT: memref.prefetch
// TILE32: return

// BADTILE: error: query-tile must be in [1, 256]
// BADPREFETCH: error: pack-prefetch must be >= 0

// With min-score-bytes, the kernel when n_head * batch * qlen * (klen + 1)
// * 4 bytes exceed it, else the op (for convert-txl-to-linalg).
// AUTO-LABEL: func.func @eval
// AUTO: %[[N:.+]] = tensor.dim %{{.+}}, %c2
// AUTO: %[[B:.+]] = tensor.dim %{{.+}}, %c1
// AUTO: %[[NB:.+]] = arith.muli %[[N]], %[[B]]
// AUTO: %[[Q:.+]] = tensor.dim %{{.+}}, %c0
// AUTO: %[[NBQ:.+]] = arith.muli %[[NB]], %[[Q]]
// AUTO: %[[K:.+]] = tensor.dim %{{.+}}, %c0
// AUTO: %[[K1:.+]] = arith.addi %[[K]], %c1
// AUTO: %[[E:.+]] = arith.muli %[[NBQ]], %[[K1]]
// AUTO: %[[BYTES:.+]] = arith.muli %[[E]], %c4
// AUTO: %[[LARGE:.+]] = arith.cmpi ugt, %[[BYTES]], %c1000
// AUTO: scf.if %[[LARGE]] -> (tensor<?x?x4x32xf32>) {
// AUTO: call @txl_rel_attention_cpu_f32_d32(
// AUTO: } else {
// AUTO-NEXT: %[[O:.+]] = txl.rel_attention
// AUTO-NEXT: scf.yield %[[O]]

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
// KERNEL: memref.alloca() : memref<64x48xf64>
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
// CHECK: %[[EVAL:.+]] = arith.xori %[[TRAINING]], %true
// CHECK: %[[O:.+]] = scf.if %[[EVAL]] -> (tensor<?x?x2x16xf32>) {
// CHECK: call @txl_rel_attention_cpu_f32_d16(
// CHECK: %[[K:.+]] = bufferization.to_tensor
// CHECK-NEXT: scf.yield %[[K]]
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[D:.+]] = txl.rel_attention {{.+}} dropatt(
// CHECK-NEXT: scf.yield %[[D]]
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
