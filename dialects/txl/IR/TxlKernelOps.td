//===- TxlKernelOps.td - txl ops inside GPU kernels ---------*- tablegen -*-===//
//
// Ops that txl's GPU kernels (lib/Conversion/TxlToGpu) are written with
// where neither the gpu nor the nvgpu dialect has a form that both GPU
// targets can lower: each has one lowering per target (MmaToNvvm.cpp, EmulateMma.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_KERNEL_OPS
#define TXL_KERNEL_OPS

def Txl_WarpgroupMmaOp : Txl_Op<"warpgroup_mma",
    [AllTypesMatch<["acc", "result"]>]> {
  let summary = "a warpgroup's matrix product, B staged in workgroup memory";
  let description = [{
    `D = A B + C` for the M = 64 rows of a warpgroup (the 4 subgroups of 32
    of a 128-work-item workgroup), N = 8 `n_blocks` columns and K = 16
    `k_steps`, bf16 or f16 operands and f32 sums: PTX's
    `wgmma.mma_async.sync.aligned.m64nNk16` with A in registers (PTX ISA
    §9.7.15, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate").

    Each subgroup w holds rows 16 w .. 16 w + 15 of A and of the result in
    the registers of `mma.sync.m16n8k16` (see `nvgpu.mma.sync`), lane = 4 g
    + t:
    - `a`, vector<k_steps x 4 x 2 x T>: `a[s][r][e]` is A(g + 8 (r & 1),
      16 s + 2 t + e + 8 (r >> 1));
    - `acc` and `result`, vector<n_blocks x 2 x 2 x f32>: `[nb][r][e]` is
      D(g + 8 r, 8 nb + 2 t + e).
    `b`, memref<nb x k_blocks x 8 x 8 x T, 3> in workgroup memory,
    holds B(k, n) at `b[n / 8][k / 8][n % 8][k % 8]`: K-major 8 × 8 core
    matrices of 16-byte rows, the canonical no-swizzle layout of a wgmma
    operand, so that each k-step's matrix descriptor is the tile's address
    plus 256 bytes per step, with 128 bytes between core matrices along K
    (the leading-dimension byte offset) and k_blocks × 128 bytes along N
    (the stride-dimension byte offset). nb is at least n_blocks, k_blocks
    even and at least 2 k_steps: the product reads N = [0, 8 n_blocks) and
    K = [0, 16 k_steps) of the tile, and the rest of a larger tile (a head
    padded with zero columns) is skipped.

    Every work-item of the workgroup must reach the op together (it is a
    warpgroup-wide instruction on sm_90a), after a barrier that follows the
    writes to `b`. Lowered by `txl-mma-to-nvvm` (wgmma on sm_90a, else one
    `mma.sync` per n-block and k-step reading its B fragment from the tile)
    and by `txl-emulate-mma` on OpenCL, which reads B through the same
    descriptors, decoded as PTX defines them.

    With `async` the product is only issued where the op stands (sm_90a:
    its group committed, not waited for): its result is in flight, and its
    one use is the `txl.warpgroup_mma_wait` that makes it ready, so that
    the work between the two overlaps the product. Until then neither `a`'s
    registers nor `b` may change. Without it the op waits for its own
    product (and every earlier one). The other lowerings compute the
    product where the op stands either way.

    ```mlir
    %d = txl.warpgroup_mma %a, %tile, %c : vector<2x4x2xbf16>,
        memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
    %e = txl.warpgroup_mma async %a, %tile, %c : vector<2x4x2xbf16>,
        memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
    ```
  }];
  let arguments = (ins VectorOfRankAndType<[3], [BF16, F16]>:$a,
                       Arg<MemRefRankOf<[BF16, F16], [4]>,
                           "B, staged in workgroup memory", [MemRead]>:$b,
                       VectorOfRankAndType<[3], [F32]>:$acc,
                       UnitAttr:$async);
  let results = (outs VectorOfRankAndType<[3], [F32]>:$result);
  let assemblyFormat = [{
    (`async` $async^)? $a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b)
    `,` type($acc)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// K / 16: the number of 16-deep products.
    int64_t getKSteps() { return getA().getType().getDimSize(0); }
    /// The tile's core matrices along K (at least 2 k_steps).
    int64_t getKBlocks() { return getB().getType().getDimSize(1); }
    /// N / 8.
    int64_t getNBlocks() { return getAcc().getType().getDimSize(0); }
  }];
}

def Txl_WarpgroupMmaWaitOp : Txl_Op<"warpgroup_mma_wait",
    [AllTypesMatch<["product", "result"]>]> {
  let summary = "waits for an asynchronous warpgroup product";
  let description = [{
    Waits until at most `pending` of the warpgroup products that the
    work-item issued with `async` are still in flight, and returns
    `product`, the result of an earlier one, ready to use. Products
    complete in the order they were issued, so `product` must have been
    issued, in the wait's block, before at least `pending` others
    (PTX's `wgmma.wait_group.sync.aligned pending`, PTX ISA §9.7.15.7: the
    products issued last may go on while the ones before them are used;
    FlashAttention-3's softmax of one tile during the next tile's product,
    Shah et al. 2024 §3.2).

    Every work-item of the workgroup must reach it together. Lowered by
    `txl-mma-to-nvvm` on sm_90a to the wait, each result register passed
    through an empty `asm volatile` after it so that no use moves above it;
    elsewhere (products computed where they stand) to its operands.

    ```mlir
    %d = txl.warpgroup_mma async %a, %k, %c : vector<2x4x2xbf16>,
        memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
    %e = txl.warpgroup_mma async %p, %v, %o : vector<2x4x2xbf16>,
        memref<8x4x8x8xbf16, 3>, vector<8x2x2xf32>
    %ready = txl.warpgroup_mma_wait %d {pending = 1} : vector<4x2x2xf32>
    %o = txl.warpgroup_mma_wait %e {pending = 0} : vector<8x2x2xf32>
    ```
  }];
  let arguments = (ins VectorOfRankAndType<[3], [F32]>:$product,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let results = (outs VectorOfRankAndType<[3], [F32]>:$result);
  let assemblyFormat = [{
    $product attr-dict `:` type($product)
  }];
  let hasVerifier = 1;
}

def Txl_SubgroupBarrierOp : Txl_Op<"subgroup_barrier"> {
  let summary = "the work-items of a subgroup wait for each other";
  let description = [{
    Every work-item of the subgroup (the 32 lanes of a CUDA warp) waits
    until all of them reach it, and the workgroup-memory writes each made
    before it are visible to the others after it: a `gpu.barrier` for one
    subgroup, where only the subgroup's own lanes read what it wrote (the
    tensor-core attention forward's X rows, read back skewed). The other
    subgroups of the workgroup go on. All lanes of the subgroup must reach
    it (uniform control flow), as for `gpu.barrier`.

    CUDA: `bar.warp.sync 0xffffffff` (`__syncwarp()`; txl-mma-to-nvvm);
    OpenCL: SPIR-V's `OpControlBarrier` of subgroup scope, workgroup
    memory ordered (txl-emulate-mma).

    ```mlir
    txl.subgroup_barrier
    ```
  }];
  let assemblyFormat = "attr-dict";
}

#endif // TXL_KERNEL_OPS
