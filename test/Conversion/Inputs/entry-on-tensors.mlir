// Input of txl-drop-destination-results.mlir's CHAIN run: an entry function
// on tensors returning a fresh tensor and one of its arguments, one
// updating an argument in place, and one accumulating block by block.
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

func.func @blocks(%x: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %r = scf.for %i = %c0 to %c8 step %c2 iter_args(%acc = %e) -> tensor<8x4xf32> {
    %s = tensor.extract_slice %acc[%i, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%s : tensor<2x4xf32>) -> tensor<2x4xf32>
    %xi = tensor.extract_slice %x[%i, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
    %g = linalg.add ins(%xi, %xi : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
    %u = tensor.insert_slice %g into %acc[%i, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<8x4xf32>
    scf.yield %u : tensor<8x4xf32>
  }
  return %r : tensor<8x4xf32>
}
