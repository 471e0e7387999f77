// RUN: txl-opt %s --txl-rel-attention-to-gpu --split-input-file | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu --split-input-file \
// RUN:   | FileCheck %s --check-prefix=KERNEL
// RUN: txl-opt %s --txl-rel-attention-to-gpu=key-parts=3 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=PARTS3
// RUN: txl-opt %s --txl-rel-attention-to-gpu=key-parts=1 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=PARTS1
// RUN: not txl-opt %s --txl-rel-attention-to-gpu=key-parts=-1 --split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADPARTS
// RUN: not txl-opt %s --txl-rel-attention-to-gpu=x-chains=4 --split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADCHAINS
// RUN: not txl-opt %s --txl-rel-attention-to-gpu=row-block=-1 --split-input-file 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADROWS
// RUN: txl-opt %s --txl-rel-attention-to-gpu=row-block=1 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=ROWS1

// One launch per op, after the checks of the dynamic sizes the kernel
// indexes by (pos_key's and value's rows against klen, key's and value's
// batch columns against the query's); the operands reach the kernel as read-only views of
// any layout, the output is one allocation of the result's shape, and the
// grid is ceil(qlen / 16) x (batch * n_head) x parts workgroups of 128
// work-items. The number of key parts comes from the runtime
// (txl_device_attention_parts: the unsplit grid, 4 resident workgroups per
// compute unit, klen in key tiles of 32); with more than one, the kernel
// writes each part into a workspace of `parts` slices (else of none) and
// rel_attention_combine writes the output.

// CHECK: module attributes {gpu.container_module}
// CHECK: func.func private @txl_device_attention_parts(i64, i64, i64) -> i64
// CHECK-LABEL: func.func @eval
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x4x32xf32>
// CHECK-DAG: %[[C4I64:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 0.176776692 : f32
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: pos_key must have as many rows as key (klen)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: value must have as many rows as key (klen)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: query and key must agree on batch, n_head and d_head"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: query and value must agree on batch, n_head and d_head"
// CHECK-NOT: cf.assert
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x?x4x32xf32>
// CHECK: %[[TILES:.+]] = arith.ceildivui %{{.+}}, %[[C16]] : index
// CHECK: %[[COLUMNS:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK: %[[SAME:.+]] = arith.extui %{{.+}} : i1 to i32
// CHECK: bufferization.to_buffer %[[Q]] read_only : tensor<?x?x4x32xf32> to memref<?x?x4x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-COUNT-5: bufferization.to_buffer %{{.+}} read_only
// CHECK-NOT: memref.alloc
// CHECK: %[[KEYTILES:.+]] = arith.ceildivui %{{.+}}, %[[C32]] : index
// CHECK: %[[WORKGROUPS:.+]] = arith.muli %[[TILES]], %[[COLUMNS]] : index
// CHECK: %[[WG64:.+]] = arith.index_cast %[[WORKGROUPS]] : index to i64
// CHECK: %[[KT64:.+]] = arith.index_cast %[[KEYTILES]] : index to i64
// CHECK: %[[P64:.+]] = call @txl_device_attention_parts(%[[WG64]], %[[C4I64]], %[[KT64]]) : (i64, i64, i64) -> i64
// CHECK: %[[PARTS:.+]] = arith.index_cast %[[P64]] : i64 to index
// CHECK: %[[SPLIT:.+]] = arith.cmpi ugt, %[[PARTS]], %[[C1]] : index
// CHECK: %[[SLICES:.+]] = arith.select %[[SPLIT]], %[[PARTS]], %[[C0]] : index
// CHECK: %[[POUT:.+]] = memref.alloc(%[[SLICES]], %{{.+}}, %{{.+}}, %{{.+}}) : memref<?x?x?x?x32xf32>
// CHECK: %[[PLSE:.+]] = memref.alloc(%[[SLICES]], %{{.+}}, %{{.+}}, %{{.+}}) : memref<?x?x?x?xf32>
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_d32 blocks in (%[[TILES]], %[[COLUMNS]], %[[PARTS]]) threads in (%[[C128]], %[[C1]], %[[C1]])
// CHECK-SAME: %{{.+}} : index, %[[SAME]] : i32, %[[SCALE]] : f32, %[[POUT]] : memref<?x?x?x?x32xf32>, %[[PLSE]] : memref<?x?x?x?xf32>)
// CHECK-NEXT: scf.if %[[SPLIT]] {
// CHECK: %[[POUTV:.+]] = memref.cast %[[POUT]] : memref<?x?x?x?x32xf32> to memref<?x?x?x?x?xf32>
// CHECK: %[[OUTV:.+]] = memref.cast %[[OUT]] : memref<?x?x4x32xf32> to memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: %[[ELEMENTS:.+]] = arith.muli %{{.+}}, %[[C32]] : index
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[ELEMENTS]], %[[C128]] : index
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_combine blocks in (%[[BLOCKS]], %[[C1]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]]) args(%[[POUTV]] : memref<?x?x?x?x?xf32>, %[[PLSE]] : memref<?x?x?x?xf32>, %[[OUTV]] : memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>)
// CHECK-NEXT: }
// CHECK-NEXT: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NEXT: return %[[R]]

