//===- HostDeviceTest.cpp - The CPU as a device, and DeviceArray ----------===//
//
// The host device (Device.h): buffers are aligned host addresses, copies
// and fills honour their offsets, products match a plain triple loop
// (batched, transposed, through enqueueGemm's row-major convention), and
// module loads and launches are refused by name. DeviceArray on it maps to
// the buffer itself; on a device reached only through copies (a counting
// wrapper of the host device that hides the addresses) it reads back once
// per device write and sends its copy back on flush, counted. A caller's
// array passed as a HostArgument is the array itself on the host, a copy
// (in, or back on finish) elsewhere.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/CountingDevice.h"
#include "txl/rt/device/Device.h"
#include "txl/rt/device/ForwardingDevice.h"
#include "txl/rt/device/Gemm.h"
#include "txl/rt/session/DeviceArray.h"
#include "txl/rt/session/RowWindows.h"
#include "txl/rt/support/Status.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace txl::rt {
namespace {

using ::testing::HasSubstr;

TEST(HostDeviceTest, BuffersAreAlignedHostAddresses) {
  std::unique_ptr<Device> device = openDevice(Backend::Host);
  EXPECT_THAT(device->description(), HasSubstr("host CPU"));
  EXPECT_GE(device->computeUnits(), 1);
  EXPECT_GT(device->totalMemory(), size_t(0));
  void *empty = device->allocate(0), *other = device->allocate(0);
  ASSERT_NE(empty, nullptr);
  EXPECT_NE(empty, other);
  void *buffer = device->allocate(100);
  EXPECT_TRUE(device->hostMemory());
  EXPECT_EQ(device->hostAddress(buffer), buffer);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 64, 0u);
  for (void *b : {empty, other, buffer})
    device->free(b);
}

TEST(HostDeviceTest, CopiesAndFillsHonourOffsets) {
  std::unique_ptr<Device> device = openHostDevice();
  const float in[4] = {1, 2, 3, 4};
  auto *a = static_cast<float *>(device->allocate(8 * sizeof(float)));
  auto *b = static_cast<float *>(device->allocate(8 * sizeof(float)));
  device->fill32(a, 0, 0, 8);
  uint32_t bits;
  float minusOne = -1;
  std::memcpy(&bits, &minusOne, sizeof(bits));
  device->fill32(b, 0, bits, 8);
  device->copyToDevice(a, 2 * sizeof(float), in, sizeof(in));
  EXPECT_THAT(std::vector<float>(a, a + 8),
              ::testing::ElementsAre(0, 0, 1, 2, 3, 4, 0, 0));
  device->copyOnDevice(b, 1 * sizeof(float), a, 3 * sizeof(float),
                       2 * sizeof(float));
  EXPECT_THAT(std::vector<float>(b, b + 4),
              ::testing::ElementsAre(-1, 2, 3, -1));
  float out[2] = {};
  device->copyToHost(out, a, 4 * sizeof(float), sizeof(out));
  EXPECT_THAT(out, ::testing::ElementsAre(3, 4));
  device->synchronize();
  device->free(a);
  device->free(b);
}

/// Row-major C_b = op(A_b) op(B_b) by a triple loop.
std::vector<float> reference(const GemmDesc &d, const std::vector<float> &a,
                             const std::vector<float> &b) {
  std::vector<float> c(size_t(d.batch * d.c.stride));
  for (int64_t batch = 0; batch < d.batch; ++batch)
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < d.k; ++k) {
          float x = d.transA ? a[batch * d.a.stride + k * d.a.ld + i]
                             : a[batch * d.a.stride + i * d.a.ld + k];
          float y = d.transB ? b[batch * d.b.stride + j * d.b.ld + k]
                             : b[batch * d.b.stride + k * d.b.ld + j];
          sum += double(x) * double(y);
        }
        c[batch * d.c.stride + i * d.c.ld + j] = float(sum);
      }
  return c;
}

