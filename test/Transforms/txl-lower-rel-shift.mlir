// RUN: txl-opt %s --split-input-file --txl-lower-rel-shift | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-lower-rel-shift --cse | FileCheck %s --check-prefix=CSE

// rel_shift on [qlen, klen, batch, n_head] becomes one tensor.generate that
// reads input[i, j + qlen - 1 - i, b, n] when that index is below klen and 0
// otherwise (the official pad + view + slice, without the padded copy). The
// dynamic qlen, klen and batch stay `?`.
// CHECK-LABEL: func.func @rel_shift
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32>
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[G:.+]] = tensor.generate %{{.+}}, %{{.+}}, %{{.+}} {
// CHECK-NEXT: ^bb0(%[[I:.+]]: index, %[[J:.+]]: index, %[[B:.+]]: index, %[[N:.+]]: index):
// CHECK-NEXT: %[[LAST:.+]] = arith.subi %[[QLEN:.+]], %[[C1]] : index
// CHECK-NEXT: %[[JQ:.+]] = arith.addi %[[J]], %[[LAST]] : index
// CHECK-NEXT: %[[SRC:.+]] = arith.subi %[[JQ]], %[[I]] : index
// CHECK-NEXT: %[[IN:.+]] = arith.cmpi ult, %[[SRC]], %[[KLEN:.+]] : index
// CHECK-NEXT: %[[LASTCOL:.+]] = arith.subi %[[KLEN]], %[[C1]] : index
// CHECK-NEXT: %[[CL:.+]] = arith.minui %[[SRC]], %[[LASTCOL]] : index
// CHECK-NEXT: %[[E:.+]] = tensor.extract %[[X]][%[[I]], %[[CL]], %[[B]], %[[N]]] : tensor<?x?x?x2xf32>
// CHECK-NEXT: %[[SEL:.+]] = arith.select %[[IN]], %[[E]], %[[ZERO]] : f32
// CHECK-NEXT: tensor.yield %[[SEL]] : f32
// CHECK-NEXT: } : tensor<?x?x?x2xf32>
// CHECK-NOT: txl.rel_shift
// CHECK-NOT: tensor.pad
// CHECK-NOT: tensor.reshape
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: tensor.extract_slice
// CHECK: return %[[G]] : tensor<?x?x?x2xf32>
// After cse, the generate's sizes and the bounds are visibly dimensions 0
// (qlen), 1 (klen) and 2 (batch) of the input.
// CSE-LABEL: func.func @rel_shift
// CSE-SAME: (%[[X:[^:]+]]: tensor<?x?x?x2xf32>)
// CSE-DAG: %[[C0:.+]] = arith.constant 0 : index
// CSE-DAG: %[[C1:.+]] = arith.constant 1 : index
// CSE-DAG: %[[C2:.+]] = arith.constant 2 : index
// CSE-DAG: %[[QLEN:.+]] = tensor.dim %[[X]], %[[C0]]
// CSE-DAG: %[[KLEN:.+]] = tensor.dim %[[X]], %[[C1]]
// CSE-DAG: %[[BSZ:.+]] = tensor.dim %[[X]], %[[C2]]
// CSE: tensor.generate %[[QLEN]], %[[KLEN]], %[[BSZ]] {
// CSE: arith.subi %[[QLEN]], %[[C1]]
// CSE: arith.cmpi ult, %{{.+}}, %[[KLEN]]
// CSE: arith.subi %[[KLEN]], %[[C1]]
func.func @rel_shift(%bd: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// Nothing but the gather is created: no pad, reshape or slice anywhere in the
// function (checked from its start, since constants are hoisted above the
// generate).
// CHECK-LABEL: func.func @no_padded_copy
// CHECK-NOT: txl.rel_shift
// CHECK-NOT: tensor.pad
// CHECK-NOT: tensor.reshape
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: tensor.extract_slice
// CHECK: tensor.generate
// CHECK-NOT: tensor.pad
// CHECK-NOT: tensor.reshape
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: tensor.extract_slice
// CHECK: return
func.func @no_padded_copy(%bd: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.rel_shift %bd : tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// With static sizes (qlen = 4, klen = 12) the bounds fold to constants:
// src = j + 3 - i, in bounds iff src < 12, clamped to 11.
// CHECK-LABEL: func.func @rel_shift_static
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x12x3x2xf32>)
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG: %[[C11:.+]] = arith.constant 11 : index
// CHECK-DAG: %[[C12:.+]] = arith.constant 12 : index
// CHECK: tensor.generate  {
// CHECK-NEXT: ^bb0(%[[I:.+]]: index, %[[J:.+]]: index, %[[B:.+]]: index, %[[N:.+]]: index):
// CHECK-NEXT: %[[JQ:.+]] = arith.addi %[[J]], %[[C3]] : index
// CHECK-NEXT: %[[SRC:.+]] = arith.subi %[[JQ]], %[[I]] : index
// CHECK-NEXT: %[[IN:.+]] = arith.cmpi ult, %[[SRC]], %[[C12]] : index
// CHECK-NEXT: %[[CL:.+]] = arith.minui %[[SRC]], %[[C11]] : index
// CHECK-NEXT: %[[E:.+]] = tensor.extract %[[X]][%[[I]], %[[CL]], %[[B]], %[[N]]] : tensor<4x12x3x2xf32>
// CHECK-NEXT: arith.select %[[IN]], %[[E]], %{{.+}} : f32
// CHECK: } : tensor<4x12x3x2xf32>
// CHECK-NOT: txl.rel_shift
// CHECK: return %{{.+}} : tensor<4x12x3x2xf32>
func.func @rel_shift_static(%bd: tensor<4x12x3x2xf32>) -> tensor<4x12x3x2xf32> {
  %s = txl.rel_shift %bd : tensor<4x12x3x2xf32>
  return %s : tensor<4x12x3x2xf32>
}

// -----

// Every rel_shift in a function is lowered, the other txl ops are untouched.
// CHECK-LABEL: func.func @two_shifts
// CHECK-NOT: txl.rel_shift
// CHECK: %[[S:.+]] = tensor.generate
// CHECK-NOT: txl.rel_shift
// CHECK: %[[T:.+]] = tensor.generate
// CHECK-NOT: txl.rel_shift
// CHECK: %[[A:.+]] = txl.add %[[S]], %[[T]] : tensor<?x?x?x2xf32>
// CHECK: return %[[A]]
func.func @two_shifts(%x: tensor<?x?x?x2xf32>, %y: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.rel_shift %x : tensor<?x?x?x2xf32>
  %t = txl.rel_shift %y : tensor<?x?x?x2xf32>
  %a = txl.add %s, %t : tensor<?x?x?x2xf32>
  return %a : tensor<?x?x?x2xf32>
}

// -----

// A function without rel_shift is left exactly as it was: the CHECK-NEXT
// chain pins every line of its body, so no tensor.generate can appear in it.
// CHECK-LABEL: func.func @no_rel_shift
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[R:[^:]+]]: tensor<?x2x16xf32>)
// CHECK-NEXT: %[[S:.+]] = txl.attn_score %[[Q]], %[[R]] : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
// CHECK-NEXT: return %[[S]] : tensor<?x?x?x2xf32>
// CHECK-NEXT: }
func.func @no_rel_shift(%q: tensor<?x?x2x16xf32>, %r: tensor<?x2x16xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.attn_score %q, %r : tensor<?x?x2x16xf32>, tensor<?x2x16xf32> -> tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// rel_shift_grad, the transpose of the gather: column c of row i reads
// d_result[i, c + i + 1 - qlen] when c + i + 1 >= qlen, 0 otherwise (the
// columns that no shifted entry of row i read).
// CHECK-LABEL: func.func @rel_shift_grad
// CHECK-SAME: (%[[D:[^:]+]]: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32>
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[G:.+]] = tensor.generate %{{.+}}, %{{.+}}, %{{.+}} {
// CHECK-NEXT: ^bb0(%[[I:.+]]: index, %[[C:.+]]: index, %[[B:.+]]: index, %[[N:.+]]: index):
// CHECK-NEXT: %[[CI:.+]] = arith.addi %[[C]], %[[I]] : index
// CHECK-NEXT: %[[END:.+]] = arith.addi %[[CI]], %[[C1]] : index
// CHECK-NEXT: %[[IN:.+]] = arith.cmpi uge, %[[END]], %[[QLEN:.+]] : index
// CHECK-NEXT: %[[SRC:.+]] = arith.subi %[[END]], %[[QLEN]] : index
// CHECK-NEXT: %[[LASTCOL:.+]] = arith.subi %[[KLEN:.+]], %[[C1]] : index
// CHECK-NEXT: %[[CL:.+]] = arith.minui %[[SRC]], %[[LASTCOL]] : index
// CHECK-NEXT: %[[E:.+]] = tensor.extract %[[D]][%[[I]], %[[CL]], %[[B]], %[[N]]] : tensor<?x?x?x2xf32>
// CHECK-NEXT: %[[SEL:.+]] = arith.select %[[IN]], %[[E]], %[[ZERO]] : f32
// CHECK-NEXT: tensor.yield %[[SEL]] : f32
// CHECK-NEXT: } : tensor<?x?x?x2xf32>
// CHECK-NOT: txl.rel_shift_grad
// CHECK: return %[[G]] : tensor<?x?x?x2xf32>
// CSE-LABEL: func.func @rel_shift_grad
// CSE-SAME: (%[[D:[^:]+]]: tensor<?x?x?x2xf32>)
// CSE-DAG: %[[C0:.+]] = arith.constant 0 : index
// CSE-DAG: %[[QLEN:.+]] = tensor.dim %[[D]], %[[C0]]
// CSE: tensor.generate
// CSE: arith.cmpi uge, %{{.+}}, %[[QLEN]]
func.func @rel_shift_grad(%ds: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  %d = txl.rel_shift_grad %ds : tensor<?x?x?x2xf32>
  return %d : tensor<?x?x?x2xf32>
}

// -----

// Static sizes (qlen = 4): in bounds iff c + i + 1 >= 4, source c + i - 3.
// CHECK-LABEL: func.func @rel_shift_grad_static
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C11:.+]] = arith.constant 11 : index
// CHECK: tensor.generate  {
// CHECK: arith.cmpi uge, %{{.+}}, %[[C4]] : index
// CHECK-NEXT: arith.subi %{{.+}}, %[[C4]] : index
// CHECK-NEXT: arith.minui %{{.+}}, %[[C11]] : index
// CHECK: } : tensor<4x12x3x2xf32>
// CHECK-NOT: txl.rel_shift_grad
// CHECK: return %{{.+}} : tensor<4x12x3x2xf32>
func.func @rel_shift_grad_static(%ds: tensor<4x12x3x2xf32>) -> tensor<4x12x3x2xf32> {
  %d = txl.rel_shift_grad %ds : tensor<4x12x3x2xf32>
  return %d : tensor<4x12x3x2xf32>
}
