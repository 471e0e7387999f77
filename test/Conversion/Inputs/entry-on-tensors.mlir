// Input of txl-drop-destination-results.mlir's CHAIN run: an entry function
// on tensors returning a fresh tensor and one of its arguments.
func.func @segment(%x: tensor<?x32xf32>, %mem: tensor<?xf32>) -> (tensor<?x32xf32>, tensor<?xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %q = tensor.dim %x, %c0 : tensor<?x32xf32>
  %y = tensor.empty(%q) : tensor<?x32xf32>
  return %y, %mem : tensor<?x32xf32>, tensor<?xf32>
}
