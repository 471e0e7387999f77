// Input of txl-emit-packed-entry.mlir: a C-interface wrapper for a function
// named `model` (not the default `segment`), with one descriptor and one
// index argument.
module {
  llvm.func @_mlir_ciface_model(%desc: !llvm.ptr, %n: i64) {
    llvm.return
  }
}
