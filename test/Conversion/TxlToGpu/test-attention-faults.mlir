// The negative-control test passes of test/lib (txl-opt only), on the
// attention kernels txl-rel-attention-to-gpu and txl-rel-attention-to-cpu
// build: each acts on the ops the builders mark, and fails on a module
// that holds none (a test cannot pass on a kernel it did not break).
//
// The builders mark what the passes break: every droppable barrier by its
// role, the r row of BD, the key part's tiles and offset.
// RUN: txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   | FileCheck %s --check-prefix=MARKS
// MARKS: arith.ceildivsi {{.*}} {txl.key_part = "tiles"} : index
// MARKS: arith.muli %block_id_z, {{.*}} {txl.key_part = "offset"} : index
// MARKS: gpu.barrier {txl.sync = "kv-staged"}
// MARKS: arith.subi {{.*}} {txl.rel_shift_row} : index
// MARKS: txl.subgroup_barrier {txl.sync = "stores-done"}
//
// txl-test-drop-barrier erases the barriers of one role, and only those:
// the tensor-core kernel's one workgroup barrier a key tile (its whole
// tiles' and its tail tile's) goes, its subgroup barriers stay.
// RUN: txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   --txl-test-drop-barrier=sync=kv-staged | FileCheck %s --check-prefix=DROP \
// RUN:   --implicit-check-not=gpu.barrier
// DROP-COUNT-2: txl.subgroup_barrier {txl.sync = "stores-done"}
//
// txl-test-rel-shift-offset adds its offset to the marked row, which every
// other use then reads.
// RUN: txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu \
// RUN:   --txl-test-rel-shift-offset=offset=-3 | FileCheck %s --check-prefix=SHIFT
// SHIFT: %[[ROW:.+]] = arith.subi {{.*}} {txl.rel_shift_row} : index
// SHIFT-NEXT: %[[OFF:.+]] = arith.constant -3 : index
// SHIFT-NEXT: %[[SHIFTED:.+]] = arith.addi %[[ROW]], %[[OFF]] : index
// SHIFT-NOT: %[[ROW]]
// SHIFT: arith.addi %[[SHIFTED]],
//
// The CPU kernel's row too (txl-rel-attention-to-cpu, on the first case of
// its test).
// RUN: awk '/^\/\/ -----/ {exit} {print}' %S/../TxlToCpu/txl-rel-attention-to-cpu.mlir \
// RUN:   | txl-opt --txl-rel-attention-to-cpu --txl-test-rel-shift-offset=offset=1 \
// RUN:   | FileCheck %s --check-prefix=CPU
// CPU: %[[ROW:.+]] = arith.subi {{.*}} {txl.rel_shift_row} : index
// CPU-NEXT: %[[OFF:.+]] = arith.constant 1 : index
// CPU-NEXT: arith.addi %[[ROW]], %[[OFF]] : index
//
// txl-test-whole-key-range: every part takes all the tiles from the first
// key (the marked ops replaced, the marks gone).
// RUN: txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu \
// RUN:   --txl-test-whole-key-range | FileCheck %s --check-prefix=WHOLE --implicit-check-not=txl.key_part
// WHOLE: %[[TILES:.+]] = arith.ceildivsi %{{.+}}, %c32 : index
// WHOLE-NEXT: %[[KEYS:.+]] = arith.muli %[[TILES]], %c32 : index
// WHOLE-NEXT: %[[FIRST:.+]] = arith.constant 0 : index
// WHOLE-NEXT: arith.addi %{{.+}}, %[[FIRST]] : index
//
// txl-test-wait-at-issue: the tensor-core forward's AC product waited for
// where it is issued (its wait right after it, pending 0).
// RUN: txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   --txl-test-wait-at-issue | FileCheck %s --check-prefix=ATISSUE
// ATISSUE: %[[AC:.+]] = txl.warpgroup_mma async
// ATISSUE-NEXT: txl.warpgroup_mma_wait %[[AC]] {pending = 0 : i64}
//
// txl-test-rescale: the tensor-core forward's branch that rescales O (on
// the marked i1, a row's maximum moved) taken never or always; the
// evaluation form at d_head 32 has it (the lse form does not).
// RUN: txl-opt %S/txl-rel-attention-to-gpu-bf16.mlir --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   | FileCheck %s --check-prefix=RESCALE
// RESCALE: %[[GROWS:.+]] = arith.ori %{{.+}}, %{{.+}} {txl.rescale} : i1
// RESCALE-NEXT: scf.if %[[GROWS]] -> (f32, f32,
// RUN: txl-opt %S/txl-rel-attention-to-gpu-bf16.mlir --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   --txl-test-rescale=rescale=false | FileCheck %s --check-prefix=NEVER --implicit-check-not=txl.rescale
// NEVER: %[[NO:.+]] = arith.constant false
// NEVER-NEXT: scf.if %[[NO]] -> (f32, f32,
// RUN: txl-opt %S/txl-rel-attention-to-gpu-bf16.mlir --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   --txl-test-rescale=rescale=true | FileCheck %s --check-prefix=ALWAYS --implicit-check-not=txl.rescale
// ALWAYS: %[[YES:.+]] = arith.constant true
// ALWAYS-NEXT: scf.if %[[YES]] -> (f32, f32,
//
// Negative cases: no barrier of that role, offset 0, no marked op (no
// rescale branch in the f32 kernel, nor in the tensor-core lse form), no
// asynchronous product (the f32 kernel).
// RUN: not txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu \
// RUN:   --txl-test-wait-at-issue 2>&1 | FileCheck %s --check-prefix=NOWAIT
// NOWAIT: error: txl-test-wait-at-issue: no txl.warpgroup_mma_wait
// RUN: not txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu \
// RUN:   --txl-test-drop-barrier=sync=kv-staged 2>&1 | FileCheck %s --check-prefix=NOSYNC
// NOSYNC: error: txl-test-drop-barrier: no gpu.barrier marked txl.sync = "kv-staged"
// RUN: not txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu \
// RUN:   --txl-test-rel-shift-offset=offset=0 2>&1 | FileCheck %s --check-prefix=NOOFFSET
// NOOFFSET: error: txl-test-rel-shift-offset: offset must not be 0
// RUN: not txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir \
// RUN:   --txl-test-rel-shift-offset=offset=1 2>&1 | FileCheck %s --check-prefix=NOROW
// NOROW: error: txl-test-rel-shift-offset: no value marked txl.rel_shift_row
// RUN: not txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir \
// RUN:   --txl-test-whole-key-range 2>&1 | FileCheck %s --check-prefix=NOPART
// NOPART: error: txl-test-whole-key-range: no value marked txl.key_part
// RUN: not txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu \
// RUN:   --txl-test-rescale 2>&1 | FileCheck %s --check-prefix=NORESCALE
// RUN: not txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   --txl-test-rescale 2>&1 | FileCheck %s --check-prefix=NORESCALE
// NORESCALE: error: txl-test-rescale: no value marked txl.rescale
// RUN: not txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir --txl-rel-attention-to-gpu \
// RUN:   --txl-test-interior-tile 2>&1 | FileCheck %s --check-prefix=NOINTERIOR
// NOINTERIOR: error: txl-test-interior-tile: no value marked txl.interior_tile
// RUN: not txl-opt %S/txl-rel-attention-to-gpu-mma-lse.mlir \
// RUN:   --txl-test-drop-barrier=sync=reads-done 2>&1 | FileCheck %s --check-prefix=NOBARRIER
// NOBARRIER: error: txl-test-drop-barrier: no gpu.barrier marked txl.sync = "reads-done"
