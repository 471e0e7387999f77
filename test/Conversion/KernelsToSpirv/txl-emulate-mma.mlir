// RUN: txl-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-emulate-mma,cse))' | FileCheck %s

// bf16 m16n8k16 => shuffles. Every f32 -> bf16 -> f32 round trip becomes
// round-to-nearest-even on the bits (x + 0x7fff + lsb, low half cleared;
// NaN kept). Each 32-bit register (two elements) crosses lanes as one i64
// shuffle, element 0 in the low word, packed once before the products'
// loop of 8 steps: step s = 4 h + p (k = 8 h + 2 p and 8 h + 2 p + 1)
// fetches A's register 2 h + r (row g + 8 r) from lane 4 g + p and B's
// register h from lane 4 (2 t + e) + p, 4 shuffles a step (32 a product),
// and adds the step's 8 products to D in the order of k: D[g][2 t] starts
// with C + A[g][0] B[0][2 t]. No bf16 value is left.

// CHECK-LABEL: gpu.func @bf16
// CHECK-SAME: (%[[A0:[^:]+]]: f32, %[[A1:[^:]+]]: f32, %[[A2:[^:]+]]: f32, %[[A3:[^:]+]]: f32
// CHECK-SAME: %[[B0:arg8]]: f32, %[[B1:arg9]]: f32
// CHECK-SAME: %[[C:arg12]]: vector<2x2xf32>
// CHECK: %[[BITS:.+]] = arith.bitcast %[[A0]] : f32 to i32
// CHECK: %[[LSB0:.+]] = arith.shrui %[[BITS]], %c16_i32 : i32
// CHECK: %[[LSB:.+]] = arith.andi %[[LSB0]], %c1_i32 : i32
// CHECK: %[[UP:.+]] = arith.addi %[[BITS]], %c32767_i32 : i32
// CHECK: %[[UP2:.+]] = arith.addi %[[UP]], %[[LSB]] : i32
// CHECK: %[[RND:.+]] = arith.andi %[[UP2]], %c-65536_i32 : i32
// CHECK: %[[NAN:.+]] = arith.cmpf uno, %[[A0]], %[[A0]] : f32
// CHECK: %[[RF:.+]] = arith.bitcast %[[RND]] : i32 to f32
// CHECK: %[[RA0:.+]] = arith.select %[[NAN]], %[[A0]], %[[RF]] : f32
// CHECK: %[[RA1:.+]] = arith.select %{{.+}}, %[[A1]], %{{.+}} : f32
// CHECK: %[[RA2:.+]] = arith.select %{{.+}}, %[[A2]], %{{.+}} : f32
// CHECK: %[[RA3:.+]] = arith.select %{{.+}}, %[[A3]], %{{.+}} : f32
// CHECK: %[[RB0:.+]] = arith.select %{{.+}}, %[[B0]], %{{.+}} : f32
// CHECK: %[[RB1:.+]] = arith.select %{{.+}}, %[[B1]], %{{.+}} : f32
// CHECK: %[[C00:.+]] = vector.extract %[[C]][0, 0] : f32 from vector<2x2xf32>
// CHECK: %[[C01:.+]] = vector.extract %[[C]][0, 1]
// CHECK: %[[C10:.+]] = vector.extract %[[C]][1, 0]
// CHECK: %[[C11:.+]] = vector.extract %[[C]][1, 1]
// CHECK: %[[LANEIDX:.+]] = gpu.lane_id
// CHECK: %[[LANE:.+]] = arith.index_cast %[[LANEIDX]] : index to i32
// CHECK: %[[G:.+]] = arith.divui %[[LANE]], %c4_i32 : i32
// CHECK: %[[T:.+]] = arith.remui %[[LANE]], %c4_i32 : i32
// A's register 0 (A[g][0..1]): element 0 low, element 1 high.
// CHECK: %[[L0:.+]] = arith.bitcast %[[RA0]] : f32 to i32
// CHECK: %[[L1:.+]] = arith.extui %[[L0]] : i32 to i64
// CHECK: %[[H0:.+]] = arith.bitcast %[[RA1]] : f32 to i32
// CHECK: %[[H1:.+]] = arith.extui %[[H0]] : i32 to i64
// CHECK: %[[H2:.+]] = arith.shli %[[H1]], %c32_i64 : i64
// CHECK: %[[AREG0:.+]] = arith.ori %[[L1]], %[[H2]] : i64
// CHECK: %[[AREG1:.+]] = arith.ori
// CHECK: %[[AREG2:.+]] = arith.ori
// CHECK: %[[AREG3:.+]] = arith.ori
// CHECK: %[[BREG0:.+]] = arith.ori
// CHECK: %[[BREG1:.+]] = arith.ori
// CHECK: %[[ALANE:.+]] = arith.muli %[[G]], %c4_i32 : i32
// CHECK: %[[T2:.+]] = arith.muli %[[T]], %c2_i32 : i32
// CHECK: %[[BLANE0:.+]] = arith.muli %[[T2]], %c4_i32 : i32
// CHECK: %[[N1:.+]] = arith.addi %[[T2]], %c1_i32 : i32
// CHECK: %[[BLANE1:.+]] = arith.muli %[[N1]], %c4_i32 : i32
// CHECK-NOT: gpu.shuffle
// CHECK: %{{.+}}:4 = scf.for %[[STEP:.+]] = %c0 to %c8 step %c1 iter_args(%[[D00:.+]] = %[[C00]], %[[D01:.+]] = %[[C01]], %[[D10:.+]] = %[[C10]], %[[D11:.+]] = %[[C11]])
// CHECK: %[[S:.+]] = arith.index_cast %[[STEP]] : index to i32
// CHECK: %[[P:.+]] = arith.andi %[[S]], %c3_i32 : i32
// CHECK: %[[HIGH:.+]] = arith.cmpi uge, %[[S]], %c4_i32 : i32
// CHECK: %[[OWNA0:.+]] = arith.select %[[HIGH]], %[[AREG2]], %[[AREG0]] : i64
// CHECK: %[[ASRC:.+]] = arith.addi %[[ALANE]], %[[P]] : i32
// CHECK: %[[GOTA0:.+]], %{{.+}} = gpu.shuffle  idx %[[OWNA0]], %[[ASRC]], %c32_i32 : i64
// CHECK: %[[LOA0:.+]] = arith.trunci %[[GOTA0]] : i64 to i32
// CHECK: %[[A00:.+]] = arith.bitcast %[[LOA0]] : i32 to f32
// CHECK: %[[HIA0:.+]] = arith.shrui %[[GOTA0]], %c32_i64 : i64
// CHECK: %[[OWNA1:.+]] = arith.select %[[HIGH]], %[[AREG3]], %[[AREG1]] : i64
// CHECK: gpu.shuffle  idx %[[OWNA1]], %[[ASRC]], %c32_i32 : i64
// CHECK: %[[OWNB:.+]] = arith.select %[[HIGH]], %[[BREG1]], %[[BREG0]] : i64
// CHECK: %[[BSRC0:.+]] = arith.addi %[[BLANE0]], %[[P]] : i32
// CHECK: %[[GOTB0:.+]], %{{.+}} = gpu.shuffle  idx %[[OWNB]], %[[BSRC0]], %c32_i32 : i64
// CHECK: %[[LOB0:.+]] = arith.trunci %[[GOTB0]] : i64 to i32
// CHECK: %[[B00:.+]] = arith.bitcast %[[LOB0]] : i32 to f32
// CHECK: %[[BSRC1:.+]] = arith.addi %[[BLANE1]], %[[P]] : i32
// CHECK: gpu.shuffle  idx %[[OWNB]], %[[BSRC1]], %c32_i32 : i64
// CHECK-NOT: gpu.shuffle
// CHECK: %[[PROD:.+]] = arith.mulf %[[A00]], %[[B00]] : f32
// CHECK: %[[SUM:.+]] = arith.addf %[[D00]], %[[PROD]] : f32
// CHECK: arith.mulf %[[A00]]
// CHECK: arith.addf %[[D01]]
// CHECK: arith.addf %[[D10]]
// CHECK: arith.addf %[[D11]]
// CHECK: arith.addf %[[SUM]]
// CHECK-COUNT-3: arith.addf
// CHECK-NEXT: scf.yield
// CHECK: vector.from_elements {{.+}} : vector<2x2xf32>
// CHECK-NOT: bf16
// CHECK: gpu.return
gpu.module @k {
  gpu.func @bf16(%a0: f32, %a1: f32, %a2: f32, %a3: f32, %a4: f32, %a5: f32, %a6: f32, %a7: f32,
                 %b0: f32, %b1: f32, %b2: f32, %b3: f32, %c: vector<2x2xf32>,
                 %o: memref<2x2xf32>) kernel {
    %ta0 = arith.truncf %a0 : f32 to bf16
    %ta1 = arith.truncf %a1 : f32 to bf16
    %ta2 = arith.truncf %a2 : f32 to bf16
    %ta3 = arith.truncf %a3 : f32 to bf16
    %ta4 = arith.truncf %a4 : f32 to bf16
    %ta5 = arith.truncf %a5 : f32 to bf16
    %ta6 = arith.truncf %a6 : f32 to bf16
    %ta7 = arith.truncf %a7 : f32 to bf16
    %tb0 = arith.truncf %b0 : f32 to bf16
    %tb1 = arith.truncf %b1 : f32 to bf16
    %tb2 = arith.truncf %b2 : f32 to bf16
    %tb3 = arith.truncf %b3 : f32 to bf16
    %a = vector.from_elements %ta0, %ta1, %ta2, %ta3, %ta4, %ta5, %ta6, %ta7 : vector<4x2xbf16>
    %b = vector.from_elements %tb0, %tb1, %tb2, %tb3 : vector<2x2xbf16>
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]}
        : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %c0 = arith.constant 0 : index
    vector.store %d, %o[%c0, %c0] : memref<2x2xf32>, vector<2x2xf32>
    gpu.return
  }
}

