//===- MemRef.h - MLIR memref descriptors for packed calls ------*- C++ -*-===//
//
// The generated entry points take every argument through a pointer
// (`void **args`, see runtime.h); a memref argument points at MLIR's
// descriptor for its rank r: {allocated, aligned, offset, sizes[r],
// strides[r]}. These helpers build row-major contiguous descriptors and the
// argument array.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_MEMREF_H
#define TXL_RT_MEMREF_H

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

namespace txl::rt {

/// Storage for one memref descriptor of rank sizes.size() over `data`,
/// row-major contiguous: 2 pointers, the offset, then sizes and strides.
class MemRefDescriptor {
public:
  MemRefDescriptor(void *data, const std::vector<int64_t> &sizes)
      : words_(3 + 2 * sizes.size()) {
    std::memcpy(&words_[0], &data, sizeof(void *));
    std::memcpy(&words_[1], &data, sizeof(void *));
    words_[2] = 0;
    size_t rank = sizes.size();
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      words_[3 + i] = sizes[i];
      words_[3 + rank + i] = stride;
      stride *= sizes[i];
    }
  }
  void *get() { return words_.data(); }

private:
  std::vector<int64_t> words_;
};

/// The `void **args` of one packed call: memrefs and scalars in argument
/// order. Scalars are copied, so temporaries may be pushed.
class PackedArgs {
public:
  void memref(const void *data, const std::vector<int64_t> &sizes) {
    descriptors_.emplace_back(const_cast<void *>(data), sizes);
    args_.push_back(descriptors_.back().get());
  }
  void i64(int64_t value) {
    scalars_.push_back(value);
    args_.push_back(&scalars_.back());
  }
  void f64(double value) {
    int64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    scalars_.push_back(bits);
    args_.push_back(&scalars_.back());
  }
  void f32(float value) {
    int64_t bits = 0; // the float in the slot's first four bytes
    std::memcpy(&bits, &value, sizeof value);
    scalars_.push_back(bits);
    args_.push_back(&scalars_.back());
  }
  /// Where a packed entry's scalar result goes (txl-emit-packed-entry:
  /// the slot after the arguments').
  void result(void *out) { args_.push_back(out); }
  void **data() { return args_.data(); }

private:
  // Deques: pushing never moves what earlier pointers point at.
  std::deque<MemRefDescriptor> descriptors_;
  std::deque<int64_t> scalars_;
  std::vector<void *> args_;
};

} // namespace txl::rt

#endif // TXL_RT_MEMREF_H