// key-parts=N: always N parts, no runtime call and no test; key-parts=1:
// the workspace has no slices and there is no combine.
// PARTS3-NOT: txl_device_attention_parts
// PARTS3-LABEL: func.func @eval
// PARTS3-DAG: %[[C3:.+]] = arith.constant 3 : index
// PARTS3: memref.alloc(%[[C3]], %{{.+}}, %{{.+}}, %{{.+}}) : memref<?x?x?x?x32xf32>
// PARTS3: gpu.launch_func @txl_kernels::@rel_attention_d32 blocks in (%{{.+}}, %{{.+}}, %[[C3]])
// PARTS3-NOT: scf.if
// PARTS3: gpu.launch_func @txl_kernels::@rel_attention_combine
// PARTS1-NOT: txl_device_attention_parts
// PARTS1-LABEL: func.func @eval
// PARTS1: memref.alloc(%c0, %{{.+}}, %{{.+}}, %{{.+}}) : memref<?x?x?x?x32xf32>
// PARTS1: gpu.launch_func @txl_kernels::@rel_attention_d32 blocks in (%{{.+}}, %{{.+}}, %c1)
// PARTS1-NEXT: bufferization.to_tensor
// PARTS1-NOT: rel_attention_combine
// PARTS1: gpu.func @rel_attention_d32(
// PARTS1-NOT: rel_attention_combine
// PARTS1: gpu.return
// BADPARTS: error: key-parts must be 0 (chosen at run time) or a number of parts, not -1
// BADCHAINS: error: x-chains must be 0 (chosen per kernel) or divide the positional term's 6 blocks (1, 2, 3 or 6), not 4
// BADROWS: error: row-block must be 0 (chosen per kernel) or a number of rows, not -1
// With row-block=1 each of a subgroup's 4 rows has its own loop over d_head.
// ROWS1: gpu.func @rel_attention_d32(
// ROWS1-COUNT-4: scf.for %{{.+}} = %c0_i32 to %c32_i32 step %c4_i32 iter_args(%{{.+}} = %cst_0) -> (f32) : i32
// ROWS1-NOT: scf.for %{{.+}} = %c0_i32 to %c32_i32 step %c4_i32
// ROWS1: gpu.return

// Two layers of one d_head share one kernel.
// CHECK-LABEL: func.func @two_layers
// CHECK-COUNT-2: gpu.launch_func @txl_kernels::@rel_attention_d32
// CHECK-NOT: = txl.rel_attention

// The kernel: its only global buffers are its nine memref operands (q, k,
// v, r, u, v_bias, out, and the key parts' outputs and lse), whose sizes
// are the operands'; workgroup memory is five padded tiles in address
// space 3 (rows of 36 floats: d_head 32 is 8 16-byte vectors, padded to
// 9 so that 16-byte reads of 8 lanes' rows hit different banks): q + u
// and q + v (16 rows), k (32 rows), the 16 + 32 - 1 rows of r one tile
// pair reads, and v (32 rows). Nothing is allocated inside it (no qlen x
// klen buffer anywhere); its part of the keys is the grid's z-th run of
// whole key tiles; it synchronizes with two barriers per key tile. A tile
// of k, of v and the r window wholly inside their operands are staged
// with no bounds check, each work-item one column of every 4th row
// (d_head 32 divides the workgroup's 128) read through a flat view of the
// operand; otherwise each element is checked and zero past the ends. The
// scores take the subgroup's 4 rows in 2 blocks of 2, each a loop (on an
// i32 induction variable, as P·V's) over d_head reading 16 bytes of k, q + u, q + v and r at a time (not unrolled:
// unrolled twice, ptxas spills under the 128-register bound), every term
// a math.fma; it reduces with 32-lane shuffles; P·V takes all 4 rows in
// one loop over the tile's keys (unrolled 4 times), one read of v's tile
// per key and column for all of them; it stores only into the output
// (one part) or into its slice of the workspace (several).