// -----

// The loops of the bf16 kernels (constant trip count <= 8) around an mma
// that also store to workgroup memory are unrolled first (Intel's OpenCL
// CPU compiler miscompiles them rolled): @tile's loop is gone, one
// workgroup store per iteration (CSE merges the two equal products; the
// one loop left is the product's own 8 steps). @global's loop, whose
// stores go to global memory, stays rolled, as does @long's, of 9 trips.
// CHECK-LABEL: gpu.func @tile
// CHECK: %[[D:.+]]:4 = scf.for %{{.+}} = %c0 to %c8 step %c1 iter_args
// CHECK: gpu.shuffle  idx
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: memref.store %[[D]]#0, %{{.+}}[%c0] : memref<4xf32, 3>
// CHECK-NEXT: memref.store %[[D]]#0, %{{.+}}[%c1] : memref<4xf32, 3>
// CHECK-NOT: scf.for
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @global
// CHECK: scf.for %{{.+}} = %c0 to %c2 step %c1 {
// CHECK: scf.for %{{.+}} = %c0 to %c8 step %c1 iter_args
// CHECK: gpu.shuffle  idx
// CHECK: vector.store
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @long
// CHECK: scf.for %{{.+}} = %c0 to %c9 step %c1 {
// CHECK: gpu.shuffle  idx
// CHECK: memref.store
// CHECK: gpu.return
gpu.module @k {
  gpu.func @tile(%x: f32, %c: vector<2x2xf32>)
      workgroup(%tile: memref<4xf32, 3>) kernel {
    %h = arith.truncf %x : f32 to bf16
    %a = vector.broadcast %h : bf16 to vector<4x2xbf16>
    %b = vector.broadcast %h : bf16 to vector<2x2xbf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %i = %c0 to %c2 step %c1 {
      %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]}
          : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %e = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
      memref.store %e, %tile[%i] : memref<4xf32, 3>
    }
    gpu.return
  }
  gpu.func @global(%x: f32, %c: vector<2x2xf32>, %o: memref<2x2xf32>) kernel {
    %h = arith.truncf %x : f32 to bf16
    %a = vector.broadcast %h : bf16 to vector<4x2xbf16>
    %b = vector.broadcast %h : bf16 to vector<2x2xbf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %i = %c0 to %c2 step %c1 {
      %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]}
          : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
      vector.store %d, %o[%i, %c0] : memref<2x2xf32>, vector<2x2xf32>
    }
    gpu.return
  }
  gpu.func @long(%x: f32, %c: vector<2x2xf32>)
      workgroup(%tile: memref<9xf32, 3>) kernel {
    %h = arith.truncf %x : f32 to bf16
    %a = vector.broadcast %h : bf16 to vector<4x2xbf16>
    %b = vector.broadcast %h : bf16 to vector<2x2xbf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c9 = arith.constant 9 : index
    scf.for %i = %c0 to %c9 step %c1 {
      %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]}
          : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %e = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
      memref.store %e, %tile[%i] : memref<9xf32, 3>
    }
    gpu.return
  }
}

