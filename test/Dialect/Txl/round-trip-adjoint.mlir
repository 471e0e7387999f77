// RUN: txl-opt %s | txl-opt | FileCheck %s

// The backward ops print and parse back (result types of the variadic ones
// are inferred from the forward operands).

// CHECK-LABEL: func.func @adjoints
func.func @adjoints(%dy: tensor<?x?x8xf32>, %x: tensor<?x?x4xf32>, %w: tensor<8x4xf32>, %g: tensor<4xf32>,
                    %t: tensor<?x?xi64>, %dn: tensor<?x?xf32>, %l: tensor<?x?x10xf32>) {
  // CHECK: txl.linear_input_grad %{{.+}}, %{{.+}} : tensor<?x?x8xf32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %dx = txl.linear_input_grad %dy, %w : tensor<?x?x8xf32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  // CHECK: txl.linear_weight_grad %{{.+}}, %{{.+}} : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<8x4xf32>
  %dw = txl.linear_weight_grad %dy, %x : tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<8x4xf32>
  // CHECK: txl.sum_leading %{{.+}} : tensor<?x?x8xf32> -> tensor<8xf32>
  %db = txl.sum_leading %dy : tensor<?x?x8xf32> -> tensor<8xf32>
  // CHECK: txl.relu_grad %{{.+}}, %{{.+}} : tensor<?x?x8xf32>
  %dr = txl.relu_grad %dy, %dy : tensor<?x?x8xf32>
  // CHECK: txl.layer_norm_grad %{{.+}}, %{{.+}}, %{{.+}} {epsilon = 9.99999974E-6 : f32} : tensor<?x?x4xf32>, tensor<4xf32>
  %a, %b, %c = txl.layer_norm_grad %x, %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x?x4xf32>, tensor<4xf32>
  // CHECK: txl.embedding_grad %{{.+}}, %{{.+}} : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
  %de = txl.embedding_grad %x, %t : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
  // CHECK: txl.embedding_grad %{{.+}}, %{{.+}} into %{{.+}} : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
  %da = txl.embedding_grad %x, %t into %de : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
  // CHECK: txl.nll_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x?xf32>, tensor<?x?x10xf32>, tensor<?x?xi64>
  %dl = txl.nll_grad %dn, %l, %t : tensor<?x?xf32>, tensor<?x?x10xf32>, tensor<?x?xi64>
  return
}