// KERNEL-DAG: #[[UNROLL1:.+]] = #llvm.loop_unroll<count = 1 : i32>
// KERNEL-DAG: #[[UNROLL4:.+]] = #llvm.loop_unroll<count = 4 : i32>
// KERNEL-DAG: #[[ANN1:.+]] = #llvm.loop_annotation<unroll = #[[UNROLL1]]>
// KERNEL-DAG: #[[ANN4:.+]] = #llvm.loop_annotation<unroll = #[[UNROLL4]]>
// KERNEL: gpu.module @txl_kernels
// KERNEL-NEXT: gpu.func @rel_attention_d32(
// KERNEL-SAME: %[[Q:arg0]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[K:arg1]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[V:arg2]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[RR:arg3]]: memref<?x?x32xf32, strided<[?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[U:arg4]]: memref<?x32xf32, strided<[?, ?], offset: ?>>
// KERNEL-SAME: %[[VB:arg5]]: memref<?x32xf32, strided<[?, ?], offset: ?>>
// KERNEL-SAME: %[[O:arg6]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %{{.+}}: index, %{{.+}}: i32, %{{.+}}: f32,
// KERNEL-SAME: %[[PO:arg10]]: memref<?x?x?x?x32xf32>, %[[PL:arg11]]: memref<?x?x?x?xf32>)
// KERNEL-SAME: workgroup(%[[QU:.+]] : memref<16x36xf32, 3>, %[[QV:.+]] : memref<16x36xf32, 3>, %[[KT:.+]] : memref<32x36xf32, 3>, %[[RT:.+]] : memref<47x36xf32, 3>, %[[VT:.+]] : memref<32x36xf32, 3>)
// KERNEL-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 128 : i32}
// KERNEL-NOT: memref.alloc
// KERNEL-DAG: %[[PARTS:.+]] = gpu.grid_dim  z
// KERNEL-DAG: %[[PART:.+]] = gpu.block_id  z
// KERNEL: %[[PERPART:.+]] = arith.ceildivsi %{{.+}}, %[[PARTS]] {txl.key_part = "tiles"} : index
// KERNEL: %[[PARTKEYS:.+]] = arith.muli %[[PERPART]], %c32 : index
// KERNEL: %[[SKIP:.+]] = arith.muli %[[PART]], %[[PARTKEYS]] {txl.key_part = "offset"} : index
// KERNEL: %[[JBEGIN:.+]] = arith.addi %{{.+}}, %[[SKIP]] : index
// KERNEL: %[[JEND:.+]] = arith.minsi %{{.+}}, %{{.+}} : index
// KERNEL-NOT: memref.store {{.+}} %[[Q]]
// KERNEL: memref.store {{.+}}, %[[QU]]
// KERNEL: memref.store {{.+}}, %[[QV]]
// KERNEL: scf.for %[[J0:.+]] = %[[JBEGIN]] to %[[JEND]] step %c32
// KERNEL-NEXT: gpu.barrier
// KERNEL-NEXT: %[[KEND:.+]] = arith.addi %[[J0]], %c32 : index
// KERNEL-NEXT: %[[WHOLE:.+]] = arith.cmpi ule, %[[KEND]], %[[JEND]] : index
// KERNEL-NEXT: scf.if %[[WHOLE]] {
// KERNEL-NEXT: %[[KBASE:.+]], %{{.+}}, %{{.+}}:4, %{{.+}}:4 = memref.extract_strided_metadata %[[K]]
// KERNEL: %[[KFLAT:.+]] = memref.reinterpret_cast %[[KBASE]] to offset: [0], sizes: [%{{.+}}], strides: [1] : memref<f32> to memref<?xf32>
// KERNEL-COUNT-8: memref.load %[[KFLAT]]
// KERNEL-NOT: scf.if
// KERNEL: } else {
// KERNEL-NEXT: scf.for
// KERNEL: arith.cmpi ult, %{{.+}}, %[[JEND]] : index
// KERNEL: memref.load %[[K]]
// KERNEL: memref.store {{.+}}, %[[KT]]
// KERNEL: memref.extract_strided_metadata %[[V]]
// KERNEL-COUNT-8: memref.store {{.+}}, %[[VT]]
// KERNEL: } else {
// KERNEL: memref.load %[[V]]
// KERNEL: memref.store {{.+}}, %[[VT]]
// KERNEL: memref.extract_strided_metadata %[[RR]]
// KERNEL-COUNT-11: memref.store {{.+}}, %[[RT]]
// KERNEL-NEXT: arith.addi %{{.+}}, %c44 : index
// KERNEL: scf.if
// KERNEL-NEXT: memref.load
// KERNEL-NEXT: memref.store {{.+}}, %[[RT]]
// KERNEL: } else {
// KERNEL: memref.load %[[RR]]
// KERNEL: memref.store {{.+}}, %[[RT]]
// KERNEL: gpu.barrier
// KERNEL-NOT: gpu.barrier
// KERNEL: scf.for %{{.+}} = %c0_i32 to %c32_i32 step %c4_i32 iter_args(%{{.+}} = %cst_0, %{{.+}} = %cst_0) -> (f32, f32) : i32
// KERNEL: vector.load %[[KT]]{{.+}} {alignment = 16 : i64} : memref<32x36xf32, 3>, vector<4xf32>
// KERNEL-COUNT-16: math.fma
// KERNEL: } {loop_annotation = #[[ANN1]]}
// KERNEL: scf.for %{{.+}} = %c0_i32 to %c32_i32 step %c4_i32 iter_args(%{{.+}} = %cst_0, %{{.+}} = %cst_0) -> (f32, f32) : i32
// KERNEL: } {loop_annotation = #[[ANN1]]}
// KERNEL: gpu.shuffle  xor {{.+}}, %c16_i32, %c32_i32 : f32
// KERNEL: scf.for %{{.+}} = %c0_i32 to %c32_i32 step %c1_i32 iter_args(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) -> (f32, f32, f32, f32) : i32
// KERNEL: memref.load %[[VT]]
// KERNEL-COUNT-4: gpu.shuffle  idx
// KERNEL: } {loop_annotation = #[[ANN4]]}
// KERNEL-NOT: gpu.barrier
// KERNEL-NOT: memref.alloc
// KERNEL: %[[SPLIT:.+]] = arith.cmpi ugt, %[[PARTS]], %c1 : index
// KERNEL: scf.if %[[SPLIT]] {
// KERNEL: memref.store {{.+}}, %[[PL]][%[[PART]],
// KERNEL: memref.store {{.+}}, %[[PO]][%[[PART]],
// KERNEL: } else {
// KERNEL: memref.store {{.+}}, %[[O]]
// KERNEL-NOT: memref.alloc
// KERNEL: gpu.return

