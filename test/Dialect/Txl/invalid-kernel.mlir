// RUN: txl-opt %s --split-input-file --verify-diagnostics

// Each verifier message of txl.warpgroup_mma.

func.func @a_shape(%a: vector<2x2x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x2x2xf32>) {
  // expected-error @+1 {{a must be vector<k_steps x 4 x 2 x T> (the m16n8k16 A fragment of each 16-deep step), got 'vector<2x2x2xbf16>'}}
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x2x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  return
}

// -----

func.func @acc_shape(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x4x2xf32>) {
  // expected-error @+1 {{acc must be vector<n_blocks x 2 x 2 x f32> with 1 <= n_blocks <= 32 (wgmma's N = 8 n_blocks <= 256), got 'vector<4x4x2xf32>'}}
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x4x2xf32>
  return
}

// -----

func.func @too_wide(%a: vector<2x4x2xbf16>, %b: memref<33x4x8x8xbf16, 3>, %c: vector<33x2x2xf32>) {
  // expected-error @+1 {{acc must be vector<n_blocks x 2 x 2 x f32> with 1 <= n_blocks <= 32}}
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x4x2xbf16>, memref<33x4x8x8xbf16, 3>, vector<33x2x2xf32>
  return
}

// -----

func.func @element(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xf16, 3>, %c: vector<4x2x2xf32>) {
  // expected-error @+1 {{b's element type must be a's, got 'f16' and 'bf16'}}
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xf16, 3>, vector<4x2x2xf32>
  return
}

// -----

func.func @tile_shape(%a: vector<2x4x2xbf16>, %b: memref<4x2x8x8xbf16, 3>, %c: vector<4x2x2xf32>) {
  // expected-error @+1 {{b must be at least n_blocks (4) x k_blocks x 8 x 8 with k_blocks even and at least 2 k_steps (4) (core matrices of 8 x 8), got 'memref<4x2x8x8xbf16, 3>'}}
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x4x2xbf16>, memref<4x2x8x8xbf16, 3>, vector<4x2x2xf32>
  return
}

// -----

func.func @layout(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, affine_map<(i, j, k, l) -> (j, i, k, l)>, 3>, %c: vector<4x2x2xf32>) {
  // expected-error @+1 {{b must have the identity layout (its matrix descriptors assume packed core matrices)}}
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, affine_map<(i, j, k, l) -> (j, i, k, l)>, 3>, vector<4x2x2xf32>
  return
}

// -----

func.func @space(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16>, %c: vector<4x2x2xf32>) {
  // expected-error @+1 {{b must be in workgroup memory (address space 3)}}
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16>, vector<4x2x2xf32>
  return
}

// -----

func.func @f32_operands(%a: vector<2x4x2xf32>, %b: memref<4x4x8x8xf32, 3>, %c: vector<4x2x2xf32>) {
  // expected-error @+1 {{operand #0 must be vector of bfloat16 type or 16-bit float values of ranks 3}}
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x4x2xf32>, memref<4x4x8x8xf32, 3>, vector<4x2x2xf32>
  return
}

// -----

// An async product's result is in flight until its one wait.
func.func @async_unwaited(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x2x2xf32>) -> vector<4x2x2xf32> {
  // expected-error @+1 {{async: its result must have one use, a txl.warpgroup_mma_wait (the product is in flight until then)}}
  %d = txl.warpgroup_mma async %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  return %d : vector<4x2x2xf32>
}

// -----

func.func @async_never_used(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x2x2xf32>) {
  // expected-error @+1 {{async: its result must have one use}}
  %d = txl.warpgroup_mma async %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  return
}

// -----

// Each verifier message of txl.warpgroup_mma_wait.

func.func @wait_sync(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x2x2xf32>) -> vector<4x2x2xf32> {
  %d = txl.warpgroup_mma %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  // expected-error @+1 {{must wait for the result of an async txl.warpgroup_mma}}
  %r = txl.warpgroup_mma_wait %d {pending = 0} : vector<4x2x2xf32>
  return %r : vector<4x2x2xf32>
}

// -----

func.func @wait_argument(%c: vector<4x2x2xf32>) -> vector<4x2x2xf32> {
  // expected-error @+1 {{must wait for the result of an async txl.warpgroup_mma}}
  %r = txl.warpgroup_mma_wait %c {pending = 0} : vector<4x2x2xf32>
  return %r : vector<4x2x2xf32>
}

// -----

func.func @wait_other_block(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x2x2xf32>, %p: i1) {
  %d = txl.warpgroup_mma async %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  scf.if %p {
    // expected-error @+1 {{must be in the block of the product it waits for}}
    %r = txl.warpgroup_mma_wait %d {pending = 0} : vector<4x2x2xf32>
  }
  return
}

// -----

// Products complete in order: waiting for the newer one while the older
// stays in flight is not a wait the hardware has.
func.func @wait_pending(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x2x2xf32>) -> (vector<4x2x2xf32>, vector<4x2x2xf32>) {
  %d = txl.warpgroup_mma async %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  %e = txl.warpgroup_mma async %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  // expected-error @+1 {{leaves 1 products in flight, but only 0 were issued after the one it waits for (products complete in order)}}
  %s = txl.warpgroup_mma_wait %e {pending = 1} : vector<4x2x2xf32>
  %r = txl.warpgroup_mma_wait %d {pending = 0} : vector<4x2x2xf32>
  return %r, %s : vector<4x2x2xf32>, vector<4x2x2xf32>
}

// -----

func.func @wait_negative(%a: vector<2x4x2xbf16>, %b: memref<4x4x8x8xbf16, 3>, %c: vector<4x2x2xf32>) -> vector<4x2x2xf32> {
  %d = txl.warpgroup_mma async %a, %b, %c : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
  // expected-error @+1 {{attribute 'pending' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %r = txl.warpgroup_mma_wait %d {pending = -1} : vector<4x2x2xf32>
  return %r : vector<4x2x2xf32>
}
