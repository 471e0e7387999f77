// RUN: txl-opt %s --txl-embedding-grad-to-gpu | FileCheck %s
// RUN: txl-opt %s --txl-embedding-grad-to-gpu=test-reverse-ties=1 | FileCheck %s --check-prefix=REVERSE

// Without `into`: a zero-filled table, the sort on the [qlen · batch]
// tokens, then the rows kernel on d_result's rows, one subgroup per sorted
// position (ceil(N / 8) workgroups of 256).
// CHECK-LABEL: func.func @grad(
// CHECK-SAME: %[[DY:[^:]+]]: tensor<?x?x16xf32>, %[[TOK:[^:]+]]: tensor<?x?xi64>
// CHECK-DAG: %[[IDS:.+]] = tensor.collapse_shape %[[TOK]] {{\[}}[0, 1]]
// CHECK-DAG: %[[ROWS:.+]] = tensor.collapse_shape %[[DY]] {{\[}}[0, 1], [2]]
// CHECK: %[[N:.+]] = tensor.dim %[[IDS]]
// CHECK: %[[ORDER:.+]] = memref.alloc(%[[N]]) : memref<?xi64>
// CHECK: %[[SORTED:.+]] = memref.alloc(%[[N]]) : memref<?xi64>
// CHECK: %[[TABLE:.+]] = memref.alloc() : memref<50x16xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[TABLE]] : memref<50x16xf32>)
// CHECK: %[[SORTGRID:.+]] = arith.ceildivui %[[N]], %c256
// CHECK: gpu.launch_func @txl_kernels::@embedding_grad_sort blocks in (%[[SORTGRID]], %c1, %c1) threads in (%c256, %c1, %c1)
// CHECK: %[[ROWGRID:.+]] = arith.ceildivui %[[N]], %c8
// CHECK: gpu.launch_func @txl_kernels::@embedding_grad_rows blocks in (%[[ROWGRID]], %c1, %c1) threads in (%c256, %c1, %c1)
// CHECK: %[[OUT:.+]] = bufferization.to_tensor %[[TABLE]]
// CHECK: return %[[OUT]]
func.func @grad(%dy: tensor<?x?x16xf32>, %tokens: tensor<?x?xi64>) -> tensor<50x16xf32> {
  %0 = txl.embedding_grad %dy, %tokens : tensor<?x?x16xf32>, tensor<?x?xi64> -> tensor<50x16xf32>
  return %0 : tensor<50x16xf32>
}

// With `into`: the table starts as a copy of init (which stays unchanged).
// CHECK-LABEL: func.func @grad_into(
// CHECK-SAME: %[[INIT:[^:]+]]: tensor<50x16xf32>
// CHECK: %[[TABLE:.+]] = memref.alloc() : memref<50x16xf32>
// CHECK: %[[INITB:.+]] = bufferization.to_buffer %[[INIT]] read_only
// CHECK: memref.copy %[[INITB]], %[[TABLE]]
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch_func @txl_kernels::@embedding_grad_sort
// CHECK: gpu.launch_func @txl_kernels::@embedding_grad_rows
func.func @grad_into(%dy: tensor<?x?x16xf32>, %tokens: tensor<?x?xi64>, %init: tensor<50x16xf32>) -> tensor<50x16xf32> {
  %0 = txl.embedding_grad %dy, %tokens into %init : tensor<?x?x16xf32>, tensor<?x?xi64> -> tensor<50x16xf32>
  return %0 : tensor<50x16xf32>
}

// f64 (gradient checks): left to the generic lowering.
// CHECK-LABEL: func.func @grad_f64(
// CHECK: txl.embedding_grad %{{.+}}, %{{.+}} : tensor<?x?x16xf64>
func.func @grad_f64(%dy: tensor<?x?x16xf64>, %tokens: tensor<?x?xi64>) -> tensor<50x16xf64> {
  %0 = txl.embedding_grad %dy, %tokens : tensor<?x?x16xf64>, tensor<?x?xi64> -> tensor<50x16xf64>
  return %0 : tensor<50x16xf64>
}