// The combine: one work-item per output element, over the parts twice
// (their largest lse, then the weighted sum, an empty part's -inf lse
// taken as weight 0 and its NaN output as 0).
// KERNEL-LABEL: gpu.func @rel_attention_combine(
// KERNEL-SAME: %[[CPO:arg0]]: memref<?x?x?x?x?xf32>, %[[CPL:arg1]]: memref<?x?x?x?xf32>, %[[COUT:arg2]]: memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>)
// KERNEL-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// KERNEL: %[[NPARTS:.+]] = memref.dim %[[CPO]], %c0
// KERNEL: scf.for %{{.+}} = %c0 to %[[NPARTS]]
// KERNEL: arith.maximumf
// KERNEL: scf.for %{{.+}} = %c0 to %[[NPARTS]]
// KERNEL: %[[EMPTY:.+]] = arith.cmpf oeq, %{{.+}}, %cst
// KERNEL: %[[W:.+]] = arith.select %[[EMPTY]], %{{.+}}, %{{.+}} : f32
// KERNEL: memref.load %[[CPO]]
// KERNEL: arith.select %[[EMPTY]]
// KERNEL: memref.store {{.+}}, %[[COUT]]
// KERNEL-NOT: memref.store
// KERNEL: gpu.return
// KERNEL-NOT: gpu.func

func.func @eval(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
                %mem_len: index, %same: i1) -> tensor<?x?x4x32xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o : tensor<?x?x4x32xf32>
}

func.func @two_layers(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                      %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
                      %mem_len: index, %same: i1) -> tensor<?x?x4x32xf32> {
  %o1 = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  %o2 = txl.rel_attention %o1, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o2 : tensor<?x?x4x32xf32>
}

// -----

// With dropatt the kernel is its dropatt form, which takes seed, offset,
// the stream (stream_base + dropatt_stream), the column, the keep threshold
// ceil(rate 2^24) and 1 / (1 - rate) when training, 0 and 1 (the identity)
// when not (here stream_base is 0 and stream 3). Wide heads get a narrower query tile (d_head 128: 8 rows, so
// the four tiles fit in 48 KiB, rows of 33 16-byte vectors) and no tile of v
// (a fifth would not fit: P·V reads v in place).

