//===- Philox.h - Counter-based random numbers (Philox4x32-10) --*- C++ -*-===//
//
// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy
// as 1, 2, 3", SC 2011): a bijection of a 128-bit counter under a 64-bit key,
// ten rounds. Every random number the runtime draws (parameter
// initialisation) is a pure function of (seed, counter), so any element can
// be produced independently and a resumed run needs no generator state.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_PHILOX_H
#define TXL_RT_PHILOX_H

#include <array>
#include <cstdint>

namespace txl::rt {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

/// Philox4x32 with 10 rounds: the paper's multipliers 0xD2511F53 and
/// 0xCD9E8D57 and Weyl key increments 0x9E3779B9 and 0xBB67AE85.
inline PhiloxCounter philox4x32(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += 0x9E3779B9u;
      key[1] += 0xBB67AE85u;
    }
    uint64_t p0 = uint64_t(0xD2511F53u) * counter[0];
    uint64_t p1 = uint64_t(0xCD9E8D57u) * counter[2];
    counter = {uint32_t(p1 >> 32) ^ counter[1] ^ key[0], uint32_t(p1),
               uint32_t(p0 >> 32) ^ counter[3] ^ key[1], uint32_t(p0)};
  }
  return counter;
}

/// The key of a 64-bit seed: low word first.
inline PhiloxKey philoxKey(uint64_t seed) {
  return {uint32_t(seed), uint32_t(seed >> 32)};
}

/// A uniform double in (0, 1) from a 32-bit word: (x + 0.5) / 2^32 (never 0,
/// so that log() in Box-Muller is finite).
inline double uniformOpen(uint32_t x) {
  return (double(x) + 0.5) * (1.0 / 4294967296.0);
}

} // namespace txl::rt

#endif // TXL_RT_PHILOX_H
