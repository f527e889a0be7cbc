// SPDX-License-Identifier: Apache-2.0
// NVML return codes → names, sentences and ReadStatus, in the one place that maps them.
#include "device/nvml/nvml_error.h"

#include <gtest/gtest.h>

#include "device/nvml/nvml_api.h"

namespace trainmon::nvml {
namespace {

TEST(NvmlError, StatusMapping) {
  EXPECT_EQ(nvml_read_status(NVML_SUCCESS), ReadStatus::ok);
  EXPECT_EQ(nvml_read_status(NVML_ERROR_NOT_SUPPORTED), ReadStatus::not_supported);
  EXPECT_EQ(nvml_read_status(NVML_ERROR_NO_PERMISSION), ReadStatus::no_permission);
  EXPECT_EQ(nvml_read_status(NVML_ERROR_GPU_IS_LOST), ReadStatus::gpu_lost);
  EXPECT_EQ(nvml_read_status(NVML_ERROR_RESET_REQUIRED), ReadStatus::gpu_lost);
  EXPECT_EQ(nvml_read_status(NVML_ERROR_TIMEOUT), ReadStatus::timeout);
  EXPECT_EQ(nvml_read_status(NVML_ERROR_FUNCTION_NOT_FOUND), ReadStatus::missing_symbol);
  EXPECT_EQ(nvml_read_status(NVML_ERROR_UNKNOWN), ReadStatus::failed);
  EXPECT_EQ(nvml_read_status(NVML_ERROR_INSUFFICIENT_SIZE), ReadStatus::failed);
  EXPECT_EQ(nvml_read_status(12345), ReadStatus::failed);
}

TEST(NvmlError, NamesAndSentences) {
  EXPECT_EQ(nvml_error_name(NVML_ERROR_GPU_IS_LOST), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_EQ(nvml_error_name(NVML_ERROR_UNKNOWN), "NVML_ERROR_UNKNOWN");
  EXPECT_EQ(nvml_error_name(NVML_ERROR_RESET_TYPE_NOT_SUPPORTED), "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED");
  EXPECT_EQ(nvml_error_name(777), "");
  EXPECT_EQ(nvml_error_name_or_number(777), "NVML_ERROR_(777)");
  EXPECT_NE(nvml_error_sentence(NVML_ERROR_DRIVER_NOT_LOADED).find("kernel driver"), std::string_view::npos);
  for (int code = 0; code <= 30; ++code) EXPECT_FALSE(nvml_error_name(code).empty()) << code;
}

TEST(NvmlError, ErrorKeepsCodeNameAndWhat) {
  Error e = nvml_error(NVML_ERROR_DRIVER_NOT_LOADED, "nvmlInit_v2");
  EXPECT_EQ(e.domain, ErrorDomain::nvml);
  EXPECT_EQ(e.code, 9);
  EXPECT_EQ(e.name, "NVML_ERROR_DRIVER_NOT_LOADED");
  EXPECT_EQ(e.message, "nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED (the NVIDIA kernel driver is not loaded)");
}

TEST(NvmlError, FailKeepsTheCode) {
  auto r = nvml_fail<unsigned>(NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(r.status, ReadStatus::no_permission);
  EXPECT_EQ(r.code, 4);
  EXPECT_EQ(r.value, 0u);
}

TEST(NvmlError, DeviceFatalCodes) {
  EXPECT_TRUE(nvml_device_fatal(NVML_ERROR_GPU_IS_LOST));
  EXPECT_TRUE(nvml_device_fatal(NVML_ERROR_RESET_REQUIRED));
  EXPECT_FALSE(nvml_device_fatal(NVML_ERROR_UNKNOWN));
}

}  // namespace
}  // namespace trainmon::nvml