/// enqueueGemm on the host device of a batch of 2 row-major products with
/// A transposed, against `reference`; returns the largest difference.
float productError(GemmDesc::Inputs inputs) {
  std::unique_ptr<Device> device = openHostDevice();
  GemmDesc d;
  d.transA = true;
  d.m = 5;
  d.n = 6;
  d.k = 7;
  d.batch = 2;
  d.inputs = inputs;
  std::vector<float> a(size_t(2 * 7 * 5)), b(size_t(2 * 7 * 6));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(std::sin(0.37 * double(i)));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(std::cos(0.21 * double(i)));
  d.a = {a.data(), 0, 5, 35};
  d.b = {b.data(), 0, 6, 42};
  std::vector<float> c(60, 99.0f);
  d.c = {c.data(), 0, 6, 30};
  enqueueGemm(*device, d);
  std::vector<float> want = reference(d, a, b);
  float worst = 0;
  for (size_t i = 0; i < c.size(); ++i)
    worst = std::max(worst, std::fabs(c[i] - want[i]));
  return worst;
}

TEST(HostDeviceTest, ProductsMatchATripleLoop) {
  EXPECT_LT(productError(GemmDesc::Inputs::F32), 1e-5f);
  // bf16 operands (8 bits of mantissa): close, and not the f32 product.
  float bf16 = productError(GemmDesc::Inputs::Bf16);
  EXPECT_LT(bf16, 0.05f);
  EXPECT_GT(bf16, 1e-5f);
}

TEST(HostDeviceTest, LoadsNoModulesAndLaunchesNoKernels) {
  std::unique_ptr<Device> device = openHostDevice();
  test::expectError([&] { device->loadModule("image"); }, TXL_UNAVAILABLE,
                    {"loads no kernel modules", "linked into the executable"});
  struct NoKernel : Kernel {
  } kernel;
  size_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  test::expectError([&] { device->launch(kernel, grid, block, 0, nullptr, 0); },
                    TXL_UNAVAILABLE, {"launches no kernels"});
}

TEST(DeviceArrayTest, OnTheHostTheViewIsTheBuffer) {
  std::unique_ptr<Device> device = openHostDevice();
  const float in[3] = {1.5f, -2, 3};
  DeviceArray array(*device, in, 3);
  EXPECT_EQ(array.size(), 3u);
  EXPECT_EQ(array.map(), array.buffer());
  array.map()[1] = 7;
  float out[3];
  array.read(out, 0, 3);
  EXPECT_THAT(out, ::testing::ElementsAre(1.5f, 7, 3));
  DeviceArray zeros = DeviceArray::zeros(*device, 4);
  EXPECT_THAT(std::vector<float>(zeros.map(), zeros.map() + 4),
              ::testing::ElementsAre(0, 0, 0, 0));
  DeviceArray empty(*device, 0);
  EXPECT_NE(empty.map(), nullptr);
  void *buffer = array.buffer();
  DeviceArray moved = std::move(array);
  EXPECT_EQ(moved.buffer(), buffer);
  EXPECT_EQ(array.buffer(), nullptr);
  EXPECT_EQ(array.size(), 0u);
  EXPECT_EQ(DeviceArray().map(), nullptr);
}

