// txl-gpu-linalg-to-kernels-pipeline merges adjacent elementwise parallel
// loops of one iteration space whose work-items see no other's writes
// (txl-fuse-parallel-loops, before txl-parallel-loops-to-gpu; its own cases
// are in test/Conversion/GpuHost) into one kernel: a layer's key and value
// appended to their windows are one launch (run-counts-opencl.test counts
// them a segment). fuse-loops=false (txlc --gpu-fuse-loops=false) keeps a
// kernel per loop nest.
// RUN: txl-opt %s --txl-gpu-linalg-to-kernels-pipeline | FileCheck %s
// RUN: txl-opt %s --txl-gpu-linalg-to-kernels-pipeline=fuse-loops=false | FileCheck %s --check-prefix=APART

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// Two independent loops of one shape: one launch of one kernel.
// CHECK-LABEL: func.func @siblings(
// CHECK: gpu.launch_func @txl_kernels::@siblings_loop0
// CHECK-NOT: gpu.launch_func
// CHECK: return
// APART-LABEL: func.func @siblings(
// APART: gpu.launch_func @txl_kernels::@siblings_loop0
// APART: gpu.launch_func @txl_kernels::@siblings_loop1
func.func @siblings(%k: tensor<64x128xf32>, %v: tensor<64x128xf32>) -> (tensor<64x128xf32>, tensor<64x128xf32>) {
  %e = tensor.empty() : tensor<64x128xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%k : tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<64x128xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<64x128xf32>
  return %a, %b : tensor<64x128xf32>, tensor<64x128xf32>
}

// Negative: the second loop reads the first's result transposed (element
// [j, i] of a, written by another work-item): two launches.
// CHECK-LABEL: func.func @transposed(
// CHECK: gpu.launch_func @txl_kernels::@transposed_loop0
// CHECK: gpu.launch_func @txl_kernels::@transposed_loop1
func.func @transposed(%k: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%k : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  %b = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %b : tensor<64x64xf32>
}

// A dependence at the same index (b reads a's element where a wrote it):
// fused, each work-item writes then reads its own element.
// CHECK-LABEL: func.func @same_index(
// CHECK: gpu.launch_func @txl_kernels::@same_index_loop0
// CHECK-NOT: gpu.launch_func
// CHECK: return
func.func @same_index(%k: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%k : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %b : tensor<64x64xf32>
}
