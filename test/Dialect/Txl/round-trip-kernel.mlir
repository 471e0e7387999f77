// RUN: txl-opt %s | txl-opt | FileCheck %s

// CHECK-LABEL: func.func @warpgroup_mma
// CHECK: %[[D:.+]] = txl.warpgroup_mma %{{.+}}, %{{.+}}, %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK: txl.warpgroup_mma %{{.+}}, %{{.+}}, %{{.+}} : vector<1x4x2xf16>, memref<32x2x8x8xf16, 3>, vector<32x2x2xf32>
func.func @warpgroup_mma(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x2x2xf32>,
                         %a16: vector<1x4x2xf16>, %b16: memref<32x2x8x8xf16, 3>, %c32: vector<32x2x2xf32>)
    -> (vector<4x2x2xf32>, vector<32x2x2xf32>) {
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  %e = txl.warpgroup_mma %a16, %b16, %c32 : vector<1x4x2xf16>, memref<32x2x8x8xf16, 3>, vector<32x2x2xf32>
  return %d, %e : vector<4x2x2xf32>, vector<32x2x2xf32>
}

// CHECK-LABEL: func.func @warpgroup_mma_async
// CHECK: %[[D:.+]] = txl.warpgroup_mma async %{{.+}}, %{{.+}}, %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-NEXT: %[[E:.+]] = txl.warpgroup_mma async
// CHECK-NEXT: %[[R:.+]] = txl.warpgroup_mma_wait %[[D]] {pending = 1 : i64} : vector<4x2x2xf32>
// CHECK-NEXT: %[[S:.+]] = txl.warpgroup_mma_wait %[[E]] {pending = 0 : i64} : vector<4x2x2xf32>
// CHECK-NEXT: return %[[R]], %[[S]]
func.func @warpgroup_mma_async(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x2x2xf32>)
    -> (vector<4x2x2xf32>, vector<4x2x2xf32>) {
  %d = txl.warpgroup_mma async %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  %e = txl.warpgroup_mma async %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  %r = txl.warpgroup_mma_wait %d {pending = 1} : vector<4x2x2xf32>
  %s = txl.warpgroup_mma_wait %e {pending = 0} : vector<4x2x2xf32>
  return %r, %s : vector<4x2x2xf32>, vector<4x2x2xf32>
}

// CHECK-LABEL: func.func @subgroup_barrier
// CHECK-NEXT: txl.subgroup_barrier
// CHECK-NEXT: txl.subgroup_barrier {txl.sync = "stores-done"}
func.func @subgroup_barrier() {
  txl.subgroup_barrier
  txl.subgroup_barrier {txl.sync = "stores-done"}
  return
}
