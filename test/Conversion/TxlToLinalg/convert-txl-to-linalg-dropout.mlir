// RUN: txl-opt %s --split-input-file --convert-txl-to-linalg --canonicalize | FileCheck %s

// txl.dropout becomes `scf.if training` around one parallel generic that
// computes Philox4x32-10; eval mode yields the input untouched.
// Key: the seed's two words, bumped by the Weyl constants 0x9E3779B9
// (-1640531527) and 0xBB67AE85 (-1150833019) once per round after the first.
// Counter: (e >> 2, stream, offset lo, offset hi) with e the row-major index;
// word e & 3 is compared, shifted right by 8, with ceil(0.1 * 2^24) =
// 1677722; a kept element is scaled by f32(1 / 0.9).
// The innermost dimension (8) is a static multiple of 4, so the four words
// of a block are four consecutive elements: x is split into [?, 2, 4], the
// generic's counter is the block index row·2 + block (it does not depend on
// the innermost iteration w, so one Philox call serves four elements) and w
// picks the word. The generic writes over x (outs = ins): with eval mode
// yielding x, a fresh buffer would make bufferization copy x first.
// CHECK-DAG: #[[$MAP:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[SEED:[^:]+]]: i64, %[[OFF:[^:]+]]: i64, %[[TR:[^:]+]]: i1)
// CHECK-DAG: %[[M0:.+]] = arith.constant -766435501 : i32
// CHECK-DAG: %[[M1:.+]] = arith.constant -845247145 : i32
// CHECK-DAG: %[[W0:.+]] = arith.constant -1640531527 : i32
// CHECK-DAG: %[[W1:.+]] = arith.constant -1150833019 : i32
// CHECK-DAG: %[[STREAM:.+]] = arith.constant 2 : i32
// CHECK-DAG: %[[MIN:.+]] = arith.constant 1677722 : i32
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 1.11111116 : f32
// CHECK-DAG: %[[TWO:.+]] = arith.constant 2 : index
// CHECK: %[[R:.+]] = scf.if %[[TR]] -> (tensor<?x8xf32>) {
// CHECK: %[[K0:.+]] = arith.trunci %[[SEED]] : i64 to i32
// CHECK: %[[SEEDHI:.+]] = arith.shrui %[[SEED]], %{{.+}} : i64
// CHECK: %[[K1:.+]] = arith.trunci %[[SEEDHI]] : i64 to i32
// CHECK: %[[K0B:.+]] = arith.addi %[[K0]], %[[W0]] : i32
// CHECK: %[[K1B:.+]] = arith.addi %[[K1]], %[[W1]] : i32
// CHECK: %[[C2:.+]] = arith.trunci %[[OFF]] : i64 to i32
// CHECK: %[[OFFHI:.+]] = arith.shrui %[[OFF]], %{{.+}} : i64
// CHECK: %[[C3:.+]] = arith.trunci %[[OFFHI]] : i64 to i32
// CHECK: %[[SPLIT:.+]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2]] output_shape [%{{.+}}, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
// CHECK: %[[D:.+]] = linalg.generic {indexing_maps = [#[[$MAP]], #[[$MAP]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[SPLIT]] : tensor<?x2x4xf32>) outs(%[[SPLIT]] : tensor<?x2x4xf32>)
// CHECK: %[[I:.+]] = linalg.index 0 : index
// CHECK: %[[ROW:.+]] = arith.muli %[[I]], %[[TWO]] : index
// CHECK: %[[J:.+]] = linalg.index 1 : index
// CHECK: %[[BLOCK:.+]] = arith.addi %[[ROW]], %[[J]] : index
// CHECK: %[[W:.+]] = linalg.index 2 : index
// CHECK: %[[WORD:.+]] = arith.index_castui %[[W]] : index to i32
// CHECK: %[[B64:.+]] = arith.index_castui %[[BLOCK]] : index to i64
// CHECK: %[[C0:.+]] = arith.trunci %[[B64]] : i64 to i32
// CHECK: %[[L0:.+]], %[[H0:.+]] = arith.mului_extended %[[C0]], %[[M0]] : i32
// CHECK: %[[L1:.+]], %[[H1:.+]] = arith.mului_extended %[[C2]], %[[M1]] : i32
// CHECK: %[[X0:.+]] = arith.xori %[[H1]], %[[STREAM]] : i32
// CHECK: %[[Y0:.+]] = arith.xori %[[X0]], %[[K0]] : i32
// CHECK: %[[X2:.+]] = arith.xori %[[H0]], %[[C3]] : i32
// CHECK: %[[Y2:.+]] = arith.xori %[[X2]], %[[K1]] : i32
// CHECK: arith.mului_extended %[[Y0]], %[[M0]] : i32
// CHECK: arith.mului_extended %[[Y2]], %[[M1]] : i32
// CHECK: arith.xori %{{.+}}, %[[L1]] : i32
// CHECK: arith.xori %{{.+}}, %[[K0B]] : i32
// CHECK-COUNT-16: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: arith.cmpi eq, %[[WORD]]
// CHECK: arith.select
// CHECK: arith.cmpi eq, %[[WORD]]
// CHECK: arith.select
// CHECK: arith.cmpi eq, %[[WORD]]
// CHECK: %[[BITS:.+]] = arith.select
// CHECK: %[[TOP:.+]] = arith.shrui %[[BITS]], %{{.+}} : i32
// CHECK: %[[KEEP:.+]] = arith.cmpi uge, %[[TOP]], %[[MIN]] : i32
// CHECK: %[[SCALED:.+]] = arith.mulf %{{.+}}, %[[SCALE]] : f32
// CHECK: arith.select %[[KEEP]], %[[SCALED]], %{{.+}} : f32
// CHECK: %[[Y:.+]] = tensor.collapse_shape %[[D]] {{\[\[}}0], [1, 2]] : tensor<?x2x4xf32> into tensor<?x8xf32>
// CHECK: scf.yield %[[Y]]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[X]] : tensor<?x8xf32>
// CHECK: return %[[R]]
func.func @dropout(%x: tensor<?x8xf32>, %seed: i64, %offset: i64, %training: i1) -> tensor<?x8xf32> {
  %y = txl.dropout %x, %seed, %offset, %training {rate = 0.1 : f64, stream = 2 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// A dynamic innermost dimension: no static block boundary, so every element
// computes its own block's Philox call from e >> 2 and takes word e & 3 (the
// same bits as the blocked form).
// CHECK-LABEL: func.func @dropout_dynamic_inner
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?xf32>
// CHECK: scf.if
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} ins(%[[X]] : tensor<?x?xf32>) outs(%[[X]] : tensor<?x?xf32>)
// CHECK: %[[I:.+]] = linalg.index 0 : index
// CHECK: %[[ROW:.+]] = arith.muli %[[I]], %{{.+}} : index
// CHECK: %[[J:.+]] = linalg.index 1 : index
// CHECK: %[[E:.+]] = arith.addi %[[ROW]], %[[J]] : index
// CHECK: %[[WORDI:.+]] = arith.remui %[[E]], %{{.+}} : index
// CHECK: %[[W64:.+]] = arith.index_castui %[[WORDI]] : index to i64
// CHECK: %[[WORD:.+]] = arith.trunci %[[W64]] : i64 to i32
// CHECK: %[[BLOCK:.+]] = arith.divui %[[E]], %{{.+}} : index
// CHECK: %[[B64:.+]] = arith.index_castui %[[BLOCK]] : index to i64
// CHECK: arith.trunci %[[B64]] : i64 to i32
// CHECK-COUNT-20: arith.mului_extended
// CHECK: arith.cmpi eq, %[[WORD]]
// CHECK: arith.cmpi uge
// CHECK-NOT: tensor.collapse_shape
// CHECK: } else {
func.func @dropout_dynamic_inner(%x: tensor<?x?xf32>, %seed: i64, %offset: i64, %training: i1) -> tensor<?x?xf32> {
  %y = txl.dropout %x, %seed, %offset, %training {rate = 0.1 : f64, stream = 2 : i64} : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// At f64 the scale is the double 1 / 0.75; the stream word is
// stream_base + stream; e runs row-major over all four dimensions (the
// innermost, 2, is no multiple of 4: one call per element); rate 0 is the
// identity (no scf.if).
// CHECK-LABEL: func.func @dropout_f64_base
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x?x2xf64>, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %[[TR:[^:]+]]: i1, %[[BASE:[^:]+]]: i64)
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 1.3333333333333333 : f64
// CHECK-DAG: %[[MIN:.+]] = arith.constant 4194304 : i32
// CHECK: %[[R:.+]] = scf.if %[[TR]]
// CHECK: %[[S:.+]] = arith.addi %[[BASE]], %{{.+}} : i64
// CHECK: arith.trunci %[[S]] : i64 to i32
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: linalg.index 2
// CHECK: linalg.index 3
// CHECK: arith.cmpi uge, %{{.+}}, %[[MIN]] : i32
// CHECK: arith.mulf %{{.+}}, %[[SCALE]] : f64
// CHECK-NOT: scf.if
// CHECK: return %[[R]], %[[X]]
func.func @dropout_f64_base(%x: tensor<?x?x?x2xf64>, %seed: i64, %offset: i64, %training: i1, %base: i64)
    -> (tensor<?x?x?x2xf64>, tensor<?x?x?x2xf64>) {
  %y = txl.dropout %x, %seed, %offset, %training stream_base %base {rate = 0.25 : f64, stream = 3 : i64} : tensor<?x?x?x2xf64>
  %z = txl.dropout %x, %seed, %offset, %training {rate = 0.0 : f64, stream = 3 : i64} : tensor<?x?x?x2xf64>
  return %y, %z : tensor<?x?x?x2xf64>, tensor<?x?x?x2xf64>
}

// -----

// With a column, the batch dimension (batch_dim 1) counts outermost from
// the column: block = ((col + b) rows + i) 2 + k for x [rows, batch, 8]
// split into [rows, batch, 2, 4]; the batch size never enters the index.
// Without the column's add (the columns numbered locally), or with the
// rows outermost, the counters would differ.
// CHECK-LABEL: func.func @dropout_column
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x8xf32>, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %[[TR:[^:]+]]: i1, %[[COL:[^:]+]]: i64)
// CHECK-DAG: %[[TWO:.+]] = arith.constant 2 : index
// CHECK: scf.if %[[TR]]
// CHECK: %[[COLI:.+]] = arith.index_cast %[[COL]] : i64 to index
// CHECK: %[[ROWS:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?x8xf32>
// CHECK: tensor.expand_shape %[[X]] {{\[\[}}0], [1], [2, 3]]
// CHECK: linalg.generic
// CHECK: %[[B:.+]] = linalg.index 1 : index
// CHECK: %[[GB:.+]] = arith.addi %[[B]], %[[COLI]] : index
// CHECK: %[[BR:.+]] = arith.muli %[[GB]], %[[ROWS]] : index
// CHECK: %[[I:.+]] = linalg.index 0 : index
// CHECK: %[[BI:.+]] = arith.addi %[[BR]], %[[I]] : index
// CHECK: %[[BI2:.+]] = arith.muli %[[BI]], %[[TWO]] : index
// CHECK: %[[K:.+]] = linalg.index 2 : index
// CHECK: %[[BLOCK:.+]] = arith.addi %[[BI2]], %[[K]] : index
// CHECK: %[[W:.+]] = linalg.index 3 : index
// CHECK: arith.index_castui %[[BLOCK]] : index to i64
func.func @dropout_column(%x: tensor<?x?x8xf32>, %seed: i64, %offset: i64, %training: i1, %col: i64) -> tensor<?x?x8xf32> {
  %y = txl.dropout %x, %seed, %offset, %training column %col {batch_dim = 1 : i64, rate = 0.1 : f64, stream = 2 : i64} : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// dropatt in the fused attention: the softmax's [n, b, i, j] probabilities
// go through the same scf.if + generic before the product with V, their
// counters numbered as the decomposed [qlen, klen, batch, n_head] scores'
// with batch_dim 2: e = (((col + b) qlen + i) klen + j) n_head + n, the
// column outermost (the batch size never enters).
// CHECK-LABEL: func.func @rel_attention_dropatt
// CHECK-SAME: %[[TR:[^:]+]]: i1, %[[BASE:[^:]+]]: i64, %[[COL:[^:]+]]: i64)
// CHECK: arith.divf
// CHECK: %[[PD:.+]] = scf.if %[[TR]] -> (tensor<2x?x?x?xf32>) {
// CHECK: arith.addi %[[BASE]], %{{.+}} : i64
// CHECK: %[[COLI:.+]] = arith.index_cast %[[COL]] : i64 to index
// CHECK: linalg.generic {{.+}} ins(%[[P:[^ ]+]] : tensor<2x?x?x?xf32>)
// CHECK: %[[B:.+]] = linalg.index 1 : index
// CHECK: %[[GB:.+]] = arith.addi %[[B]], %[[COLI]] : index
// CHECK: %[[BI:.+]] = arith.muli %[[GB]], %{{.+}} : index
// CHECK: %[[I:.+]] = linalg.index 2 : index
// CHECK: %[[BII:.+]] = arith.addi %[[BI]], %[[I]] : index
// CHECK: %[[BIJ:.+]] = arith.muli %[[BII]], %{{.+}} : index
// CHECK: %[[J:.+]] = linalg.index 3 : index
// CHECK: %[[BIJJ:.+]] = arith.addi %[[BIJ]], %[[J]] : index
// CHECK: %[[BIJN:.+]] = arith.muli %[[BIJJ]], %{{.+}} : index
// CHECK: %[[N:.+]] = linalg.index 0 : index
// CHECK: arith.addi %[[BIJN]], %[[N]] : index
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[P]]
// CHECK: %[[PC:.+]] = tensor.collapse_shape %[[PD]]
// CHECK: linalg.batch_matmul ins(%[[PC]],
func.func @rel_attention_dropatt(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>,
                                 %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
                                 %mem_len: index, %same_length: i1,
                                 %seed: i64, %offset: i64, %training: i1, %base: i64, %col: i64) -> tensor<?x?x2x16xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same_length dropatt(%seed, %offset, %training, %base, %col)
      {dropatt = 0.1 : f64, dropatt_stream = 7 : i64, scale = 0.25 : f32}
      : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x?x2x16xf32>
  return %o : tensor<?x?x2x16xf32>
}

