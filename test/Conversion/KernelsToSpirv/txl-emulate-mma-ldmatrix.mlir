// RUN: txl-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-emulate-mma,cse))' | FileCheck %s

// nvgpu.ldmatrix of 4 core matrices from a bf16 workgroup tile => each
// lane's own loads, as ldmatrix.sync.x4 delivers them: lane 4 g + t takes
// the row of core matrix m whose address lane 8 m + g gave (that lane's
// linear offset in the static row-major tile, fetched by one shuffle and
// split back into the row and column), its elements 2 t and 2 t + 1.
// The tile is widened to f32 and each load rounds back to bf16 (exactly);
// the rounding of the extf that uses it becomes the bit arithmetic, and no
// bf16 value is left.

// CHECK-LABEL: gpu.func @x4
// CHECK-SAME: workgroup(%[[TILE:.+]] : memref<48x72xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[LANEIDX:.+]] = gpu.lane_id
// CHECK: %[[LANE:.+]] = arith.index_cast %[[LANEIDX]] : index to i32
// CHECK: %[[G:.+]] = arith.divui %[[LANE]], %c4_i32 : i32
// CHECK: %[[T:.+]] = arith.remui %[[LANE]], %c4_i32 : i32
// CHECK: %[[ROW32:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK: %[[ROWOFF:.+]] = arith.muli %[[ROW32]], %c72_i32 : i32
// CHECK: %[[COL32:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK: %[[OFF:.+]] = arith.addi %[[ROWOFF]], %[[COL32]] : i32
// CHECK: %[[GOT:[a-zA-Z_0-9]+]], %{{.+}} = gpu.shuffle  idx %[[OFF]], %[[G]], %c32_i32 : i32
// CHECK: %[[R32:.+]] = arith.divui %[[GOT]], %c72_i32 : i32
// CHECK: %[[ROW0:.+]] = arith.index_cast %[[R32]] : i32 to index
// CHECK: %[[C32:.+]] = arith.remui %[[GOT]], %c72_i32 : i32
// CHECK: %[[COL0:.+]] = arith.index_cast %[[C32]] : i32 to index
// CHECK: %[[T2:.+]] = arith.muli %[[T]], %c2_i32 : i32
// CHECK: %[[E0:.+]] = arith.index_cast %[[T2]] : i32 to index
// CHECK: %[[AT0:.+]] = arith.addi %[[COL0]], %[[E0]] : index
// CHECK: memref.load %[[TILE]][%[[ROW0]], %[[AT0]]] : memref<48x72xf32, #gpu.address_space<workgroup>>
// CHECK: %[[T21:.+]] = arith.addi %[[T2]], %c1_i32 : i32
// CHECK: %[[E1:.+]] = arith.index_cast %[[T21]] : i32 to index
// CHECK: %[[AT1:.+]] = arith.addi %[[COL0]], %[[E1]] : index
// CHECK: memref.load %[[TILE]][%[[ROW0]], %[[AT1]]]
// CHECK: %[[SRC1:.+]] = arith.addi %[[G]], %c8_i32 : i32
// CHECK: gpu.shuffle  idx %[[OFF]], %[[SRC1]], %c32_i32 : i32
// CHECK-COUNT-2: memref.load %[[TILE]]
// CHECK: %[[SRC2:.+]] = arith.addi %[[G]], %c16_i32 : i32
// CHECK: gpu.shuffle  idx %[[OFF]], %[[SRC2]], %c32_i32 : i32
// CHECK-COUNT-2: memref.load %[[TILE]]
// CHECK: %[[SRC3:.+]] = arith.addi %[[G]], %c24_i32 : i32
// CHECK: gpu.shuffle  idx %[[OFF]], %[[SRC3]], %c32_i32 : i32
// CHECK-COUNT-2: memref.load %[[TILE]]
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: bf16
// CHECK: gpu.return
gpu.module @k {
  gpu.func @x4(%row: index, %col: index, %o: memref<8xf32>)
      workgroup(%tile: memref<48x72xbf16, #gpu.address_space<workgroup>>) kernel {
    %v = nvgpu.ldmatrix %tile[%row, %col] {numTiles = 4 : i32, transpose = false}
        : memref<48x72xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
    %x0 = vector.extract %v[0, 0] : bf16 from vector<4x2xbf16>
    %w0 = arith.extf %x0 : bf16 to f32
    %c0 = arith.constant 0 : index
    memref.store %w0, %o[%c0] : memref<8xf32>
    %x1 = vector.extract %v[0, 1] : bf16 from vector<4x2xbf16>
    %w1 = arith.extf %x1 : bf16 to f32
    %c1 = arith.constant 1 : index
    memref.store %w1, %o[%c1] : memref<8xf32>
    %x2 = vector.extract %v[1, 0] : bf16 from vector<4x2xbf16>
    %w2 = arith.extf %x2 : bf16 to f32
    %c2 = arith.constant 2 : index
    memref.store %w2, %o[%c2] : memref<8xf32>
    %x3 = vector.extract %v[1, 1] : bf16 from vector<4x2xbf16>
    %w3 = arith.extf %x3 : bf16 to f32
    %c3 = arith.constant 3 : index
    memref.store %w3, %o[%c3] : memref<8xf32>
    %x4 = vector.extract %v[2, 0] : bf16 from vector<4x2xbf16>
    %w4 = arith.extf %x4 : bf16 to f32
    %c4 = arith.constant 4 : index
    memref.store %w4, %o[%c4] : memref<8xf32>
    %x5 = vector.extract %v[2, 1] : bf16 from vector<4x2xbf16>
    %w5 = arith.extf %x5 : bf16 to f32
    %c5 = arith.constant 5 : index
    memref.store %w5, %o[%c5] : memref<8xf32>
    %x6 = vector.extract %v[3, 0] : bf16 from vector<4x2xbf16>
    %w6 = arith.extf %x6 : bf16 to f32
    %c6 = arith.constant 6 : index
    memref.store %w6, %o[%c6] : memref<8xf32>
    %x7 = vector.extract %v[3, 1] : bf16 from vector<4x2xbf16>
    %w7 = arith.extf %x7 : bf16 to f32
    %c7 = arith.constant 7 : index
    memref.store %w7, %o[%c7] : memref<8xf32>
    gpu.return
  }
}

