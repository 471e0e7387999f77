// A packed entry is cut into functions of about --txl-entry-part-size
// instructions, called in order (cutIntoParts, lib/Target/EntryParts.cpp):
// code generation of a deep model's entries, long lines of layer calls,
// grew with the square of the layers (issue #48). A value crossing into a
// later part is stored once into the entry's tape and loaded at the start
// of each part that uses it; no cut is inside a loop, an assertion's
// failure block stays with its branch, and the part holding the `ret` is
// the entry itself.
// RUN: txl-translate --host-llvm-ir --txl-entry-part-size=2 %s | FileCheck %s
// CHECK-LABEL: define void @txl_checked(ptr
// CHECK-NEXT: %[[TAPE:.+]] = alloca [{{[0-9]+}} x i8], align 16
// CHECK: call void @txl_checked.part0(ptr %0, ptr %[[TAPE]])
// CHECK: call void @txl_checked.part1(
// CHECK: call void @txl_checked.part9(
// CHECK-NOT: call
// CHECK: ret void
//
// Negative: an alloca of a size known only at run time (an entry the
// parts could not share a frame with) leaves the entry whole.
// CHECK-LABEL: define void @txl_dynamic(ptr
// CHECK-NOT: part
// CHECK: ret void
//
// The first layer's result, used by the last part, is stored where it is
// made and loaded where it is used.
// CHECK-LABEL: define internal void @txl_checked.part3(ptr
// CHECK: %[[X1:.+]] = tail call ptr @layer(
// CHECK-NEXT: %[[AT:.+]] = getelementptr inbounds i8, ptr %{{.+}}, i64 [[$SLOT:[0-9]+]]
// CHECK-NEXT: store ptr %[[X1]], ptr %[[AT]]
// The assertion's branch and its failure block are in one part.
// CHECK-LABEL: define internal void @txl_checked.part5(ptr
// CHECK: br i1 %{{.+}}, label %[[FAIL:.+]], label
// CHECK: [[FAIL]]:
// CHECK-NEXT: tail call void @fail()
// CHECK-NEXT: unreachable
// The loop is whole in one part.
// CHECK-LABEL: define internal void @txl_checked.part7(ptr
// CHECK: {{^}}[[LOOP:[0-9]+]]:
// CHECK-NEXT: phi i64
// CHECK: br i1 %{{.+}}, label %{{.+}}, label %[[LOOP]]
// CHECK-LABEL: define internal void @txl_checked.part9(ptr
// CHECK-NEXT: newFuncRoot:
// CHECK-NEXT: br label
// CHECK: getelementptr inbounds i8, ptr %{{.+}}, i64 [[$SLOT]]
// CHECK-NEXT: %[[R:.+]] = load ptr
// CHECK: tail call ptr @layer(ptr %[[R]],
// CHECK: attributes #0 = { noinline }
//
// Negative control: with the size 0, no entry is cut.
// RUN: txl-translate --host-llvm-ir --txl-entry-part-size=0 %s \
// RUN:   | FileCheck %s --check-prefix=WHOLE --implicit-check-not=part
// WHOLE: define void @txl_checked(ptr
// WHOLE: define void @txl_dynamic(ptr

llvm.func @layer(!llvm.ptr, i64) -> !llvm.ptr
llvm.func @fail()

llvm.func @txl_checked(%args: !llvm.ptr) {
  %x0 = llvm.load %args : !llvm.ptr -> !llvm.ptr
  %np = llvm.getelementptr %args[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %n = llvm.load %np : !llvm.ptr -> i64
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %x1 = llvm.call @layer(%x0, %n) : (!llvm.ptr, i64) -> !llvm.ptr
  %bad = llvm.icmp "eq" %n, %c0 : i64
  llvm.cond_br %bad, ^fail, ^ok
^fail:
  llvm.call @fail() : () -> ()
  llvm.unreachable
^ok:
  %x2 = llvm.call @layer(%x1, %n) : (!llvm.ptr, i64) -> !llvm.ptr
  llvm.br ^loop(%c0, %x2 : i64, !llvm.ptr)
^loop(%i: i64, %x: !llvm.ptr):
  %y = llvm.call @layer(%x, %i) : (!llvm.ptr, i64) -> !llvm.ptr
  %z = llvm.call @layer(%y, %i) : (!llvm.ptr, i64) -> !llvm.ptr
  %next = llvm.add %i, %c1 : i64
  %done = llvm.icmp "eq" %next, %n : i64
  llvm.cond_br %done, ^exit, ^loop(%next, %z : i64, !llvm.ptr)
^exit:
  %g = llvm.call @layer(%z, %n) : (!llvm.ptr, i64) -> !llvm.ptr
  %g1 = llvm.call @layer(%x1, %n) : (!llvm.ptr, i64) -> !llvm.ptr
  llvm.return
}

llvm.func @txl_dynamic(%args: !llvm.ptr) {
  %x0 = llvm.load %args : !llvm.ptr -> !llvm.ptr
  %np = llvm.getelementptr %args[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %n = llvm.load %np : !llvm.ptr -> i64
  %x1 = llvm.call @layer(%x0, %n) : (!llvm.ptr, i64) -> !llvm.ptr
  %buf = llvm.alloca %n x i64 : (i64) -> !llvm.ptr
  %x2 = llvm.call @layer(%buf, %n) : (!llvm.ptr, i64) -> !llvm.ptr
  %x3 = llvm.call @layer(%x2, %n) : (!llvm.ptr, i64) -> !llvm.ptr
  %x4 = llvm.call @layer(%x3, %n) : (!llvm.ptr, i64) -> !llvm.ptr
  %x5 = llvm.call @layer(%x1, %n) : (!llvm.ptr, i64) -> !llvm.ptr
  llvm.return
}
