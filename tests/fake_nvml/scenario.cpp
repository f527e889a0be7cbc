// SPDX-License-Identifier: Apache-2.0
#include "scenario.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "device/nvml/nvml_api.h"

namespace fake_nvml {
namespace {

using nlohmann::json;

struct CodeName {
  int code;
  const char* name;
};
constexpr CodeName kCodes[] = {
    {NVML_SUCCESS, "NVML_SUCCESS"},
    {NVML_ERROR_UNINITIALIZED, "NVML_ERROR_UNINITIALIZED"},
    {NVML_ERROR_INVALID_ARGUMENT, "NVML_ERROR_INVALID_ARGUMENT"},
    {NVML_ERROR_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED"},
    {NVML_ERROR_NO_PERMISSION, "NVML_ERROR_NO_PERMISSION"},
    {NVML_ERROR_ALREADY_INITIALIZED, "NVML_ERROR_ALREADY_INITIALIZED"},
    {NVML_ERROR_NOT_FOUND, "NVML_ERROR_NOT_FOUND"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "NVML_ERROR_INSUFFICIENT_SIZE"},
    {NVML_ERROR_INSUFFICIENT_POWER, "NVML_ERROR_INSUFFICIENT_POWER"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "NVML_ERROR_DRIVER_NOT_LOADED"},
    {NVML_ERROR_TIMEOUT, "NVML_ERROR_TIMEOUT"},
    {NVML_ERROR_IRQ_ISSUE, "NVML_ERROR_IRQ_ISSUE"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "NVML_ERROR_LIBRARY_NOT_FOUND"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "NVML_ERROR_FUNCTION_NOT_FOUND"},
    {NVML_ERROR_CORRUPTED_INFOROM, "NVML_ERROR_CORRUPTED_INFOROM"},
    {NVML_ERROR_GPU_IS_LOST, "NVML_ERROR_GPU_IS_LOST"},
    {NVML_ERROR_RESET_REQUIRED, "NVML_ERROR_RESET_REQUIRED"},
    {NVML_ERROR_OPERATING_SYSTEM, "NVML_ERROR_OPERATING_SYSTEM"},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"},
    {NVML_ERROR_IN_USE, "NVML_ERROR_IN_USE"},
    {NVML_ERROR_MEMORY, "NVML_ERROR_MEMORY"},
    {NVML_ERROR_NO_DATA, "NVML_ERROR_NO_DATA"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "NVML_ERROR_INSUFFICIENT_RESOURCES"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, "NVML_ERROR_FREQ_NOT_SUPPORTED"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH"},
    {NVML_ERROR_DEPRECATED, "NVML_ERROR_DEPRECATED"},
    {NVML_ERROR_NOT_READY, "NVML_ERROR_NOT_READY"},
    {NVML_ERROR_GPU_NOT_FOUND, "NVML_ERROR_GPU_NOT_FOUND"},
    {NVML_ERROR_INVALID_STATE, "NVML_ERROR_INVALID_STATE"},
    {NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED"},
    {NVML_ERROR_UNKNOWN, "NVML_ERROR_UNKNOWN"},
};

std::uint64_t hash_str(std::string_view s, std::uint64_t h) {
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;  // FNV-1a
  return h;
}

unsigned long long to_ull(const json& j, const std::string& what) {
  if (j.is_number_unsigned() || j.is_number_integer()) return j.get<unsigned long long>();
  if (j.is_number_float()) return static_cast<unsigned long long>(j.get<double>());
  if (j.is_string()) {  // "0x1FF" or "511"
    const std::string s = j.get<std::string>();
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (end != s.c_str() && *end == '\0') return v;
  }
  throw std::runtime_error(what + ": expected a number, got " + j.dump());
}

unsigned to_u(const json& j, const std::string& what) {
  return static_cast<unsigned>(to_ull(j, what));
}

/// Booleans, numbers and "Enabled"/"Disabled" all map to 0/1.
unsigned to_flag(const json& j, const std::string& what) {
  if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "Enabled" || s == "enabled" || s == "On") return 1;
    if (s == "Disabled" || s == "disabled" || s == "Off") return 0;
  }
  return to_u(j, what);
}

unsigned named_or_number(const json& j, const std::map<std::string, unsigned>& names,
                         const std::string& what) {
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    auto it = names.find(s);
    if (it != names.end()) return it->second;
  }
  return to_u(j, what);
}

const std::map<std::string, unsigned> kBrands = {{"UNKNOWN", 0},     {"QUADRO", 1},      {"TESLA", 2},
                                                 {"NVS", 3},         {"GRID", 4},        {"GEFORCE", 5},
                                                 {"TITAN", 6},       {"NVIDIA", 14},     {"GEFORCE_RTX", 15},
                                                 {"NVIDIA_RTX", 13}, {"QUADRO_RTX", 12}, {"TITAN_RTX", 16}};
const std::map<std::string, unsigned> kArchs = {
    {"KEPLER", 2},       {"MAXWELL", 3},     {"PASCAL", 4}, {"VOLTA", 5},      {"TURING", 6},
    {"AMPERE", 7},       {"ADA", 8},         {"HOPPER", 9}, {"BLACKWELL", 10}, {"UNKNOWN", 0xFFFFFFFFu},
    {"ADA LOVELACE", 8}, {"ADA_LOVELACE", 8}};
const std::map<std::string, unsigned> kDriverModels = {{"WDDM", 0}, {"WDM", 1}, {"TCC", 1}, {"MCDM", 2}};
const std::map<std::string, unsigned> kFabricStates = {{"NOT_SUPPORTED", 0}, {"NOT STARTED", 1},
                                                       {"NOT_STARTED", 1},   {"IN PROGRESS", 2},
                                                       {"IN_PROGRESS", 2},   {"COMPLETED", 3}};

/// "4e5649..." → the raw bytes (any, not only UTF-8: a driver can answer such a name).
std::string from_hex(const json& j, const std::string& what) {
  if (!j.is_string()) throw std::runtime_error(what + " must be a string of hex digits");
  const std::string h = j.get<std::string>();
  if (h.size() % 2 != 0) throw std::runtime_error(what + ": odd number of hex digits");
  std::string out;
  for (std::size_t i = 0; i < h.size(); i += 2) {
    char* end = nullptr;
    const std::string pair = h.substr(i, 2);
    const long v = std::strtol(pair.c_str(), &end, 16);
    if (*end != '\0') throw std::runtime_error(what + ": \"" + pair + "\" is not a hex byte");
    out.push_back(static_cast<char>(v));
  }
  return out;
}

const std::map<std::string, unsigned> kComputeModes = {
    {"DEFAULT", 0}, {"EXCLUSIVE_THREAD", 1}, {"PROHIBITED", 2}, {"EXCLUSIVE_PROCESS", 3}};
const std::map<std::string, unsigned> kThresholds = {
    {"shutdown", 0},     {"slowdown", 1},      {"mem_max", 2},      {"gpu_max", 3},
    {"acoustic_min", 4}, {"acoustic_curr", 5}, {"acoustic_max", 6}, {"gps_curr", 7}};
const std::map<std::string, unsigned> kClocks = {
    {"graphics", 0}, {"sm", 1}, {"memory", 2}, {"mem", 2}, {"video", 3}};
const std::map<std::string, unsigned long long> kEventTypes = {{"single_bit_ecc", 0x1},
                                                               {"double_bit_ecc", 0x2},
                                                               {"pstate", 0x4},
                                                               {"xid", 0x8},
                                                               {"clock", 0x10},
                                                               {"power_source_change", 0x80},
                                                               {"mig_config_change", 0x100}};

std::map<std::string, Timeline> parse_metrics(const json& j, std::uint64_t seed, const std::string& where) {
  std::map<std::string, Timeline> out;
  if (!j.is_object()) throw std::runtime_error(where + ".metrics must be an object");
  for (const auto& [key, val] : j.items()) {
    try {
      out.emplace(key, Timeline::parse(val, hash_str(key, seed)));
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ".metrics." + key + ": " + e.what());
    }
  }
  return out;
}

Device parse_device(const json& j, std::uint64_t seed, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + " must be an object");
  Device d;
  d.name = j.value("name", "NVIDIA Fake GPU");
  if (j.contains("name_hex")) d.name = from_hex(j.at("name_hex"), where + ".name_hex");  // raw bytes
  d.uuid = j.value("uuid", "GPU-00000000-0000-0000-0000-000000000000");
  d.serial = j.value("serial", "");
  d.vbios = j.value("vbios_version", "");
  d.board_part_number = j.value("board_part_number", "");
  if (j.contains("pci")) {
    const json& p = j.at("pci");
    d.bus_id = p.value("bus_id", "");
    if (p.contains("domain")) d.pci_domain = to_u(p.at("domain"), where + ".pci.domain");
    if (p.contains("bus")) d.pci_bus = to_u(p.at("bus"), where + ".pci.bus");
    if (p.contains("device")) d.pci_device = to_u(p.at("device"), where + ".pci.device");
    if (p.contains("device_id")) d.pci_device_id = to_u(p.at("device_id"), where + ".pci.device_id");
    if (p.contains("subsystem_id"))
      d.pci_subsystem_id = to_u(p.at("subsystem_id"), where + ".pci.subsystem_id");
  }
  if (j.contains("compute_capability")) {
    const json& cc = j.at("compute_capability");
    if (cc.is_string()) {
      const std::string s = cc.get<std::string>();
      const auto dot = s.find('.');
      if (dot == std::string::npos) throw std::runtime_error(where + ".compute_capability must be \"M.m\"");
      d.cc_major = std::stoi(s.substr(0, dot));
      d.cc_minor = std::stoi(s.substr(dot + 1));
    } else if (cc.is_array() && cc.size() == 2) {
      d.cc_major = cc[0].get<int>();
      d.cc_minor = cc[1].get<int>();
    } else {
      throw std::runtime_error(where + ".compute_capability must be \"M.m\" or [M, m]");
    }
  }
  if (j.contains("brand")) d.brand = named_or_number(j.at("brand"), kBrands, where + ".brand");
  if (j.contains("architecture"))
    d.architecture = named_or_number(j.at("architecture"), kArchs, where + ".architecture");
  if (j.contains("memory_total")) d.memory_total = to_ull(j.at("memory_total"), where + ".memory_total");
  if (j.contains("bar1_total")) d.bar1_total = to_ull(j.at("bar1_total"), where + ".bar1_total");
  if (j.contains("power_limits")) {
    const json& p = j.at("power_limits");
    if (p.contains("current")) d.power_limit = to_u(p.at("current"), where + ".power_limits.current");
    if (p.contains("default")) d.power_default_limit = to_u(p.at("default"), where + ".power_limits.default");
    if (p.contains("enforced"))
      d.power_enforced_limit = to_u(p.at("enforced"), where + ".power_limits.enforced");
    if (p.contains("min")) d.power_min_limit = to_u(p.at("min"), where + ".power_limits.min");
    if (p.contains("max")) d.power_max_limit = to_u(p.at("max"), where + ".power_limits.max");
  }
  if (j.contains("temperature_thresholds")) {
    for (const auto& [k, v] : j.at("temperature_thresholds").items()) {
      auto it = kThresholds.find(k);
      if (it == kThresholds.end())
        throw std::runtime_error(where + ".temperature_thresholds: unknown key " + k);
      d.temperature_thresholds[it->second] = to_u(v, where + ".temperature_thresholds." + k);
    }
  }
  if (j.contains("max_clocks")) {
    for (const auto& [k, v] : j.at("max_clocks").items()) {
      auto it = kClocks.find(k);
      if (it == kClocks.end()) throw std::runtime_error(where + ".max_clocks: unknown key " + k);
      d.max_clocks[it->second] = to_u(v, where + ".max_clocks." + k);
    }
  }
  if (j.contains("supported_clocks_event_reasons"))
    d.supported_clock_reasons =
        to_ull(j.at("supported_clocks_event_reasons"), where + ".supported_clocks_event_reasons");
  if (j.contains("num_fans")) d.num_fans = to_u(j.at("num_fans"), where + ".num_fans");
  auto mode_pair = [&](const char* key, std::optional<unsigned>& cur, std::optional<unsigned>& pend) {
    if (!j.contains(key)) return;
    const json& m = j.at(key);
    if (m.is_object()) {
      cur = to_flag(m.at("current"), where + "." + key + ".current");
      pend = m.contains("pending") ? to_flag(m.at("pending"), where + "." + key + ".pending") : *cur;
    } else {
      cur = pend = to_flag(m, where + "." + key);
    }
  };
  mode_pair("ecc_mode", d.ecc_current, d.ecc_pending);
  mode_pair("mig_mode", d.mig_current, d.mig_pending);
  if (j.contains("max_mig_devices"))
    d.max_mig_devices = to_u(j.at("max_mig_devices"), where + ".max_mig_devices");
  if (j.contains("mig_devices")) {
    unsigned i = 0;
    for (const auto& m : j.at("mig_devices")) {
      const std::string w = where + ".mig_devices[" + std::to_string(i) + "]";
      MigDevice md;
      md.gi_id = to_u(m.at("gpu_instance_id"), w + ".gpu_instance_id");
      md.ci_id = to_u(m.at("compute_instance_id"), w + ".compute_instance_id");
      md.uuid = m.value("uuid", "MIG-00000000-0000-0000-0000-00000000000" + std::to_string(i));
      md.name = m.value("name", d.name);
      if (m.contains("memory_total")) md.memory_total = to_ull(m.at("memory_total"), w + ".memory_total");
      if (m.contains("metrics")) md.metrics = parse_metrics(m.at("metrics"), hash_str(w, seed), w);
      d.mig_devices.push_back(std::move(md));
      ++i;
    }
  }
  if (j.contains("persistence_mode"))
    d.persistence_mode = to_flag(j.at("persistence_mode"), where + ".persistence_mode");
  if (j.contains("compute_mode"))
    d.compute_mode = named_or_number(j.at("compute_mode"), kComputeModes, where + ".compute_mode");
  if (j.contains("display_active"))
    d.display_active = to_flag(j.at("display_active"), where + ".display_active");
  if (j.contains("display_mode")) d.display_mode = to_flag(j.at("display_mode"), where + ".display_mode");
  if (j.contains("accounting_mode"))
    d.accounting_mode = to_flag(j.at("accounting_mode"), where + ".accounting_mode");
  if (j.contains("accounting_buffer_size"))
    d.accounting_buffer_size = to_u(j.at("accounting_buffer_size"), where + ".accounting_buffer_size");
  if (j.contains("driver_model")) {
    const json& m = j.at("driver_model");
    const std::string w = where + ".driver_model";
    if (m.is_object()) {
      d.driver_model_current = named_or_number(m.at("current"), kDriverModels, w + ".current");
      d.driver_model_pending = m.contains("pending")
                                   ? named_or_number(m.at("pending"), kDriverModels, w + ".pending")
                                   : *d.driver_model_current;
    } else {
      d.driver_model_current = d.driver_model_pending = named_or_number(m, kDriverModels, w);
    }
  }
  if (j.contains("inforom")) {
    const json& r = j.at("inforom");
    if (!r.is_object()) throw std::runtime_error(where + ".inforom must be an object");
    auto str = [&](const char* key, std::optional<std::string>& out) {
      if (r.contains(key) && !r.at(key).is_null()) out = r.at(key).get<std::string>();
    };
    str("image", d.inforom_image);
    str("oem", d.inforom_oem);
    str("ecc", d.inforom_ecc);
    str("power", d.inforom_power);
    if (r.contains("valid") && !r.at("valid").is_null())
      d.inforom_valid = to_flag(r.at("valid"), where + ".inforom.valid") != 0;
  }
  if (j.contains("fabric") && !j.at("fabric").is_null()) {
    const json& f = j.at("fabric");
    const std::string w = where + ".fabric";
    Fabric fb;
    if (f.contains("state")) fb.state = named_or_number(f.at("state"), kFabricStates, w + ".state");
    if (f.contains("status")) fb.status = parse_return_code(f.at("status"));
    if (f.contains("clique_id")) fb.clique_id = to_u(f.at("clique_id"), w + ".clique_id");
    if (f.contains("cluster_uuid")) {
      std::string hex;
      for (char ch : f.at("cluster_uuid").get<std::string>())
        if (ch != '-') hex += ch;
      const std::string bytes = from_hex(json(hex), w + ".cluster_uuid");
      if (bytes.size() != 16) throw std::runtime_error(w + ".cluster_uuid must be 16 bytes (32 hex digits)");
      std::copy(bytes.begin(), bytes.end(), fb.cluster_uuid.begin());
    }
    d.fabric = fb;
  }
  if (j.contains("supported_clocks")) {
    for (const auto& e : j.at("supported_clocks")) {
      ClockPair cp;
      cp.memory = to_u(e.at("memory"), where + ".supported_clocks.memory");
      for (const auto& g : e.at("graphics"))
        cp.graphics.push_back(to_u(g, where + ".supported_clocks.graphics"));
      d.supported_clocks.push_back(std::move(cp));
    }
  }
  if (j.contains("pcie")) {
    const json& p = j.at("pcie");
    d.pcie_gen_max = p.contains("gen_max") ? to_u(p.at("gen_max"), where + ".pcie.gen_max") : 0;
    d.pcie_gen_gpu_max =
        p.contains("gen_gpu_max") ? to_u(p.at("gen_gpu_max"), where + ".pcie.gen_gpu_max") : d.pcie_gen_max;
    d.pcie_gen_current =
        p.contains("gen_current") ? to_u(p.at("gen_current"), where + ".pcie.gen_current") : d.pcie_gen_max;
    d.pcie_width_max = p.contains("width_max") ? to_u(p.at("width_max"), where + ".pcie.width_max") : 0;
    d.pcie_width_current = p.contains("width_current")
                               ? to_u(p.at("width_current"), where + ".pcie.width_current")
                               : d.pcie_width_max;
  }
  if (j.contains("pcie_counters")) {
    const json& p = j.at("pcie_counters");
    const std::string w = where + ".pcie_counters";
    if (!p.is_object()) throw std::runtime_error(w + " must be an object");
    const std::string type = p.value("value_type", "UNSIGNED_LONG_LONG");
    if (type == "UNSIGNED_INT") {
      d.pcie_counters.unsigned_int = true;
    } else if (type != "UNSIGNED_LONG_LONG") {
      throw std::runtime_error(w + ".value_type must be \"UNSIGNED_LONG_LONG\" or \"UNSIGNED_INT\"");
    }
    d.pcie_counters.width_bits = d.pcie_counters.unsigned_int ? 32 : 64;
    if (p.contains("width_bits")) {
      d.pcie_counters.width_bits = to_u(p.at("width_bits"), w + ".width_bits");
      if (d.pcie_counters.width_bits != 32 && d.pcie_counters.width_bits != 64)
        throw std::runtime_error(w + ".width_bits must be 32 or 64");
    }
    if (p.contains("reset_at_s")) {
      if (!p.at("reset_at_s").is_number()) throw std::runtime_error(w + ".reset_at_s must be a number");
      d.pcie_counters.reset_at_s = p.at("reset_at_s").get<double>();
    }
    if (p.contains("timestamps"))
      d.pcie_counters.timestamps = to_flag(p.at("timestamps"), w + ".timestamps") != 0;
    if (p.contains("start_bytes"))
      d.pcie_counters.start_bytes = to_ull(p.at("start_bytes"), w + ".start_bytes");
  }
  d.gpm_supported = j.value("gpm_supported", false);
  if (j.contains("nvlink_links")) d.nvlink_links = to_u(j.at("nvlink_links"), where + ".nvlink_links");
  d.supported_event_types = j.contains("supported_event_types")
                                ? to_ull(j.at("supported_event_types"), where + ".supported_event_types")
                                : (d.ecc_current ? 0x1ULL | 0x2ULL : 0ULL) | 0x4ULL | 0x8ULL | 0x10ULL;
  if (j.contains("not_supported"))
    for (const auto& f : j.at("not_supported")) d.not_supported.insert(f.get<std::string>());
  if (j.contains("metrics")) d.metrics = parse_metrics(j.at("metrics"), seed, where);
  if (j.contains("process_util_period_ms"))
    d.process_util_period_ms = to_u(j.at("process_util_period_ms"), where + ".process_util_period_ms");
  if (j.contains("process_list_growth")) {
    const json& g = j.at("process_list_growth");
    d.process_growth_extra = to_u(g.value("extra", json(1)), where + ".process_list_growth.extra");
    d.process_growth_times = to_u(g.value("times", json(1)), where + ".process_list_growth.times");
    d.process_list_never_settles = g.value("never_settles", false);
  }
  return d;
}

