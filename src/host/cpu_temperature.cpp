// SPDX-License-Identifier: Apache-2.0
// Discovery of the CPU temperature file under /sys/class/hwmon and /sys/class/thermal.
#include "trainmon/host/cpu_temperature.h"

#include <dirent.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "file_reader.h"
#include "parse_util.h"

namespace trainmon {

using namespace host_detail;

namespace {

/// Entries of `dir` whose names start with `prefix`, sorted naturally (hwmon2 before hwmon10).
std::vector<std::string> list_prefixed(const std::string& dir, std::string_view prefix) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.starts_with(prefix)) out.emplace_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return out;
}

std::string read_trimmed(FileReader& r, const std::string& path) {
  if (r.read(path, 4096) != 0) return {};
  return std::string(trim(r.text()));
}

}  // namespace

std::optional<TemperatureSensor> find_cpu_temperature_sensor(const std::string& sys_root) {
  FileReader r;
  // hwmon chips, best chip first.
  constexpr std::array<std::string_view, 5> chips = {"coretemp", "k10temp", "zenpower", "cpu_thermal",
                                                     "soc_thermal"};
  constexpr std::array<std::string_view, 3> labels = {"Package id 0", "Tdie", "Tctl"};
  const std::string hwmon_dir = sys_root + "/class/hwmon";
  const auto hwmons = list_prefixed(hwmon_dir, "hwmon");
  for (const auto chip : chips) {
    for (const auto& h : hwmons) {
      const std::string base = hwmon_dir + "/" + h;
      if (read_trimmed(r, base + "/name") != chip) continue;
      const auto inputs = list_prefixed(base, "temp");
      std::string first_input;
      for (const auto label : labels) {
        for (const auto& f : inputs) {
          if (!f.ends_with("_label")) continue;
          if (read_trimmed(r, base + "/" + f) != label) continue;
          const std::string input = base + "/" + f.substr(0, f.size() - 6) + "_input";
          if (r.read(input, 64) == 0)
            return TemperatureSensor{input, std::string(chip) + " " + std::string(label)};
        }
      }
      for (const auto& f : inputs) {
        if (f.ends_with("_input") && r.read(base + "/" + f, 64) == 0) {
          return TemperatureSensor{base + "/" + f, std::string(chip) + " " + f};
        }
      }
    }
  }
  // Thermal zones.
  constexpr std::array<std::string_view, 4> zone_types = {"x86_pkg_temp", "cpu-thermal", "cpu_thermal",
                                                          "acpitz"};
  const std::string zone_dir = sys_root + "/class/thermal";
  const auto zones = list_prefixed(zone_dir, "thermal_zone");
  for (const auto type : zone_types) {
    for (const auto& z : zones) {
      const std::string base = zone_dir + "/" + z;
      if (read_trimmed(r, base + "/type") != type) continue;
      if (r.read(base + "/temp", 64) == 0) return TemperatureSensor{base + "/temp", std::string(type)};
    }
  }
  return std::nullopt;
}

}  // namespace trainmon
