// The CPU target's LLVM pipeline (txlc -O 3; txl-translate --host-llvm-ir
// runs it) is LLVM's default -O3 pipeline without CalledValuePropagation,
// which only annotates indirect calls with their possible callees and took
// most of a deep model's compile (ObjectEmitter.cpp, kSkippedHostPasses): an
// indirect call through a select of two functions keeps no !callees.
// RUN: txl-translate --host-llvm-ir %s | FileCheck %s --implicit-check-not='!callees'
// CHECK-LABEL: define void @pick(
// CHECK: call void %{{.+}}(ptr %{{.+}})
// CHECK: ret void
//
// Negative control: LLVM's own -O3 pipeline annotates that call.
// RUN: mlir-translate --mlir-to-llvmir %s | opt -O3 -S | FileCheck %s --check-prefix=DEFAULT
// DEFAULT: call void %{{.+}}(ptr %{{.+}}), !callees

llvm.func @f(!llvm.ptr)
llvm.func @g(!llvm.ptr)

llvm.func @pick(%c: i1, %p: !llvm.ptr) {
  %f = llvm.mlir.addressof @f : !llvm.ptr
  %g = llvm.mlir.addressof @g : !llvm.ptr
  %fp = llvm.select %c, %f, %g : i1, !llvm.ptr
  llvm.call %fp(%p) : !llvm.ptr, (!llvm.ptr) -> ()
  llvm.return
}