/// Resolves a pid: a number, or "env:NAME" (nullopt when NAME is unset or not a number).
std::optional<unsigned> parse_pid(const json& j, const std::string& where) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s.rfind("env:", 0) != 0) throw std::runtime_error(where + ".pid: a number or \"env:NAME\"");
    const char* v = std::getenv(s.substr(4).c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    char* end = nullptr;
    const unsigned long pid = std::strtoul(v, &end, 10);
    if (*end != '\0') return std::nullopt;
    return static_cast<unsigned>(pid);
  }
  return to_u(j, where + ".pid");
}

Process parse_process(const json& j, std::uint64_t seed, const std::string& where, unsigned pid) {
  Process p;
  p.pid = pid;
  p.gpu = to_u(j.value("gpu", json(0)), where + ".gpu");
  const std::string type = j.value("type", "C");
  p.compute = type.find('C') != std::string::npos;
  p.graphics = type.find('G') != std::string::npos;
  p.mps = type.find('M') != std::string::npos;
  if (!p.compute && !p.graphics && !p.mps)
    throw std::runtime_error(where + ".type must be \"C\", \"G\", \"M\" or a combination like \"C+G\"");
  p.name = j.value("name", "python");
  p.start_s = j.value("start_s", 0.0);
  if (j.contains("end_s") && !j.at("end_s").is_null()) p.end_s = j.at("end_s").get<double>();
  if (j.contains("gpu_instance_id")) p.gi_id = to_u(j.at("gpu_instance_id"), where + ".gpu_instance_id");
  if (j.contains("compute_instance_id"))
    p.ci_id = to_u(j.at("compute_instance_id"), where + ".compute_instance_id");
  auto tl = [&](const char* key, Timeline& out) {
    if (!j.contains(key)) return;
    try {
      out = Timeline::parse(j.at(key), hash_str(key, seed));
    } catch (const std::exception& e) {
      throw std::runtime_error(where + "." + key + ": " + e.what());
    }
  };
  // An engine the scenario does not give has no sample (nvidia-smi pmon: "-"); 0 is a sampled zero.
  p.sm_util = p.mem_util = p.enc_util = p.dec_util = Timeline::constant(std::nan(""));
  tl("used_memory", p.used_memory);
  tl("sm_util", p.sm_util);
  tl("mem_util", p.mem_util);
  tl("enc_util", p.enc_util);
  tl("dec_util", p.dec_util);
  tl("sample_time_offset_s", p.sample_time_offset_s);
  return p;
}

