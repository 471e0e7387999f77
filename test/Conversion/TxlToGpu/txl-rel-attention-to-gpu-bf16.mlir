// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=fp16 | FileCheck %s --check-prefix=F16
// RUN: not txl-opt %s --txl-rel-attention-to-gpu=precision=f16 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// precision=bf16: the tensor-core kernel, its key, value and pos_key
// packed first by rel_attention_pack_bf16_d32: grid (ceil(klen / 32) + 1)
// x (batch * n_head) of 128 work-items, into buffers of bf16 with klen
// padded to 32 and one tile more, which the walk's last whole tile copies
// unread (k and v [batch, n_head, klenPad / 32, 128, 8], each key tile
// the image of the kernel's workgroup tile of K or V^T as 128 chunks of 16
// bytes, r [n_head, klenPad, 32]). The attention's grid is
// ceil(qlen / 64) x (batch * n_head) x parts workgroups of 128 work-items
// (4 subgroups of 16 query rows); the runtime chooses the parts for 3
// resident workgroups per SM (at most 168 registers a work-item), and rel_attention_combine joins them. The
// packed operands are the kernel's own allocations: no alignment check.

// CHECK-LABEL: func.func @eval
// CHECK-DAG: %[[C3I64:.+]] = arith.constant 3 : i64
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK-NOT: cf.assert {{.+}} must start a multiple
// CHECK: %[[TILES:.+]] = arith.ceildivui %{{.+}}, %[[C64]] : index
// CHECK: bufferization.to_buffer %{{.+}} read_only : tensor<?x?x4x32xf32> to memref<?x?x4x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK: %[[KLEN:.+]] = tensor.dim %arg1, %c0
// CHECK-NEXT: %[[KCEIL:.+]] = arith.ceildivui %[[KLEN]], %[[C32]] : index
// CHECK-NEXT: %[[KTILES:.+]] = arith.addi %[[KCEIL]], %c1 : index
// CHECK-NEXT: %[[KLENPAD:.+]] = arith.muli %[[KTILES]], %[[C32]] : index
// CHECK-NEXT: %[[KP:.+]] = memref.alloc(%{{.+}}, %c4, %[[KTILES]]) : memref<?x?x?x128x8xbf16>
// CHECK-NEXT: %[[VP:.+]] = memref.alloc(%{{.+}}, %c4, %[[KTILES]]) : memref<?x?x?x128x8xbf16>
// CHECK-NEXT: %[[RP:.+]] = memref.alloc(%c4, %[[KLENPAD]]) : memref<?x?x32xbf16>
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_pack_bf16_d32 blocks in (%[[KTILES]], %{{.+}}, %c1) threads in (%[[C128]], %c1, %c1)
// CHECK-SAME: %[[KP]] : memref<?x?x?x128x8xbf16>, %[[VP]] : memref<?x?x?x128x8xbf16>, %[[RP]] : memref<?x?x32xbf16>)
// CHECK-NOT: cf.assert {{.+}} must start a multiple
// CHECK: call @txl_device_attention_parts(%{{.+}}, %[[C3I64]], %{{.+}})
// CHECK: %[[PARTS:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_bf16_d32 blocks in (%[[TILES]], %{{.+}}, %[[PARTS]]) threads in (%[[C128]], %c1, %c1)
// CHECK-SAME: %[[KP]] : memref<?x?x?x128x8xbf16>, %[[VP]] : memref<?x?x?x128x8xbf16>, %[[RP]] : memref<?x?x32xbf16>,
// CHECK-SAME: %[[KLEN]] : index, %arg6 : index,
// CHECK-SAME: memref<?x?x?x?x32xf32>, %{{.+}} : memref<?x?x?x?xf32>)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_combine