// CHECK-LABEL: func.func @adaptive
func.func @adaptive(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %t0: tensor<3x4xf32>, %t1: tensor<5x2xf32>,
                    %p0: tensor<4x4xf32>, %p1: tensor<4x2xf32>, %dn: tensor<?x?xf32>, %b0: tensor<3xf32>,
                    %b1: tensor<5xf32>, %cw: tensor<1x4xf32>, %cb: tensor<1xf32>) -> (tensor<5x2xf32>, tensor<1xf32>) {
  // CHECK: %{{.+}}:4 = txl.adaptive_embedding_grad %{{.+}}, %{{.+}} tables(%{{.+}}, %{{.+}} : tensor<3x4xf32>, tensor<5x2xf32>) projs(%{{.+}}, %{{.+}} : tensor<4x4xf32>, tensor<4x2xf32>) {cutoff_ends = array<i64: 0, 3, 8>}
  %e:4 = txl.adaptive_embedding_grad %dy, %t tables(%t0, %t1 : tensor<3x4xf32>, tensor<5x2xf32>)
      projs(%p0, %p1 : tensor<4x4xf32>, tensor<4x2xf32>) {cutoff_ends = array<i64: 0, 3, 8>}
      : tensor<?x?x4xf32>, tensor<?x?xi64>
  // CHECK: %{{.+}}:9 = txl.adaptive_nll_grad %{{.+}}, %{{.+}}, %{{.+}} weights({{.+}}) biases({{.+}}) projs({{.+}}) clusters(%{{.+}}, %{{.+}} : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 3, 8>}
  %n:9 = txl.adaptive_nll_grad %dn, %dy, %t weights(%t0, %t1 : tensor<3x4xf32>, tensor<5x2xf32>)
      biases(%b0, %b1 : tensor<3xf32>, tensor<5xf32>) projs(%p0, %p1 : tensor<4x4xf32>, tensor<4x2xf32>)
      clusters(%cw, %cb : tensor<1x4xf32>, tensor<1xf32>) {cutoff_ends = array<i64: 0, 3, 8>}
      : tensor<?x?xf32>, tensor<?x?x4xf32>, tensor<?x?xi64>
  return %e#1, %n#8 : tensor<5x2xf32>, tensor<1xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %m: index, %s: i1) -> tensor<?x2x4xf32> {
  // CHECK: txl.rel_attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {scale = 5.000000e-01 : f32}
  %g:6 = txl.rel_attention_grad %q, %q, %q, %q, %r, %u, %u, %m, %s {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return %g#3 : tensor<?x2x4xf32>
}

// With dropatt, the group follows same_length as in the forward op.
// CHECK-LABEL: func.func @attention_dropatt
func.func @attention_dropatt(%q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %m: index, %s: i1,
                             %seed: i64, %off: i64, %base: i64, %col: i64) -> tensor<?x2x4xf32> {
  // CHECK: txl.rel_attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} dropatt(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {dropatt = 2.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 5.000000e-01 : f32}
  %g:6 = txl.rel_attention_grad %q, %q, %q, %q, %r, %u, %u, %m, %s dropatt(%seed, %off, %s, %base, %col)
      {dropatt = 0.2 : f64, dropatt_stream = 3 : i64, scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return %g#3 : tensor<?x2x4xf32>
}

// The forward's saved statistics: lse [batch, n_head, qlen] and output.
// CHECK-LABEL: func.func @attention_saved
func.func @attention_saved(%q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>, %m: index, %s: i1,
                           %lse: tensor<?x2x?xf32>) -> tensor<?x2x4xf32> {
  // CHECK: txl.rel_attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} saved(%{{.+}}, %{{.+}} : tensor<?x2x?xf32>, tensor<?x?x2x4xf32>) {scale = 5.000000e-01 : f32}
  %g:6 = txl.rel_attention_grad %q, %q, %q, %q, %r, %u, %u, %m, %s saved(%lse, %q : tensor<?x2x?xf32>, tensor<?x?x2x4xf32>)
      {scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return %g#3 : tensor<?x2x4xf32>
}

// The backward ops of the decomposed (four-term) attention.
// CHECK-LABEL: func.func @decomposed_attention
func.func @decomposed_attention(%ds: tensor<?x?x?x2xf32>, %q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>,
                                %r: tensor<?x2x4xf32>, %do: tensor<?x?x2x4xf32>)
    -> (tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>) {
  // CHECK: %{{.+}}, %{{.+}} = txl.attn_score_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %dq, %dk = txl.attn_score_grad %ds, %q, %k : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  // CHECK: %{{.+}}, %{{.+}} = txl.attn_score_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>
  %dq2, %dr = txl.attn_score_grad %ds, %q, %r : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>
  // CHECK: txl.rel_shift_grad %{{.+}} : tensor<?x?x?x2xf32>
  %draw = txl.rel_shift_grad %ds : tensor<?x?x?x2xf32>
  // CHECK: txl.softmax_grad %{{.+}}, %{{.+}} {scale = 5.000000e-01 : f32} : tensor<?x?x?x2xf32>
  %dsm = txl.softmax_grad %draw, %ds {scale = 0.5 : f32} : tensor<?x?x?x2xf32>
  // CHECK: %{{.+}}, %{{.+}} = txl.attn_apply_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x?x2x4xf32>, tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>
  %dp, %dv = txl.attn_apply_grad %do, %dsm, %k : tensor<?x?x2x4xf32>, tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>
  return %dq, %dr, %dp, %dv : tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32>
}

// The optimizer updates take the learning rate as f64 and the step as i64.
// CHECK-LABEL: func.func @optimizer
func.func @optimizer(%p: tensor<4x2xf32>, %g: tensor<4x2xf32>, %m: tensor<4x2xf32>, %v: tensor<4x2xf32>,
                     %lr: f64, %step: i64, %scale: f32) {
  // CHECK: txl.squared_norm %{{.+}} : tensor<4x2xf32>
  %n = txl.squared_norm %g : tensor<4x2xf32>
  // CHECK: txl.adam_update %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64} : tensor<4x2xf32>
  %p1, %m1, %v1 = txl.adam_update %p, %g, %m, %v, %lr, %step, %scale
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64} : tensor<4x2xf32>
  // CHECK: txl.sgd_update %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {momentum = 0.000000e+00 : f64} : tensor<4x2xf32>
  %p2, %b2 = txl.sgd_update %p, %g, %m, %lr, %scale {momentum = 0.0 : f64} : tensor<4x2xf32>
  // CHECK: txl.adagrad_update %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {eps = 1.000000e-10 : f64} : tensor<4x2xf32>
  %p3, %s3 = txl.adagrad_update %p, %g, %m, %lr, %scale {eps = 1.0e-10 : f64} : tensor<4x2xf32>
  return
}

// CHECK-LABEL: func.func @linear_nll_grad
// CHECK: txl.linear_nll_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {block = 512 : i64} : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<2x?x512xf32> -> tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>
// CHECK: return
func.func @linear_nll_grad(%g: tensor<?x?xf32>, %h: tensor<?x?x32xf32>, %w: tensor<1000x32xf32>, %t: tensor<?x?xi64>,
                           %lse: tensor<?xf32>, %l: tensor<2x?x512xf32>) -> tensor<1000x32xf32> {
  %d:3 = txl.linear_nll_grad %g, %h, %w, %t, %lse, %l {block = 512 : i64}
      : tensor<?x?xf32>, tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<?x?xi64>, tensor<?xf32>, tensor<2x?x512xf32>
      -> tensor<?x?x32xf32>, tensor<1000x32xf32>, tensor<1000xf32>
  return %d#1 : tensor<1000x32xf32>
}
