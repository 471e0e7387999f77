// Input of txl-emit-packed-entry.mlir: a function named `model` (not
// `segment`) marked with the entry txl_model_forward, and its C-interface
// wrapper, with one descriptor and one index argument.
module {
  llvm.func @model(%desc: !llvm.ptr, %n: i64) attributes {txl.entry = "txl_model_forward"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_model(%desc: !llvm.ptr, %n: i64) {
    llvm.call @model(%desc, %n) : (!llvm.ptr, i64) -> ()
    llvm.return
  }
}