// The kernel: global buffers are only its operands; workgroup memory is the
// X tile (64 x 48: the 16 + 32 - 1 window rows of r, padded to 6 blocks
// of 8) of the 4 subgroups, two buffers of a key tile's K and three of
// its V in bf16 core matrices (32 keys x 32 d_head: 4 x 4 blocks of 8 x
// 8) and a ring of 128 rows of r (4 chunks of 32). Per key tile: the wait
// for the work-item's copies, the tile's one barrier, the next tile's
// staging into buffers no product in flight reads (asynchronous 16-byte
// copies from the packed operands, no rounding: 1 of K, 1 of V and 1 of
// the 32 rows the next tile's r window adds to the ring), AC as one
// asynchronous warpgroup product (2 k-steps, 4 n-blocks of keys) kept in
// registers, then the previous tile's P·V as another (2 k-steps of keys,
// 4 n-blocks of d_head), both in flight during the X blocks (mma.sync, B
// by ldmatrix) stored to the X tile, a subgroup barrier and X's skewed
// reads; AC's wait, the online softmax (quad shuffles), P·V's wait. After
// the walk, the last tile's P·V. Nothing allocated; the output is the
// only global store.

// CHECK: gpu.func @rel_attention_bf16_d32(
// CHECK-SAME: %[[Q:arg0]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[K:arg1]]: memref<?x?x?x128x8xbf16>, %[[V:arg2]]: memref<?x?x?x128x8xbf16>, %[[R:arg3]]: memref<?x?x32xbf16>
// CHECK-SAME: %[[O:arg6]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>, %[[KLENARG:arg7]]: index
// CHECK-SAME: %[[PO:arg11]]: memref<?x?x?x?x32xf32>, %[[PL:arg12]]: memref<?x?x?x?xf32>)
// CHECK-SAME: workgroup(%[[X:.+]] : memref<64x56xf32, 3>, %[[KT:.+]] : memref<4x4x8x8xbf16, 3>, %[[VT:.+]] : memref<4x4x8x8xbf16, 3>, %[[RT:.+]] : memref<128x40xbf16, 3>, %[[KT1:.+]] : memref<4x4x8x8xbf16, 3>, %[[VT1:.+]] : memref<4x4x8x8xbf16, 3>, %[[VT2:.+]] : memref<4x4x8x8xbf16, 3>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 168 : i32}
// The walk starts at the key tile of the first visible key (a multiple
// of 32: the packed rows are read in whole aligned tiles).
// CHECK: %[[JEND:.+]] = arith.minsi %[[KLENARG]], %{{.+}} : index
// CHECK-NEXT: %[[FIRSTTILE:.+]] = arith.divui %{{.+}}, %c32 : index
// CHECK-NEXT: %[[JBEGIN:.+]] = arith.muli %[[FIRSTTILE]], %c32 : index
// CHECK: arith.subi %[[JEND]], %[[JBEGIN]] : index
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
// Before the walk, the first tile's copies: chunk tid of the packed tile
// jBegin / 32 of K and of V (jBegin, the first key of the workgroup's
// part) to chunk tid of the first buffers seen as 128 chunks of 16 bytes,
// which is row tid % 8 of core matrix [tid / 32, tid / 8 % 4] (d_head 32:
// K's keys jBegin + 8 (tid / 32) + tid % 8, columns 8 (tid / 8 % 4); V's
// column 8 (tid / 32) + tid % 8, keys jBegin + 8 (tid / 8 % 4)), the 8
// work-items of a quarter-subgroup the 8 rows of one core matrix; then the whole r window of the first tile, 96
// rows (rows outside [0, klen) read row 0: one unsigned 32-bit
// comparison, a negative row wrapping past any klen), at
// the start of the ring of r rows (4 chunks of 32, 128 rows padded to 32
// + 8), 3 copies a work-item at d_head 32; all committed as one group.
// CHECK: %[[TID0:.+]] = gpu.thread_id x
// CHECK-NEXT: %[[TILE0:.+]] = arith.divui %[[WALK0:.+]], %c32 : index
// CHECK-NEXT: %[[KCH0:.+]] = memref.collapse_shape %[[KT]] {{\[}}[0, 1, 2], [3]] : memref<4x4x8x8xbf16, 3> into memref<128x8xbf16, 3>
// CHECK-NEXT: %[[KCOPY0:.+]] = nvgpu.device_async_copy %[[K]][%{{.+}}, %{{.+}}, %[[TILE0]], %[[TID0]], %c0], %[[KCH0]][%[[TID0]], %c0], 8 {bypassL1} : memref<?x?x?x128x8xbf16> to memref<128x8xbf16, 3>
// CHECK-NEXT: %[[VCH0:.+]] = memref.collapse_shape %[[VT]] {{\[}}[0, 1, 2], [3]] : memref<4x4x8x8xbf16, 3> into memref<128x8xbf16, 3>
// CHECK-NEXT: %[[VCOPY0:.+]] = nvgpu.device_async_copy %[[V]][%{{.+}}, %{{.+}}, %[[TILE0]], %[[TID0]], %c0], %[[VCH0]][%[[TID0]], %c0], 8 {bypassL1} : memref<?x?x?x128x8xbf16> to memref<128x8xbf16, 3>
// CHECK: %[[PW0:.+]] = arith.subi %{{.+}}, %c64 {txl.rel_shift_row} : index
// CHECK: %[[PW032:.+]] = arith.index_cast %[[PW0]] : index to i32
// CHECK-NEXT: %[[PROW32:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK-NEXT: %[[PP:.+]] = arith.addi %[[PW032]], %[[PROW32]] : i32
// CHECK-NEXT: %[[PKLEN:.+]] = arith.index_cast %[[KLENARG]] : index to i32
// CHECK-NEXT: %[[PPOK:.+]] = arith.cmpi ult, %[[PP]], %[[PKLEN]] : i32
// CHECK-NEXT: %[[PPSEL:.+]] = arith.select %[[PPOK]], %[[PP]], %c0_i32 : i32
// CHECK-NEXT: %[[PPIN:.+]] = arith.index_castui %[[PPSEL]] : i32 to index
// CHECK-NEXT: %[[PRING:.+]] = arith.andi %{{.+}}, %c127 : index
// CHECK-NEXT: %[[PCOPY0:.+]] = nvgpu.device_async_copy %[[R]][%{{.+}}, %[[PPIN]], %{{.+}}], %[[RT]][%[[PRING]], %{{.+}}], 8 {bypassL1} : memref<?x?x32xbf16> to memref<128x40xbf16, 3>
// CHECK: %[[PCOPY1:.+]] = nvgpu.device_async_copy %[[R]]
// CHECK: %[[PCOPY2:.+]] = nvgpu.device_async_copy %[[R]]
// CHECK-NEXT: %[[PROLOGUE:.+]] = nvgpu.device_async_create_group %[[KCOPY0]], %[[VCOPY0]], %[[PCOPY0]], %[[PCOPY1]], %[[PCOPY2]]
// V's third buffer zeroed (the first tile's P·V of no tile before it
// reads it, with P = 0): 8 elements a work-item.
// CHECK-COUNT-8: memref.store %{{.+}}, %[[VT2]][%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] : memref<4x4x8x8xbf16, 3>
// CHECK-NOT: gpu.barrier
//
// The whole key tiles: the wait for every group the work-item committed
// (the count 0), the tile's one barrier, then K's buffers by the tile's
// parity from jBegin (bit 5 of j0 - jBegin): this tile's AC reads the
// first on even tiles, the second on odd, and the next tile's copies go to
// the other; V's three buffers by the tile's index mod 3 (the loop state's
// last value, 0 at the first tile): the previous tile's P·V reads buffer
// (index + 2) mod 3, the next tile's copies go to (index + 1) mod 3.
// CHECK: scf.for %[[J0:.+]] = %[[WALK0]] to %{{.+}} step %c32 iter_args(%[[M0:[a-z0-9_]+]] = {{.+}}, %[[MOD3:[a-z0-9_]+]] = %c0_i32)
// CHECK-NEXT: %[[RB:.+]] = arith.subi %[[J0]], %[[WALK0]] : index
// CHECK-NEXT: nvgpu.device_async_wait %[[PROLOGUE]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier {txl.sync = "kv-staged"}
// CHECK-NEXT: %[[PARBIT:.+]] = arith.andi %[[RB]], %c32 : index
// CHECK-NEXT: %[[ODD:.+]] = arith.cmpi ne, %[[PARBIT]], %c0 : index
// CHECK-NEXT: %[[KCUR:.+]] = arith.select %[[ODD]], %[[KT1]], %[[KT]] : memref<4x4x8x8xbf16, 3>
// CHECK-NEXT: %[[PIS2:.+]] = arith.cmpi eq, %[[MOD3]], %c2_i32 : i32
// CHECK-NEXT: %[[PREV2:.+]] = arith.select %[[PIS2]], %[[VT1]], %[[VT2]] : memref<4x4x8x8xbf16, 3>
// CHECK-NEXT: %[[PIS1:.+]] = arith.cmpi eq, %[[MOD3]], %c1_i32 : i32
// CHECK-NEXT: %[[VPREV:.+]] = arith.select %[[PIS1]], %[[VT]], %[[PREV2]] : memref<4x4x8x8xbf16, 3>
// CHECK-NEXT: %[[NEXT:.+]] = arith.addi %[[J0]], %c32 : index
// CHECK-NEXT: %[[KNEXT:.+]] = arith.select %[[ODD]], %[[KT]], %[[KT1]] : memref<4x4x8x8xbf16, 3>
// CHECK-NEXT: %[[NIS2:.+]] = arith.cmpi eq, %[[MOD3]], %c2_i32 : i32
// CHECK-NEXT: %[[NEXT2:.+]] = arith.select %[[NIS2]], %[[VT]], %[[VT1]] : memref<4x4x8x8xbf16, 3>
// CHECK-NEXT: %[[NIS1:.+]] = arith.cmpi eq, %[[MOD3]], %c1_i32 : i32
// CHECK-NEXT: %[[VNEXT:.+]] = arith.select %[[NIS1]], %[[VT2]], %[[NEXT2]] : memref<4x4x8x8xbf16, 3>
// The next tile's K and V (keys from j0 + 32, the copies as before the
// walk) into the other buffers.
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK-NEXT: %[[TILE:.+]] = arith.divui %[[NEXT]], %c32 : index
// CHECK-NEXT: %[[KCH:.+]] = memref.collapse_shape %[[KNEXT]] {{\[}}[0, 1, 2], [3]] : memref<4x4x8x8xbf16, 3> into memref<128x8xbf16, 3>
// CHECK-NEXT: %[[KCOPY:.+]] = nvgpu.device_async_copy %[[K]][%{{.+}}, %{{.+}}, %[[TILE]], %[[TID]], %c0], %[[KCH]][%[[TID]], %c0], 8 {bypassL1} : memref<?x?x?x128x8xbf16> to memref<128x8xbf16, 3>
// CHECK-NEXT: %[[VCH:.+]] = memref.collapse_shape %[[VNEXT]] {{\[}}[0, 1, 2], [3]] : memref<4x4x8x8xbf16, 3> into memref<128x8xbf16, 3>
// CHECK-NEXT: %[[VCOPY:.+]] = nvgpu.device_async_copy %[[V]][%{{.+}}, %{{.+}}, %[[TILE]], %[[TID]], %c0], %[[VCH]][%[[TID]], %c0], 8 {bypassL1} : memref<?x?x?x128x8xbf16> to memref<128x8xbf16, 3>
// CHECK-NOT: arith.truncf
// The next tile's r window, rows qlen - i0 - 64 + j0 + 32 + [0, 96) (rows
// outside [0, klen) read row 0), at ring rows (j0 + 32 - jBegin + [0,
// 96)) mod 128: the copies add only its last 32 rows (8 columns per
// work-item, one 16-byte copy at d_head 32), into the ring's chunk that
// the previous tile read last and this one does not. One group of the
// work-item's 3 copies, not waited for here: nothing passes through
// registers.
// CHECK: %[[W0:.+]] = arith.subi %{{.+}}, %c64 {txl.rel_shift_row} : index
// CHECK-NEXT: %[[NRB:.+]] = arith.addi %[[RB]], %c32 : index
// CHECK: %[[WROW:.+]] = arith.addi %{{.+}}, %c64 : index
// CHECK-NEXT: %[[W032:.+]] = arith.index_cast %[[W0]] : index to i32
// CHECK-NEXT: %[[WROW32:.+]] = arith.index_cast %[[WROW]] : index to i32
// CHECK-NEXT: %[[P:.+]] = arith.addi %[[W032]], %[[WROW32]] : i32
// CHECK-NEXT: %[[KLEN32:.+]] = arith.index_cast %[[KLENARG]] : index to i32
// CHECK-NEXT: %[[POK:.+]] = arith.cmpi ult, %[[P]], %[[KLEN32]] : i32
// CHECK-NEXT: %[[PSEL:.+]] = arith.select %[[POK]], %[[P]], %c0_i32 : i32
// CHECK-NEXT: %[[PIN:.+]] = arith.index_castui %[[PSEL]] : i32 to index
// CHECK-NEXT: %[[RINGROW:.+]] = arith.addi %[[NRB]], %[[WROW]] : index
// CHECK-NEXT: %[[RING:.+]] = arith.andi %[[RINGROW]], %c127 : index
// CHECK-NEXT: %[[RCOPY:.+]] = nvgpu.device_async_copy %[[R]][%{{.+}}, %[[PIN]], %{{.+}}], %[[RT]][%[[RING]], %{{.+}}], 8 {bypassL1} : memref<?x?x32xbf16> to memref<128x40xbf16, 3>
// CHECK-NEXT: nvgpu.device_async_create_group %[[KCOPY]], %[[VCOPY]], %[[RCOPY]]
// CHECK-NOT: nvgpu.device_async_wait
// CHECK-NOT: memref.store
// CHECK-NOT: vector.store
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.load %[[K]]
// CHECK-NOT: memref.load %[[R]]
// AC, issued asynchronously, then the previous tile's P·V on its V (P
// carried in the loop state as f32, rounded here) onto O: both in flight
// during X's products and the skew's round trip; AC's wait leaves P·V in
// flight (pending 1) during the scores and the softmax.
// CHECK: %[[AC:.+]] = txl.warpgroup_mma async %{{.+}}, %[[KCUR]], %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-COUNT-16: arith.truncf %{{.+}} : f32 to bf16
// CHECK: %[[PV:.+]] = txl.warpgroup_mma async %{{.+}}, %[[VPREV]], %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-NOT: txl.warpgroup_mma_wait
// AC stays in registers: X is the only tile written. X's 6 blocks of 8
// window rows (unrolled), the B fragments of a block's 2 k-steps read from
// the staged window by one ldmatrix of 4 core matrices (lane 8 m + i: row
// i of matrix m, columns 8 m on), no scalar load of the window. The blocks
// run in 2 groups of 3 (x-chains=3): a group's 3 ldmatrix, then its 3
// chains of products interleaved k-step by k-step (each of the first
// three starts from zeros, and no product continues a chain before all
// three have started), then its 12 stores.
// CHECK-NOT: memref.store
// CHECK-NOT: scf.for
// CHECK-NOT: memref.load %[[RT]]
// CHECK: %[[SUBROW:.+]] = arith.addi %[[RB]], %{{.+}} : index
// CHECK-NEXT: %[[BLOCKROW:.+]] = arith.andi %[[SUBROW]], %c127 : index
// CHECK: %[[GM2:.+]] = arith.remui %[[G:[a-z_0-9]+]], %c2 : index
// CHECK: %[[I4:.+]] = arith.muli %[[GM2]], %c4 : index
// CHECK: %[[I:.+]] = arith.addi %[[I4]], %{{.+}} : index
// CHECK: %[[ROW:.+]] = arith.addi %[[BLOCKROW]], %[[I]] : index
// CHECK: %[[M:.+]] = arith.divui %[[G]], %c2 : index
// CHECK: %[[COL:.+]] = arith.muli %[[M]], %c8 : index
// CHECK-NOT: memref.load %[[RT]]
// CHECK: nvgpu.ldmatrix %[[RT]][%[[ROW]], %[[COL]]] {numTiles = 4 : i32, transpose = false} : memref<128x40xbf16, 3> -> vector<4x2xbf16>
// CHECK-COUNT-2: nvgpu.ldmatrix %[[RT]]
// CHECK-NOT: memref.store
// CHECK: nvgpu.mma.sync(%{{.+}}, %{{.+}}, %cst{{[_0-9]*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-NOT: nvgpu.mma.sync(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
// CHECK: nvgpu.mma.sync(%{{.+}}, %{{.+}}, %cst{{[_0-9]*}})
// CHECK-NOT: nvgpu.mma.sync(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
// CHECK: nvgpu.mma.sync(%{{.+}}, %{{.+}}, %cst{{[_0-9]*}})
// CHECK-NOT: memref.store
// CHECK-COUNT-3: nvgpu.mma.sync(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
// CHECK-COUNT-12: memref.store %{{.+}}, %[[X]]
// CHECK-COUNT-3: nvgpu.ldmatrix %[[RT]]
// CHECK-NOT: memref.load %[[RT]]
// CHECK-COUNT-6: nvgpu.mma.sync
// CHECK-COUNT-12: memref.store %{{.+}}, %[[X]]
// CHECK-NOT: nvgpu.mma.sync
// Only the subgroup reads its rows of X: a subgroup barrier, not the
// workgroup's.
// CHECK: txl.subgroup_barrier {txl.sync = "stores-done"}
// CHECK-NOT: gpu.barrier
// CHECK-NOT: txl.warpgroup_mma_wait
// CHECK-COUNT-16: memref.load %[[X]]
// CHECK-NOT: memref.load %[[X]]
// CHECK: %[[ACREADY:.+]] = txl.warpgroup_mma_wait %[[AC]] {pending = 1 : i64} : vector<4x2x2xf32>
// CHECK-NOT: memref.load %[[X]]
// CHECK: vector.extract %[[ACREADY]][0, 0, 0]
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
// P·V waited for after the softmax; O scaled by this tile's alpha; the
// next index mod 3.
// CHECK-NOT: txl.warpgroup_mma
// CHECK: %[[PVREADY:.+]] = txl.warpgroup_mma_wait %[[PV]] {pending = 0 : i64} : vector<4x2x2xf32>
// CHECK-NOT: txl.warpgroup_mma
// CHECK: %[[WRAP:.+]] = arith.cmpi eq, %[[MOD3]], %c2_i32 : i32
// CHECK-NEXT: %[[INC:.+]] = arith.addi %[[MOD3]], %c1_i32 : i32
// CHECK-NEXT: %[[MOD3NEXT:.+]] = arith.select %[[WRAP]], %c0_i32, %[[INC]] : i32
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield {{.+}}, %[[MOD3NEXT]] :
//
// The tail tile, when the keys end inside one: its copies came with the
// last whole tile's (or before the walk; the packed rows past klen are
// zeros): the wait, the barrier, its buffers, then the mask, and no copy;
// its AC and the previous tile's P·V as in the walk.
// CHECK-NEXT: }
// CHECK-NEXT: %[[HASTAIL:.+]] = arith.cmpi slt
// CHECK-NEXT: scf.if %[[HASTAIL]]
// CHECK-NEXT: nvgpu.device_async_wait %[[PROLOGUE]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier {txl.sync = "kv-staged"}
// CHECK-NOT: memref.load %[[K]]
// CHECK-NOT: nvgpu.device_async_copy
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: %[[TAILAC:.+]] = txl.warpgroup_mma async
// CHECK: %[[TAILPV:.+]] = txl.warpgroup_mma async
// CHECK: txl.warpgroup_mma_wait %[[TAILAC]] {pending = 1 : i64}
// CHECK: txl.warpgroup_mma_wait %[[TAILPV]] {pending = 0 : i64}
// CHECK: } else {
// CHECK-NOT: nvgpu.mma.sync
// CHECK-NOT: txl.warpgroup_mma
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.alloc
// No copy outlives the walk (the last whole tile's, of rows after it; the
// prologue's, when no tile ran).
// CHECK: nvgpu.device_async_wait %[[PROLOGUE]] {numGroups = 0 : i32}
// The last tile's P·V (waited for where it stands), on the buffer before
// the index the walk ends with.
// CHECK: %[[LAST2:.+]] = arith.select %{{.+}}, %[[VT1]], %[[VT2]] : memref<4x4x8x8xbf16, 3>
// CHECK: %[[LASTV:.+]] = arith.select %{{.+}}, %[[VT]], %[[LAST2]] : memref<4x4x8x8xbf16, 3>
// CHECK: txl.warpgroup_mma %{{.+}}, %[[LASTV]], %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[PL]]
// CHECK: memref.store %{{.+}}, %[[PO]]
// CHECK: } else {
// CHECK: memref.store %{{.+}}, %[[O]]
// CHECK: gpu.return

