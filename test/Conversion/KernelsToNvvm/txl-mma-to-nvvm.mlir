// RUN: txl-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm))' \
// RUN:   | FileCheck %s --implicit-check-not=nvgpu.mma.sync

// bf16 m16n8k16 => nvvm.mma.sync: A's registers r = 0..3 and B's r = 0, 1
// are i32 with element [r][0] in the low and [r][1] in the high 16 bits
// (the pair as a vector<2xbf16>, bitcast: a pair rounded from f32 becomes
// one cvt.rn.bf16x2.f32);
// the four f32 accumulators pass through in [r][e] order.

// CHECK-LABEL: gpu.func @bf16
// CHECK-SAME: (%[[A:[^:]+]]: vector<4x2xbf16>, %[[B:[^:]+]]: vector<2x2xbf16>, %[[C:[^:]+]]: vector<2x2xf32>
// CHECK: %[[A00:.+]] = vector.extract %[[A]][0, 0]
// CHECK: %[[A01:.+]] = vector.extract %[[A]][0, 1]
// CHECK: %[[PAIR:.+]] = vector.from_elements %[[A00]], %[[A01]] : vector<2xbf16>
// CHECK: %[[BITS:.+]] = vector.bitcast %[[PAIR]] : vector<2xbf16> to vector<1xi32>
// CHECK: %[[R0:.+]] = vector.extract %[[BITS]][0] : i32 from vector<1xi32>
// CHECK: %[[C00:.+]] = vector.extract %[[C]][0, 0] : f32
// CHECK: %[[C01:.+]] = vector.extract %[[C]][0, 1] : f32
// CHECK: %[[C10:.+]] = vector.extract %[[C]][1, 0] : f32
// CHECK: %[[C11:.+]] = vector.extract %[[C]][1, 1] : f32
// CHECK: %[[D:.+]] = nvvm.mma.sync A[%[[R0]], %{{.+}}, %{{.+}}, %{{.+}}] B[%{{.+}}, %{{.+}}] C[%[[C00]], %[[C01]], %[[C10]], %[[C11]]]
// CHECK-SAME: layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-SAME: (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[D0:.+]] = llvm.extractvalue %[[D]][0]
// CHECK: %[[D3:.+]] = llvm.extractvalue %[[D]][3]
// CHECK: vector.from_elements %[[D0]], %{{.+}}, %{{.+}}, %[[D3]] : vector<2x2xf32>
gpu.module @k {
  gpu.func @bf16(%a: vector<4x2xbf16>, %b: vector<2x2xbf16>, %c: vector<2x2xf32>,
                 %o: memref<2x2xf32>) kernel {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]}
        : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %c0 = arith.constant 0 : index
    vector.store %d, %o[%c0, %c0] : memref<2x2xf32>, vector<2x2xf32>
    gpu.return
  }
}

// -----

// f16 m16n8k16 (--precision=fp16) => nvvm.mma.sync on vector<2xf16>
// registers, element [r][0] first (the f16 PTX types follow from them and
// are not printed).
// CHECK-LABEL: gpu.func @f16
// CHECK-SAME: (%[[A:[^:]+]]: vector<4x2xf16>
// CHECK: %[[A00:.+]] = vector.extract %[[A]][0, 0]
// CHECK: %[[A01:.+]] = vector.extract %[[A]][0, 1]
// CHECK: %[[R0:.+]] = vector.from_elements %[[A00]], %[[A01]] : vector<2xf16>
// CHECK: nvvm.mma.sync A[%[[R0]], %{{.+}}, %{{.+}}, %{{.+}}] B[%{{.+}}, %{{.+}}] C[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}]
// CHECK-SAME: {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
gpu.module @k {
  gpu.func @f16(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>,
                %o: memref<2x2xf32>) kernel {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]}
        : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %c0 = arith.constant 0 : index
    vector.store %d, %o[%c0, %c0] : memref<2x2xf32>, vector<2x2xf32>
    gpu.return
  }
}

// -----

// Negative: f16 accumulators are not a form the kernels use.
gpu.module @k {
  gpu.func @f16acc(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf16>,
                   %o: memref<2x2xf16>) kernel {
    // expected-error @below {{'nvgpu.mma.sync' op is not lowered: txlc's kernels use m16n8k16 with vector<4x2xbf16> A and vector<2x2xbf16> B, or vector<4x2xf16> A and vector<2x2xf16> B, and vector<2x2xf32> accumulators only}}
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]}
        : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
    %c0 = arith.constant 0 : index
    vector.store %d, %o[%c0, %c0] : memref<2x2xf16>, vector<2x2xf16>
    gpu.return
  }
}