// -----

// f16 (--precision=fp16): the same i64 shuffles (as in @bf16; here every
// operand is one value, so CSE keeps fewer) on f16 operands, rounded like
// cvt.rn.f16.f32 on the magnitude's bits: the low 13 bits to nearest even
// (+ 0xfff + lsb), infinity from 65520 (0x477ff000) up, below 2^-14
// (0x38800000) a multiple of 2^-24 as (|x| + 0.5) - 0.5; the sign and NaN
// kept.
// CHECK-LABEL: gpu.func @f16
// CHECK-SAME: (%[[X:[^:]+]]: f32
// CHECK: %[[BITS:.+]] = arith.bitcast %[[X]] : f32 to i32
// CHECK: %[[MAG:.+]] = arith.andi %[[BITS]], %c2147483647_i32 : i32
// CHECK: %[[OVER:.+]] = arith.cmpi uge, %[[MAG]], %c1199566848_i32 : i32
// CHECK: %[[SUB:.+]] = arith.cmpi ult, %[[MAG]], %c947912704_i32 : i32
// CHECK: %[[MAGF:.+]] = arith.bitcast %[[MAG]] : i32 to f32
// CHECK: %[[UP:.+]] = arith.addf %[[MAGF]], %cst : f32
// CHECK: %[[Q:.+]] = arith.subf %[[UP]], %cst : f32
// CHECK: %[[QBITS:.+]] = arith.bitcast %[[Q]] : f32 to i32
// CHECK: %[[LSB0:.+]] = arith.shrui %[[MAG]], %c13_i32 : i32
// CHECK: %[[LSB:.+]] = arith.andi %[[LSB0]], %c1_i32 : i32
// CHECK: %[[R0:.+]] = arith.addi %[[MAG]], %c4095_i32 : i32
// CHECK: %[[R1:.+]] = arith.addi %[[R0]], %[[LSB]] : i32
// CHECK: %[[NORMAL:.+]] = arith.andi %[[R1]], %c-8192_i32 : i32
// CHECK: %[[S1:.+]] = arith.select %[[SUB]], %[[QBITS]], %[[NORMAL]] : i32
// CHECK: %[[S2:.+]] = arith.select %[[OVER]], %c2139095040_i32, %[[S1]] : i32
// CHECK: %[[SIGN:.+]] = arith.andi %[[BITS]], %c-2147483648_i32 : i32
// CHECK: %[[ALL:.+]] = arith.ori %[[S2]], %[[SIGN]] : i32
// CHECK: %[[NAN:.+]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK: %[[RF:.+]] = arith.bitcast %[[ALL]] : i32 to f32
// CHECK: %[[RX:.+]] = arith.select %[[NAN]], %[[X]], %[[RF]] : f32
// CHECK: %[[RXBITS:.+]] = arith.bitcast %[[RX]] : f32 to i32
// CHECK: arith.extui %[[RXBITS]] : i32 to i64
// CHECK: gpu.shuffle  idx %{{.+}} : i64
// CHECK-NOT: f16
// CHECK: gpu.return
gpu.module @k {
  gpu.func @f16(%x: f32, %c: vector<2x2xf32>, %o: memref<2x2xf32>) kernel {
    %h = arith.truncf %x : f32 to f16
    %a = vector.broadcast %h : f16 to vector<4x2xf16>
    %b = vector.broadcast %h : f16 to vector<2x2xf16>
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
                   %o: memref<2x2xf32>) kernel {
    // expected-error @below {{'nvgpu.mma.sync' op is not lowered: txlc's kernels use m16n8k16 with vector<4x2xbf16> A and vector<2x2xbf16> B, or vector<4x2xf16> A and vector<2x2xf16> B, and vector<2x2xf32> accumulators only}}
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]}
        : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
    %e = arith.extf %d : vector<2x2xf16> to vector<2x2xf32>
    %c0 = arith.constant 0 : index
    vector.store %e, %o[%c0, %c0] : memref<2x2xf32>, vector<2x2xf32>
    gpu.return
  }
}

