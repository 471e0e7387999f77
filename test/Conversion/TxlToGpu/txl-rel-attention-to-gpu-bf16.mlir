// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=fp16 | FileCheck %s --check-prefix=F16
// RUN: not txl-opt %s --txl-rel-attention-to-gpu=precision=f16 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// precision=bf16: the tensor-core kernel. Its operands are views with a
// unit stride along d_head (column offsets become immediates of the loads),
// the grid is ceil(qlen / 64) x (batch * n_head) x parts workgroups of 128
// work-items (4 subgroups of 16 query rows); the runtime chooses the parts
// for 2 resident workgroups per SM, and rel_attention_combine joins them.

// CHECK-LABEL: func.func @eval
// CHECK-DAG: %[[C2I64:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK: %[[TILES:.+]] = arith.ceildivui %{{.+}}, %[[C64]] : index
// CHECK: bufferization.to_buffer %{{.+}} read_only : tensor<?x?x4x32xf32> to memref<?x?x4x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// The kernel loads rows of key, value and pos_key 16 bytes at a time: the
// launch checks that each view's offset and row strides are multiples of 4
// floats.
// CHECK: %{{[a-z_0-9]+}}, %[[OFF:[a-z_0-9]+]], %{{[a-z_0-9]+}}:4, %[[STRIDES:[a-z_0-9]+]]:4 = memref.extract_strided_metadata
// CHECK-NEXT: %[[OR0:.+]] = arith.ori %[[OFF]], %[[STRIDES]]#0 : index
// CHECK-NEXT: %[[OR1:.+]] = arith.ori %[[OR0]], %[[STRIDES]]#1 : index
// CHECK-NEXT: %[[OR2:.+]] = arith.ori %[[OR1]], %[[STRIDES]]#2 : index
// CHECK-NEXT: %[[LOW:.+]] = arith.andi %[[OR2]], %c3 : index
// CHECK-NEXT: %[[ALIGNED:.+]] = arith.cmpi eq, %[[LOW]], %c0 : index
// CHECK-NEXT: cf.assert %[[ALIGNED]], "txl.rel_attention: key rows must start a multiple of 4 floats apart (the tensor-core kernel's 16-byte loads)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: value rows must start
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: pos_key rows must start
// CHECK: call @txl_device_attention_parts(%{{.+}}, %[[C2I64]], %{{.+}})
// CHECK: %[[PARTS:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_bf16_d32 blocks in (%[[TILES]], %{{.+}}, %[[PARTS]]) threads in (%[[C128]], %c1, %c1)
// CHECK-SAME: memref<?x?x?x?x32xf32>, %{{.+}} : memref<?x?x?x?xf32>)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_combine

// The kernel: global buffers are only its operands; workgroup memory is the
// AC (64 x 32) and X (64 x 48: the 16 + 32 - 1 window rows of r, padded to
// 6 blocks of 8) tiles of the 4 subgroups, and the key tile's K and V in
// bf16 core matrices (32 keys x 32 d_head: 4 x 4 blocks of 8 x 8). Per key
// tile: a barrier, the staging (32 x 32 / 128 = 8 elements of K and of V
// per work-item, K at [j/8][d/8][j%8][d%8], V transposed at
// [d/8][j/8][d%8][j%8]), a barrier, AC as one warpgroup product (2
// k-steps, 4 n-blocks of keys) stored to the AC tile, the X block loop (6
// blocks, mma.sync, r read from global memory) kept rolled, a third
// barrier, then the online softmax (quad shuffles) and P·V as one
// warpgroup product (2 k-steps of keys, 4 n-blocks of d_head). K and V are
// read from global memory by the staging only. Nothing allocated; the
// output is the only global store.