/// The host device with its addresses hidden, as a GPU's buffers are:
/// counts the allocations, the copies each way and the live views.
class CopyingDevice final : public ForwardingDevice {
public:
  CopyingDevice() : ForwardingDevice(openHostDevice()) {}
  std::string description() const override { return "copying"; }
  bool hostMemory() const override { return false; }
  void *allocate(size_t bytes) override {
    ++allocations;
    return ForwardingDevice::allocate(bytes);
  }
  void free(void *buffer) override {
    ++frees;
    ForwardingDevice::free(buffer);
  }
  void copyToDevice(void *buffer, size_t offset, const void *host,
                    size_t bytes) override {
    ++uploads;
    ForwardingDevice::copyToDevice(buffer, offset, host, bytes);
  }
  void copyToHost(void *host, const void *buffer, size_t offset,
                  size_t bytes) override {
    ++readBacks;
    ForwardingDevice::copyToHost(host, buffer, offset, bytes);
  }
  void copyOnDevice(void *dst, size_t dstOffset, const void *src,
                    size_t srcOffset, size_t bytes) override {
    // The GPU APIs' copies take disjoint ranges (Device.h).
    ++copies;
    if (dst == src && dstOffset < srcOffset + bytes &&
        srcOffset < dstOffset + bytes)
      ++overlappingCopies;
    ForwardingDevice::copyOnDevice(dst, dstOffset, src, srcOffset, bytes);
  }
  /// Counted, then made copy by copy (Device's default), each checked.
  void copyStridedOnDevice(void *buffer, size_t dstOffset, size_t srcOffset,
                           size_t bytes, size_t pitch, size_t count) override {
    ++stridedCopies;
    Device::copyStridedOnDevice(buffer, dstOffset, srcOffset, bytes, pitch,
                                count);
  }
  void launch(Kernel &, const size_t[3], const size_t[3], size_t, void **,
              size_t) override {}
  void *view(void *buffer, size_t offset, size_t bytes) override {
    lastView = {offset, bytes};
    ++liveViews;
    return ForwardingDevice::view(buffer, offset, bytes);
  }
  void releaseView(void *view) override {
    --liveViews;
    ForwardingDevice::releaseView(view);
  }

  int allocations = 0, frees = 0, uploads = 0, readBacks = 0, copies = 0,
      stridedCopies = 0, overlappingCopies = 0, liveViews = 0;
  /// The last view's offset and bytes.
  struct Region {
    size_t offset = 0, bytes = 0;
    bool operator==(const Region &other) const {
      return offset == other.offset && bytes == other.bytes;
    }
  } lastView;
};

TEST(DeviceArrayTest, ElsewhereTheViewIsACopyReadBackAfterDeviceWrites) {
  CopyingDevice device;
  {
    const float in[3] = {1, 2, 3};
    DeviceArray array(device, in, 3);
    EXPECT_EQ(device.uploads, 1);
    const float *view = array.map();
    EXPECT_NE(static_cast<const void *>(view), array.buffer());
    EXPECT_THAT(std::vector<float>(view, view + 3),
                ::testing::ElementsAre(1, 2, 3));
    EXPECT_EQ(device.readBacks, 1);
    array.map();
    EXPECT_EQ(device.readBacks, 1) << "a current copy is not read again";
    // The device writes the buffer (as a kernel would).
    static_cast<float *>(array.buffer())[0] = 10;
    EXPECT_EQ(array.map()[0], 1) << "not invalidated: the old copy";
    array.invalidate();
    EXPECT_EQ(array.map()[0], 10);
    EXPECT_EQ(device.readBacks, 2);
    // Host writes reach the buffer on flush only.
    array.map()[2] = 30;
    EXPECT_EQ(static_cast<float *>(array.buffer())[2], 3);
    array.flush();
    EXPECT_EQ(static_cast<float *>(array.buffer())[2], 30);
    // write() keeps a current copy current, without reading back.
    const float five = 5;
    array.write(&five, 1, 1);
    EXPECT_EQ(array.map()[1], 5);
    EXPECT_EQ(device.readBacks, 2);
    // zeros() fills on the device: its first view reads the zeros back.
    DeviceArray zeros = DeviceArray::zeros(device, 2);
    EXPECT_EQ(device.uploads, 3) << "filled, not uploaded";
    EXPECT_EQ(zeros.map()[1], 0);
    EXPECT_EQ(device.readBacks, 3);
  }
  EXPECT_EQ(device.allocations, 2);
  EXPECT_EQ(device.frees, 2);
}

TEST(HostArgumentTest, OnTheHostTheArgumentIsTheArray) {
  std::unique_ptr<Device> device = openHostDevice();
  float values[4] = {1, 2, 3, 4};
  for (HostArgument::Kind kind :
       {HostArgument::In, HostArgument::Out, HostArgument::OutZeroed}) {
    HostArgument argument(*device, values, sizeof(values), kind);
    EXPECT_EQ(argument.buffer(), values);
    argument.finish();
  }
  EXPECT_THAT(values, ::testing::ElementsAre(1, 2, 3, 4)) << "never zeroed";
  EXPECT_EQ(HostArgument(*device, nullptr, 16, HostArgument::In).buffer(),
            nullptr);
}