// -----

// Its backward applies the recomputed mask twice: to P before dV = Pᵀ dO,
// and to dP = dO Vᵀ before the softmax backward, which reads the undropped P.
// CHECK-LABEL: func.func @rel_attention_grad_dropatt
// CHECK-SAME: %[[TR:[^:]+]]: i1, %{{[^:]+}}: i64, %{{[^:]+}}: i64)
// CHECK: arith.divf
// CHECK: %[[P3:.+]] = tensor.collapse_shape %[[P:[^ ]+]] {{\[}}[0, 1], [2], [3]]
// CHECK: %[[PD:.+]] = scf.if %[[TR]]
// CHECK: linalg.generic {{.+}} ins(%[[P]] :
// CHECK: %[[PD3:.+]] = tensor.collapse_shape %[[PD]]
// CHECK: linalg.batch_matmul {{.+}} ins(%[[PD3]],
// CHECK: %[[DP:.+]] = linalg.batch_matmul
// CHECK: %[[DP4:.+]] = tensor.expand_shape %[[DP]]
// CHECK: %[[DPD:.+]] = scf.if %[[TR]]
// CHECK: linalg.generic {{.+}} ins(%[[DP4]] :
// CHECK: %[[DPD3:.+]] = tensor.collapse_shape %[[DPD]]
// CHECK: linalg.generic {{.+}} ins(%[[P3]], %[[DPD3]] :
func.func @rel_attention_grad_dropatt(%do: tensor<?x?x2x4xf32>, %q: tensor<?x?x2x4xf32>, %r: tensor<?x2x4xf32>, %u: tensor<2x4xf32>,
                                      %m: index, %s: i1, %seed: i64, %off: i64, %training: i1, %base: i64, %col: i64)
    -> (tensor<?x?x2x4xf32>, tensor<?x2x4xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s dropatt(%seed, %off, %training, %base, %col)
      {dropatt = 0.2 : f64, dropatt_stream = 3 : i64, scale = 0.5 : f32}
      : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return %g#2, %g#3 : tensor<?x?x2x4xf32>, tensor<?x2x4xf32>
}
