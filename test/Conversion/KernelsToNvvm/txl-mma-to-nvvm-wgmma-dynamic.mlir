// RUN: txl-opt %S/../Inputs/warpgroup-mma-dynamic.mlir \
// RUN:   --pass-pipeline='builtin.module(txl-dynamic-shared-memory,gpu.module(txl-mma-to-nvvm{wgmma=true}))' \
// RUN:   | FileCheck %s
// RUN: txl-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm{wgmma=true}))'
// RUN: txl-opt %S/../Inputs/warpgroup-mma-dynamic.mlir \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-emulate-mma))' \
// RUN:   | FileCheck %s --check-prefix=EMULATED --implicit-check-not=bf16
//
// Through the chip pipeline and ptxas: the tiles live in the extern
// dynamic buffer, and the kernel assembles with its wgmma (no spill, no
// warning), at sm_90a and, with each subgroup's mma.sync, at sm_80.
// RUN: rm -rf %t && mkdir -p %t
// RUN: txl-opt %S/../Inputs/warpgroup-mma-dynamic.mlir --txl-dynamic-shared-memory -o %t/moved.mlir
// RUN: txl-translate --kernels-to-ptx --ptx-chip=sm_90a %t/moved.mlir -o %t/dyn.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/dyn.ptx
// RUN: %ptxas -arch=sm_90a -warn-spills -Werror %t/dyn.ptx -o %t/dyn.cubin
// RUN: txl-translate --kernels-to-ptx --ptx-chip=sm_80 %t/moved.mlir -o %t/dyn80.ptx
// RUN: %ptxas -arch=sm_80 -warn-spills -Werror %t/dyn80.ptx -o %t/dyn80.cubin

// Past 48 KiB the product's B tiles are views of the kernel's dynamic
// shared memory at multiples of 16 bytes: aligned as they are (no
// attribute to set), and chosen among three by selects of selects. Each
// k-step's descriptor is the last false tile's (the first view) plus, in
// its low 32 bits, the same selects of each tile's difference from it
// (0 for itself); the barrier after the tiles' stores through the select
// gets the async-proxy fence.
// CHECK-LABEL: gpu.func @three
// CHECK-NOT: workgroup(
// CHECK: %[[BUF:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[V0:.+]] = memref.view %{{.+}}[%c0][] : memref<?xi8, 3> to memref<4x4x8x8xbf16, 3>
// CHECK: %[[V1:.+]] = memref.view %{{.+}}[%c2048][] : memref<?xi8, 3> to memref<4x4x8x8xbf16, 3>
// CHECK: %[[V2:.+]] = memref.view %{{.+}}[%c4096][] : memref<?xi8, 3> to memref<4x4x8x8xbf16, 3>
// CHECK: scf.for
// CHECK: %[[IS1:.+]] = arith.cmpi eq, %{{.+}}, %c1 : index
// CHECK: %[[IS2:.+]] = arith.cmpi eq, %{{.+}}, %c2 : index
// CHECK: %[[OTHER:.+]] = arith.select %[[IS2]], %[[V2]], %[[V0]] : memref<4x4x8x8xbf16, 3>
// CHECK: %[[TILE:.+]] = arith.select %[[IS1]], %[[V1]], %[[OTHER]] : memref<4x4x8x8xbf16, 3>
// CHECK: memref.store %{{.+}}, %[[TILE]]
// CHECK: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
// CHECK-NEXT: gpu.barrier
// CHECK: %[[P1:.+]] = memref.extract_aligned_pointer_as_index %[[V1]]
// CHECK: %[[P0:.+]] = memref.extract_aligned_pointer_as_index %[[V0]]
// CHECK: %[[D1:.+]] = arith.subi %{{.+}}, %{{.+}} : i32
// CHECK: %[[P2:.+]] = memref.extract_aligned_pointer_as_index %[[V2]]
// CHECK: %[[D2:.+]] = arith.subi %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: %[[S2:.+]] = arith.select %[[IS2]], %[[D2]], %c0_i32 : i32
// CHECK-NEXT: %[[DELTA:.+]] = arith.select %[[IS1]], %[[D1]], %[[S2]] : i32
// CHECK: arith.addi %{{.+}}, %[[DELTA]] : i32
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.inline_asm has_side_effects "wgmma.mma_async
// CHECK: llvm.inline_asm has_side_effects "wgmma.mma_async
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0

// OpenCL (no dynamic shared memory: the tiles stay attributions): the
// three tiles that the selects of selects choose among are widened to f32
// with them.
// EMULATED: workgroup(%{{.+}} : memref<4x4x8x8xf32, 3>, %{{.+}} : memref<4x4x8x8xf32, 3>, %{{.+}} : memref<4x4x8x8xf32, 3>, %{{.+}} : memref<12288xf32, 3>)

// PTX: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// PTX: fence.proxy.async.shared::cta;
// PTX: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16

// -----

// A view of dynamic shared memory at an offset that is not a multiple of
// 16 bytes is not aligned for a descriptor.
gpu.module @txl_kernels {
  gpu.func @misaligned(%a: vector<1x4x2xbf16>, %c: vector<1x2x2xf32>) kernel {
    %buf = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %space = memref.memory_space_cast %buf : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xi8, 3>
    %c8 = arith.constant 8 : index
    %tile = memref.view %space[%c8][] : memref<?xi8, 3> to memref<1x2x8x8xbf16, 3>
    // expected-error @+1 {{needs b to be a workgroup attribution of its kernel or a view of its dynamic shared memory at a multiple of 16 bytes (its 16-byte alignment)}}
    %d = txl.warpgroup_mma %a, %tile, %c : vector<1x4x2xbf16>, memref<1x2x8x8xbf16, 3>, vector<1x2x2xf32>
    gpu.return
  }
}

// -----

// A view of a workgroup attribution (not of the dynamic buffer) has no
// alignment that the lowering knows.
gpu.module @txl_kernels {
  gpu.func @attribution_view(%a: vector<1x4x2xbf16>, %c: vector<1x2x2xf32>)
      workgroup(%bytes : memref<4096xi8, 3>) kernel {
    %c0 = arith.constant 0 : index
    %tile = memref.view %bytes[%c0][] : memref<4096xi8, 3> to memref<1x2x8x8xbf16, 3>
    // expected-error @+1 {{needs b to be a workgroup attribution of its kernel or a view of its dynamic shared memory at a multiple of 16 bytes}}
    %d = txl.warpgroup_mma %a, %tile, %c : vector<1x4x2xbf16>, memref<1x2x8x8xbf16, 3>, vector<1x2x2xf32>
    gpu.return
  }
}
