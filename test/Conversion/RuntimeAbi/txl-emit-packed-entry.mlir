// RUN: txl-opt %s --split-input-file --txl-emit-packed-entry --verify-diagnostics | FileCheck %s --implicit-check-not=txl.entry
// RUN: txl-opt %S/../Inputs/ciface-model.mlir --txl-emit-packed-entry=required=txl_model_forward \
// RUN:   | FileCheck %s --check-prefix=CUSTOM --implicit-check-not=txl_segment_forward \
// RUN:       --implicit-check-not=txl_optimizer_step --implicit-check-not=txl_learning_rate
// RUN: not txl-opt %S/../Inputs/ciface-model.mlir --txl-emit-packed-entry=required=txl_segment_forward 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING

// The packed entry `void txl_segment_forward(void **args)` of the function
// marked txl.entry = "txl_segment_forward" loads args[i] for each argument
// of its wrapper _mlir_ciface_segment: a memref descriptor is passed as the
// pointer itself, a scalar (i64, f32) is loaded from the pointer's target.
// The wrapper, whose one use is now the entry's call, becomes internal and
// always-inline, so that the entry is the only symbol left. The marks (the
// function's, and the copy func-to-llvm gives the wrapper) are removed: the
// --implicit-check-not above holds over every output.
// CHECK-LABEL: llvm.func internal @segment(
// CHECK-LABEL: llvm.func internal @_mlir_ciface_segment
// CHECK-SAME: attributes {always_inline}
// CHECK-LABEL: llvm.func @txl_segment_forward
// CHECK-SAME: (%[[ARGS:[^:]+]]: !llvm.ptr) {
// CHECK-NEXT: %[[S0:.+]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[D0:.+]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S1:.+]] = llvm.getelementptr %[[ARGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P1:.+]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[V1:.+]] = llvm.load %[[P1]] : !llvm.ptr -> i64
// CHECK-NEXT: %[[S2:.+]] = llvm.getelementptr %[[ARGS]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[D2:.+]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S3:.+]] = llvm.getelementptr %[[ARGS]][3] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P3:.+]] = llvm.load %[[S3]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[V3:.+]] = llvm.load %[[P3]] : !llvm.ptr -> f32
// CHECK-NEXT: llvm.call @_mlir_ciface_segment(%[[D0]], %[[V1]], %[[D2]], %[[V3]]) : (!llvm.ptr, i64, !llvm.ptr, f32) -> ()
// CHECK-NEXT: llvm.return
module {
  llvm.func @segment(%nll: !llvm.ptr, %mem_len: i64, %mem: !llvm.ptr, %scale: f32) attributes {txl.entry = "txl_segment_forward"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_segment(%nll: !llvm.ptr, %mem_len: i64, %mem: !llvm.ptr, %scale: f32) attributes {txl.entry = "txl_segment_forward"} {
    llvm.call @segment(%nll, %mem_len, %mem, %scale) : (!llvm.ptr, i64, !llvm.ptr, f32) -> ()
    llvm.return
  }
}

// -----

// Every marked function gets its entry, whatever the function's name:
// txl_segment_grad, txl_grad_squared_norm (i64 part and parts loaded from
// their slots), txl_optimizer_step (f64 lr and i64 step loaded from their
// slots), the CPU's per-tensor txl_squared_norm_part and
// txl_optimizer_update, and txl_learning_rate. An unmarked function with a
// C interface (@helper) gets none.
// CHECK-LABEL: llvm.func @_mlir_ciface_helper(
// CHECK-NOT: always_inline
// CHECK-LABEL: llvm.func @txl_segment_forward
// CHECK-LABEL: llvm.func @txl_segment_grad
// CHECK: llvm.call @_mlir_ciface_backward(%{{.+}}) : (!llvm.ptr) -> ()
// CHECK-LABEL: llvm.func @txl_grad_squared_norm
// CHECK: llvm.call @_mlir_ciface_grad_squared_norm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (!llvm.ptr, i64, i64, !llvm.ptr) -> ()
// CHECK-LABEL: llvm.func @txl_optimizer_step
// CHECK-SAME: (%[[ARGS:[^:]+]]: !llvm.ptr) {
// CHECK: %[[S1:.+]] = llvm.getelementptr %[[ARGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P1:.+]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[LR:.+]] = llvm.load %[[P1]] : !llvm.ptr -> f64
// CHECK-NEXT: %[[S2:.+]] = llvm.getelementptr %[[ARGS]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P2:.+]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[STEP:.+]] = llvm.load %[[P2]] : !llvm.ptr -> i64
// CHECK: llvm.call @_mlir_ciface_optimizer_step(%{{.+}}, %[[LR]], %[[STEP]], %{{.+}}) : (!llvm.ptr, f64, i64, !llvm.ptr) -> ()
// CHECK-LABEL: llvm.func @txl_squared_norm_part
// CHECK: llvm.call @_mlir_ciface_squared_norm_part(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (!llvm.ptr, i64, i64, !llvm.ptr) -> ()
// CHECK-LABEL: llvm.func @txl_optimizer_update
// CHECK: llvm.call @_mlir_ciface_optimizer_update(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (!llvm.ptr, f64, f32, i64) -> ()
// The schedule's f64 result goes through the pointer in args[3].
// CHECK-LABEL: llvm.func @txl_learning_rate
// CHECK-SAME: (%[[LARGS:.+]]: !llvm.ptr)
// CHECK: %[[LR_OUT:.+]] = llvm.call @_mlir_ciface_learning_rate(%{{.+}}, %{{.+}}, %{{.+}}) : (i64, f64, i64) -> f64
// CHECK-NEXT: %[[S3:.+]] = llvm.getelementptr %[[LARGS]][3] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P3:.+]] = llvm.load %[[S3]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: llvm.store %[[LR_OUT]], %[[P3]] : f64, !llvm.ptr
// CHECK-NOT: llvm.func @txl_
module {
  llvm.func @segment() attributes {txl.entry = "txl_segment_forward"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_segment(%nll: !llvm.ptr) {
    llvm.return
  }
  llvm.func @backward() attributes {txl.entry = "txl_segment_grad"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_backward(%nll: !llvm.ptr) {
    llvm.return
  }
  llvm.func @grad_squared_norm() attributes {txl.entry = "txl_grad_squared_norm"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_grad_squared_norm(%grad: !llvm.ptr, %part: i64, %parts: i64, %sum: !llvm.ptr) {
    llvm.return
  }
  llvm.func @optimizer_step() attributes {txl.entry = "txl_optimizer_step"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_optimizer_step(%param: !llvm.ptr, %lr: f64, %step: i64, %new_param: !llvm.ptr) {
    llvm.return
  }
  llvm.func @squared_norm_part() attributes {txl.entry = "txl_squared_norm_part"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_squared_norm_part(%grad: !llvm.ptr, %part: i64, %parts: i64, %sum: !llvm.ptr) {
    llvm.return
  }
  llvm.func @optimizer_update() attributes {txl.entry = "txl_optimizer_update"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_optimizer_update(%param: !llvm.ptr, %lr: f64, %scale: f32, %part: i64) {
    llvm.return
  }
  llvm.func @learning_rate() attributes {txl.entry = "txl_learning_rate"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_learning_rate(%step: i64, %lr: f64, %max: i64) -> f64 {
    llvm.return %lr : f64
  }
  llvm.func @helper() {
    llvm.return
  }
  llvm.func @_mlir_ciface_helper(%x: i64) {
    llvm.return
  }
}

// -----

// An existing symbol with the entry's name is not overwritten.
module {
  // expected-error @+1 {{txl-emit-packed-entry: symbol 'txl_learning_rate' already exists}}
  llvm.func @learning_rate() attributes {txl.entry = "txl_learning_rate"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_learning_rate(%arg0: i64, %arg1: f64, %arg2: !llvm.ptr) {
    llvm.return
  }
  llvm.func @txl_learning_rate(%arg0: !llvm.ptr) {
    llvm.return
  }
}

// `required` names the entries the module must have: a model whose
// function is marked txl.entry = "txl_model_forward" gets that entry, no
// txl_segment_forward, and no entry for the functions it lacks (the
// CUSTOM run's --implicit-check-not options hold over the whole output).
// CUSTOM-LABEL: llvm.func @txl_model_forward
// CUSTOM-SAME: (%[[ARGS:[^:]+]]: !llvm.ptr)
// CUSTOM: llvm.call @_mlir_ciface_model(%{{.+}}, %{{.+}}) : (!llvm.ptr, i64) -> ()

// A required entry no function is marked with.
// MISSING: error: txl-emit-packed-entry: no function is marked txl.entry = "txl_segment_forward" (the runtime needs it)

// -----

// A marked function without its C interface wrapper: nothing to call.
module {
  // expected-error @+1 {{txl-emit-packed-entry: no function '_mlir_ciface_segment' (is 'segment' marked llvm.emit_c_interface and lowered to LLVM?)}}
  llvm.func @segment(%arg0: !llvm.ptr) attributes {txl.entry = "txl_segment_forward"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_other(%arg0: !llvm.ptr) {
    llvm.return
  }
}

// -----

// Two functions marked with one entry.
module {
  llvm.func @segment(%arg0: !llvm.ptr) attributes {txl.entry = "txl_segment_forward"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_segment(%arg0: !llvm.ptr) {
    llvm.return
  }
  // expected-error @+1 {{txl-emit-packed-entry: @segment and @segment2 are both marked txl.entry = "txl_segment_forward"}}
  llvm.func @segment2(%arg0: !llvm.ptr) attributes {txl.entry = "txl_segment_forward"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_segment2(%arg0: !llvm.ptr) {
    llvm.return
  }
}

// -----

// The function a wrapper calls is inlined the same way when the wrapper is
// its only user: @segment_grad and its wrapper become internal and
// always-inline, the entry stays external. A function with another user
// (@segment, also called by @other) keeps its linkage.
// CHECK-LABEL: llvm.func @segment(
// CHECK-NOT: always_inline
// CHECK-LABEL: llvm.func @other(
// CHECK-LABEL: llvm.func internal @_mlir_ciface_segment(
// CHECK-SAME: attributes {always_inline}
// CHECK-LABEL: llvm.func internal @segment_grad(
// CHECK-SAME: attributes {always_inline}
// CHECK-LABEL: llvm.func internal @_mlir_ciface_segment_grad(
// CHECK-SAME: attributes {always_inline}
// CHECK-LABEL: llvm.func @txl_segment_forward(
// CHECK-LABEL: llvm.func @txl_segment_grad(
module {
  llvm.func @segment(%x: i64) attributes {txl.entry = "txl_segment_forward"} {
    llvm.return
  }
  llvm.func @other(%x: i64) {
    llvm.call @segment(%x) : (i64) -> ()
    llvm.return
  }
  llvm.func @_mlir_ciface_segment(%x: i64) {
    llvm.call @segment(%x) : (i64) -> ()
    llvm.return
  }
  llvm.func @segment_grad(%x: i64) attributes {txl.entry = "txl_segment_grad"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_segment_grad(%x: i64) {
    llvm.call @segment_grad(%x) : (i64) -> ()
    llvm.return
  }
}

// -----

// The module's private functions with a body (the layer functions) become
// internal, so that LLVM may drop the arguments they never read; a private
// declaration and a public function keep their linkage.
// CHECK-LABEL: llvm.func internal @decoder_layer(
// CHECK-NOT: always_inline
// CHECK-LABEL: llvm.func @cblas_sgemm(i64) attributes {sym_visibility = "private"}
// CHECK-LABEL: llvm.func @public_helper(
module {
  llvm.func @decoder_layer(%x: i64, %unused: i64) -> i64 attributes {sym_visibility = "private"} {
    llvm.return %x : i64
  }
  llvm.func @cblas_sgemm(i64) attributes {sym_visibility = "private"}
  llvm.func @public_helper(%x: i64) -> i64 {
    %r = llvm.call @decoder_layer(%x, %x) : (i64, i64) -> i64
    llvm.return %r : i64
  }
  llvm.func @segment(%x: i64) attributes {txl.entry = "txl_segment_forward"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_segment(%x: i64) {
    llvm.call @segment(%x) : (i64) -> ()
    llvm.return
  }
}

// -----

// An entry returns nothing or one integer or float: a wrapper returning a
// struct has no packed entry.
module {
  // expected-error @+1 {{txl-emit-packed-entry: '_mlir_ciface_pair' returns '!llvm.struct<(f64, f64)>'; an entry returns nothing or one integer or float}}
  llvm.func @pair() attributes {txl.entry = "txl_pair"} {
    llvm.return
  }
  llvm.func @_mlir_ciface_pair(%x: f64) -> !llvm.struct<(f64, f64)> {
    %0 = llvm.mlir.poison : !llvm.struct<(f64, f64)>
    llvm.return %0 : !llvm.struct<(f64, f64)>
  }
}