// -----

// Negative: a bf16 value other than an operand's rounding has no OpenCL
// form.
gpu.module @k {
  gpu.func @kept(%x: f32, %o: memref<4xf32>) kernel {
    // expected-error @below {{'arith.truncf' op keeps a bf16 value that txl-emulate-mma cannot express on OpenCL (only f32 -> bf16/f16 -> f32 roundings and mma.sync operands are)}}
    %h = arith.truncf %x : f32 to bf16
    %s = arith.addf %h, %h : bf16
    %w = arith.extf %s : bf16 to f32
    %c0 = arith.constant 0 : index
    memref.store %w, %o[%c0] : memref<4xf32>
    gpu.return
  }
}

// -----

// A bf16 or f16 kernel argument (the attention's packed operands) holds
// the bits as i16: a store rounds its f32 source to nearest even and
// packs the bits, a load widens them exactly, and a load stored to a
// narrow workgroup tile (widened to f32) stores the widened value itself,
// element by element for vectors.
// CHECK-LABEL: gpu.func @narrow_arguments
// CHECK-SAME: %[[P:[a-zA-Z_0-9]+]]: memref<8xi16>, %[[Q:[a-zA-Z_0-9]+]]: memref<4xi16>
// CHECK: %[[BITS:[a-zA-Z_0-9]+]] = vector.load %[[P]]{{.*}} : memref<8xi16>, vector<8xi16>
// CHECK-COUNT-8: vector.extract %[[BITS]]
// CHECK: %[[WIDE:[a-zA-Z_0-9]+]] = vector.from_elements {{.*}} : vector<8xf32>
// CHECK: vector.store %[[WIDE]], %{{.*}} : memref<8xf32, 3>, vector<8xf32>
// CHECK: %[[R:[a-zA-Z_0-9]+]] = arith.trunci %{{.*}} : i32 to i16
// CHECK: memref.store %[[R]], %[[Q]]{{.*}} : memref<4xi16>
// CHECK-NOT: bf16
// CHECK-NOT: f16
// CHECK: gpu.return
gpu.module @k {
  gpu.func @narrow_arguments(%p: memref<8xbf16>, %q: memref<4xf16>, %x: f32)
      workgroup(%tile: memref<8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %v = vector.load %p[%c0] : memref<8xbf16>, vector<8xbf16>
    vector.store %v, %tile[%c0] : memref<8xbf16, 3>, vector<8xbf16>
    %h = arith.truncf %x : f32 to f16
    memref.store %h, %q[%c0] : memref<4xf16>
    gpu.return
  }
}

