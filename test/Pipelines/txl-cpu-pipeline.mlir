// RUN: txl-opt %s --txl-cpu-pipeline | FileCheck %s --implicit-check-not=memrefCopy \
// RUN:   --implicit-check-not=unrealized_conversion_cast --implicit-check-not=linalg. \
// RUN:   --implicit-check-not=memref. --implicit-check-not=tensor. --implicit-check-not=scf.
// RUN: txl-opt %s --txl-opt-pipeline --txl-to-linalg-pipeline --txl-linalg-to-llvm-pipeline \
// RUN:   | FileCheck %s --check-prefix=STAGED --implicit-check-not=memrefCopy
// RUN: txl-opt %s --txl-cpu-pipeline="fuse-attention=false" | FileCheck %s --check-prefix=UNFUSED
// RUN: txl-opt %s --txl-opt-pipeline | FileCheck %s --check-prefix=OPT
// RUN: txl-opt %s --txl-opt-pipeline --txl-to-linalg-pipeline | FileCheck %s --check-prefix=LINALG \
// RUN:   --implicit-check-not="= txl." --implicit-check-not="tensor<{{[0-9]+}}x{{[0-9]+}}x{{[0-9]+}}"

// A complete one-layer segment as the frontend emits it (produced by
// `txlc Inputs/tiny-model.toml --emit=txl`: n_token 10, d_model 8, 2 heads of
// 4, d_inner 16), lowered by the named pipelines.

// The CPU pipeline ends in the LLVM dialect with the packed entry point. Every
// projection is one call site of txl_rt_sgemm (the runtime's f32 product,
// which runs in oneMKL or OpenBLAS): with fusion, 6 in @segment (q of the
// hidden rows and kv of [mem; h], as txl-narrow-linear-slices splits qkv;
// r, o, two feed-forward), the attention one call of the tiled kernel
// (txl-rel-attention-to-cpu) and the output layer one call of its kernel
// (txl-linear-nll-to-cpu), whose block product is the seventh. The staged
// pipelines (txl-to-linalg-pipeline: no CPU kernels) make the output layer
// their seventh product and the attention three more, 10: the
// positional scores (q + v) rᵀ, AC (accumulated onto their shifted view)
// and the attention-weighted values. The new memory (a strided slice) is
// copied by generated loops, never by memrefCopy, and the results have
// become caller-provided buffers (void functions). @segment and its
// C-interface wrapper are internal and always-inline: the packed entry is
// the one symbol left.
// CHECK-LABEL: llvm.func @txl_rt_sgemm(i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32)
// CHECK-LABEL: llvm.func internal @segment(
// CHECK-SAME: ) attributes {always_inline, llvm.emit_c_interface} {
// CHECK-COUNT-3: llvm.call @txl_rt_sgemm(
// CHECK: llvm.call @txl_rel_attention_cpu_f32_d4(
// CHECK-COUNT-3: llvm.call @txl_rt_sgemm(
// CHECK-NOT: llvm.call @txl_rt_sgemm(
// CHECK: llvm.call @txl_linear_nll_cpu_f32(
// CHECK-NOT: llvm.call @txl_rt_sgemm(
// CHECK-LABEL: llvm.func internal @_mlir_ciface_segment(
// CHECK-SAME: %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr) attributes {always_inline, llvm.emit_c_interface} {
// CHECK: llvm.call @segment(
// CHECK-LABEL: llvm.func internal @txl_linear_nll_cpu_f32(
// CHECK: llvm.call @txl_rt_sgemm(
// CHECK-LABEL: llvm.func @txl_segment_forward(
// CHECK-SAME: %{{[^:]+}}: !llvm.ptr) {
// CHECK: llvm.call @_mlir_ciface_segment(
// CHECK-NEXT: llvm.return
// STAGED-LABEL: llvm.func internal @segment(
// STAGED-COUNT-10: llvm.call @txl_rt_sgemm(
// STAGED-NOT: llvm.call @txl_rt_sgemm(
// STAGED: llvm.func @txl_segment_forward(

// Without fusion the four-term score is lowered as written: 4 score products
// and one value product, 12 sgemm calls in all.
// UNFUSED-LABEL: llvm.func internal @segment(
// UNFUSED-COUNT-12: llvm.call @txl_rt_sgemm(
// UNFUSED-NOT: llvm.call @txl_rt_sgemm(
// UNFUSED: llvm.func @txl_segment_forward(

// The txl-level pipeline fuses the attention: no shift is left to lower.
// The query is projected from the hidden rows alone, with the first rows of
// qkv_net.weight, and k, v with the others (txl-narrow-linear-slices).
// OPT-LABEL: func.func @segment
// OPT-NOT: txl.rel_shift
// OPT-NOT: txl.attn_score
// OPT: tensor.extract_slice %{{.+}}[0, 0] [8, 8] [1, 1] : tensor<24x8xf32> to tensor<8x8xf32>
// OPT: txl.linear %{{.+}}, %{{.+}} : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
// OPT: tensor.extract_slice %{{.+}}[8, 0] [16, 8] [1, 1] : tensor<24x8xf32> to tensor<16x8xf32>
// OPT: txl.linear %{{.+}}, %{{.+}} : tensor<?x?x8xf32>, tensor<16x8xf32> -> tensor<?x?x16xf32>
// OPT: txl.rel_attention
// OPT-NOT: txl.rel_shift
// OPT-NOT: txl.masked_softmax
// OPT: return

