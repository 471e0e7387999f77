// RUN: txl-opt %s --split-input-file --verify-diagnostics

// The discardable attributes of the txl dialect (TxlDialect.cpp): one case
// per verifier message, then the valid forms.

// A parameter's name is its state_dict key: a non-empty string.
// expected-error @+1 {{'txl.param' of argument 0 must be a non-empty string (the parameter's state_dict name)}}
func.func @param_not_a_string(%w: tensor<4xf32> {txl.param = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'txl.grad' of argument 1 must be a non-empty string (the parameter's state_dict name)}}
func.func @grad_empty(%w: tensor<4xf32>, %g: tensor<4xf32> {txl.grad = ""}) {
  return
}

// -----

// expected-error @+1 {{'txl.exp_avg_sq' of argument 0 must be a non-empty string (the parameter's state_dict name)}}
func.func @state_not_a_string(%s: tensor<4xf32> {txl.exp_avg_sq}) {
  return
}

// -----

// expected-error @+1 {{'txl.chunk_grad' of argument 0 must be a non-empty string (the parameter's state_dict name)}}
func.func @chunk_grad_not_a_string(%g: tensor<4xf32> {txl.chunk_grad}) {
  return
}

// -----

// A buffer (e.g. the adaptive softmax's cluster columns) is a unit flag on
// a named parameter.
// expected-error @+1 {{'txl.buffer' of argument 0 must be a unit attribute}}
func.func @buffer_not_unit(%w: tensor<4xf32> {txl.param = "crit.buf", txl.buffer = true}) {
  return
}

// -----

// expected-error @+1 {{'txl.buffer' of argument 0 needs 'txl.param' on the same argument}}
func.func @buffer_without_param(%w: tensor<4xf32> {txl.buffer}) {
  return
}

// -----

// The backward's loss scale (txl-generate-backward{loss-scale}) is a unit
// flag on an f32 scalar.
// expected-error @+1 {{'txl.loss_scale' of argument 0 must be a unit attribute}}
func.func @loss_scale_not_unit(%s: f32 {txl.loss_scale = 2.0 : f32}) {
  return
}

// -----

// expected-error @+1 {{'txl.loss_scale' of argument 0 must be on an f32 argument}}
func.func @loss_scale_not_f32(%s: f64 {txl.loss_scale}) {
  return
}

// -----

// expected-error @+1 {{unknown txl argument attribute 'txl.params'}}
func.func @unknown_arg_attr(%w: tensor<4xf32> {txl.params = "w"}) {
  return
}

// -----

// expected-error @+1 {{unknown txl attribute 'txl.destinations'}}
func.func @unknown_op_attr() attributes {txl.destinations = array<i64: 0>} {
  return
}

// -----

// The destinations are function attributes.
func.func @destinations_not_on_function() {
  // expected-error @+1 {{'txl.result_destinations' is an attribute of functions}}
  %c = arith.constant {txl.result_destinations = array<i64: 0>} 0 : index
  return
}

// -----

// expected-error @+1 {{'txl.result_destinations' must be an array<i64> of argument indices}}
func.func @destinations_not_an_array(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {txl.result_destinations = [0]} {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{'txl.result_destinations' index 2 is not a valid argument index (the function has 2)}}
func.func @destination_out_of_range(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32>
    attributes {txl.result_destinations = array<i64: 2>} {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{'txl.result_destinations' names argument 1 twice}}
func.func @destination_twice(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {txl.result_destinations = array<i64: 1, 1>} {
  return %a, %a : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'txl.result_destinations' must name one argument per result (2), got 1}}
func.func @destinations_count(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {txl.result_destinations = array<i64: 1>} {
  return %a, %a : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'txl.built_in_destination' index 1 is not a valid result index (the function has 1)}}
func.func @built_in_out_of_range(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {txl.built_in_destination = array<i64: 1>} {
  return %a : tensor<4xf32>
}

// -----

// Parameter names are argument attributes, never attributes of an op.
func.func @param_on_an_op(%n: index) {
  // expected-error @+1 {{unknown txl attribute 'txl.param'}}
  %c = arith.constant {txl.param = "w"} 0 : index
  return
}

// -----

// txl-dynamic-shared-memory's record is for kernels only.
// expected-error @+1 {{'txl.dynamic_shared_memory' is an attribute of kernel gpu.func ops (or their llvm.func)}}
func.func @dynamic_shared_not_kernel() attributes {txl.dynamic_shared_memory = 65536 : i32} {
  return
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'txl.dynamic_shared_memory' is an attribute of kernel gpu.func ops (or their llvm.func)}}
  gpu.func @device_function() attributes {txl.dynamic_shared_memory = 65536 : i32} {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'txl.dynamic_shared_memory' must be a positive i32 (bytes)}}
  gpu.func @k() kernel attributes {txl.dynamic_shared_memory = 65536 : i64} {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'txl.dynamic_shared_memory' must be a positive i32 (bytes)}}
  gpu.func @k() kernel attributes {txl.dynamic_shared_memory = 0 : i32} {
    gpu.return
  }
}

// -----

// A function of the runtime ABI names its packed entry point
// (txl-emit-packed-entry): a C identifier in the runtime's txl_ namespace.
// expected-error @+1 {{'txl.entry' must be a string naming the packed entry point, a C identifier starting with 'txl_', got 1 : i64}}
func.func @entry_not_a_string() attributes {txl.entry = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'txl.entry' must be a string naming the packed entry point, a C identifier starting with 'txl_', got "segment_forward"}}
func.func @entry_outside_txl() attributes {txl.entry = "segment_forward"} {
  return
}

// -----

// expected-error @+1 {{'txl.entry' must be a string naming the packed entry point, a C identifier starting with 'txl_', got "txl_segment-forward"}}
func.func @entry_not_an_identifier() attributes {txl.entry = "txl_segment-forward"} {
  return
}

// -----

// expected-error @+1 {{'txl.entry' needs a function with a body}}
func.func private @entry_declaration() attributes {txl.entry = "txl_segment_forward"}

// -----

func.func @entry_on_an_op() {
  // expected-error @+1 {{'txl.entry' is an attribute of functions}}
  %c = arith.constant {txl.entry = "txl_segment_forward"} 0 : index
  return
}

// -----

// The marks of the attention kernels' ops that the negative-control test
// passes break (test/lib): a barrier's role, the rel-shift row, a key part.
func.func @sync_not_a_barrier() {
  // expected-error @+1 {{'txl.sync' is an attribute of gpu.barrier and txl.subgroup_barrier ops}}
  %c = arith.constant {txl.sync = "reads-done"} 0 : index
  return
}

// -----

gpu.module @kernels {
  gpu.func @k() kernel {
    // expected-error @+1 {{'txl.sync' must be one of "reads-done", "stores-done", "ds-stored", "kv-staged", got "all"}}
    gpu.barrier {txl.sync = "all"}
    gpu.return
  }
}

// -----

func.func @rel_shift_row_on_a_float() {
  // expected-error @+1 {{'txl.rel_shift_row' is an attribute of ops with one integer or index result}}
  %c = arith.constant {txl.rel_shift_row} 0.0 : f32
  return
}

// -----

func.func @rel_shift_row_not_unit() {
  // expected-error @+1 {{'txl.rel_shift_row' must be a unit attribute}}
  %c = arith.constant {txl.rel_shift_row = 1 : i64} 0 : index
  return
}

// -----

func.func @interior_tile_on_a_float(%x: f32) {
  // expected-error @+1 {{'txl.interior_tile' is an attribute of ops with one integer or index result}}
  %c = arith.addf %x, %x {txl.interior_tile} : f32
  return
}

// -----

func.func @interior_tile_not_unit(%x: i32) {
  // expected-error @+1 {{'txl.interior_tile' must be a unit attribute}}
  %c = arith.cmpi ult, %x, %x {txl.interior_tile = true} : i32
  return
}

// -----

func.func @rescale_on_a_float(%x: f32) {
  // expected-error @+1 {{'txl.rescale' is an attribute of ops with one integer or index result}}
  %c = arith.addf %x, %x {txl.rescale} : f32
  return
}

// -----

func.func @rescale_not_unit(%x: i1) {
  // expected-error @+1 {{'txl.rescale' must be a unit attribute}}
  %c = arith.ori %x, %x {txl.rescale = 1 : i64} : i1
  return
}

// -----

func.func @key_part_without_a_result() {
  // expected-error @+1 {{'txl.key_part' is an attribute of ops with one integer or index result}}
  return {txl.key_part = "tiles"}
}

// -----

func.func @key_part_unknown(%x: index) {
  // expected-error @+1 {{'txl.key_part' must be "tiles" or "offset", got "first"}}
  %c = arith.addi %x, %x {txl.key_part = "first"} : index
  return
}

// -----

// txlc's record of the stage a module was written at (--emit, read back by
// --input-ir).
func.func @emitted_on_a_function() attributes {txl.emitted = {stage = "linalg", target = "cpu", precision = "f32"}} {
  // expected-error @-1 {{'txl.emitted' is an attribute of modules}}
  return
}

// -----

// expected-error @+1 {{'txl.emitted' must be a dictionary of 'stage', 'target' and 'precision'}}
module attributes {txl.emitted = {stage = "linalg", target = "cpu"}} {
}

// -----

// expected-error @+1 {{'txl.emitted' must be a dictionary of 'stage', 'target' and 'precision'}}
module attributes {txl.emitted = {stage = "linalg", target = "cpu", precision = 32 : i64}} {
}

// -----

// expected-error @+1 {{'txl.emitted' has an unknown stage "llvm"}}
module attributes {txl.emitted = {stage = "llvm", target = "cpu", precision = "f32"}} {
}

// -----

// expected-error @+1 {{'txl.emitted' has an unknown target "rocm"}}
module attributes {txl.emitted = {stage = "txl", target = "rocm", precision = "f32"}} {
}

// -----

// expected-error @+1 {{'txl.emitted' has an unknown precision "f16"}}
module attributes {txl.emitted = {stage = "txl", target = "cuda", precision = "f16"}} {
}

// -----

// The valid forms verify.
module attributes {txl.emitted = {stage = "txl-grad", target = "opencl", precision = "fp16"}} {
gpu.module @kernels {
  gpu.func @k(%x: index) kernel {
    gpu.barrier {txl.sync = "reads-done"}
    gpu.barrier {txl.sync = "stores-done"}
    gpu.barrier {txl.sync = "ds-stored"}
    gpu.barrier {txl.sync = "kv-staged"}
    %row = arith.subi %x, %x {txl.rel_shift_row} : index
    %tiles = arith.ceildivsi %x, %x {txl.key_part = "tiles"} : index
    %offset = arith.muli %x, %x {txl.key_part = "offset"} : index
    %i = arith.index_cast %x : index to i32
    %interior = arith.cmpi ult, %i, %i {txl.interior_tile} : i32
    gpu.return
  }
}
}

// -----

// The valid forms verify (functions).
llvm.func @valid_entry() attributes {txl.entry = "txl_segment_kv"} {
  llvm.return
}
func.func @valid(%w: tensor<4xf32> {txl.param = "word_emb.emb_layers.0.weight"},
                 %buf: tensor<4xf32> {txl.param = "crit.cluster_weight", txl.buffer},
                 %g: tensor<4xf32> {txl.grad = "word_emb.emb_layers.0.weight"},
                 %m: tensor<4xf32> {txl.exp_avg = "word_emb.emb_layers.0.weight"},
                 %v: tensor<4xf32> {txl.exp_avg_sq = "word_emb.emb_layers.0.weight"},
                 %mb: tensor<4xf32> {txl.momentum_buffer = "w"},
                 %s: tensor<4xf32> {txl.sum = "w"},
                 %out: tensor<4xf32>) -> tensor<4xf32>
    attributes {txl.result_destinations = array<i64: 7>, txl.built_in_destination = array<i64: 0>,
                txl.entry = "txl_segment_forward"} {
  return %w : tensor<4xf32>
}