ErrorRule parse_rule(const json& j, const std::string& where) {
  ErrorRule r;
  r.function = j.value("function", "*");
  if (j.contains("gpu") && !j.at("gpu").is_null()) r.gpu = to_u(j.at("gpu"), where + ".gpu");
  if (j.contains("from_s")) r.from_s = j.at("from_s").get<double>();
  if (j.contains("to_s")) r.to_s = j.at("to_s").get<double>();
  if (j.contains("calls"))
    for (const auto& c : j.at("calls")) r.calls.insert(to_ull(c, where + ".calls"));
  if (j.contains("call_from")) r.call_from = to_ull(j.at("call_from"), where + ".call_from");
  if (j.contains("call_to")) r.call_to = to_ull(j.at("call_to"), where + ".call_to");
  if (r.call_from > 0 && r.call_to == 0) r.call_to = ~0ULL;
  if (j.contains("return")) r.ret = parse_return_code(j.at("return"));
  if (j.contains("hang_ms")) r.hang_ms = to_u(j.at("hang_ms"), where + ".hang_ms");
  if (j.contains("mig_handle")) r.mig_handle = j.at("mig_handle").get<bool>();
  if (!r.ret && r.hang_ms == 0) throw std::runtime_error(where + " needs \"return\" or \"hang_ms\"");
  return r;
}

}  // namespace

