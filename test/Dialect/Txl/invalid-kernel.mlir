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
  // expected-error @+1 {{b must be 'memref<4x4x8x8xbf16, 3>' (n_blocks x 2 k_steps core matrices of 8 x 8), got 'memref<4x2x8x8xbf16, 3>'}}
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