// Lowered to linalg, qlen, mlen (hence klen) and batch are still `?`: the
// signature, the concatenation [klen, batch, d], the positional scores
// (one product per head, [head, batch·qlen, klen]) in the padded buffer
// [head·batch, qlen, klen + 1], AC accumulated onto its shifted view, the new
// memory and the NLL. No txl op is left, and no activation is specialized to
// a static shape (only the head count, 2, is static).
// LINALG-LABEL: func.func @segment
// LINALG-SAME: %{{[^:]+}}: tensor<?x?xi64>, %{{[^:]+}}: tensor<?x?xi64>, %{{[^:]+}}: tensor<?x?x8xf32>, %{{[^:]+}}: tensor<?x?x8xf32>, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64)
// LINALG-SAME: -> (tensor<?x?xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>)
// LINALG: tensor.generate %{{.+}} {
// LINALG: } : tensor<?x8xf32>
// LINALG: tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0, 0] [%{{.+}}, %{{.+}}, 8] [1, 1, 1] : tensor<?x?x8xf32> into tensor<?x?x8xf32>
// LINALG: %[[PAD:.+]] = linalg.fill {{.+}} -> tensor<2x?x?xf32>
// LINALG: tensor.extract_slice %[[PAD]][0, 0, 1] [2, %{{.+}}, %{{.+}}] [1, 1, 1] : tensor<2x?x?xf32> to tensor<2x?x?xf32>
// LINALG: linalg.batch_matmul {{.+}} outs(%{{.+}} : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
// LINALG: tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2]] {{.+}} : tensor<?x?xf32> into tensor<?x?x?xf32>
// LINALG: linalg.batch_matmul {{.+}} outs(%{{.+}} : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
// LINALG: linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<?x?x?xf32>, tensor<?x?x4xf32>) outs(%{{.+}} : tensor<?x?x4xf32>)
// LINALG: tensor.extract_slice %{{.+}} : tensor<?x?x8xf32> to tensor<?x?x8xf32>
// LINALG: return %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x?xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>