int parse_return_code(const json& j) {
  if (j.is_number_integer()) return j.get<int>();
  if (!j.is_string()) throw std::runtime_error("return code must be a name or a number");
  const std::string s = j.get<std::string>();
  for (const auto& c : kCodes) {
    const std::string_view n = c.name;
    if (s == n || (n.starts_with("NVML_ERROR_") && s == n.substr(11))) return c.code;
  }
  throw std::runtime_error("unknown NVML return code \"" + s + "\"");
}

const char* return_code_name(int code) {
  for (const auto& c : kCodes)
    if (c.code == code) return c.name;
  return "NVML_ERROR_UNKNOWN";
}

Scenario parse_scenario(const std::string& text, const std::string& path) {
  const json j = json::parse(text);  // throws json::parse_error with position
  if (!j.is_object()) throw std::runtime_error("the top level must be a JSON object");
  Scenario s;
  s.path = path;
  s.name = j.value("name", "");
  s.generation = j.value("generation", "");
  s.driver_version = j.value("driver_version", s.driver_version);
  s.nvml_version = j.value("nvml_version", s.nvml_version);
  if (j.contains("cuda_version")) {
    const json& c = j.at("cuda_version");
    if (c.is_string()) {  // "13.1" → 13010
      const std::string v = c.get<std::string>();
      const auto dot = v.find('.');
      s.cuda_version = std::stoi(v.substr(0, dot)) * 1000 +
                       (dot == std::string::npos ? 0 : std::stoi(v.substr(dot + 1)) * 10);
    } else {
      s.cuda_version = c.get<int>();
    }
  }
  s.time_scale = j.value("time_scale", 1.0);
  s.start_offset_s = j.value("start_offset_s", 0.0);
  const std::uint64_t seed = j.value("seed", std::uint64_t{1});
  if (j.contains("init_error") && !j.at("init_error").is_null())
    s.init_error = parse_return_code(j.at("init_error"));
  if (j.contains("devices")) {
    unsigned i = 0;
    for (const auto& d : j.at("devices")) {
      const std::string w = "devices[" + std::to_string(i) + "]";
      s.devices.push_back(parse_device(d, hash_str(w, seed), w));
      ++i;
    }
  }
  if (j.contains("processes")) {
    unsigned i = 0;
    for (const auto& p : j.at("processes")) {
      const std::string w = "processes[" + std::to_string(i++) + "]";
      const auto pid = parse_pid(p.at("pid"), w);
      if (!pid) continue;  // "env:NAME" with NAME unset: the process is dropped
      s.processes.push_back(parse_process(p, hash_str(w, seed), w, *pid));
      if (s.processes.back().gpu >= s.devices.size()) throw std::runtime_error(w + ".gpu: no such device");
    }
  }
  if (j.contains("events")) {
    unsigned i = 0;
    for (const auto& e : j.at("events")) {
      const std::string w = "events[" + std::to_string(i++) + "]";
      Event ev;
      ev.t = e.value("t", 0.0);
      ev.gpu = to_u(e.value("gpu", json(0)), w + ".gpu");
      const json& type = e.at("type");
      if (type.is_string()) {
        auto it = kEventTypes.find(type.get<std::string>());
        if (it == kEventTypes.end()) throw std::runtime_error(w + ".type: unknown event type " + type.dump());
        ev.type = it->second;
      } else {
        ev.type = to_ull(type, w + ".type");
      }
      if (e.contains("data")) ev.data = to_ull(e.at("data"), w + ".data");
      if (e.contains("xid")) ev.data = to_ull(e.at("xid"), w + ".xid");
      if (e.contains("gpu_instance_id")) ev.gi_id = to_u(e.at("gpu_instance_id"), w + ".gpu_instance_id");
      if (e.contains("compute_instance_id"))
        ev.ci_id = to_u(e.at("compute_instance_id"), w + ".compute_instance_id");
      s.events.push_back(ev);
    }
    std::stable_sort(s.events.begin(), s.events.end(),
                     [](const Event& a, const Event& b) { return a.t < b.t; });
  }
  if (j.contains("errors")) {
    unsigned i = 0;
    for (const auto& e : j.at("errors"))
      s.errors.push_back(parse_rule(e, "errors[" + std::to_string(i++) + "]"));
  }
  return s;
}

Scenario load_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_scenario(ss.str(), path);
}

}  // namespace fake_nvml
