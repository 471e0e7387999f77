// A packed entry (`void @txl_*(ptr %args)`, txl-emit-packed-entry) loads
// each argument where it is first used, not all at its start: the CPU
// target's LLVM pipeline moves the loads of the argument array and of the
// descriptors it points at (ObjectEmitter.cpp, sinkPackedArgumentLoads).
// At 200 layers the wrappers' 11,455 loads at the start of
// @txl_segment_grad lived through every layer's call (issue #48).
// RUN: txl-translate --host-llvm-ir %s | FileCheck %s
// CHECK-LABEL: define void @txl_entry(ptr
// CHECK: call void @layer(ptr %[[W0:.+]])
// CHECK-NEXT: getelementptr
// CHECK-NEXT: %[[D1:.+]] = load ptr
// CHECK-NEXT: getelementptr
// CHECK-NEXT: %[[W1:.+]] = load ptr, ptr
// CHECK-NEXT: call void @layer(ptr %[[W1]])
//
// Negative: an entry that stores into its argument array keeps its loads
// where they are (the second layer's load before the first call).
// CHECK-LABEL: define void @txl_writes_args(ptr
// CHECK: load ptr
// CHECK: load ptr
// CHECK: store
// CHECK: call void @layer
//
// Negative: a load whose only use is in a loop does not move into the
// loop (it would run on every iteration); it moves to the block before.
// CHECK-LABEL: define void @txl_loop(ptr
// CHECK: call void @other()
// CHECK: load ptr, ptr %0
// CHECK: %[[W:.+]] = load ptr, ptr
// CHECK: br label %[[LOOP:.+]]
// CHECK: [[LOOP]]:
// CHECK-NOT: load
// CHECK: call void @layer(ptr %[[W]])
// CHECK: ret void
//
// Negative control: without the step, the second layer's weight is loaded
// before the first layer's call.
// RUN: txl-translate --host-llvm-ir --txl-sink-entry-loads=false %s \
// RUN:   | FileCheck %s --check-prefix=OFF
// OFF-LABEL: define void @txl_entry(ptr
// OFF-COUNT-4: load ptr
// OFF: call void @layer
// OFF-NEXT: call void @layer

llvm.func @layer(!llvm.ptr)

llvm.func @txl_entry(%args: !llvm.ptr) {
  // args[0], args[1]: descriptors {allocated, aligned, ...} of two layers'
  // weights; the layers read the aligned pointer.
  %a0 = llvm.load %args : !llvm.ptr -> !llvm.ptr
  %p1 = llvm.getelementptr %args[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %a1 = llvm.load %p1 : !llvm.ptr -> !llvm.ptr
  %f0 = llvm.getelementptr %a0[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %w0 = llvm.load %f0 : !llvm.ptr -> !llvm.ptr
  %f1 = llvm.getelementptr %a1[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %w1 = llvm.load %f1 : !llvm.ptr -> !llvm.ptr
  llvm.call @layer(%w0) : (!llvm.ptr) -> ()
  llvm.call @layer(%w1) : (!llvm.ptr) -> ()
  llvm.return
}

llvm.func @txl_writes_args(%args: !llvm.ptr) {
  %a0 = llvm.load %args : !llvm.ptr -> !llvm.ptr
  %p1 = llvm.getelementptr %args[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %a1 = llvm.load %p1 : !llvm.ptr -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  llvm.store %null, %p1 : !llvm.ptr, !llvm.ptr
  llvm.call @layer(%a0) : (!llvm.ptr) -> ()
  llvm.call @layer(%a1) : (!llvm.ptr) -> ()
  llvm.return
}

llvm.func @other()

llvm.func @txl_loop(%args: !llvm.ptr) {
  %d = llvm.load %args : !llvm.ptr -> !llvm.ptr
  %f = llvm.getelementptr %d[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %w = llvm.load %f : !llvm.ptr -> !llvm.ptr
  %np = llvm.getelementptr %args[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
  %n = llvm.load %np : !llvm.ptr -> i64
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  llvm.call @other() : () -> ()
  llvm.br ^loop(%c0 : i64)
^loop(%i: i64):
  llvm.call @layer(%w) : (!llvm.ptr) -> ()
  %next = llvm.add %i, %c1 : i64
  %done = llvm.icmp "eq" %next, %n : i64
  llvm.cond_br %done, ^exit, ^loop(%next : i64)
^exit:
  llvm.return
}
