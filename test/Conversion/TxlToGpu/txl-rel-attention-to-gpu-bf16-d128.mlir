// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 | FileCheck %s --check-prefix=NOCARRY

// precision=bf16 at d_head 128: the packed form of
// txl-rel-attention-to-gpu-bf16.mlir (d_head 32), 16 chunks of 16 bytes a
// row: K, V and pos_key packed in bf16 by rel_attention_pack_bf16_d128,
// every key tile's K, V and r rows copied asynchronously (cp.async) into
// the other of two buffers and the r ring (128 rows of 128 + 8 columns)
// during the tile before, one barrier a tile, the query fragments held in
// registers. Unlike d_head 32 and 64 it does not carry a tile's
// probabilities into the next tile (their 16 registers would spill on
// sm_80): V has two buffers, chosen by the tile's parity as K's, no third,
// and each tile's P·V is its own, not async, after AC's wait with
// pending = 0.
// CHECK-LABEL: func.func @eval_d128
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_pack_bf16_d128
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_bf16_d128
// CHECK-SAME: memref<?x?x?x512x8xbf16>, %{{.+}} : memref<?x?x?x512x8xbf16>, %{{.+}} : memref<?x?x128xbf16>
// CHECK-LABEL: gpu.func @rel_attention_bf16_d128(
// CHECK-SAME: workgroup(%[[X:.+]] : memref<64x56xf32, 3>, %[[KT:.+]] : memref<4x16x8x8xbf16, 3>, %[[VT:.+]] : memref<16x4x8x8xbf16, 3>, %[[RT:.+]] : memref<128x136xbf16, 3>, %[[KT1:.+]] : memref<4x16x8x8xbf16, 3>, %[[VT1:.+]] : memref<16x4x8x8xbf16, 3>) kernel
// The prologue: the first tile's K (4 copies a work-item), V (4) and its
// whole r window (96 rows: 12) as one group.
// CHECK: %[[PROLOGUE:.+]] = nvgpu.device_async_create_group
// CHECK-SAME: %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}{{$}}
// The walk's state: m, l (2 each) and the 64 accumulators of O, nothing
// carried.
// CHECK: %{{.+}}:68 = scf.for %[[J0:.+]] = %[[WALK0:.+]] to %{{.+}} step %c32 iter_args(
// CHECK-NEXT: %[[RB:.+]] = arith.subi %[[J0]], %[[WALK0]] : index
// CHECK-NEXT: nvgpu.device_async_wait %[[PROLOGUE]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier {txl.sync = "kv-staged"}
// CHECK-NEXT: %[[PARBIT:.+]] = arith.andi %[[RB]], %c32 : index
// CHECK-NEXT: %[[ODD:.+]] = arith.cmpi ne, %[[PARBIT]], %c0 : index
// CHECK-NEXT: %[[KCUR:.+]] = arith.select %[[ODD]], %[[KT1]], %[[KT]] : memref<4x16x8x8xbf16, 3>
// CHECK-NEXT: %[[VCUR:.+]] = arith.select %[[ODD]], %[[VT1]], %[[VT]] : memref<16x4x8x8xbf16, 3>
// CHECK-NEXT: arith.addi %[[J0]], %c32 : index
// CHECK-NEXT: %[[KNEXT:.+]] = arith.select %[[ODD]], %[[KT]], %[[KT1]] : memref<4x16x8x8xbf16, 3>
// CHECK-NEXT: %[[VNEXT:.+]] = arith.select %[[ODD]], %[[VT]], %[[VT1]] : memref<16x4x8x8xbf16, 3>
// Each key tile of k_packed and v_packed is the image of the workgroup's
// tile (its core matrices, 512 chunks of 16 bytes), so that a work-item
// copies chunk x of the packed tile to chunk x of the workgroup's tile
// (a collapse_shape of it), x = its id + 128 s; steps 1-3 read views of
// k_packed and v_packed whose static offsets hold their 128, 256 and 384
// chunks, at the same indices as step 0 (the offsets are the copies'
// immediates on CUDA).
// CHECK: %[[KCH:.+]] = memref.collapse_shape %[[KNEXT]] {{\[}}[0, 1, 2], [3]] : memref<4x16x8x8xbf16, 3> into memref<512x8xbf16, 3>
// CHECK-NEXT: nvgpu.device_async_copy %arg1[%[[B:[0-9a-z_]+]], %[[H:[0-9a-z_]+]], %[[TILE:[0-9a-z_]+]], %[[TID:[0-9a-z_]+]], %c0], %[[KCH]][%[[TID]], %c0], 8 {bypassL1} : memref<?x?x?x512x8xbf16> to memref<512x8xbf16, 3>
// CHECK-NEXT: %[[S1:.+]] = arith.addi %[[TID]], %c128 : index
// CHECK-NEXT: nvgpu.device_async_copy %{{subview[_0-9]*}}[%[[B]], %[[H]], %[[TILE]], %[[TID]], %c0], %[[KCH]][%[[S1]], %c0], 8 {bypassL1} : memref<?x?x?x384x8xbf16, strided<[?, ?, 4096, 8, 1], offset: 1024>> to
// CHECK-NEXT: %[[S2:.+]] = arith.addi %[[TID]], %c256 : index
// CHECK-NEXT: nvgpu.device_async_copy %{{subview[_0-9]*}}[%[[B]], %[[H]], %[[TILE]], %[[TID]], %c0], %[[KCH]][%[[S2]], %c0], 8 {bypassL1} : memref<?x?x?x256x8xbf16, strided<[?, ?, 4096, 8, 1], offset: 2048>> to
// CHECK-NEXT: %[[S3:.+]] = arith.addi %[[TID]], %c384 : index
// CHECK-NEXT: nvgpu.device_async_copy %{{subview[_0-9]*}}[%[[B]], %[[H]], %[[TILE]], %[[TID]], %c0], %[[KCH]][%[[S3]], %c0], 8 {bypassL1} : memref<?x?x?x128x8xbf16, strided<[?, ?, 4096, 8, 1], offset: 3072>> to
// CHECK-NEXT: %[[VCH:.+]] = memref.collapse_shape %[[VNEXT]] {{\[}}[0, 1, 2], [3]] : memref<16x4x8x8xbf16, 3> into memref<512x8xbf16, 3>
// CHECK-NEXT: nvgpu.device_async_copy %arg2[%[[B]], %[[H]], %[[TILE]], %[[TID]], %c0], %[[VCH]][%[[TID]], %c0], 8 {bypassL1} : memref<?x?x?x512x8xbf16> to memref<512x8xbf16, 3>
// CHECK-NEXT: arith.addi %[[TID]], %c128 : index
// CHECK-NEXT: nvgpu.device_async_copy %{{subview[_0-9]*}}[%[[B]], %[[H]], %[[TILE]], %[[TID]], %c0], %[[VCH]][%{{.+}}, %c0], 8 {bypassL1} : memref<?x?x?x384x8xbf16, strided<[?, ?, 4096, 8, 1], offset: 1024>> to
// CHECK-NEXT: arith.addi %[[TID]], %c256 : index
// CHECK-NEXT: nvgpu.device_async_copy %{{subview[_0-9]*}}[%[[B]], %[[H]], %[[TILE]], %[[TID]], %c0], %[[VCH]][%{{.+}}, %c0], 8 {bypassL1} : memref<?x?x?x256x8xbf16, strided<[?, ?, 4096, 8, 1], offset: 2048>> to
// CHECK-NEXT: arith.addi %[[TID]], %c384 : index
// CHECK-NEXT: nvgpu.device_async_copy %{{subview[_0-9]*}}[%[[B]], %[[H]], %[[TILE]], %[[TID]], %c0], %[[VCH]][%{{.+}}, %c0], 8 {bypassL1} : memref<?x?x?x128x8xbf16, strided<[?, ?, 4096, 8, 1], offset: 3072>> to
// CHECK-COUNT-4: nvgpu.device_async_copy %arg3[{{.+}}], %[[RT]][{{.+}}], 8 {bypassL1}
// CHECK-NEXT: nvgpu.device_async_create_group
// CHECK-NEXT: %[[QV:.+]] = vector.from_elements
// CHECK-NEXT: %[[AC:.+]] = txl.warpgroup_mma async %[[QV]], %[[KCUR]], %{{.+}} : vector<8x4x2xbf16>, memref<4x16x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-NOT: gpu.barrier
// CHECK: txl.warpgroup_mma_wait %[[AC]] {pending = 0 : i64}
// CHECK-NOT: gpu.barrier
// CHECK: txl.warpgroup_mma %{{.+}}, %[[VCUR]], %{{.+}} : vector<2x4x2xbf16>, memref<16x4x8x8xbf16, 3>, vector<16x2x2xf32>
// CHECK-NOT: txl.warpgroup_mma
// CHECK: scf.yield
// The tail tile likewise, then no copy outlives the walk.
// CHECK: nvgpu.device_async_wait %[[PROLOGUE]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier {txl.sync = "kv-staged"}
// CHECK: nvgpu.device_async_wait %[[PROLOGUE]] {numGroups = 0 : i32}
// CHECK-NOT: txl.warpgroup_mma
// CHECK: gpu.return

// No async P·V, no second wait, no rolled staging loop or per-lane r
// reads (the old d_head 128 form: scf.for to 32 and 6 inside the walk).
// NOCARRY-LABEL: gpu.func @rel_attention_bf16_d128(
// NOCARRY-NOT: pending = 1
// NOCARRY-NOT: reads-done
// NOCARRY-NOT: scf.for %{{.+}} = %c0 to %c32 step %c1
// NOCARRY-NOT: scf.for %{{.+}} = %c0 to %c6 step %c1
// NOCARRY: gpu.return

func.func @eval_d128(%q: tensor<?x?x2x128xf32>, %k: tensor<?x?x2x128xf32>, %v: tensor<?x?x2x128xf32>,
                     %r: tensor<?x2x128xf32>, %u: tensor<2x128xf32>, %vb: tensor<2x128xf32>,
                     %mem_len: index, %same: i1) -> tensor<?x?x2x128xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.088388346 : f32}
      : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>,
        tensor<?x2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32> -> tensor<?x?x2x128xf32>
  return %o : tensor<?x?x2x128xf32>
}