// -----

// An asynchronous copy (the attention's packed K, V and r into their
// tiles) is the work-item's own load and store where it is issued; its
// group and wait go. Here, a bf16 row into a bf16 tile: the load widens
// the argument's bits, the tile (widened to f32) stores that value.
// CHECK-LABEL: gpu.func @async_copy
// CHECK-SAME: %[[SRC:[a-zA-Z_0-9]+]]: memref<64xi16>
// CHECK-NOT: nvgpu.device_async
// CHECK: %[[BITS:.+]] = vector.load %[[SRC]][%{{.+}}] : memref<64xi16>, vector<8xi16>
// CHECK: %[[WIDE:.+]] = vector.from_elements {{.+}} : vector<8xf32>
// CHECK-NEXT: vector.store %[[WIDE]], %{{.+}}[%{{.+}}, %{{.+}}] : memref<4x8xf32, 3>, vector<8xf32>
// CHECK-NOT: nvgpu.device_async
// CHECK: gpu.return
gpu.module @k {
  gpu.func @async_copy(%src: memref<64xbf16>, %i: index)
      workgroup(%dst : memref<4x8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %t = nvgpu.device_async_copy %src[%i], %dst[%i, %c0], 8 {bypassL1}
        : memref<64xbf16> to memref<4x8xbf16, 3>
    %g = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %g {numGroups = 0 : i32}
    gpu.return
  }
}

