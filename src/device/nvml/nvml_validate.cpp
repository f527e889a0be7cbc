// SPDX-License-Identifier: Apache-2.0
#include "device/nvml/nvml_validate.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <string_view>

namespace trainmon::nvml {

bool valid_utf8(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return false;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

Reading<std::string> checked_string(const char* buf, std::size_t capacity) {
  if (buf == nullptr || capacity == 0) return Reading<std::string>::fail(ReadStatus::not_available);
  const void* nul = std::memchr(buf, '\0', capacity);
  if (nul == nullptr) return Reading<std::string>::fail(ReadStatus::invalid_value);
  std::string_view s(buf, static_cast<std::size_t>(static_cast<const char*>(nul) - buf));
  if (s.empty()) return Reading<std::string>::fail(ReadStatus::not_available);
  if (!valid_utf8(s)) return Reading<std::string>::fail(ReadStatus::invalid_value);
  return Reading<std::string>::of(std::string(s));
}

Reading<unsigned> checked_u32(unsigned v) {
  if (v == kNotAvailableU32) return Reading<unsigned>::fail(ReadStatus::not_available);
  return Reading<unsigned>::of(v);
}

Reading<std::uint64_t> checked_u64(std::uint64_t v) {
  if (v == kNotAvailableU64) return Reading<std::uint64_t>::fail(ReadStatus::not_available);
  return Reading<std::uint64_t>::of(v);
}

Reading<unsigned> checked_percent(unsigned v) {
  if (v == kNotAvailableU32) return Reading<unsigned>::fail(ReadStatus::not_available);
  if (v > 100) return Reading<unsigned>::fail(ReadStatus::invalid_value);
  return Reading<unsigned>::of(v);
}

Reading<unsigned> checked_temperature(unsigned c) {
  if (c == kNotAvailableU32) return Reading<unsigned>::fail(ReadStatus::not_available);
  if (c >= kGpuTemperatureImpossibleC) return Reading<unsigned>::fail(ReadStatus::invalid_value);
  return Reading<unsigned>::of(c);
}

Reading<unsigned> checked_power(unsigned mw) {
  if (mw == kNotAvailableU32) return Reading<unsigned>::fail(ReadStatus::not_available);
  if (mw > 10'000'000) return Reading<unsigned>::fail(ReadStatus::invalid_value);
  return Reading<unsigned>::of(mw);
}

Reading<unsigned> checked_power_limit(unsigned mw) {
  if (mw == kNotAvailableU32) return Reading<unsigned>::fail(ReadStatus::not_available);
  if (mw == 0 || mw > 10'000'000) return Reading<unsigned>::fail(ReadStatus::invalid_value);
  return Reading<unsigned>::of(mw);
}

Reading<unsigned> checked_pstate(unsigned p) {
  if (p > 15) return Reading<unsigned>::fail(ReadStatus::not_available);
  return Reading<unsigned>::of(p);
}

Reading<std::uint64_t> checked_counter(std::uint64_t now, std::optional<std::uint64_t> previous) {
  if (now == kNotAvailableU64) return Reading<std::uint64_t>::fail(ReadStatus::not_available);
  if (previous && now < *previous) return Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
  return Reading<std::uint64_t>::of(now);
}

std::optional<double> pcie_link_max_bytes_s(unsigned gen, unsigned width) {
  // Payload bytes/s per lane after line coding.
  static constexpr double kPerLane[] = {0,
                                        2.5e9 * 8 / 10 / 8,
                                        5e9 * 8 / 10 / 8,
                                        8e9 * 128 / 130 / 8,
                                        16e9 * 128 / 130 / 8,
                                        32e9 * 128 / 130 / 8,
                                        64e9 * 242 / 256 / 8,
                                        128e9 * 242 / 256 / 8};
  if (gen == 0 || gen >= std::size(kPerLane) || width == 0 || width > 32) return std::nullopt;
  return kPerLane[gen] * width;
}

Reading<unsigned> checked_pcie_rate_kib_s(double kib_s, std::optional<double> link_max_bytes_s) {
  constexpr double kUnknownLinkBound = 1e12;  // bytes/s: more than any PCIe link carries
  const double bound_kib_s = (link_max_bytes_s ? 2 * *link_max_bytes_s : kUnknownLinkBound) / 1024;
  if (!(kib_s >= 0) || kib_s > bound_kib_s || kib_s > kNotAvailableU32 - 1.0)
    return Reading<unsigned>::fail(ReadStatus::invalid_value);
  return Reading<unsigned>::of(static_cast<unsigned>(std::llround(kib_s)));
}

MemoryReadings checked_memory(std::uint64_t total, std::optional<std::uint64_t> reserved, std::uint64_t used,
                              std::uint64_t free) {
  MemoryReadings m;
  auto part = [&](std::uint64_t v) {
    if (v == kNotAvailableU64) return Reading<std::uint64_t>::fail(ReadStatus::not_available);
    if (m.total.ok() && v > *m.total) return Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
    return Reading<std::uint64_t>::of(v);
  };
  if (total == 0 || total == kNotAvailableU64) {
    m.total = Reading<std::uint64_t>::fail(ReadStatus::not_available);
  } else {
    m.total = Reading<std::uint64_t>::of(total);
  }
  m.reserved = reserved ? part(*reserved) : Reading<std::uint64_t>::fail(ReadStatus::not_supported);
  m.used = part(used);
  m.free = part(free);
  // Each part below total but used + reserved above it: one of them is wrong, neither is evidence.
  if (m.total.ok() && m.used.ok() && m.reserved.ok() && *m.used + *m.reserved > *m.total) {
    m.used = Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
    m.reserved = Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
  }
  return m;
}

std::vector<RawProcess> parse_processes(const unsigned char* buf, std::size_t buf_bytes, unsigned count,
                                        std::size_t stride) {
  std::vector<RawProcess> out;
  if (buf == nullptr || stride < 16) return out;
  out.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    std::size_t off = static_cast<std::size_t>(i) * stride;
    if (off + stride > buf_bytes) break;
    RawProcess p;
    std::memcpy(&p.pid, buf + off, sizeof p.pid);
    std::memcpy(&p.used_memory, buf + off + 8, sizeof p.used_memory);
    if (stride >= 24) {
      std::memcpy(&p.gpu_instance_id, buf + off + 16, sizeof p.gpu_instance_id);
      std::memcpy(&p.compute_instance_id, buf + off + 20, sizeof p.compute_instance_id);
    }
    out.push_back(p);
  }
  return out;
}

bool plausible_processes(const std::vector<RawProcess>& entries) {
  constexpr std::uint64_t kOnePiB = std::uint64_t{1} << 50;
  for (const auto& p : entries) {
    if (p.pid == 0 || p.pid > kMaxLinuxPid) return false;
    if (p.used_memory != kNotAvailableU64 && p.used_memory >= kOnePiB) return false;
    bool mig_off = p.gpu_instance_id == kNotAvailableU32 && p.compute_instance_id == kNotAvailableU32;
    bool mig_ids = p.gpu_instance_id < 0x10000 && p.compute_instance_id < 0x10000;
    if (!mig_off && !mig_ids) return false;
  }
  return true;
}

std::optional<std::size_t> detect_process_stride(const unsigned char* buf, std::size_t buf_bytes,
                                                 unsigned count) {
  if (count < 2) return std::nullopt;
  if (plausible_processes(parse_processes(buf, buf_bytes, count, 24))) return 24;
  if (plausible_processes(parse_processes(buf, buf_bytes, count, 32))) return 32;
  return std::nullopt;
}

}  // namespace trainmon::nvml