// The pack kernel: its workgroup's 32 keys of one (batch, head) of K (one
// chunk of 8 columns of a row per work-item, rows from klen on zero,
// stored as chunk (key % 32 / 8 * 4 + d / 8) * 8 + key % 8 of the
// workgroup's tile of k_packed: row key % 8 of core matrix [key % 32 / 8,
// d / 8]), of V (8 keys of one column per work-item, stored transposed as
// chunk (d / 8 * 4 + key % 32 / 8) * 8 + d % 8 of its tile of v_packed),
// and, for
// batch 0, of r; each chunk rounded by one vector truncation and stored
// as 16 bytes.
// CHECK: gpu.func @rel_attention_pack_bf16_d32(
// CHECK-SAME: %[[PK:arg0]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>, %[[PV:arg1]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>, %[[PR:arg2]]: memref<?x?x32xf32, strided<[?, ?, 1], offset: ?>>
// CHECK-SAME: %[[PKP:arg3]]: memref<?x?x?x128x8xbf16>, %[[PVP:arg4]]: memref<?x?x?x128x8xbf16>, %[[PRP:arg5]]: memref<?x?x32xbf16>)
// CHECK: %[[PKLEN:.+]] = memref.dim %[[PK]], %c0
// CHECK: %[[PTILE:.+]] = gpu.block_id x
// CHECK-NEXT: %[[PJ0:.+]] = arith.muli %[[PTILE]], %c32 : index
// CHECK: %[[PROW:.+]] = arith.addi %[[PJ0]], %{{.+}} : index
// CHECK: %[[PROWOK:.+]] = arith.cmpi ult, %[[PROW]], %[[PKLEN]] : index
// CHECK: %[[PIN:.+]] = arith.select %[[PROWOK]], %[[PROW]], %c0 : index
// CHECK: memref.load %[[PK]][%[[PIN]],
// CHECK: %[[KF:.+]] = vector.from_elements {{.+}} : vector<8xf32>
// CHECK-NEXT: %[[KH:.+]] = arith.truncf %[[KF]] : vector<8xf32> to vector<8xbf16>
// CHECK-NEXT: vector.store %[[KH]], %[[PKP]][%{{.+}}, %{{.+}}, %[[PTILE]], %{{.+}}, %c0] {alignment = 16 : i64}
// CHECK-COUNT-8: memref.load %[[PV]]
// CHECK: arith.truncf %{{.+}} : vector<8xf32> to vector<8xbf16>
// CHECK-NEXT: vector.store %{{.+}}, %[[PVP]][%{{.+}}, %{{.+}}, %[[PTILE]], %{{.+}}, %c0] {alignment = 16 : i64} : memref<?x?x?x128x8xbf16>, vector<8xbf16>
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %{{.+}}, %c0 : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-COUNT-8: memref.load %[[PR]]
// CHECK: vector.store %{{.+}}, %[[PRP]]
// CHECK: gpu.return

