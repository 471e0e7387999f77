// RUN: txl-opt %S/../Inputs/warpgroup-mma-async.mlir \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm{wgmma=true}))' \
// RUN:   | FileCheck %s --implicit-check-not=txl.warpgroup_mma \
// RUN:     --implicit-check-not=nvvm.wgmma.wait.group
// RUN: txl-opt %S/../Inputs/warpgroup-mma-async.mlir \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm))' \
// RUN:   | FileCheck %s --check-prefix=SYNC --implicit-check-not=txl.warpgroup_mma \
// RUN:     --implicit-check-not=llvm.inline_asm --implicit-check-not=wgmma
// RUN: txl-opt %S/../Inputs/warpgroup-mma-async.mlir \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-emulate-mma))' \
// RUN:   | FileCheck %s --check-prefix=EMULATED --implicit-check-not=txl.warpgroup_mma \
// RUN:     --implicit-check-not=nvgpu.mma.sync
//
// Through the chip pipeline and ptxas (no spill, no warning): in SASS the
// first product's wait (DEPBAR.LE gsb0, 0x1) comes after both products
// are issued and leaves the second in flight, the second's (0x0) after the
// first's results are stored.
// RUN: rm -rf %t && mkdir -p %t
// RUN: txl-translate --kernels-to-ptx --ptx-chip=sm_90a %S/../Inputs/warpgroup-mma-async.mlir -o %t/wa.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/wa.ptx
// RUN: %ptxas -arch=sm_90a -warn-spills -Werror %t/wa.ptx -o %t/wa.cubin
// RUN: %cuobjdump -sass %t/wa.cubin | FileCheck %s --check-prefix=SASS

// wgmma=true (sm_90a): an async product is the fence, its k-steps and the
// commit, with no wait; the wait for the first leaves 1 group pending and
// passes the first product's 16 registers through one empty volatile asm
// (outputs tied to inputs) whose outputs are what the stores read; the
// second wait leaves none.
// CHECK-LABEL: gpu.func @wg_async
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// CHECK: %[[FIRST:.+]] = llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// CHECK: %[[F0:.+]] = llvm.extractvalue %[[FIRST]][0]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-COUNT-16: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<128x16xf32>
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: %[[FENCE:.+]] = llvm.inline_asm has_side_effects "", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15" %[[F0]],
// CHECK: %[[R0:.+]] = llvm.extractvalue %[[FENCE]][0]
// CHECK: memref.store %[[R0]], %{{.+}}[%{{.+}}, %c0, %c0, %c0] : memref<128x4x2x2xf32>
// CHECK-COUNT-15: memref.store
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: llvm.inline_asm has_side_effects "", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"
// CHECK-COUNT-16: memref.store
// CHECK: gpu.return

// Without wgmma (sm_80): the products are computed where they stand (2
// products x 2 k-steps x 4 n-blocks of mma.sync) and the waits are gone.
// SYNC-LABEL: gpu.func @wg_async
// SYNC-COUNT-16: nvvm.mma.sync
// SYNC-NOT: nvvm.mma.sync
// SYNC: gpu.return

// OpenCL: likewise, each product its subgroups' emulated products.
// EMULATED-LABEL: gpu.func @wg_async
// EMULATED-NOT: txl.warpgroup_mma_wait
// EMULATED: gpu.return

// PTX: wgmma.commit_group.sync.aligned;
// PTX-NOT: wgmma.wait_group
// PTX: wgmma.commit_group.sync.aligned;
// PTX-NOT: wgmma.wait_group
// PTX: st.global
// PTX: wgmma.wait_group.sync.aligned 1;
// PTX: wgmma.wait_group.sync.aligned 0;

// SASS: HGMMA.64x32x16.F32.BF16
// SASS: HGMMA.64x32x16.F32.BF16 {{.+}}, gsb0
// SASS-NOT: DEPBAR
// SASS: HGMMA.64x32x16.F32.BF16
// SASS: HGMMA.64x32x16.F32.BF16 {{.+}}, gsb0
// SASS: WARPGROUP.DEPBAR.LE gsb0, 0x1
// SASS: WARPGROUP.DEPBAR.LE gsb0, 0x0
