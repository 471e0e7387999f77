// One txl.rel_attention_grad per d_head of the model files (ptb_small 32,
// wt103_base 41, enwik8_base 64, lm1b_large 80, enwik8_large 128, whose
// _kv and _r tiles pass 48 KiB), and one with dropatt for d_head 32 and
// 80: the input of rel-attention-grad-opencl.test, whose harness launches the kernels
// txl-rel-attention-to-gpu makes of them. The @saved functions pair a
// forward with its lse result and a backward with the saved group (what
// txl-save-attention-stats makes of a training step), for the kernels
// rel_attention{,_dropatt}_lse_d<d_head> and
// rel_attention_grad_q_saved{,_dropatt}_d<d_head>.

func.func @grad_d32(%do: tensor<?x?x?x32xf32>, %q: tensor<?x?x?x32xf32>, %k: tensor<?x?x?x32xf32>, %v: tensor<?x?x?x32xf32>,
    %r: tensor<?x?x32xf32>, %u: tensor<?x32xf32>, %vb: tensor<?x32xf32>, %m: index, %s: i1)
    -> (tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.125 : f32}
      : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

func.func @grad_d41(%do: tensor<?x?x?x41xf32>, %q: tensor<?x?x?x41xf32>, %k: tensor<?x?x?x41xf32>, %v: tensor<?x?x?x41xf32>,
    %r: tensor<?x?x41xf32>, %u: tensor<?x41xf32>, %vb: tensor<?x41xf32>, %m: index, %s: i1)
    -> (tensor<?x?x?x41xf32>, tensor<?x?x?x41xf32>, tensor<?x?x?x41xf32>, tensor<?x?x41xf32>, tensor<?x41xf32>, tensor<?x41xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.125 : f32}
      : tensor<?x?x?x41xf32>, tensor<?x?x?x41xf32>, tensor<?x?x?x41xf32>, tensor<?x?x41xf32>, tensor<?x41xf32>, tensor<?x41xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x41xf32>, tensor<?x?x?x41xf32>, tensor<?x?x?x41xf32>, tensor<?x?x41xf32>, tensor<?x41xf32>, tensor<?x41xf32>
}

func.func @grad_d64(%do: tensor<?x?x?x64xf32>, %q: tensor<?x?x?x64xf32>, %k: tensor<?x?x?x64xf32>, %v: tensor<?x?x?x64xf32>,
    %r: tensor<?x?x64xf32>, %u: tensor<?x64xf32>, %vb: tensor<?x64xf32>, %m: index, %s: i1)
    -> (tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.125 : f32}
      : tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

func.func @grad_d80(%do: tensor<?x?x?x80xf32>, %q: tensor<?x?x?x80xf32>, %k: tensor<?x?x?x80xf32>, %v: tensor<?x?x?x80xf32>,
    %r: tensor<?x?x80xf32>, %u: tensor<?x80xf32>, %vb: tensor<?x80xf32>, %m: index, %s: i1)
    -> (tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.125 : f32}
      : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
}