TEST(HostArgumentTest, ElsewhereACopyGoesInOrComesBackOnFinish) {
  CopyingDevice device;
  {
    const int64_t tokens[3] = {7, 8, 9};
    HostArgument in(device, tokens, sizeof(tokens), HostArgument::In);
    ASSERT_NE(in.buffer(), static_cast<const void *>(tokens));
    EXPECT_EQ(static_cast<int64_t *>(in.buffer())[2], 9);
    EXPECT_EQ(device.uploads, 1);
    in.finish();
    EXPECT_EQ(device.readBacks, 0) << "an input is not copied back";

    float nll[2] = {-1, -1};
    HostArgument out(device, nll, sizeof(nll), HostArgument::Out);
    static_cast<float *>(out.buffer())[1] = 5; // the code writes it
    EXPECT_EQ(nll[1], -1);
    out.finish();
    EXPECT_EQ(nll[1], 5);
    EXPECT_EQ(device.readBacks, 1);

    float grad[2] = {-1, -1};
    HostArgument zeroed(device, grad, sizeof(grad), HostArgument::OutZeroed);
    EXPECT_EQ(static_cast<float *>(zeroed.buffer())[0], 0);
    zeroed.finish();
    EXPECT_THAT(grad, ::testing::ElementsAre(0, 0));
    EXPECT_EQ(device.uploads, 1) << "zeroed on the device, not uploaded";
  }
  EXPECT_EQ(device.allocations, 3);
  EXPECT_EQ(device.frees, 3);
}

/// Appends `segments` segments of `qlen` rows to a RowWindows of three
/// states, of 3, 3 and 5 floats a row (row n of state s holds n + 100 s,
/// then n + 0.5, -n, ...), keeping `memLen` rows in regions of 2·memLen
/// (the key/value cache's), writing each segment at addedRows() as the
/// compiled code does, and checks after each that every window holds its
/// last memLen rows in order.
void checkRowWindows(Device &device, int64_t qlen, int64_t memLen,
                     int segments) {
  const std::vector<int64_t> widths = {3, 3, 5};
  RowWindows windows(device, widths);
  ASSERT_EQ(windows.states(), 3u);
  auto value = [](int64_t n, size_t s, int64_t c) {
    return c == 0 ? float(n + 100 * int64_t(s))
                  : (c % 2 ? n + 0.5f * float(c) : -float(n * c));
  };
  int64_t next = 0;
  for (int segment = 0; segment < segments; ++segment) {
    windows.reserve(qlen, 2 * memLen);
    for (size_t s = 0; s < widths.size(); ++s) {
      std::vector<float> rows;
      for (int64_t r = 0; r < qlen; ++r)
        for (int64_t c = 0; c < widths[s]; ++c)
          rows.push_back(value(next + r, s, c));
      device.copyToDevice(windows.data(),
                          windows.offsetBytes(s, windows.rows()), rows.data(),
                          rows.size() * sizeof(float));
    }
    next += qlen;
    const int64_t keep = std::min(memLen, windows.rows() + qlen);
    windows.append(qlen, keep);
    ASSERT_EQ(windows.rows(), keep);
    for (size_t s = 0; s < widths.size(); ++s) {
      std::vector<float> held(size_t(keep * widths[s]));
      device.copyToHost(held.data(), windows.data(), windows.offsetBytes(s),
                        held.size() * sizeof(float));
      for (int64_t r = 0; r < keep; ++r)
        for (int64_t c = 0; c < widths[s]; ++c)
          ASSERT_EQ(held[size_t(r * widths[s] + c)],
                    value(next - keep + r, s, c))
              << "segment " << segment << " state " << s << " row " << r;
    }
  }
}