// CHECK: gpu.func @rel_attention_bf16_d32(
// CHECK-SAME: %[[Q:arg0]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[K:arg1]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[V:arg2]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[O:arg6]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[PO:arg10]]: memref<?x?x?x?x32xf32>, %[[PL:arg11]]: memref<?x?x?x?xf32>)
// CHECK-SAME: workgroup(%[[X:.+]] : memref<64x49xf32, 3>, %[[KT:.+]] : memref<4x4x8x8xbf16, 3>, %[[VT:.+]] : memref<4x4x8x8xbf16, 3>, %[[RT:.+]] : memref<96x40xbf16, 3>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 255 : i32}
// CHECK-NOT: memref.alloc
// CHECK-COUNT-4: arith.truncf %{{.+}} : f32 to bf16
//
// Before the walk, the whole tiles every row of the subgroup sees whole
// (interior tiles): those whose first key j0 is in [first, first + count),
// one unsigned comparison per tile.
// CHECK: %[[LASTSTART:.+]] = arith.subi %{{.+}}, %c32_i32 : i32
// CHECK-NEXT: arith.subi %[[LASTSTART]]
// CHECK: %[[ICOUNT:.+]] = arith.maxsi %{{.+}}, %c0_i32 : i32
// CHECK-NOT: gpu.barrier
//
// The whole key tiles: each work-item stages 4 consecutive columns of 2
// consecutive rows (d_head 32: 8 work-items a row, 16 pairs of rows a
// step, so one step) of K and V through one view each, a row's columns in
// one 16-byte load: K's 4 columns side by side in its core matrix, V's
// (transposed) two rows of a column side by side.
// CHECK: scf.for %[[J0:.+]] = %{{.+}} to
// CHECK-NEXT: gpu.barrier {txl.sync = "reads-done"}
// CHECK: %[[PAIR:.+]] = arith.divui %{{.+}}, %c8 : index
// CHECK-NEXT: %[[ROW:.+]] = arith.muli %[[PAIR]], %c2 : index
// CHECK: %[[C4:.+]] = arith.muli %{{.+}}, %c4 : index
// CHECK-NEXT: %[[DB:.+]] = arith.divui %[[C4]], %c8 : index
// CHECK-NEXT: %[[DI:.+]] = arith.remui %[[C4]], %c8 : index
// CHECK-NEXT: %[[JB:.+]] = arith.divui %[[ROW]], %c8 : index
// CHECK-NEXT: %[[JI:.+]] = arith.remui %[[ROW]], %c8 : index
// CHECK: %[[KV:.+]] = memref.subview %[[K]][{{.+}}] [2, 1, 1, %{{.+}}] [1, 1, 1, 1]
// CHECK-NOT: memref.load %[[K]]
// CHECK-NEXT: %[[K0:.+]] = vector.load %[[KV]][%c0, %c0, %c0, %[[C4]]] {alignment = 16 : i64} : {{.+}}, vector<4xf32>
// CHECK-NEXT: %[[K1:.+]] = vector.load %[[KV]][%c1, %c0, %c0, %[[C4]]] {alignment = 16 : i64} : {{.+}}, vector<4xf32>
// CHECK: memref.store %{{.+}}, %[[KT]][%[[JB]], %[[DB]], %[[JI]], %[[DI]]] : memref<4x4x8x8xbf16, 3>
// CHECK: %[[JI1:.+]] = arith.addi %[[JI]], %c1 : index
// CHECK: memref.store %{{.+}}, %[[KT]][%[[JB]], %[[DB]], %[[JI1]], %[[DI]]] : memref<4x4x8x8xbf16, 3>
// CHECK: %[[VV:.+]] = memref.subview %[[V]][{{.+}}] [2, 1, 1, %{{.+}}] [1, 1, 1, 1]
// CHECK-NEXT: vector.load %[[VV]][%c0, %c0, %c0, %[[C4]]] {alignment = 16 : i64}
// CHECK-NEXT: vector.load %[[VV]][%c1, %c0, %c0, %[[C4]]] {alignment = 16 : i64}
// CHECK: memref.store %{{.+}}, %[[VT]][%[[DB]], %[[JB]], %[[DI]], %[[JI]]] : memref<4x4x8x8xbf16, 3>
// CHECK: %[[VJI1:.+]] = arith.addi %[[JI]], %c1 : index
// CHECK: memref.store %{{.+}}, %[[VT]][%[[DB]], %[[JB]], %[[DI]], %[[VJI1]]] : memref<4x4x8x8xbf16, 3>
// CHECK-NOT: memref.load
// The workgroup's r window, rows qlen - i0 - 64 + j0 + [0, 96) (rows
// outside [0, klen) read row 0), 8 columns per work-item in 3 steps of
// one 32-byte load, its rows padded to 32 + 8.
// CHECK: %[[W0:.+]] = arith.subi %{{.+}}, %c64 {txl.rel_shift_row} : index
// CHECK: %[[P:.+]] = arith.addi %[[W0]], %{{.+}} : index
// CHECK: %[[POK:.+]] = arith.andi
// CHECK: %[[PIN:.+]] = arith.select %[[POK]], %[[P]], %c0 : index
// CHECK: vector.load %[[R:arg3]][%[[PIN]], %{{.+}}, %{{.+}}] {alignment = 16 : i64} : {{.+}}, vector<8xf32>
// CHECK-COUNT-24: memref.store %{{.+}}, %[[RT]][%{{.+}}, %{{.+}}] : memref<96x40xbf16, 3>
// CHECK-NOT: memref.store
// CHECK: gpu.barrier {txl.sync = "kv-staged"}
// CHECK-NOT: memref.load %[[K]]
// CHECK-NOT: memref.load %[[R]]
// CHECK: txl.warpgroup_mma %{{.+}}, %[[KT]], %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// AC stays in registers: X is the only tile written. X's 6 blocks of 8
// window rows (unrolled), the B fragments of a block's 2 k-steps read from
// the staged window by one ldmatrix of 4 core matrices (lane 8 m + i: row
// i of matrix m, columns 8 m on), no scalar load of the window.
// CHECK-NOT: memref.store
// CHECK-NOT: scf.for
// CHECK-NOT: memref.load %[[RT]]
// CHECK: %[[GM2:.+]] = arith.remui %[[G:[a-z_0-9]+]], %c2 : index
// CHECK: %[[I4:.+]] = arith.muli %[[GM2]], %c4 : index
// CHECK: %[[I:.+]] = arith.addi %[[I4]], %{{.+}} : index
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %[[I]] : index
// CHECK: %[[M:.+]] = arith.divui %[[G]], %c2 : index
// CHECK: %[[COL:.+]] = arith.muli %[[M]], %c8 : index
// CHECK-NOT: memref.load %[[RT]]
// CHECK: nvgpu.ldmatrix %[[RT]][%[[ROW]], %[[COL]]] {numTiles = 4 : i32, transpose = false} : memref<96x40xbf16, 3> -> vector<4x2xbf16>
// CHECK-COUNT-2: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-COUNT-4: memref.store %{{.+}}, %[[X]]
// CHECK-COUNT-5: nvgpu.ldmatrix %[[RT]]
// CHECK-NOT: memref.load %[[RT]]
// CHECK: nvgpu.mma.sync
// CHECK: nvgpu.mma.sync
// CHECK-COUNT-4: memref.store %{{.+}}, %[[X]]
// CHECK-NOT: nvgpu.mma.sync
// Only the subgroup reads its rows of X: a subgroup barrier, not the
// workgroup's.
// CHECK: txl.subgroup_barrier {txl.sync = "stores-done"}
// CHECK-NOT: gpu.barrier
// CHECK: memref.load %[[X]]
// The mask on the tiles that need it: an interior tile yields its 16
// scores as they are, any other one each through one unsigned comparison.
// CHECK-NOT: arith.select
// CHECK: %[[J0I:.+]] = arith.index_cast %[[J0]] : index to i32
// CHECK-NEXT: %[[JREL:.+]] = arith.subi %[[J0I]], %{{.+}} : i32
// CHECK-NEXT: %[[INTERIOR:.+]] = arith.cmpi ult, %[[JREL]], %[[ICOUNT]] {txl.interior_tile} : i32
// CHECK-NEXT: scf.if %[[INTERIOR]] -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } else {
// CHECK-COUNT-16: arith.cmpi ult
// CHECK-NOT: arith.cmpi
// CHECK: scf.yield
// Probabilities in base 2: the tile's row maximum scaled once by scale
// log2(e), each probability exp2 of one fma of its unscaled score (AC +
// BD) with scale log2(e), less the running maximum.
// CHECK: math.exp2 %{{.+}} fastmath<afn> : f32
// CHECK: %[[NEGM:.+]] = arith.negf %{{.+}} : f32
// CHECK-NEXT: %[[ARG:.+]] = math.fma %{{.+}}, %[[SL2E:[a-z_0-9]+]], %[[NEGM]] : f32
// CHECK-NEXT: math.exp2 %[[ARG]] fastmath<afn> : f32
// CHECK-COUNT-7: math.fma %{{.+}}, %[[SL2E]], %[[NEGM]] : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK-NOT: memref.load %[[V]]
// CHECK: txl.warpgroup_mma %{{.+}}, %[[VT]], %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
//
// The tail tile, when the keys end inside one: the same tile, its rows
// checked against the visible keys' end (K and V read themselves).
// CHECK-NEXT: }
// CHECK-NEXT: %[[HASTAIL:.+]] = arith.cmpi slt
// CHECK-NEXT: scf.if %[[HASTAIL]]
// CHECK-NEXT: gpu.barrier {txl.sync = "reads-done"}
// CHECK-NOT: memref.subview
// CHECK: memref.load %[[K]]
// CHECK: memref.load %[[V]]
// CHECK: gpu.barrier {txl.sync = "kv-staged"}
// CHECK: txl.warpgroup_mma %{{.+}}, %[[VT]], %{{.+}}
// CHECK: } else {
// CHECK-NOT: nvgpu.mma.sync
// CHECK-NOT: txl.warpgroup_mma
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.alloc
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[PL]]
// CHECK: memref.store %{{.+}}, %[[PO]]
// CHECK: } else {
// CHECK: memref.store %{{.+}}, %[[O]]
// CHECK: gpu.return

// precision=fp16 (--precision=fp16): the same kernel with f16 operands.
// F16: gpu.launch_func @txl_kernels::@rel_attention_f16_d32
// F16: gpu.func @rel_attention_f16_d32(
// F16-SAME: memref<4x4x8x8xf16, 3>, %{{.+}} : memref<4x4x8x8xf16, 3>, %{{.+}} : memref<96x40xf16, 3>)
// F16-COUNT-4: arith.truncf %{{.+}} : f32 to f16
// F16: txl.warpgroup_mma %{{.+}} : vector<2x4x2xf16>, memref<4x4x8x8xf16, 3>, vector<4x2x2xf32>
// F16: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>

// BAD: Cannot find option named 'f16'!

func.func @eval(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
                %mem_len: index, %same: i1) -> tensor<?x?x4x32xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o : tensor<?x?x4x32xf32>
}

