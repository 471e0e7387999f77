// RUN: txl-opt %s --split-input-file --txl-check-host-allocations --verify-diagnostics | FileCheck %s --implicit-check-not=@malloc --implicit-check-not=@aligned_alloc

// The C library's allocation functions become the runtime's checked ones,
// at their declarations and at every call; free stays.
// CHECK-LABEL: module
// CHECK-DAG: llvm.func @txl_rt_malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @txl_rt_aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @free(!llvm.ptr)
// CHECK-LABEL: llvm.func @segment
// CHECK: llvm.call @txl_rt_malloc(%{{.*}}) : (i64) -> !llvm.ptr
// CHECK: llvm.call @txl_rt_aligned_alloc(%{{.*}}, %{{.*}}) : (i64, i64) -> !llvm.ptr
// CHECK: llvm.call @free
module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.func @segment(%n: i64) {
    %a = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    %c64 = llvm.mlir.constant(64 : i64) : i64
    %b = llvm.call @aligned_alloc(%c64, %n) : (i64, i64) -> !llvm.ptr
    llvm.call @free(%a) : (!llvm.ptr) -> ()
    llvm.call @free(%b) : (!llvm.ptr) -> ()
    llvm.return
  }
}

// -----

// A module that allocates nothing is unchanged.
// CHECK-LABEL: llvm.func @no_heap
// CHECK-NEXT: llvm.return
llvm.func @no_heap() {
  llvm.return
}

// -----

// Already declared (a second run): the uses move over, one declaration
// stays.
// CHECK-LABEL: module
// CHECK-COUNT-1: llvm.func @txl_rt_malloc(i64) -> !llvm.ptr
// CHECK-LABEL: llvm.func @twice
// CHECK: llvm.call @txl_rt_malloc
// CHECK: llvm.call @txl_rt_malloc
module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @txl_rt_malloc(i64) -> !llvm.ptr
  llvm.func @twice(%n: i64) {
    %a = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    %b = llvm.call @txl_rt_malloc(%n) : (i64) -> !llvm.ptr
    llvm.return
  }
}

// -----

// expected-error @below {{'txl_rt_malloc' has type '!llvm.func<ptr (i32)>', but 'malloc' has '!llvm.func<ptr (i64)>'}}
llvm.func @txl_rt_malloc(i32) -> !llvm.ptr
llvm.func @malloc(i64) -> !llvm.ptr

// -----

// expected-error @below {{'malloc' is defined in the module; expected the C library's declaration}}
llvm.func @malloc(%n: i64) -> !llvm.ptr {
  %p = llvm.mlir.zero : !llvm.ptr
  llvm.return %p : !llvm.ptr
}