// On the host, and on a device whose copies must not overlap: the windows
// move to their regions' fronts in runs that never overlap, including when
// they start within their own length of the front (qlen 4, mem_len 5: the
// windows of 5 rows move back from row 3).
TEST(RowWindowsTest, KeepsTheLastRowsOnEveryDevice) {
  std::unique_ptr<Device> host = openHostDevice();
  for (auto [qlen, memLen] :
       {std::pair<int64_t, int64_t>(4, 5), {1, 5}, {5, 5}, {3, 8}, {7, 2}}) {
    SCOPED_TRACE(::testing::Message()
                 << "qlen " << qlen << " mem_len " << memLen);
    checkRowWindows(*host, qlen, memLen, 12);
    CopyingDevice device;
    checkRowWindows(device, qlen, memLen, 12);
    EXPECT_EQ(device.overlappingCopies, 0);
    EXPECT_EQ(device.allocations, device.frees);
  }
  // On the host a window is the buffer's address plus its offset.
  RowWindows windows(*host, {3});
  windows.reserve(2, 4);
  EXPECT_EQ(windows.addedRows(0, 2).handle(), windows.data());
  windows.append(2, 2);
  EXPECT_EQ(windows.window(0).handle(), windows.data());
  windows.reserve(1, 4);
  EXPECT_EQ(windows.addedRows(0, 1).handle(),
            static_cast<char *>(windows.data()) + 2 * 3 * sizeof(float));
  // A view names its region (an OpenCL sub-buffer's), and is released; the
  // second state's region follows the first's 4 rows.
  const size_t rowBytes = 3 * sizeof(float);
  CopyingDevice views;
  RowWindows elsewhere(views, {3, 3});
  elsewhere.reserve(2, 4);
  {
    BufferView at = elsewhere.addedRows(1, 2);
    EXPECT_EQ(views.lastView,
              (CopyingDevice::Region{4 * rowBytes, 2 * rowBytes}));
    EXPECT_EQ(views.liveViews, 1);
  }
  EXPECT_EQ(views.liveViews, 0);
  elsewhere.append(2, 2);
  elsewhere.reserve(1, 4);
  {
    BufferView next = elsewhere.addedRows(0, 1);
    EXPECT_EQ(views.lastView, (CopyingDevice::Region{2 * rowBytes, rowBytes}));
    BufferView whole = elsewhere.window(1, 1);
    EXPECT_EQ(views.lastView,
              (CopyingDevice::Region{4 * rowBytes, 3 * rowBytes}));
    EXPECT_EQ(views.liveViews, 2);
  }
  EXPECT_EQ(views.liveViews, 0);
}

// The windows of every state of one row width move to their regions'
// fronts by one strided copy (one device copy), a run of widths each: 10
// states of ptb_small's one width, one copy; qlen = mem_len moves every
// segment after the first two. Where a window starts within its own length
// of the front, each run of `first` rows is one strided copy.
TEST(RowWindowsTest, MovesEachWidthByOneStridedCopy) {
  CopyingDevice device;
  RowWindows same(device, std::vector<int64_t>(10, 4));
  for (int segment = 0; segment < 4; ++segment) {
    same.reserve(2, 4);
    same.append(2, 2);
  }
  // Segments 3 and 4 each moved the 10 windows by one strided copy.
  EXPECT_EQ(device.stridedCopies, 2);
  EXPECT_EQ(device.copies, 20);
  CopyingDevice mixed;
  RowWindows widths(mixed, {4, 4, 6, 6, 6});
  for (int segment = 0; segment < 3; ++segment) {
    widths.reserve(2, 4);
    widths.append(2, 2);
  }
  EXPECT_EQ(mixed.stridedCopies, 2); // one move: the 4s, then the 6s
  CopyingDevice overlapping;
  RowWindows runs(overlapping, {4, 4});
  for (int segment = 0; segment < 6; ++segment) {
    runs.reserve(1, 5);
    runs.append(1, std::min<int64_t>(4, runs.rows() + 1));
  }
  // The sixth segment moved windows of 4 rows back from row 1: 4 runs.
  EXPECT_EQ(overlapping.stridedCopies, 4);
  EXPECT_EQ(overlapping.overlappingCopies, 0);
}

