//===- ProgramCache.cpp - On-disk cache of device-built kernel programs ---===//
//
// An entry file: the magic "TXLPCACH", then three length-prefixed fields
// (u64 little-endian byte count, then the bytes): the device key, the
// source (SPIR-V) and the built program.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/ProgramCache.h"

#include "txl/rt/support/File.h"
#include "txl/rt/support/Status.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace txl::rt {

namespace {

constexpr std::string_view kMagic = "TXLPCACH";

/// FNV-1a, 64 bits, continued from `hash`: names the entry's file only; the
/// entry itself holds and compares the whole key.
uint64_t fnv1a(std::string_view bytes, uint64_t hash = 0xcbf29ce484222325ull) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

void appendField(std::string &out, std::string_view field) {
  uint64_t size = field.size();
  char prefix[sizeof size];
  std::memcpy(prefix, &size, sizeof size);
  out.append(prefix, sizeof size);
  out.append(field);
}

/// Takes the next length-prefixed field from `rest`; false when truncated.
bool takeField(std::string_view &rest, std::string_view &field) {
  uint64_t size = 0;
  if (rest.size() < sizeof size)
    return false;
  std::memcpy(&size, rest.data(), sizeof size);
  rest.remove_prefix(sizeof size);
  if (rest.size() < size)
    return false;
  field = rest.substr(0, size);
  rest.remove_prefix(size);
  return true;
}

} // namespace

std::optional<ProgramCache> ProgramCache::fromEnvironment() {
  const char *enabled = std::getenv("TXL_OPENCL_CACHE");
  if (enabled && std::string_view(enabled) == "0")
    return std::nullopt;
  if (const char *dir = std::getenv("TXL_OPENCL_CACHE_DIR"); dir && *dir)
    return ProgramCache(dir);
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return ProgramCache(std::string(xdg) + "/txlc/opencl");
  if (const char *home = std::getenv("HOME"); home && *home)
    return ProgramCache(std::string(home) + "/.cache/txlc/opencl");
  return std::nullopt;
}

std::string ProgramCache::path(std::string_view deviceKey,
                               std::string_view source) const {
  uint64_t hash = fnv1a(source, fnv1a(deviceKey));
  return fmt::format("{}/{:016x}.clbin", dir_, hash);
}

std::optional<std::string> ProgramCache::lookup(std::string_view deviceKey,
                                                std::string_view source) const {
  std::string entry;
  try {
    entry = readFile(path(deviceKey, source));
  } catch (const Error &) {
    return std::nullopt;
  }
  std::string_view rest = entry;
  if (rest.substr(0, kMagic.size()) != kMagic)
    return std::nullopt;
  rest.remove_prefix(kMagic.size());
  std::string_view key, stored, binary;
  if (!takeField(rest, key) || !takeField(rest, stored) ||
      !takeField(rest, binary) || !rest.empty() || key != deviceKey ||
      stored != source || binary.empty())
    return std::nullopt;
  return std::string(binary);
}

bool ProgramCache::store(std::string_view deviceKey, std::string_view source,
                         std::string_view binary) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    return false;
  std::string entry(kMagic);
  entry.reserve(kMagic.size() + 24 + deviceKey.size() + source.size() +
                binary.size());
  appendField(entry, deviceKey);
  appendField(entry, source);
  appendField(entry, binary);
  try {
    writeFileAtomic(path(deviceKey, source), entry);
  } catch (const Error &) {
    return false;
  }
  return true;
}

} // namespace txl::rt
