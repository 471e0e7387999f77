// Generic reductions of txl-parallel-loops-to-gpu: a row max over 10,000
// logits (one workgroup per row) and a row sum of d_model 128 (one subgroup
// per row), as convert-linalg-to-parallel-loops writes them; input of
// sass-budgets-generic.test.
func.func @row_max(%a: memref<?x?x10000xf32>, %m: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10000 = arith.constant 10000 : index
  %n0 = memref.dim %a, %c0 : memref<?x?x10000xf32>
  %n1 = memref.dim %a, %c1 : memref<?x?x10000xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n0, %n1) step (%c1, %c1) {
    scf.for %k = %c0 to %c10000 step %c1 {
      %x = memref.load %a[%i, %j, %k] : memref<?x?x10000xf32>
      %acc = memref.load %m[%i, %j] : memref<?x?xf32>
      %y = arith.maximumf %x, %acc fastmath<reassoc,nnan,nsz> : f32
      memref.store %y, %m[%i, %j] : memref<?x?xf32>
    }
    scf.reduce
  }
  return
}
func.func @row_sum(%a: memref<?x128xf32>, %s: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %n = memref.dim %a, %c0 : memref<?x128xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x128xf32>
      %acc = memref.load %s[%i] : memref<?xf32>
      %t = arith.addf %acc, %x : f32
      memref.store %t, %s[%i] : memref<?xf32>
    }
    scf.reduce
  }
  return
}
