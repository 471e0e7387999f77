// RUN: txl-opt %s --split-input-file --txl-linear-nll-to-gpu | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-linear-nll-to-gpu | grep -c "gpu.func @linear_nll_rows_w2_v204_nobias(" | FileCheck %s --check-prefix=ONE
// ONE: {{^}}1{{$}}

// ptb_small's output layer (10,000 columns, a bias): the [qlen·batch, 128]
// rows times the weight without its bias (one txl.linear: the library
// product), then one launch of the row kernel, one workgroup of 8
// subgroups (256 work-items) per row; the NLL a fresh [rows] buffer
// expanded back to [qlen, batch].
// CHECK-LABEL: func.func @ptb(
// CHECK-SAME: %[[H:[^:]+]]: tensor<?x?x128xf32>, %[[W:[^:]+]]: tensor<10000x128xf32>, %[[T:[^:]+]]: tensor<?x?xi64>, %[[B:[^:]+]]: tensor<10000xf32>)
// CHECK-NOT: txl.linear_nll
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[H2:.+]] = tensor.collapse_shape %[[H]] {{\[}}[0, 1], [2]] : tensor<?x?x128xf32> into tensor<?x128xf32>
// CHECK: %[[T1:.+]] = tensor.collapse_shape %[[T]] {{\[}}[0, 1]] : tensor<?x?xi64> into tensor<?xi64>
// CHECK: %[[LOGITS:.+]] = txl.linear %[[H2]], %[[W]] : tensor<?x128xf32>, tensor<10000x128xf32> -> tensor<?x10000xf32>
// CHECK: %[[ROWS:.+]] = tensor.dim %[[H2]]
// CHECK: %[[OUT:.+]] = memref.alloc(%[[ROWS]]) : memref<?xf32>
// CHECK: %[[LB:.+]] = bufferization.to_buffer %[[LOGITS]] read_only : tensor<?x10000xf32> to memref<?x10000xf32, strided<[?, 1], offset: ?>>
// CHECK: %[[BB:.+]] = bufferization.to_buffer %[[B]] read_only : tensor<10000xf32> to memref<10000xf32, strided<[?], offset: ?>>
// CHECK: %[[TB:.+]] = bufferization.to_buffer %[[T1]] read_only : tensor<?xi64> to memref<?xi64, strided<[?], offset: ?>>
// CHECK: gpu.launch_func @txl_kernels::@linear_nll_rows_w8_v10000 blocks in (%[[ROWS]], %[[C1]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) args(%[[LB]] : {{.+}}, %[[BB]] : {{.+}}, %[[TB]] : {{.+}}, %[[OUT]] : memref<?xf32>)
// CHECK: %[[NLL1:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: %[[NLL:.+]] = tensor.expand_shape %[[NLL1]] {{\[}}[0, 1]]
// CHECK: return %[[NLL]]
//
// The kernel: row = the workgroup; work-item i reads columns i, i + 256,
// ... (coalesced), the bias added to each; a max sweep, then a sum of
// exp(x - max) sweep, each closed by a five-step xor butterfly and the 8
// subgroups' parts combined in workgroup memory after a barrier; work-item
// 0 writes max + log(sum) - the target's logit (0 outside [0, 10000)).
// CHECK: gpu.module @txl_kernels
// CHECK: gpu.func @linear_nll_rows_w8_v10000(%[[KL:[^:]+]]: memref<?x10000xf32, strided<[?, 1], offset: ?>>, %[[KB:[^:]+]]: memref<10000xf32, strided<[?], offset: ?>>, %[[KT:[^:]+]]: memref<?xi64, strided<[?], offset: ?>>, %[[KN:[^:]+]]: memref<?xf32>) workgroup(%[[MAXP:[^:]+]] : memref<8xf32, 3>, %[[SUMP:[^:]+]] : memref<8xf32, 3>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[KC256:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[KC10000:.+]] = arith.constant 10000 : index
// CHECK-DAG: %[[TID:.+]] = gpu.thread_id x
// CHECK-DAG: %[[ROW:.+]] = gpu.block_id x
// CHECK: %[[M:.+]] = scf.for %[[C:.+]] = %[[TID]] to %[[KC10000]] step %[[KC256]] iter_args(%[[ACC:.+]] = %[[NEGINF]]) -> (f32) {
// CHECK-NEXT: %[[X:.+]] = memref.load %[[KL]][%[[ROW]], %[[C]]]
// CHECK-NEXT: %[[BC:.+]] = memref.load %[[KB]][%[[C]]]
// CHECK-NEXT: %[[XB:.+]] = arith.addf %[[X]], %[[BC]] : f32
// CHECK-NEXT: %[[NM:.+]] = arith.maximumf %[[ACC]], %[[XB]] : f32
// CHECK-NEXT: scf.yield %[[NM]]
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: memref.store %{{.+}}, %[[MAXP]]
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: memref.load %[[MAXP]]
// CHECK: scf.for
// CHECK: math.exp %{{.+}} fastmath<afn> : f32
// CHECK: scf.yield
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: memref.store %{{.+}}, %[[SUMP]]
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: memref.load %[[SUMP]]
// CHECK: %[[T0:.+]] = memref.load %[[KT]][%[[ROW]]]
// CHECK: arith.cmpi ult, %[[T0]], %{{.+}} : i64
// CHECK: scf.if %{{.+}} -> (f32)
// CHECK: math.log
// CHECK: memref.store %{{.+}}, %[[KN]][%[[ROW]]]
// CHECK: gpu.return
func.func @ptb(%h: tensor<?x?x128xf32>, %w: tensor<10000x128xf32>, %t: tensor<?x?xi64>, %b: tensor<10000xf32>) -> tensor<?x?xf32> {
  %0 = txl.linear_nll %h, %w, %t, %b : tensor<?x?x128xf32>, tensor<10000x128xf32>, tensor<?x?xi64>, tensor<10000xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// enwik8's 204 symbols, no bias, static rows: 2 subgroups per row (64
// work-items); two output layers of that width share one kernel (the ONE
// line above).
// CHECK-LABEL: func.func @enwik8(
// CHECK: txl.linear %{{.+}}, %{{.+}} : tensor<64x512xf32>, tensor<204x512xf32> -> tensor<64x204xf32>
// CHECK: memref.alloc() : memref<64xf32>
// CHECK: gpu.launch_func @txl_kernels::@linear_nll_rows_w2_v204_nobias blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%{{.+}}, %{{.+}}, %{{.+}}) args(%{{.+}} : memref<?x204xf32, strided<[?, 1], offset: ?>>, %{{.+}} : memref<?xi64, strided<[?], offset: ?>>, %{{.+}} : memref<?xf32>)
// CHECK: gpu.launch_func @txl_kernels::@linear_nll_rows_w2_v204_nobias
// CHECK: gpu.func @linear_nll_rows_w2_v204_nobias({{.+}}) workgroup(%{{.+}} : memref<2xf32, 3>, %{{.+}} : memref<2xf32, 3>) kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// CHECK-COUNT-2: gpu.barrier
// CHECK: gpu.return
func.func @enwik8(%h: tensor<32x2x512xf32>, %w: tensor<204x512xf32>, %t: tensor<32x2xi64>) -> (tensor<32x2xf32>, tensor<32x2xf32>) {
  %0 = txl.linear_nll %h, %w, %t : tensor<32x2x512xf32>, tensor<204x512xf32>, tensor<32x2xi64> -> tensor<32x2xf32>
  %1 = txl.linear_nll %h, %w, %t : tensor<32x2x512xf32>, tensor<204x512xf32>, tensor<32x2xi64> -> tensor<32x2xf32>
  return %0, %1 : tensor<32x2xf32>, tensor<32x2xf32>
}

// -----

// A training segment's pair: txl.linear_nll_fwd whose block-major logits
// only txl.linear_nll_grad reads. Both go: the forward is the same product
// and row kernel, whose _lse form also writes each row's lse; the adjoint
// is one launch of the d_logits kernel into a fresh [rows, 10000] buffer
// (workgroups: rows × 40 column blocks of 256), then the three products'
// txl ops and the bias gradient's row sum over it. No block-major logits
// are left.
// CHECK-LABEL: func.func @pair(
// CHECK-SAME: %[[H:[^:]+]]: tensor<?x?x128xf32>, %[[W:[^:]+]]: tensor<10000x128xf32>, %[[T:[^:]+]]: tensor<?x?xi64>, %[[B:[^:]+]]: tensor<10000xf32>, %[[G:[^:]+]]: tensor<?x?xf32>)
// CHECK-NOT: txl.linear_nll
// CHECK-DAG: %[[C40:.+]] = arith.constant 40 : index
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK: %[[H2:.+]] = tensor.collapse_shape %[[H]]
// CHECK: %[[LOGITS:.+]] = txl.linear %[[H2]], %[[W]] : tensor<?x128xf32>, tensor<10000x128xf32> -> tensor<?x10000xf32>
// CHECK: %[[ROWS:.+]] = tensor.dim %[[H2]]
// CHECK: %[[NLLB:.+]] = memref.alloc(%[[ROWS]]) : memref<?xf32>
// CHECK: %[[LSEB:.+]] = memref.alloc(%[[ROWS]]) : memref<?xf32>
// CHECK: gpu.launch_func @txl_kernels::@linear_nll_rows_w8_v10000_lse blocks in (%[[ROWS]], %{{.+}}, %{{.+}}) threads in (%[[C256]], %{{.+}}, %{{.+}}) args({{.+}}, %[[NLLB]] : memref<?xf32>, %[[LSEB]] : memref<?xf32>)
// CHECK: %[[LSE:.+]] = bufferization.to_tensor %[[LSEB]] restrict writable
// CHECK: %[[G1:.+]] = tensor.collapse_shape %[[G]] {{\[}}[0, 1]]
// CHECK: %[[DLB:.+]] = memref.alloc(%[[ROWS]]) : memref<?x10000xf32>
// CHECK: %[[LB:.+]] = bufferization.to_buffer %[[LOGITS]] read_only
// CHECK: %[[BB:.+]] = bufferization.to_buffer %[[B]] read_only
// CHECK: %[[LSEK:.+]] = bufferization.to_buffer %[[LSE]] read_only
// CHECK: %[[GB:.+]] = bufferization.to_buffer %[[G1]] read_only
// CHECK: gpu.launch_func @txl_kernels::@linear_nll_dlogits_v10000 blocks in (%[[ROWS]], %[[C40]], %{{.+}}) threads in (%[[C256]], %{{.+}}, %{{.+}}) args(%[[LB]] : {{.+}}, %[[BB]] : {{.+}}, %[[LSEK]] : {{.+}}, %[[GB]] : {{.+}}, %{{.+}} : {{.+}}, %[[DLB]] : memref<?x10000xf32>)
// CHECK: %[[DL:.+]] = bufferization.to_tensor %[[DLB]] restrict writable
// CHECK: %[[DH2:.+]] = txl.linear_input_grad %[[DL]], %[[W]] : tensor<?x10000xf32>, tensor<10000x128xf32> -> tensor<?x128xf32>
// CHECK: %[[DH:.+]] = tensor.expand_shape %[[DH2]]
// CHECK: %[[DW:.+]] = txl.linear_weight_grad %[[DL]], %{{.+}} : tensor<?x10000xf32>, tensor<?x128xf32> -> tensor<10000x128xf32>
// CHECK: %[[DB:.+]] = txl.sum_leading %[[DL]] : tensor<?x10000xf32> -> tensor<10000xf32>
// CHECK: return %{{.+}}, %[[DH]], %[[DW]], %[[DB]]
//
// The d_logits kernel: row = workgroup x, column = 256 · workgroup y +
// work-item; dl = exp(x + bias - lse) · g, g subtracted at the target.
// CHECK: gpu.func @linear_nll_rows_w8_v10000_lse(
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<?xf32>
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<?xf32>
// CHECK: gpu.return
// CHECK: gpu.func @linear_nll_dlogits_v10000(%[[DLOG:[^:]+]]: memref<?x10000xf32, strided<[?, 1], offset: ?>>, %[[DBIAS:[^:]+]]: memref<10000xf32, strided<[?], offset: ?>>, %[[DLSE:[^:]+]]: memref<?xf32, strided<[?], offset: ?>>, %[[DG:[^:]+]]: memref<?xf32, strided<[?], offset: ?>>, %[[DT:[^:]+]]: memref<?xi64, strided<[?], offset: ?>>, %[[DOUT:[^:]+]]: memref<?x10000xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[BY:.+]] = gpu.block_id y
// CHECK: %[[SCALED:.+]] = arith.muli %[[BY]], %{{.+}} : index
// CHECK: %[[TX:.+]] = gpu.thread_id x
// CHECK: %[[COL:.+]] = arith.addi %[[SCALED]], %[[TX]] : index
// CHECK: %[[BX:.+]] = gpu.block_id x
// CHECK: %[[X:.+]] = memref.load %[[DLOG]][%[[BX]], %[[COL]]]
// CHECK: %[[XB:.+]] = arith.addf %[[X]], %{{.+}}
// CHECK: %[[GR:.+]] = memref.load %[[DG]][%[[BX]]]
// CHECK: %[[L:.+]] = memref.load %[[DLSE]][%[[BX]]]
// CHECK: %[[S:.+]] = arith.subf %[[XB]], %[[L]]
// CHECK: %[[P:.+]] = math.exp %[[S]] fastmath<afn> : f32
// CHECK: %[[D:.+]] = arith.mulf %[[P]], %[[GR]]
// CHECK: %[[TG:.+]] = memref.load %[[DT]][%[[BX]]]
// CHECK: %[[IS:.+]] = arith.cmpi eq, %{{.+}}, %[[TG]] : i64
// CHECK: %[[SUB:.+]] = arith.subf %[[D]], %[[GR]]
// CHECK: %[[OUT:.+]] = arith.select %[[IS]], %[[SUB]], %[[D]]
// CHECK: memref.store %[[OUT]], %[[DOUT]][%[[BX]], %[[COL]]]
// CHECK: gpu.return
func.func @pair(%h: tensor<?x?x128xf32>, %w: tensor<10000x128xf32>, %t: tensor<?x?xi64>, %b: tensor<10000xf32>, %g: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?x128xf32>, tensor<10000x128xf32>, tensor<10000xf32>) {
  %nll, %lse, %logits = txl.linear_nll_fwd %h, %w, %t, %b {block = 512 : i64} : tensor<?x?x128xf32>, tensor<10000x128xf32>, tensor<?x?xi64>, tensor<10000xf32> -> tensor<?x?xf32>, tensor<?xf32>, tensor<20x?x512xf32>
  %dh, %dw, %db = txl.linear_nll_grad %g, %h, %w, %t, %lse, %logits {block = 512 : i64} : tensor<?x?xf32>, tensor<?x?x128xf32>, tensor<10000x128xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<20x?x512xf32> -> tensor<?x?x128xf32>, tensor<10000x128xf32>, tensor<10000xf32>
  return %nll, %dh, %dw, %db : tensor<?x?xf32>, tensor<?x?x128xf32>, tensor<10000x128xf32>, tensor<10000xf32>
}