// CHECK-LABEL: func.func @dropatt_eval
// CHECK-SAME: %[[SEED:[^:]+]]: i64, %[[OFFSET:[^:]+]]: i64, %[[TRAINING:[^:]+]]: i1, %[[COL:[^:]+]]: i64) -> tensor<?x?x2x128xf32>
// CHECK-NOT: cf.assert
// CHECK-DAG: %[[KEPT:.+]] = arith.constant 1.11111116 : f32
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: arith.ceildivui %{{.+}}, %c8 : index
// CHECK: %[[MIN:.+]] = arith.select %[[TRAINING]], %c1677722_i32, %c0_i32 : i32
// CHECK: %[[SCALE:.+]] = arith.select %[[TRAINING]], %[[KEPT]], %[[ONE]] : f32
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_dropatt_d128
// CHECK-SAME: %[[SEED]] : i64, %[[OFFSET]] : i64, %c3_i64 : i64, %[[COL]] : i64, %[[MIN]] : i32, %[[SCALE]] : f32, %{{.+}} : memref<?x?x?x?x128xf32>, %{{.+}} : memref<?x?x?x?xf32>)
// KERNEL: gpu.func @rel_attention_dropatt_d128(
// KERNEL-SAME: %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i32, %{{.+}}: f32, %{{.+}}: memref<?x?x?x?x128xf32>, %{{.+}}: memref<?x?x?x?xf32>)
// KERNEL-SAME: workgroup(%{{.+}} : memref<8x132xf32, 3>, %{{.+}} : memref<8x132xf32, 3>, %{{.+}} : memref<32x132xf32, 3>, %{{.+}} : memref<39x132xf32, 3>)
// KERNEL: arith.mului_extended
// KERNEL: memref.load %arg2[
func.func @dropatt_eval(%q: tensor<?x?x2x128xf32>, %k: tensor<?x?x2x128xf32>, %v: tensor<?x?x2x128xf32>,
                        %r: tensor<?x2x128xf32>, %u: tensor<2x128xf32>, %vb: tensor<2x128xf32>,
                        %mem_len: index, %same: i1, %seed: i64, %offset: i64, %training: i1,
                        %col: i64)
    -> tensor<?x?x2x128xf32> {
  %base = arith.constant 0 : i64
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same
      dropatt(%seed, %offset, %training, %base, %col)
      {dropatt = 1.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 0.088388346 : f32}
      : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>,
        tensor<?x2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32> -> tensor<?x?x2x128xf32>
  return %o : tensor<?x?x2x128xf32>
}

// -----

// Negative cases: ops the kernel does not cover stay for the CPU lowering,
// and a module without a kernel gets no gpu.module.

// CHECK-LABEL: module {
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @f64_stays
// CHECK: txl.rel_attention
// CHECK-NOT: gpu.launch_func
func.func @f64_stays(%q: tensor<?x?x2x16xf64>, %k: tensor<?x?x2x16xf64>, %v: tensor<?x?x2x16xf64>,
                     %r: tensor<?x2x16xf64>, %u: tensor<2x16xf64>, %vb: tensor<2x16xf64>,
                     %mem_len: index, %same: i1) -> tensor<?x?x2x16xf64> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.25 : f32}
      : tensor<?x?x2x16xf64>, tensor<?x?x2x16xf64>, tensor<?x?x2x16xf64>,
        tensor<?x2x16xf64>, tensor<2x16xf64>, tensor<2x16xf64> -> tensor<?x?x2x16xf64>
  return %o : tensor<?x?x2x16xf64>
}

// CHECK-LABEL: func.func @dynamic_d_head_stays
// CHECK: txl.rel_attention
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.module
func.func @dynamic_d_head_stays(%q: tensor<?x?x2x?xf32>, %k: tensor<?x?x2x?xf32>, %v: tensor<?x?x2x?xf32>,
                                %r: tensor<?x2x?xf32>, %u: tensor<2x?xf32>, %vb: tensor<2x?xf32>,
                                %mem_len: index, %same: i1) -> tensor<?x?x2x?xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.25 : f32}
      : tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>,
        tensor<?x2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<?x?x2x?xf32>
  return %o : tensor<?x?x2x?xf32>
}

// -----

// CHECK-LABEL: module {
// CHECK-NOT: gpu.module
// CHECK: func.func @no_attention
func.func @no_attention(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