// -----

// A subview of a narrow argument (the packed K's chunks at a static row
// offset) is the same view of the i16 bits: the copy through it loads the
// view, with the view's static offset, and memref.dim of the argument
// stays.
// CHECK-LABEL: gpu.func @async_copy_view
// CHECK-SAME: %[[SRC:[a-zA-Z_0-9]+]]: memref<?x8xi16>
// CHECK: %[[N:.+]] = memref.dim %[[SRC]], %c0 : memref<?x8xi16>
// CHECK: %[[VIEW:.+]] = memref.subview %[[SRC]][8, 0] [%{{.+}}, 8] [1, 1] : memref<?x8xi16> to memref<?x8xi16, strided<[8, 1], offset: 64>>
// CHECK: %[[BITS:.+]] = vector.load %[[VIEW]][%{{.+}}, %c0] : memref<?x8xi16, strided<[8, 1], offset: 64>>, vector<8xi16>
// CHECK: %[[WIDE:.+]] = vector.from_elements {{.+}} : vector<8xf32>
// CHECK-NEXT: vector.store %[[WIDE]], %{{.+}}[%{{.+}}, %{{.+}}] : memref<4x8xf32, 3>, vector<8xf32>
// CHECK-NOT: bf16
// CHECK: gpu.return
gpu.module @k {
  gpu.func @async_copy_view(%src: memref<?x8xbf16>, %i: index)
      workgroup(%dst : memref<4x8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %n = memref.dim %src, %c0 : memref<?x8xbf16>
    %rows = arith.subi %n, %c8 : index
    %view = memref.subview %src[8, 0] [%rows, 8] [1, 1]
        : memref<?x8xbf16> to memref<?x8xbf16, strided<[8, 1], offset: 64>>
    %t = nvgpu.device_async_copy %view[%i, %c0], %dst[%i, %c0], 8 {bypassL1}
        : memref<?x8xbf16, strided<[8, 1], offset: 64>> to memref<4x8xbf16, 3>
    %g = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %g {numGroups = 0 : i32}
    gpu.return
  }
}

// -----

// Two bf16 buffers that an arith.select chooses between (the attention's
// K and V by a key tile's parity): both become f32 tiles, the select one
// between them, and what goes through it is widened as through a tile
// (the copy's store; the load rounded back once, here to the bits of a
// bf16 argument).
// CHECK-LABEL: gpu.func @buffers
// CHECK-SAME: workgroup(%[[EVEN:.+]] : memref<4x8xf32, 3>, %[[ODD:.+]] : memref<4x8xf32, 3>)
// CHECK: %[[CHOSEN:.+]] = arith.select %{{.+}}, %[[ODD]], %[[EVEN]] : memref<4x8xf32, 3>
// CHECK: vector.store %{{.+}}, %[[CHOSEN]][%{{.+}}, %{{.+}}] : memref<4x8xf32, 3>, vector<8xf32>
// CHECK: memref.load %[[CHOSEN]][%{{.+}}, %{{.+}}] : memref<4x8xf32, 3>
// CHECK: arith.andi %{{.+}}, %c-65536_i32 : i32
// CHECK-NOT: arith.andi %{{.+}}, %c-65536_i32 : i32
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<1xi16>
// CHECK-NEXT: gpu.return
gpu.module @k {
  gpu.func @buffers(%src: memref<64xbf16>, %i: index, %p: i1, %out: memref<1xbf16>)
      workgroup(%even : memref<4x8xbf16, 3>, %odd : memref<4x8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %chosen = arith.select %p, %odd, %even : memref<4x8xbf16, 3>
    %t = nvgpu.device_async_copy %src[%i], %chosen[%i, %c0], 8 {bypassL1}
        : memref<64xbf16> to memref<4x8xbf16, 3>
    %g = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %g {numGroups = 0 : i32}
    %x = memref.load %chosen[%i, %c0] : memref<4x8xbf16, 3>
    memref.store %x, %out[%c0] : memref<1xbf16>
    gpu.return
  }
}

// -----

