// Input of txl-drop-destination-results.mlir's CHAIN run: an entry function
// on tensors returning a fresh tensor and one of its arguments, and one
// updating an argument in place.
func.func @segment(%x: tensor<?x32xf32>, %mem: tensor<?xf32>) -> (tensor<?x32xf32>, tensor<?xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %q = tensor.dim %x, %c0 : tensor<?x32xf32>
  %y = tensor.empty(%q) : tensor<?x32xf32>
  return %y, %mem : tensor<?x32xf32>, tensor<?xf32>
}

#id = affine_map<(d0) -> (d0)>
func.func @update_in_place(%p: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<1xf32>)
    attributes {llvm.emit_c_interface} {
  %prod = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%g : tensor<8xf32>) outs(%p : tensor<8xf32>) {
  ^bb0(%gi: f32, %pi: f32):
    %m = arith.mulf %gi, %pi : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %new = bufferization.materialize_in_destination %prod in %p : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %n = tensor.extract_slice %g[0] [1] [1] : tensor<8xf32> to tensor<1xf32>
  return %new, %n : tensor<8xf32>, tensor<1xf32>
}