// The adaptive embedding's gradient (div_val > 1), per cluster over every
// position: the local ids (t - lo inside [lo, hi), else -1), d_emb =
// d_result · proj (one product), the table's gradient through the sort
// kernels (which skip the -1s), and the projection's from the gathered
// table rows (zero for -1).
// CHECK-LABEL: func.func @adaptive(
// CHECK-SAME: %[[ADY:[^:]+]]: tensor<?x?x32xf32>, %[[ATOK:[^:]+]]: tensor<?x?xi64>, %[[T0:[^:]+]]: tensor<10x32xf32>, %[[T1:[^:]+]]: tensor<40x8xf32>, %[[P0:[^:]+]]: tensor<32x32xf32>, %[[P1:[^:]+]]: tensor<32x8xf32>
// CHECK-NOT: txl.adaptive_embedding_grad
// CHECK: %[[IDS0:.+]] = linalg.generic {{.+}} ins(%[[ATOK]] : tensor<?x?xi64>)
// CHECK: arith.cmpi sge, %{{.+}}, %c0_i64
// CHECK: arith.cmpi slt, %{{.+}}, %c10_i64
// CHECK: arith.select %{{.+}}, %{{.+}}, %c-1_i64
// CHECK: %[[DEMB0:.+]] = txl.linear_input_grad %[[ADY]], %[[P0]] : tensor<?x?x32xf32>, tensor<32x32xf32> -> tensor<?x?x32xf32>
// CHECK: gpu.launch_func @txl_kernels::@embedding_grad_sort
// CHECK: gpu.launch_func @txl_kernels::@embedding_grad_rows
// CHECK: %[[DT0:.+]] = bufferization.to_tensor %{{.+}} : memref<10x32xf32>
// CHECK: %[[EMB0:.+]] = linalg.generic {{.+}} ins(%[[IDS0]] : tensor<?x?xi64>)
// CHECK: tensor.extract %[[T0]]
// CHECK: %[[DP0:.+]] = txl.linear_weight_grad %[[ADY]], %[[EMB0]] : tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<32x32xf32>
// CHECK: %[[IDS1:.+]] = linalg.generic {{.+}} ins(%[[ATOK]] : tensor<?x?xi64>)
// CHECK: arith.cmpi sge, %{{.+}}, %c10_i64
// CHECK: arith.cmpi slt, %{{.+}}, %c50_i64
// CHECK: arith.subi %{{.+}}, %c10_i64
// CHECK: arith.select %{{.+}}, %{{.+}}, %c-1_i64
// CHECK: %[[DEMB1:.+]] = txl.linear_input_grad %[[ADY]], %[[P1]] : tensor<?x?x32xf32>, tensor<32x8xf32> -> tensor<?x?x8xf32>
// CHECK: gpu.launch_func @txl_kernels::@embedding_grad_sort
// CHECK: gpu.launch_func @txl_kernels::@embedding_grad_rows
// CHECK: %[[DT1:.+]] = bufferization.to_tensor %{{.+}} : memref<40x8xf32>
// CHECK: %[[EMB1:.+]] = linalg.generic {{.+}} ins(%[[IDS1]] : tensor<?x?xi64>)
// CHECK: tensor.extract %[[T1]]
// CHECK: %[[DP1:.+]] = txl.linear_weight_grad %[[ADY]], %[[EMB1]] : tensor<?x?x32xf32>, tensor<?x?x8xf32> -> tensor<32x8xf32>
// CHECK: return %[[DT0]], %[[DT1]], %[[DP0]], %[[DP1]]
func.func @adaptive(%dy: tensor<?x?x32xf32>, %tokens: tensor<?x?xi64>, %t0: tensor<10x32xf32>, %t1: tensor<40x8xf32>,
                    %p0: tensor<32x32xf32>, %p1: tensor<32x8xf32>)
    -> (tensor<10x32xf32>, tensor<40x8xf32>, tensor<32x32xf32>, tensor<32x8xf32>) {
  %dt0, %dt1, %dp0, %dp1 = txl.adaptive_embedding_grad %dy, %tokens
      tables(%t0, %t1 : tensor<10x32xf32>, tensor<40x8xf32>)
      projs(%p0, %p1 : tensor<32x32xf32>, tensor<32x8xf32>)
      {cutoff_ends = array<i64: 0, 10, 50>} : tensor<?x?x32xf32>, tensor<?x?xi64>
  return %dt0, %dt1, %dp0, %dp1 : tensor<10x32xf32>, tensor<40x8xf32>, tensor<32x32xf32>, tensor<32x8xf32>
}

// f64 stays for the generic lowering.
// CHECK-LABEL: func.func @adaptive_f64(
// CHECK: txl.adaptive_embedding_grad
func.func @adaptive_f64(%dy: tensor<?x?x8xf64>, %tokens: tensor<?x?xi64>, %t0: tensor<10x8xf64>, %t1: tensor<40x4xf64>,
                        %p0: tensor<8x8xf64>, %p1: tensor<8x4xf64>)
    -> (tensor<10x8xf64>, tensor<40x4xf64>, tensor<8x8xf64>, tensor<8x4xf64>) {
  %dt0, %dt1, %dp0, %dp1 = txl.adaptive_embedding_grad %dy, %tokens
      tables(%t0, %t1 : tensor<10x8xf64>, tensor<40x4xf64>)
      projs(%p0, %p1 : tensor<8x8xf64>, tensor<8x4xf64>)
      {cutoff_ends = array<i64: 0, 10, 50>} : tensor<?x?x8xf64>, tensor<?x?xi64>
  return %dt0, %dt1, %dp0, %dp1 : tensor<10x8xf64>, tensor<40x4xf64>, tensor<8x8xf64>, tensor<8x4xf64>
}

