// One txl.rel_attention of d_head 64 (enwik8_base's), for the machine code
// of its tiled CPU kernel (rel-attention-cpu.test).
func.func @segment(%q: tensor<?x?x1x64xf32>, %k: tensor<?x?x1x64xf32>, %v: tensor<?x?x1x64xf32>, %r: tensor<?x1x64xf32>, %u: tensor<1x64xf32>, %w: tensor<1x64xf32>, %m: index, %s: i1) -> (tensor<?x?x1x64xf32>) attributes {llvm.emit_c_interface, txl.entry = "txl_segment_forward"} {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %w, %m, %s {scale = 0.125 : f32} : tensor<?x?x1x64xf32>, tensor<?x?x1x64xf32>, tensor<?x?x1x64xf32>, tensor<?x1x64xf32>, tensor<1x64xf32>, tensor<1x64xf32> -> tensor<?x?x1x64xf32>
  return %o : tensor<?x?x1x64xf32>
}
