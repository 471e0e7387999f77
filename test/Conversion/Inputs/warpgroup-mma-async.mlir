// Two asynchronous warpgroup products of a 128-work-item kernel: the
// workgroup stages B in two tiles (K = 32: 2 k-steps, N = 32: 4 n-blocks)
// of bf16 core matrices, issues a product on each, stores its A operands'
// f32 values while both are in flight, waits for the first with the
// second still pending and stores it, then waits for the second.
gpu.module @txl_kernels {
  gpu.func @wg_async(%xa: memref<128x2x4x2xf32>, %c: vector<4x2x2xf32>,
                     %x: memref<4x4x8x8xf32>, %o: memref<128x4x2x2xf32>,
                     %o2: memref<128x4x2x2xf32>, %oa: memref<128x16xf32>)
      workgroup(%tile : memref<4x4x8x8xbf16, 3>, %tile2 : memref<4x4x8x8xbf16, 3>)
      kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    scf.for %s = %c0 to %c8 step %c1 {
      %i0 = arith.divui %tid, %c32 : index
      %i1 = arith.remui %tid, %c4 : index
      %i2 = arith.remui %tid, %c8 : index
      %f = memref.load %x[%i0, %i1, %i2, %s] : memref<4x4x8x8xf32>
      %h = arith.truncf %f : f32 to bf16
      memref.store %h, %tile[%i0, %i1, %i2, %s] : memref<4x4x8x8xbf16, 3>
      %nf = arith.negf %f : f32
      %n = arith.truncf %nf : f32 to bf16
      memref.store %n, %tile2[%i0, %i1, %i2, %s] : memref<4x4x8x8xbf16, 3>
    }
    gpu.barrier
    %af0 = memref.load %xa[%tid, %c0, %c0, %c0] : memref<128x2x4x2xf32>
    %ah0 = arith.truncf %af0 : f32 to bf16
    %af1 = memref.load %xa[%tid, %c0, %c0, %c1] : memref<128x2x4x2xf32>
    %ah1 = arith.truncf %af1 : f32 to bf16
    %af2 = memref.load %xa[%tid, %c0, %c1, %c0] : memref<128x2x4x2xf32>
    %ah2 = arith.truncf %af2 : f32 to bf16
    %af3 = memref.load %xa[%tid, %c0, %c1, %c1] : memref<128x2x4x2xf32>
    %ah3 = arith.truncf %af3 : f32 to bf16
    %af4 = memref.load %xa[%tid, %c0, %c2, %c0] : memref<128x2x4x2xf32>
    %ah4 = arith.truncf %af4 : f32 to bf16
    %af5 = memref.load %xa[%tid, %c0, %c2, %c1] : memref<128x2x4x2xf32>
    %ah5 = arith.truncf %af5 : f32 to bf16
    %af6 = memref.load %xa[%tid, %c0, %c3, %c0] : memref<128x2x4x2xf32>
    %ah6 = arith.truncf %af6 : f32 to bf16
    %af7 = memref.load %xa[%tid, %c0, %c3, %c1] : memref<128x2x4x2xf32>
    %ah7 = arith.truncf %af7 : f32 to bf16
    %af8 = memref.load %xa[%tid, %c1, %c0, %c0] : memref<128x2x4x2xf32>
    %ah8 = arith.truncf %af8 : f32 to bf16
    %af9 = memref.load %xa[%tid, %c1, %c0, %c1] : memref<128x2x4x2xf32>
    %ah9 = arith.truncf %af9 : f32 to bf16
    %af10 = memref.load %xa[%tid, %c1, %c1, %c0] : memref<128x2x4x2xf32>
    %ah10 = arith.truncf %af10 : f32 to bf16
    %af11 = memref.load %xa[%tid, %c1, %c1, %c1] : memref<128x2x4x2xf32>
    %ah11 = arith.truncf %af11 : f32 to bf16
    %af12 = memref.load %xa[%tid, %c1, %c2, %c0] : memref<128x2x4x2xf32>
    %ah12 = arith.truncf %af12 : f32 to bf16
    %af13 = memref.load %xa[%tid, %c1, %c2, %c1] : memref<128x2x4x2xf32>
    %ah13 = arith.truncf %af13 : f32 to bf16
    %af14 = memref.load %xa[%tid, %c1, %c3, %c0] : memref<128x2x4x2xf32>
    %ah14 = arith.truncf %af14 : f32 to bf16
    %af15 = memref.load %xa[%tid, %c1, %c3, %c1] : memref<128x2x4x2xf32>
    %ah15 = arith.truncf %af15 : f32 to bf16
    %a = vector.from_elements %ah0, %ah1, %ah2, %ah3, %ah4, %ah5, %ah6, %ah7, %ah8, %ah9, %ah10, %ah11, %ah12, %ah13, %ah14, %ah15 : vector<2x4x2xbf16>
    %d = txl.warpgroup_mma async %a, %tile, %c
        : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
    %d2 = txl.warpgroup_mma async %a, %tile2, %c
        : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
    %ci0 = arith.constant 0 : index
    memref.store %af0, %oa[%tid, %ci0] : memref<128x16xf32>
    %ci1 = arith.constant 1 : index
    memref.store %af1, %oa[%tid, %ci1] : memref<128x16xf32>
    %ci2 = arith.constant 2 : index
    memref.store %af2, %oa[%tid, %ci2] : memref<128x16xf32>
    %ci3 = arith.constant 3 : index
    memref.store %af3, %oa[%tid, %ci3] : memref<128x16xf32>
    %ci4 = arith.constant 4 : index
    memref.store %af4, %oa[%tid, %ci4] : memref<128x16xf32>
    %ci5 = arith.constant 5 : index
    memref.store %af5, %oa[%tid, %ci5] : memref<128x16xf32>
    %ci6 = arith.constant 6 : index
    memref.store %af6, %oa[%tid, %ci6] : memref<128x16xf32>
    %ci7 = arith.constant 7 : index
    memref.store %af7, %oa[%tid, %ci7] : memref<128x16xf32>
    %ci8 = arith.constant 8 : index
    memref.store %af8, %oa[%tid, %ci8] : memref<128x16xf32>
    %ci9 = arith.constant 9 : index
    memref.store %af9, %oa[%tid, %ci9] : memref<128x16xf32>
    %ci10 = arith.constant 10 : index
    memref.store %af10, %oa[%tid, %ci10] : memref<128x16xf32>
    %ci11 = arith.constant 11 : index
    memref.store %af11, %oa[%tid, %ci11] : memref<128x16xf32>
    %ci12 = arith.constant 12 : index
    memref.store %af12, %oa[%tid, %ci12] : memref<128x16xf32>
    %ci13 = arith.constant 13 : index
    memref.store %af13, %oa[%tid, %ci13] : memref<128x16xf32>
    %ci14 = arith.constant 14 : index
    memref.store %af14, %oa[%tid, %ci14] : memref<128x16xf32>
    %ci15 = arith.constant 15 : index
    memref.store %af15, %oa[%tid, %ci15] : memref<128x16xf32>
    %r = txl.warpgroup_mma_wait %d {pending = 1} : vector<4x2x2xf32>
    %r000 = vector.extract %r[0, 0, 0] : f32 from vector<4x2x2xf32>
    memref.store %r000, %o[%tid, %c0, %c0, %c0] : memref<128x4x2x2xf32>
    %r001 = vector.extract %r[0, 0, 1] : f32 from vector<4x2x2xf32>
    memref.store %r001, %o[%tid, %c0, %c0, %c1] : memref<128x4x2x2xf32>
    %r010 = vector.extract %r[0, 1, 0] : f32 from vector<4x2x2xf32>
    memref.store %r010, %o[%tid, %c0, %c1, %c0] : memref<128x4x2x2xf32>
    %r011 = vector.extract %r[0, 1, 1] : f32 from vector<4x2x2xf32>
    memref.store %r011, %o[%tid, %c0, %c1, %c1] : memref<128x4x2x2xf32>
    %r100 = vector.extract %r[1, 0, 0] : f32 from vector<4x2x2xf32>
    memref.store %r100, %o[%tid, %c1, %c0, %c0] : memref<128x4x2x2xf32>
    %r101 = vector.extract %r[1, 0, 1] : f32 from vector<4x2x2xf32>
    memref.store %r101, %o[%tid, %c1, %c0, %c1] : memref<128x4x2x2xf32>
    %r110 = vector.extract %r[1, 1, 0] : f32 from vector<4x2x2xf32>
    memref.store %r110, %o[%tid, %c1, %c1, %c0] : memref<128x4x2x2xf32>
    %r111 = vector.extract %r[1, 1, 1] : f32 from vector<4x2x2xf32>
    memref.store %r111, %o[%tid, %c1, %c1, %c1] : memref<128x4x2x2xf32>
    %r200 = vector.extract %r[2, 0, 0] : f32 from vector<4x2x2xf32>
    memref.store %r200, %o[%tid, %c2, %c0, %c0] : memref<128x4x2x2xf32>
    %r201 = vector.extract %r[2, 0, 1] : f32 from vector<4x2x2xf32>
    memref.store %r201, %o[%tid, %c2, %c0, %c1] : memref<128x4x2x2xf32>
    %r210 = vector.extract %r[2, 1, 0] : f32 from vector<4x2x2xf32>
    memref.store %r210, %o[%tid, %c2, %c1, %c0] : memref<128x4x2x2xf32>
    %r211 = vector.extract %r[2, 1, 1] : f32 from vector<4x2x2xf32>
    memref.store %r211, %o[%tid, %c2, %c1, %c1] : memref<128x4x2x2xf32>
    %r300 = vector.extract %r[3, 0, 0] : f32 from vector<4x2x2xf32>
    memref.store %r300, %o[%tid, %c3, %c0, %c0] : memref<128x4x2x2xf32>
    %r301 = vector.extract %r[3, 0, 1] : f32 from vector<4x2x2xf32>
    memref.store %r301, %o[%tid, %c3, %c0, %c1] : memref<128x4x2x2xf32>
    %r310 = vector.extract %r[3, 1, 0] : f32 from vector<4x2x2xf32>
    memref.store %r310, %o[%tid, %c3, %c1, %c0] : memref<128x4x2x2xf32>
    %r311 = vector.extract %r[3, 1, 1] : f32 from vector<4x2x2xf32>
    memref.store %r311, %o[%tid, %c3, %c1, %c1] : memref<128x4x2x2xf32>
    %r2 = txl.warpgroup_mma_wait %d2 {pending = 0} : vector<4x2x2xf32>
    %r2000 = vector.extract %r2[0, 0, 0] : f32 from vector<4x2x2xf32>
    memref.store %r2000, %o2[%tid, %c0, %c0, %c0] : memref<128x4x2x2xf32>
    %r2001 = vector.extract %r2[0, 0, 1] : f32 from vector<4x2x2xf32>
    memref.store %r2001, %o2[%tid, %c0, %c0, %c1] : memref<128x4x2x2xf32>
    %r2010 = vector.extract %r2[0, 1, 0] : f32 from vector<4x2x2xf32>
    memref.store %r2010, %o2[%tid, %c0, %c1, %c0] : memref<128x4x2x2xf32>
    %r2011 = vector.extract %r2[0, 1, 1] : f32 from vector<4x2x2xf32>
    memref.store %r2011, %o2[%tid, %c0, %c1, %c1] : memref<128x4x2x2xf32>
    %r2100 = vector.extract %r2[1, 0, 0] : f32 from vector<4x2x2xf32>
    memref.store %r2100, %o2[%tid, %c1, %c0, %c0] : memref<128x4x2x2xf32>
    %r2101 = vector.extract %r2[1, 0, 1] : f32 from vector<4x2x2xf32>
    memref.store %r2101, %o2[%tid, %c1, %c0, %c1] : memref<128x4x2x2xf32>
    %r2110 = vector.extract %r2[1, 1, 0] : f32 from vector<4x2x2xf32>
    memref.store %r2110, %o2[%tid, %c1, %c1, %c0] : memref<128x4x2x2xf32>
    %r2111 = vector.extract %r2[1, 1, 1] : f32 from vector<4x2x2xf32>
    memref.store %r2111, %o2[%tid, %c1, %c1, %c1] : memref<128x4x2x2xf32>
    %r2200 = vector.extract %r2[2, 0, 0] : f32 from vector<4x2x2xf32>
    memref.store %r2200, %o2[%tid, %c2, %c0, %c0] : memref<128x4x2x2xf32>
    %r2201 = vector.extract %r2[2, 0, 1] : f32 from vector<4x2x2xf32>
    memref.store %r2201, %o2[%tid, %c2, %c0, %c1] : memref<128x4x2x2xf32>
    %r2210 = vector.extract %r2[2, 1, 0] : f32 from vector<4x2x2xf32>
    memref.store %r2210, %o2[%tid, %c2, %c1, %c0] : memref<128x4x2x2xf32>
    %r2211 = vector.extract %r2[2, 1, 1] : f32 from vector<4x2x2xf32>
    memref.store %r2211, %o2[%tid, %c2, %c1, %c1] : memref<128x4x2x2xf32>
    %r2300 = vector.extract %r2[3, 0, 0] : f32 from vector<4x2x2xf32>
    memref.store %r2300, %o2[%tid, %c3, %c0, %c0] : memref<128x4x2x2xf32>
    %r2301 = vector.extract %r2[3, 0, 1] : f32 from vector<4x2x2xf32>
    memref.store %r2301, %o2[%tid, %c3, %c0, %c1] : memref<128x4x2x2xf32>
    %r2310 = vector.extract %r2[3, 1, 0] : f32 from vector<4x2x2xf32>
    memref.store %r2310, %o2[%tid, %c3, %c1, %c0] : memref<128x4x2x2xf32>
    %r2311 = vector.extract %r2[3, 1, 1] : f32 from vector<4x2x2xf32>
    memref.store %r2311, %o2[%tid, %c3, %c1, %c1] : memref<128x4x2x2xf32>
    gpu.return
  }
}