// -----

// A transposed ldmatrix (ldmatrix.sync.trans) is not emulated.
gpu.module @k {
  gpu.func @trans(%row: index, %col: index, %o: memref<8xf32>)
      workgroup(%tile: memref<48x72xbf16, #gpu.address_space<workgroup>>) kernel {
    // expected-error @+1 {{is not emulated: txl-emulate-mma takes 1, 2 or 4 core matrices of 16-bit elements, not transposed}}
    %v = nvgpu.ldmatrix %tile[%row, %col] {numTiles = 4 : i32, transpose = true}
        : memref<48x72xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
    %x = vector.extract %v[0, 0] : bf16 from vector<4x2xbf16>
    %w = arith.extf %x : bf16 to f32
    %c0 = arith.constant 0 : index
    memref.store %w, %o[%c0] : memref<8xf32>
    gpu.return
  }
}

// -----

// Nor is an ldmatrix of a tile whose shape is not static (its row start
// has no linear offset to fetch).
gpu.module @k {
  gpu.func @dynamic(%row: index, %col: index, %tile: memref<?x72xbf16, #gpu.address_space<workgroup>>,
                    %o: memref<8xf32>) kernel {
    // expected-error @+1 {{is not emulated: txl-emulate-mma takes an ldmatrix of a static row-major tile}}
    %v = nvgpu.ldmatrix %tile[%row, %col] {numTiles = 4 : i32, transpose = false}
        : memref<?x72xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
    %x = vector.extract %v[0, 0] : bf16 from vector<4x2xbf16>
    %w = arith.extf %x : bf16 to f32
    %c0 = arith.constant 0 : index
    memref.store %w, %o[%c0] : memref<8xf32>
    gpu.return
  }
}

// -----

// txl.subgroup_barrier => __spirv_ControlBarrier(Subgroup = 3, Subgroup,
// SequentiallyConsistent | WorkgroupMemory = 0x110), declared once.
// CHECK: llvm.func spir_funccc @_Z22__spirv_ControlBarrieriii(i32, i32, i32) attributes {convergent, no_unwind, will_return}
// CHECK-NOT: llvm.func
// CHECK-LABEL: gpu.func @warp_barrier
// CHECK-DAG: %[[SCOPE:.+]] = arith.constant 3 : i32
// CHECK-DAG: %[[SEM:.+]] = arith.constant 272 : i32
// CHECK: llvm.call spir_funccc @_Z22__spirv_ControlBarrieriii(%[[SCOPE]], %[[SCOPE]], %[[SEM]]) {convergent, no_unwind, will_return} : (i32, i32, i32) -> ()
// CHECK-NEXT: llvm.call spir_funccc @_Z22__spirv_ControlBarrieriii
// CHECK-NOT: txl.subgroup_barrier
// CHECK: gpu.return
gpu.module @k {
  gpu.func @warp_barrier() kernel {
    txl.subgroup_barrier
    txl.subgroup_barrier
    gpu.return
  }
}