// precision=fp16 (--precision=fp16): the same kernel with f16 operands.
// F16: gpu.launch_func @txl_kernels::@rel_attention_pack_f16_d32
// F16-SAME: memref<?x?x?x128x8xf16>, %{{.+}} : memref<?x?x?x128x8xf16>, %{{.+}} : memref<?x?x32xf16>)
// F16: gpu.launch_func @txl_kernels::@rel_attention_f16_d32
// F16: gpu.func @rel_attention_f16_d32(
// F16-SAME: memref<4x4x8x8xf16, 3>, %{{.+}} : memref<4x4x8x8xf16, 3>, %{{.+}} : memref<128x40xf16, 3>, %{{.+}} : memref<4x4x8x8xf16, 3>, %{{.+}} : memref<4x4x8x8xf16, 3>)
// F16-COUNT-4: arith.truncf %{{.+}} : f32 to f16
// F16: txl.warpgroup_mma async %{{.+}} : vector<2x4x2xf16>, memref<4x4x8x8xf16, 3>, vector<4x2x2xf32>
// F16: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// F16: gpu.func @rel_attention_pack_f16_d32(
// F16: arith.truncf %{{.+}} : vector<8xf32> to vector<8xf16>

// BAD: Cannot find option named 'f16'!

func.func @eval(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
                %mem_len: index, %same: i1) -> tensor<?x?x4x32xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o : tensor<?x?x4x32xf32>
}

