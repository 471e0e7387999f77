// RUN: txl-opt %s --split-input-file --txl-narrow-linear-slices | FileCheck %s

// The official qkv_net over [mem; h] with q kept for h's rows only: q is
// projected from h alone with the weight's first 8 rows, k and v share one
// product with the other 16 rows over the whole concatenation.
// CHECK-LABEL: func.func @qkv_over_concat
// CHECK-SAME: (%[[MEM:[^:]+]]: tensor<?x?x8xf32>, %[[H:[^:]+]]: tensor<?x?x8xf32>, %[[W:[^:]+]]: tensor<24x8xf32>)
// CHECK: %[[CAT:.+]] = txl.concat_mem %[[MEM]], %[[H]]
// CHECK: %[[WQ:.+]] = tensor.extract_slice %[[W]][0, 0] [8, 8] [1, 1] : tensor<24x8xf32> to tensor<8x8xf32>
// CHECK: %[[Q:.+]] = txl.linear %[[H]], %[[WQ]] : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
// CHECK: %[[WKV:.+]] = tensor.extract_slice %[[W]][8, 0] [16, 8] [1, 1] : tensor<24x8xf32> to tensor<16x8xf32>
// CHECK: %[[KV:.+]] = txl.linear %[[CAT]], %[[WKV]] : tensor<?x?x8xf32>, tensor<16x8xf32> -> tensor<?x?x16xf32>
// CHECK: %[[K:.+]] = tensor.extract_slice %[[KV]][0, 0, 0] [{{.+}}, {{.+}}, 8] [1, 1, 1]
// CHECK: %[[V:.+]] = tensor.extract_slice %[[KV]][0, 0, 8] [{{.+}}, {{.+}}, 8] [1, 1, 1]
// CHECK-NOT: txl.linear
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @qkv_over_concat(%mem: tensor<?x?x8xf32>, %h: tensor<?x?x8xf32>, %w: tensor<24x8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cat = txl.concat_mem %mem, %h : tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  %y = txl.linear %cat, %w : tensor<?x?x8xf32>, tensor<24x8xf32> -> tensor<?x?x24xf32>
  %mlen = tensor.dim %mem, %c0 : tensor<?x?x8xf32>
  %qlen = tensor.dim %h, %c0 : tensor<?x?x8xf32>
  %klen = tensor.dim %cat, %c0 : tensor<?x?x8xf32>
  %bsz = tensor.dim %h, %c1 : tensor<?x?x8xf32>
  %q = tensor.extract_slice %y[%mlen, 0, 0] [%qlen, %bsz, 8] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x?x8xf32>
  %k = tensor.extract_slice %y[0, 0, 8] [%klen, %bsz, 8] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x?x8xf32>
  %v = tensor.extract_slice %y[0, 0, 16] [%klen, %bsz, 8] [1, 1, 1] : tensor<?x?x24xf32> to tensor<?x?x8xf32>
  return %q, %k, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Only columns [4, 10) of a biased linear are read: the weight rows and the
// bias entries of those columns, and the product replaces the slice.
// CHECK-LABEL: func.func @middle_columns_with_bias
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[W:[^:]+]]: tensor<16x8xf32>, %[[B:[^:]+]]: tensor<16xf32>)
// CHECK-DAG: %[[WS:.+]] = tensor.extract_slice %[[W]][4, 0] [6, 8] [1, 1]
// CHECK-DAG: %[[BS:.+]] = tensor.extract_slice %[[B]][4] [6] [1]
// CHECK: %[[Y:.+]] = txl.linear %[[X]], %[[WS]], %[[BS]] : tensor<?x8xf32>, tensor<6x8xf32>, tensor<6xf32> -> tensor<?x6xf32>
// CHECK-NOT: tensor.extract_slice
// CHECK: return %[[Y]]
func.func @middle_columns_with_bias(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<?x6xf32> {
  %c0 = arith.constant 0 : index
  %y = txl.linear %x, %w, %b : tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %s = tensor.extract_slice %y[0, 4] [%n, 6] [1, 1] : tensor<?x16xf32> to tensor<?x6xf32>
  return %s : tensor<?x6xf32>
}

// -----

// Rows [2, 2 + n) of a linear over a plain tensor: the product reads those
// rows of its input (no concat_mem to fold).
// CHECK-LABEL: func.func @rows_of_plain_input
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[W:[^:]+]]: tensor<4x8xf32>, %[[N:[^:]+]]: index)
// CHECK: %[[XS:.+]] = tensor.extract_slice %[[X]][2, 0] [%[[N]], 8] [1, 1]
// CHECK: %[[Y:.+]] = txl.linear %[[XS]], %[[W]] : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
// CHECK: return %[[Y]]
func.func @rows_of_plain_input(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>, %n: index) -> tensor<?x4xf32> {
  %y = txl.linear %x, %w : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
  %s = tensor.extract_slice %y[2, 0] [%n, 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
  return %s : tensor<?x4xf32>
}

// -----

// The concat_mem adjoint keeps the hidden rows of d[mem; h]: the input
// gradient is formed for those rows of the cotangent only.
// CHECK-LABEL: func.func @input_grad_rows
// CHECK-SAME: (%[[DY:[^:]+]]: tensor<?x?x16xf32>, %[[W:[^:]+]]: tensor<16x8xf32>, %[[M:[^:]+]]: index, %[[Q:[^:]+]]: index, %[[B:[^:]+]]: index)
// CHECK: %[[DYS:.+]] = tensor.extract_slice %[[DY]][%[[M]], 0, 0] [%[[Q]], %[[B]], 16] [1, 1, 1]
// CHECK: %[[G:.+]] = txl.linear_input_grad %[[DYS]], %[[W]] : tensor<?x?x16xf32>, tensor<16x8xf32> -> tensor<?x?x8xf32>
// CHECK: return %[[G]]
func.func @input_grad_rows(%dy: tensor<?x?x16xf32>, %w: tensor<16x8xf32>, %m: index, %q: index, %b: index) -> tensor<?x?x8xf32> {
  %g = txl.linear_input_grad %dy, %w : tensor<?x?x16xf32>, tensor<16x8xf32> -> tensor<?x?x8xf32>
  %s = tensor.extract_slice %g[%m, 0, 0] [%q, %b, 8] [1, 1, 1] : tensor<?x?x8xf32> to tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}

// -----

// Negative: the whole product is also returned, so nothing is narrowed.
// CHECK-LABEL: func.func @product_also_returned
// CHECK: %[[Y:.+]] = txl.linear %{{.+}}, %{{.+}} : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
// CHECK: tensor.extract_slice %[[Y]][0, 4] [%{{.+}}, 6] [1, 1]
// CHECK-NOT: txl.linear
func.func @product_also_returned(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) -> (tensor<?x16xf32>, tensor<?x6xf32>) {
  %c0 = arith.constant 0 : index
  %y = txl.linear %x, %w : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %s = tensor.extract_slice %y[0, 4] [%n, 6] [1, 1] : tensor<?x16xf32> to tensor<?x6xf32>
  return %y, %s : tensor<?x16xf32>, tensor<?x6xf32>
}

// -----

// Negative: two slices that together read every column of every row at
// offset 0 (the k/v product after narrowing) are left alone.
// CHECK-LABEL: func.func @every_column_read
// CHECK: %[[Y:.+]] = txl.linear %{{.+}}, %{{.+}} : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
// CHECK: tensor.extract_slice %[[Y]][0, 0] [%{{.+}}, 8] [1, 1]
// CHECK: tensor.extract_slice %[[Y]][0, 8] [%{{.+}}, 8] [1, 1]
// CHECK-NOT: txl.linear
func.func @every_column_read(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %y = txl.linear %x, %w : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %a = tensor.extract_slice %y[0, 0] [%n, 8] [1, 1] : tensor<?x16xf32> to tensor<?x8xf32>
  %b = tensor.extract_slice %y[0, 8] [%n, 8] [1, 1] : tensor<?x16xf32> to tensor<?x8xf32>
  return %a, %b : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Negative: a strided slice, and a slice whose column offset is not a
// constant, are not narrowed.
// CHECK-LABEL: func.func @strided_or_dynamic_columns
// CHECK-COUNT-2: txl.linear %{{.+}}, %{{.+}} : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [%{{.+}}, 8] [1, 2]
// CHECK: tensor.extract_slice %{{.+}}[0, %{{.+}}] [%{{.+}}, 4] [1, 1]
func.func @strided_or_dynamic_columns(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>, %c: index)
    -> (tensor<?x8xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %y = txl.linear %x, %w : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
  %z = txl.linear %x, %w : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %a = tensor.extract_slice %y[0, 0] [%n, 8] [1, 2] : tensor<?x16xf32> to tensor<?x8xf32>
  %b = tensor.extract_slice %z[0, %c] [%n, 4] [1, 1] : tensor<?x16xf32> to tensor<?x4xf32>
  return %a, %b : tensor<?x8xf32>, tensor<?x4xf32>
}

// -----

// Negative: an input gradient sliced along its features, or read twice,
// is formed whole.
// CHECK-LABEL: func.func @input_grad_kept
// CHECK-COUNT-2: txl.linear_input_grad %{{.+}}, %{{.+}} : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
// CHECK-NOT: txl.linear_input_grad
// CHECK: return %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x4xf32>, tensor<?x8xf32>, tensor<?x8xf32>
func.func @input_grad_kept(%dy: tensor<?x16xf32>, %w: tensor<16x8xf32>, %n: index)
    -> (tensor<?x4xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %g = txl.linear_input_grad %dy, %w : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
  %a = tensor.extract_slice %g[0, 0] [%n, 4] [1, 1] : tensor<?x8xf32> to tensor<?x4xf32>
  %h = txl.linear_input_grad %dy, %w : tensor<?x16xf32>, tensor<16x8xf32> -> tensor<?x8xf32>
  %b = tensor.extract_slice %h[1, 0] [%n, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
  return %a, %b, %h : tensor<?x4xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}