func.func @grad_dropatt_d32(%do: tensor<?x?x?x32xf32>, %q: tensor<?x?x?x32xf32>, %k: tensor<?x?x?x32xf32>, %v: tensor<?x?x?x32xf32>,
    %r: tensor<?x?x32xf32>, %u: tensor<?x32xf32>, %vb: tensor<?x32xf32>, %m: index, %s: i1, %seed: i64, %off: i64,
    %training: i1, %base: i64, %col: i64)
    -> (tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s dropatt(%seed, %off, %training, %base, %col)
      {dropatt = 0.15 : f64, dropatt_stream = 40 : i64, scale = 0.125 : f32}
      : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

func.func @grad_dropatt_d80(%do: tensor<?x?x?x80xf32>, %q: tensor<?x?x?x80xf32>, %k: tensor<?x?x?x80xf32>, %v: tensor<?x?x?x80xf32>,
    %r: tensor<?x?x80xf32>, %u: tensor<?x80xf32>, %vb: tensor<?x80xf32>, %m: index, %s: i1, %seed: i64, %off: i64,
    %training: i1, %base: i64, %col: i64)
    -> (tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s dropatt(%seed, %off, %training, %base, %col)
      {dropatt = 0.15 : f64, dropatt_stream = 40 : i64, scale = 0.125 : f32}
      : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
}

func.func @saved_d32(%do: tensor<?x?x?x32xf32>, %q: tensor<?x?x?x32xf32>, %k: tensor<?x?x?x32xf32>, %v: tensor<?x?x?x32xf32>,
    %r: tensor<?x?x32xf32>, %u: tensor<?x32xf32>, %vb: tensor<?x32xf32>, %m: index, %s: i1)
    -> (tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %m, %s
      {scale = 0.125 : f32}
      : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x?x?x32xf32>, tensor<?x?x?xf32>
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s
      saved(%lse, %o : tensor<?x?x?xf32>, tensor<?x?x?x32xf32>) {scale = 0.125 : f32}
      : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
  return %o, %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

func.func @saved_dropatt_d32(%do: tensor<?x?x?x32xf32>, %q: tensor<?x?x?x32xf32>, %k: tensor<?x?x?x32xf32>, %v: tensor<?x?x?x32xf32>,
    %r: tensor<?x?x32xf32>, %u: tensor<?x32xf32>, %vb: tensor<?x32xf32>, %m: index, %s: i1, %seed: i64, %off: i64,
    %training: i1, %base: i64, %col: i64)
    -> (tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %m, %s dropatt(%seed, %off, %training, %base, %col)
      {dropatt = 0.15 : f64, dropatt_stream = 40 : i64, scale = 0.125 : f32}
      : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x?x?x32xf32>, tensor<?x?x?xf32>
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s dropatt(%seed, %off, %training, %base, %col)
      saved(%lse, %o : tensor<?x?x?xf32>, tensor<?x?x?x32xf32>) {dropatt = 0.15 : f64, dropatt_stream = 40 : i64, scale = 0.125 : f32}
      : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
  return %o, %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

func.func @saved_d80(%do: tensor<?x?x?x80xf32>, %q: tensor<?x?x?x80xf32>, %k: tensor<?x?x?x80xf32>, %v: tensor<?x?x?x80xf32>,
    %r: tensor<?x?x80xf32>, %u: tensor<?x80xf32>, %vb: tensor<?x80xf32>, %m: index, %s: i1)
    -> (tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>) {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %m, %s
      {scale = 0.125 : f32}
      : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32> -> tensor<?x?x?x80xf32>, tensor<?x?x?xf32>
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s
      saved(%lse, %o : tensor<?x?x?xf32>, tensor<?x?x?x80xf32>) {scale = 0.125 : f32}
      : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
  return %o, %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
}

func.func @saved_dropatt_d80(%do: tensor<?x?x?x80xf32>, %q: tensor<?x?x?x80xf32>, %k: tensor<?x?x?x80xf32>, %v: tensor<?x?x?x80xf32>,
    %r: tensor<?x?x80xf32>, %u: tensor<?x80xf32>, %vb: tensor<?x80xf32>, %m: index, %s: i1, %seed: i64, %off: i64,
    %training: i1, %base: i64, %col: i64)
    -> (tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>) {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %m, %s dropatt(%seed, %off, %training, %base, %col)
      {dropatt = 0.15 : f64, dropatt_stream = 40 : i64, scale = 0.125 : f32}
      : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32> -> tensor<?x?x?x80xf32>, tensor<?x?x?xf32>
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s dropatt(%seed, %off, %training, %base, %col)
      saved(%lse, %o : tensor<?x?x?xf32>, tensor<?x?x?x80xf32>) {dropatt = 0.15 : f64, dropatt_stream = 40 : i64, scale = 0.125 : f32}
      : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
  return %o, %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x?x80xf32>, tensor<?x?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
}

func.func @grad_d128(%do: tensor<?x?x?x128xf32>, %q: tensor<?x?x?x128xf32>, %k: tensor<?x?x?x128xf32>, %v: tensor<?x?x?x128xf32>,
    %r: tensor<?x?x128xf32>, %u: tensor<?x128xf32>, %vb: tensor<?x128xf32>, %m: index, %s: i1)
    -> (tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.125 : f32}
      : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>
}

func.func @saved_dropatt_d128(%do: tensor<?x?x?x128xf32>, %q: tensor<?x?x?x128xf32>, %k: tensor<?x?x?x128xf32>, %v: tensor<?x?x?x128xf32>,
    %r: tensor<?x?x128xf32>, %u: tensor<?x128xf32>, %vb: tensor<?x128xf32>, %m: index, %s: i1, %seed: i64, %off: i64,
    %training: i1, %base: i64, %col: i64)
    -> (tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>) {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %m, %s dropatt(%seed, %off, %training, %base, %col)
      {dropatt = 0.15 : f64, dropatt_stream = 40 : i64, scale = 0.125 : f32}
      : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32> -> tensor<?x?x?x128xf32>, tensor<?x?x?xf32>
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s dropatt(%seed, %off, %training, %base, %col)
      saved(%lse, %o : tensor<?x?x?xf32>, tensor<?x?x?x128xf32>) {dropatt = 0.15 : f64, dropatt_stream = 40 : i64, scale = 0.125 : f32}
      : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>
  return %o, %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>
}