// Negative control: the overlap check catches an overlapping copy.
TEST(RowWindowsTest, OverlappingCopiesAreCounted) {
  CopyingDevice device;
  void *buffer = device.allocate(64);
  device.copyOnDevice(buffer, 0, buffer, 16, 32);
  EXPECT_EQ(device.overlappingCopies, 1);
  device.copyOnDevice(buffer, 0, buffer, 32, 32);
  EXPECT_EQ(device.overlappingCopies, 1);
  device.free(buffer);
}

// The device the mgpu ABI opens counts what it is asked to do
// (txl_device_counters): each operation once (a strided copy is one),
// copies with their bytes, a
// copy to the host as a synchronisation too; fills are not counted.
TEST(CountingDeviceTest, CountsEachOperationOnce) {
  DeviceCounters counters;
  std::unique_ptr<Device> device = countOperations(openHostDevice(), counters);
  EXPECT_TRUE(device->hostMemory());
  EXPECT_EQ(device->viewAlignment(), 1u);
  void *buffer = device->allocate(64);
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  device->copyToDevice(buffer, 0, in, sizeof(in));
  device->copyOnDevice(buffer, 16, buffer, 0, sizeof(in));
  device->fill32(buffer, 32, 0, 4);
  // Two rows of 4 bytes, 8 apart: one operation.
  device->copyStridedOnDevice(buffer, 48, 32, 4, 8, 2);
  device->copyToHost(out, buffer, 16, sizeof(out));
  device->synchronize();
  device->free(buffer);
  EXPECT_THAT(out, ::testing::ElementsAre(1, 2, 3, 4));
  txl_device_counters_t c = counters.snapshot();
  EXPECT_EQ(c.allocations, 1u);
  EXPECT_EQ(c.frees, 1u);
  EXPECT_EQ(c.uploads, 1u);
  EXPECT_EQ(c.upload_bytes, sizeof(in));
  EXPECT_EQ(c.device_copies, 2u);
  EXPECT_EQ(c.downloads, 1u);
  EXPECT_EQ(c.download_bytes, sizeof(out));
  EXPECT_EQ(c.syncs, 2u) << "the copy to the host and the synchronize";
  EXPECT_EQ(c.launches, 0u);
  EXPECT_EQ(c.library_calls, 0u);
  counters.reset();
  EXPECT_EQ(counters.snapshot().syncs, 0u);
}

// The products' work: 2 m n k FLOPs a matrix of the batch, and the f32
// bytes of A, B and C (C twice where beta != 0: read and written).
TEST(CountingDeviceTest, CountsProductWork) {
  DeviceCounters counters;
  std::unique_ptr<Device> device = countOperations(openHostDevice(), counters);
  const int64_t m = 2, n = 3, k = 4, batch = 2;
  void *a = device->allocate(sizeof(float) * m * k * batch);
  void *b = device->allocate(sizeof(float) * k * n * batch);
  void *c = device->allocate(sizeof(float) * m * n * batch);
  device->fill32(a, 0, 0x3f800000u, m * k * batch); // 1.0f
  device->fill32(b, 0, 0x3f800000u, k * n * batch);
  GemmDesc d;
  d.m = m, d.n = n, d.k = k, d.batch = batch;
  d.a = {a, 0, m, m * k};
  d.b = {b, 0, k, k * n};
  d.c = {c, 0, m, m * n};
  d.beta = 0;
  device->gemm(d);
  txl_device_counters_t c0 = counters.snapshot();
  EXPECT_EQ(c0.library_calls, 1u);
  EXPECT_EQ(c0.product_flops, uint64_t(2 * m * n * k * batch));
  EXPECT_EQ(c0.product_bytes,
            uint64_t(sizeof(float) * batch * (m * k + k * n + m * n)));
  d.beta = 1;
  device->gemm(d);
  txl_device_counters_t c1 = counters.snapshot();
  EXPECT_EQ(c1.product_flops, uint64_t(2 * 2 * m * n * k * batch));
  EXPECT_EQ(c1.product_bytes - c0.product_bytes,
            uint64_t(sizeof(float) * batch * (m * k + k * n + 2 * m * n)));
  EXPECT_EQ(c1.work_items, 0u) << "a product is no launch";
  for (void *buffer : {a, b, c})
    device->free(buffer);
}

} // namespace
} // namespace txl::rt
