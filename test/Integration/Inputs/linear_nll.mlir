// One txl.linear_nll of ptb_small's shape (d_model 128, n_token 10000),
// for the machine code of its CPU kernel (linear-nll-cpu.test).
func.func @segment(%h: tensor<?x?x128xf32>, %w: tensor<10000x128xf32>, %b: tensor<10000xf32>, %t: tensor<?x?xi64>) -> tensor<?x?xf32> attributes {llvm.emit_c_interface, txl.entry = "txl_segment_forward"} {
  %n = txl.linear_nll %h, %w, %t, %b : tensor<?x?x128xf32>, tensor<10000x128xf32>, tensor<?x?xi64>, tensor<10000xf32> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}