// A collapse_shape of a bf16 tile chosen by a select (the attention's K
// and V buffers seen as their 16-byte chunks, chunk x copied to chunk x)
// is the same view of the widened tile: the copy stores f32 into it.
// CHECK-LABEL: gpu.func @chunks
// CHECK-SAME: workgroup(%[[EVEN:.+]] : memref<2x4x8x8xf32, 3>, %[[ODD:.+]] : memref<2x4x8x8xf32, 3>)
// CHECK: %[[CHOSEN:.+]] = arith.select %{{.+}}, %[[ODD]], %[[EVEN]] : memref<2x4x8x8xf32, 3>
// CHECK: %[[CHUNKS:.+]] = memref.collapse_shape %[[CHOSEN]] {{\[}}[0, 1, 2], [3]] : memref<2x4x8x8xf32, 3> into memref<64x8xf32, 3>
// CHECK: vector.store %{{.+}}, %[[CHUNKS]][%{{.+}}, %{{.+}}] : memref<64x8xf32, 3>, vector<8xf32>
// CHECK-NOT: bf16
// CHECK: gpu.return
gpu.module @k {
  gpu.func @chunks(%src: memref<64x8xbf16>, %i: index, %p: i1)
      workgroup(%even : memref<2x4x8x8xbf16, 3>, %odd : memref<2x4x8x8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %chosen = arith.select %p, %odd, %even : memref<2x4x8x8xbf16, 3>
    %chunks = memref.collapse_shape %chosen [[0, 1, 2], [3]]
        : memref<2x4x8x8xbf16, 3> into memref<64x8xbf16, 3>
    %t = nvgpu.device_async_copy %src[%i, %c0], %chunks[%i, %c0], 8 {bypassL1}
        : memref<64x8xbf16> to memref<64x8xbf16, 3>
    %g = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %g {numGroups = 0 : i32}
    gpu.return
  }
}

// -----

// Negative: a copy that zero-fills past a source size is not emulated.
gpu.module @k {
  gpu.func @zero_fill(%src: memref<64xbf16>, %i: index, %n: index)
      workgroup(%dst : memref<4x8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'nvgpu.device_async_copy' op is not emulated: txl-emulate-mma takes whole copies, without a source size}}
    %t = nvgpu.device_async_copy %src[%i], %dst[%i, %c0], 8, %n
        : memref<64xbf16> to memref<4x8xbf16, 3>
    gpu.return
  }
}

// -----

// Negative: a narrow kernel argument stores only what is rounded from f32.
gpu.module @k {
  gpu.func @copied(%h: bf16, %o: memref<4xbf16>) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @below {{'memref.store' op stores a 'bf16' value not rounded from f32 to a 'bf16' kernel argument, which txl-emulate-mma cannot express on OpenCL}}
    memref.store %h, %o[%c0] : memref<4xbf16>
    gpu.return
  }
}

// -----

// Negative: a narrow kernel argument is only loaded, stored, viewed by a
// subview and measured.
gpu.module @k {
  gpu.func @cast(%o: memref<4xbf16>, %n: memref<1xindex>) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @below {{'memref.cast' op uses a 'bf16' kernel argument, which txl-emulate-mma makes i16 for OpenCL: only loads, stores, subviews and memref.dim can}}
    %c = memref.cast %o : memref<4xbf16> to memref<?xbf16>
    %d = memref.dim %c, %c0 : memref<?xbf16>
    memref.store %d, %n[%c0] : memref<1xindex>
    gpu.return
  }
}

// -----

// Negative: so is a subview of one.
gpu.module @k {
  gpu.func @view_cast(%o: memref<8xbf16>, %n: memref<1xindex>) kernel {
    %c0 = arith.constant 0 : index
    %v = memref.subview %o[4] [4] [1]
        : memref<8xbf16> to memref<4xbf16, strided<[1], offset: 4>>
    // expected-error @below {{'memref.cast' op uses a 'bf16' kernel argument, which txl-emulate-mma makes i16 for OpenCL: only loads, stores, subviews and memref.dim can}}
    %c = memref.cast %v
        : memref<4xbf16, strided<[1], offset: 4>> to memref<?xbf16, strided<[1], offset: ?>>
    %d = memref.dim %c, %c0 : memref<?xbf16, strided<[1], offset: ?>>
    memref.store %d, %n[%c0] : memref<1xindex>
    gpu.return
  }
}