module @tiny_model {
  func.func @segment(%arg0: tensor<10x8xf32> {txl.param = "word_emb.emb_layers.0.weight"}, %arg1: tensor<4xf32> {txl.param = "pos_emb.inv_freq"}, %arg2: tensor<2x4xf32> {txl.param = "r_w_bias"}, %arg3: tensor<2x4xf32> {txl.param = "r_r_bias"}, %arg4: tensor<24x8xf32> {txl.param = "layers.0.dec_attn.qkv_net.weight"}, %arg5: tensor<8x8xf32> {txl.param = "layers.0.dec_attn.r_net.weight"}, %arg6: tensor<8x8xf32> {txl.param = "layers.0.dec_attn.o_net.weight"}, %arg7: tensor<8xf32> {txl.param = "layers.0.dec_attn.layer_norm.weight"}, %arg8: tensor<8xf32> {txl.param = "layers.0.dec_attn.layer_norm.bias"}, %arg9: tensor<16x8xf32> {txl.param = "layers.0.pos_ff.CoreNet.0.weight"}, %arg10: tensor<16xf32> {txl.param = "layers.0.pos_ff.CoreNet.0.bias"}, %arg11: tensor<8x16xf32> {txl.param = "layers.0.pos_ff.CoreNet.3.weight"}, %arg12: tensor<8xf32> {txl.param = "layers.0.pos_ff.CoreNet.3.bias"}, %arg13: tensor<8xf32> {txl.param = "layers.0.pos_ff.layer_norm.weight"}, %arg14: tensor<8xf32> {txl.param = "layers.0.pos_ff.layer_norm.bias"}, %arg15: tensor<10xf32> {txl.param = "crit.out_layers.0.bias"}, %arg16: tensor<?x?xi64>, %arg17: tensor<?x?xi64>, %arg18: tensor<?x?x8xf32>, %arg19: tensor<?x?x8xf32>, %arg20: i64, %arg21: i64, %arg22: i64) -> (tensor<?x?xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) attributes {llvm.emit_c_interface, txl.entry = "txl_segment_forward"} {
    %0 = arith.index_cast %arg20 : i64 to index
    %c0_i64 = arith.constant 0 : i64
    %1 = arith.cmpi ne, %arg22, %c0_i64 : i64
    %2 = txl.embedding %arg0, %arg16 : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
    %3 = txl.scale %2 {factor = 2.82842708 : f32} : tensor<?x?x8xf32>
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg16, %c0 : tensor<?x?xi64>
    %c0_0 = arith.constant 0 : index
    %dim_1 = tensor.dim %arg18, %c0_0 : tensor<?x?x8xf32>
    %4 = arith.addi %dim_1, %dim : index
    %5 = txl.pos_emb %arg1, %4, %arg21 : tensor<4xf32> -> tensor<?x8xf32>
    %6 = txl.concat_mem %arg18, %3 : tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %7 = txl.linear %6, %arg4 : tensor<?x?x8xf32>, tensor<24x8xf32> -> tensor<?x?x24xf32>
    %8 = txl.linear %5, %arg5 : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %c0_2 = arith.constant 0 : index
    %dim_3 = tensor.dim %arg18, %c0_2 : tensor<?x?x8xf32>
    %c0_4 = arith.constant 0 : index
    %dim_5 = tensor.dim %3, %c0_4 : tensor<?x?x8xf32>
    %c0_6 = arith.constant 0 : index
    %dim_7 = tensor.dim %6, %c0_6 : tensor<?x?x8xf32>
    %c1 = arith.constant 1 : index
    %dim_8 = tensor.dim %3, %c1 : tensor<?x?x8xf32>
    %extracted_slice = tensor.extract_slice %7[%dim_3, 0, 0] [%dim_5, %dim_8, 8] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x?x8xf32>
    %expanded = tensor.expand_shape %extracted_slice [[0], [1], [2, 3]] output_shape [%dim_5, %dim_8, 2, 4] : tensor<?x?x8xf32> into tensor<?x?x2x4xf32>
    %extracted_slice_9 = tensor.extract_slice %7[0, 0, 8] [%dim_7, %dim_8, 8] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x?x8xf32>
    %expanded_10 = tensor.expand_shape %extracted_slice_9 [[0], [1], [2, 3]] output_shape [%dim_7, %dim_8, 2, 4] : tensor<?x?x8xf32> into tensor<?x?x2x4xf32>
    %extracted_slice_11 = tensor.extract_slice %7[0, 0, 16] [%dim_7, %dim_8, 8] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x?x8xf32>
    %expanded_12 = tensor.expand_shape %extracted_slice_11 [[0], [1], [2, 3]] output_shape [%dim_7, %dim_8, 2, 4] : tensor<?x?x8xf32> into tensor<?x?x2x4xf32>
    %expanded_13 = tensor.expand_shape %8 [[0], [1, 2]] output_shape [%dim_7, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %9 = txl.attn_score %expanded, %expanded_10 : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x?x2xf32>
    %10 = txl.broadcast_head_bias %arg2, %expanded : tensor<2x4xf32>, tensor<?x?x2x4xf32>
    %11 = txl.attn_score %10, %expanded_10 : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x?x2xf32>
    %12 = txl.attn_score %expanded, %expanded_13 : tensor<?x?x2x4xf32>, tensor<?x2x4xf32> -> tensor<?x?x?x2xf32>
    %13 = txl.broadcast_head_bias %arg3, %expanded : tensor<2x4xf32>, tensor<?x?x2x4xf32>
    %14 = txl.attn_score %13, %expanded_13 : tensor<?x?x2x4xf32>, tensor<?x2x4xf32> -> tensor<?x?x?x2xf32>
    %15 = txl.add %12, %14 : tensor<?x?x?x2xf32>
    %16 = txl.rel_shift %15 : tensor<?x?x?x2xf32>
    %17 = txl.add %9, %11 : tensor<?x?x?x2xf32>
    %18 = txl.add %17, %16 : tensor<?x?x?x2xf32>
    %19 = txl.masked_softmax %18, %0, %1 {scale = 5.000000e-01 : f32} : tensor<?x?x?x2xf32>
    %20 = txl.attn_apply %19, %expanded_12 : tensor<?x?x?x2xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x2x4xf32>
    %collapsed = tensor.collapse_shape %20 [[0], [1], [2, 3]] : tensor<?x?x2x4xf32> into tensor<?x?x8xf32>
    %21 = txl.linear %collapsed, %arg6 : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
    %22 = txl.add %3, %21 : tensor<?x?x8xf32>
    %23 = txl.layer_norm %22, %arg7, %arg8 {epsilon = 9.99999974E-6 : f32} : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>
    %24 = txl.linear %23, %arg9, %arg10 : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
    %25 = txl.relu %24 : tensor<?x?x16xf32>
    %26 = txl.linear %25, %arg11, %arg12 : tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
    %27 = txl.add %26, %23 : tensor<?x?x8xf32>
    %28 = txl.layer_norm %27, %arg13, %arg14 {epsilon = 9.99999974E-6 : f32} : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>
    %29 = txl.linear %28, %arg0, %arg15 : tensor<?x?x8xf32>, tensor<10x8xf32>, tensor<10xf32> -> tensor<?x?x10xf32>
    %30 = txl.nll %29, %arg17 : tensor<?x?x10xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
    %31 = txl.concat_mem %arg18, %3 : tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %32 = txl.take_last %31, %0 : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %33 = txl.stop_gradient %32 : tensor<?x?x8xf32>
    %34 = txl.concat_mem %arg19, %28 : tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %35 = txl.take_last %34, %0 : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %36 = txl.stop_gradient %35 : tensor<?x?x8xf32>
    return %30, %33, %36 : tensor<?x?xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
  }
}