// The kernels, created once for every f32 op. The sort: a 256-token tile
// in workgroup memory; a position's rank counts the smaller tokens and the
// equal ones at earlier positions (`ult` on the position: stable), with a
// barrier after the tile's load and one before the next tile overwrites
// it; then order[rank] = p and sorted[rank] = token.
// CHECK: gpu.module @txl_kernels
// CHECK: gpu.func @embedding_grad_sort(%[[T:.+]]: memref<?xi64, strided<[?], offset: ?>>, %[[O:.+]]: memref<?xi64, strided<[?], offset: ?>>, %[[S:.+]]: memref<?xi64, strided<[?], offset: ?>>) workgroup(%[[TILE:.+]] : memref<256xi64, 3>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[P:.+]] = arith.addi %{{.+}}, %[[TID]] : index
// CHECK: %[[MINE:.+]] = scf.if
// CHECK: %[[RANK:.+]] = scf.for %[[BASE:.+]] = %c0 to %{{.+}} step %c256 iter_args
// CHECK: memref.store %{{.+}}, %[[TILE]][%[[TID]]]
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for %[[J:.+]] = %c0 to
// CHECK: %[[OTHER:.+]] = memref.load %[[TILE]][%[[J]]]
// CHECK: arith.cmpi slt, %[[OTHER]], %[[MINE]] : i64
// CHECK: arith.cmpi eq, %[[OTHER]], %[[MINE]] : i64
// CHECK: %[[Q:.+]] = arith.addi %[[BASE]], %[[J]] : index
// CHECK: arith.cmpi ult, %[[Q]], %[[P]] : index
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
// CHECK: %[[R:.+]] = arith.index_cast %[[RANK]] : i64 to index
// CHECK: memref.store %{{.+}}, %[[O]][%[[R]]]
// CHECK: memref.store %[[MINE]], %[[S]][%[[R]]]
// REVERSE: gpu.func @embedding_grad_sort
// REVERSE: arith.cmpi eq
// REVERSE-NEXT: arith.addi
// REVERSE-NEXT: arith.cmpi ugt

// The rows kernel: subgroup s of the workgroup takes sorted index
// 8 · block + s; it owns a row when it starts a run (s = 0 or the previous
// token differs) and the token lies in the table; lane l sums columns
// l, l + 32, ... over the run in order, from the table's value.
// CHECK: gpu.func @embedding_grad_rows(%[[DY2:.+]]: memref<?x?xf32, strided<[?, 1], offset: ?>>, %[[O2:.+]]: memref<?xi64, strided<[?], offset: ?>>, %[[S2:.+]]: memref<?xi64, strided<[?], offset: ?>>, %[[TAB:.+]]: memref<?x?xf32, strided<[?, 1], offset: ?>>) kernel
// CHECK: %[[LANE:.+]] = arith.remui %{{.+}}, %c32
// CHECK: arith.muli %{{.+}}, %c8
// CHECK: %[[TOKEN:.+]] = memref.load %[[S2]]
// CHECK: %[[HEAD:.+]] = scf.if
// CHECK: arith.cmpi ne, %{{.+}}, %[[TOKEN]] : i64
// CHECK: %[[IN0:.+]] = arith.cmpi sge, %[[TOKEN]]
// CHECK: %[[IN1:.+]] = arith.cmpi slt, %[[TOKEN]]
// CHECK: %[[END:.+]] = scf.while
// CHECK: %[[ROW:.+]] = arith.index_cast %[[TOKEN]] : i64 to index
// CHECK: scf.for %[[COL:.+]] = %[[LANE]] to %{{.+}} step %c32
// CHECK: %[[INIT0:.+]] = memref.load %[[TAB]][%[[ROW]], %[[COL]]]
// CHECK: %[[SUM:.+]] = scf.for %[[I:.+]] = %{{.+}} to %[[END]] step %c1 iter_args(%[[ACC:.+]] = %[[INIT0]])
// CHECK: %[[POS:.+]] = memref.load %[[O2]][%[[I]]]
// CHECK: %[[PI:.+]] = arith.index_cast %[[POS]] : i64 to index
// CHECK: %[[TERM:.+]] = memref.load %[[DY2]][%[[PI]], %[[COL]]]
// CHECK: arith.addf %[[ACC]], %[[TERM]] : f32
// CHECK: memref.store %[[SUM]], %[[TAB]][%[[ROW]], %[[COL]]]

