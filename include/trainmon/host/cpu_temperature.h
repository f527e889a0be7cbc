// SPDX-License-Identifier: Apache-2.0
// Finding the CPU temperature sensor under /sys (hwmon, else thermal zones).
#pragma once

#include <optional>
#include <string>

namespace trainmon {

/// A file holding a temperature in millidegrees Celsius, and what it is ("coretemp Package id 0").
struct TemperatureSensor {
  std::string input_path;  ///< ".../hwmon3/temp1_input" or ".../thermal_zone2/temp"
  std::string description;
};

/// Looks for the CPU package temperature under `sys_root`, in this order:
/// hwmon (class/hwmon/hwmon*/name): coretemp "Package id 0" (Intel), k10temp or zenpower "Tdie" then
/// "Tctl" (AMD; Tctl may carry a fan-control offset), cpu_thermal / soc_thermal (ARM), the first
/// temp*_input of those chips when no label matches; then thermal zones (class/thermal/
/// thermal_zone*/type): x86_pkg_temp, cpu-thermal, acpitz. nullopt when none exists (VMs, containers).
std::optional<TemperatureSensor> find_cpu_temperature_sensor(const std::string& sys_root);

}  // namespace trainmon
