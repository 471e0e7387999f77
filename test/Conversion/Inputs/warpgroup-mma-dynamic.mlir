// A kernel whose warpgroup product reads one of three B tiles, chosen per
// step by selects of selects (step % 3), beside a 48 KiB tile: 54 KiB of
// workgroup memory, which txl-dynamic-shared-memory moves into dynamic
// shared memory (views at multiples of 16 bytes).
module attributes {gpu.container_module} {
gpu.module @txl_kernels {
  gpu.func @three(%xa: memref<128x2x4x2xf32>, %c: vector<4x2x2xf32>,
                  %x: memref<4x4x8x8xf32>, %o: memref<3x128x4x2x2xf32>)
      workgroup(%t0 : memref<4x4x8x8xbf16, 3>, %t1 : memref<4x4x8x8xbf16, 3>,
                %t2 : memref<4x4x8x8xbf16, 3>, %wide : memref<12288xf32, 3>)
      kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %w = memref.load %x[%c0, %c0, %c0, %c0] : memref<4x4x8x8xf32>
    memref.store %w, %wide[%tid] : memref<12288xf32, 3>
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
    scf.for %s = %c0 to %c3 step %c1 {
      %is1 = arith.cmpi eq, %s, %c1 : index
      %is2 = arith.cmpi eq, %s, %c2 : index
      %other = arith.select %is2, %t2, %t0 : memref<4x4x8x8xbf16, 3>
      %tile = arith.select %is1, %t1, %other : memref<4x4x8x8xbf16, 3>
      %i0 = arith.divui %tid, %c32 : index
      %i1 = arith.remui %tid, %c4 : index
      %i2 = arith.remui %tid, %c8 : index
      scf.for %j = %c0 to %c8 step %c1 {
        %f = memref.load %x[%i0, %i1, %i2, %j] : memref<4x4x8x8xf32>
        %h = arith.truncf %f : f32 to bf16
        memref.store %h, %tile[%i0, %i1, %i2, %j] : memref<4x4x8x8xbf16, 3>
      }
      gpu.barrier
      %d = txl.warpgroup_mma %a, %tile, %c
          : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
      %d000 = vector.extract %d[0, 0, 0] : f32 from vector<4x2x2xf32>
      memref.store %d000, %o[%s, %tid, %c0, %c0, %c0] : memref<3x128x4x2x2xf32>
      %d001 = vector.extract %d[0, 0, 1] : f32 from vector<4x2x2xf32>
      memref.store %d001, %o[%s, %tid, %c0, %c0, %c1] : memref<3x128x4x2x2xf32>
      %d010 = vector.extract %d[0, 1, 0] : f32 from vector<4x2x2xf32>
      memref.store %d010, %o[%s, %tid, %c0, %c1, %c0] : memref<3x128x4x2x2xf32>
      %d011 = vector.extract %d[0, 1, 1] : f32 from vector<4x2x2xf32>
      memref.store %d011, %o[%s, %tid, %c0, %c1, %c1] : memref<3x128x4x2x2xf32>
      %d100 = vector.extract %d[1, 0, 0] : f32 from vector<4x2x2xf32>
      memref.store %d100, %o[%s, %tid, %c1, %c0, %c0] : memref<3x128x4x2x2xf32>
      %d101 = vector.extract %d[1, 0, 1] : f32 from vector<4x2x2xf32>
      memref.store %d101, %o[%s, %tid, %c1, %c0, %c1] : memref<3x128x4x2x2xf32>
      %d110 = vector.extract %d[1, 1, 0] : f32 from vector<4x2x2xf32>
      memref.store %d110, %o[%s, %tid, %c1, %c1, %c0] : memref<3x128x4x2x2xf32>
      %d111 = vector.extract %d[1, 1, 1] : f32 from vector<4x2x2xf32>
      memref.store %d111, %o[%s, %tid, %c1, %c1, %c1] : memref<3x128x4x2x2xf32>
      %d200 = vector.extract %d[2, 0, 0] : f32 from vector<4x2x2xf32>
      memref.store %d200, %o[%s, %tid, %c2, %c0, %c0] : memref<3x128x4x2x2xf32>
      %d201 = vector.extract %d[2, 0, 1] : f32 from vector<4x2x2xf32>
      memref.store %d201, %o[%s, %tid, %c2, %c0, %c1] : memref<3x128x4x2x2xf32>
      %d210 = vector.extract %d[2, 1, 0] : f32 from vector<4x2x2xf32>
      memref.store %d210, %o[%s, %tid, %c2, %c1, %c0] : memref<3x128x4x2x2xf32>
      %d211 = vector.extract %d[2, 1, 1] : f32 from vector<4x2x2xf32>
      memref.store %d211, %o[%s, %tid, %c2, %c1, %c1] : memref<3x128x4x2x2xf32>
      %d300 = vector.extract %d[3, 0, 0] : f32 from vector<4x2x2xf32>
      memref.store %d300, %o[%s, %tid, %c3, %c0, %c0] : memref<3x128x4x2x2xf32>
      %d301 = vector.extract %d[3, 0, 1] : f32 from vector<4x2x2xf32>
      memref.store %d301, %o[%s, %tid, %c3, %c0, %c1] : memref<3x128x4x2x2xf32>
      %d310 = vector.extract %d[3, 1, 0] : f32 from vector<4x2x2xf32>
      memref.store %d310, %o[%s, %tid, %c3, %c1, %c0] : memref<3x128x4x2x2xf32>
      %d311 = vector.extract %d[3, 1, 1] : f32 from vector<4x2x2xf32>
      memref.store %d311, %o[%s, %tid, %c3, %c1, %c1] : memref<3x128x4x2x2xf32>
      gpu.barrier
    }
    %back = memref.load %wide[%tid] : memref<12288xf32, 3>
    memref.store %back, %x[%c1, %c1, %c1, %c1] : memref<4x4x8x8xf32>
    gpu.return
  }
}
}
