// SPDX-License-Identifier: Apache-2.0
// CUDA_VISIBLE_DEVICES → NVML indices: integers only in PCI bus order (CUDA's default is fastest
// first), UUIDs always; the job's intended GPUs (store::job_gpus, D7) and a rank's GPU
// (resolve_rank_gpu) decided by the same rule.
#include <gtest/gtest.h>

#include "trainmon/diagnose/cuda_devices.h"
#include "trainmon/diagnose/train_series.h"
#include "trainmon/store/job_gpus.h"

namespace trainmon::diagnose {
namespace {

// The repro's machine (/work/shared/repro/cuda-order-fastest-first.json): NVML index 0 a T400,
// index 1 an H100 (with one MIG device here). CUDA's default fastest-first order makes the H100
// CUDA device 0, so "CUDA_VISIBLE_DEVICES=0" is NVML index 1 there, not 0.
std::vector<NvmlGpuRef> two_gpus() {
  return {{0, "GPU-0000aaaa-0000-4000-8000-000000000000", {}, {}},
          {1, "GPU-1111aaaa-0000-4000-8000-000000000001", {"MIG-2222bbbb-0000-4000-8000-000000000000"}, {}}};
}

TEST(CudaDevices, EntriesAndOrder) {
  EXPECT_EQ(cuda_visible_entries(" 0, GPU-1111 ,2"), (std::vector<std::string_view>{"0", "GPU-1111", "2"}));
  EXPECT_TRUE(cuda_visible_entries("  ").empty());
  EXPECT_TRUE(cuda_visible_entries("").empty());
  EXPECT_TRUE(cuda_pci_bus_id_order(" PCI_BUS_ID "));
  EXPECT_FALSE(cuda_pci_bus_id_order("FASTEST_FIRST"));
  EXPECT_FALSE(cuda_pci_bus_id_order(""));
}

TEST(CudaDevices, IntegerOnlyInPciBusOrder) {
  const auto gpus = two_gpus();
  EXPECT_FALSE(nvml_index_of_cuda_entry("0", false, gpus).has_value());  // fastest first: unknown
  EXPECT_EQ(nvml_index_of_cuda_entry("0", true, gpus), 0u);
  EXPECT_EQ(nvml_index_of_cuda_entry("1", true, gpus), 1u);
  EXPECT_FALSE(nvml_index_of_cuda_entry("2", true, gpus).has_value());  // no such GPU
  EXPECT_FALSE(nvml_index_of_cuda_entry("-1", true, gpus).has_value());
}

TEST(CudaDevices, UuidsInAnyOrder) {
  const auto gpus = two_gpus();
  EXPECT_EQ(nvml_index_of_cuda_entry("GPU-1111aaaa-0000-4000-8000-000000000001", false, gpus), 1u);
  EXPECT_EQ(nvml_index_of_cuda_entry("GPU-0000", false, gpus), 0u);  // a unique prefix, as CUDA
  EXPECT_EQ(nvml_index_of_cuda_entry("1111aaaa", false, gpus), 1u);  // without "GPU-" ("1111" is an index)
  EXPECT_FALSE(nvml_index_of_cuda_entry("1111", false, gpus).has_value());
  EXPECT_EQ(nvml_index_of_cuda_entry("MIG-2222bbbb", false, gpus), 1u);  // a MIG device: its GPU
  EXPECT_FALSE(nvml_index_of_cuda_entry("GPU-", false, gpus).has_value());
  EXPECT_FALSE(nvml_index_of_cuda_entry("GPU-9999", false, gpus).has_value());
  const std::vector<NvmlGpuRef> twins = {{0, "GPU-abc1", {}, {}}, {1, "GPU-abc2", {}, {}}};
  EXPECT_FALSE(nvml_index_of_cuda_entry("GPU-abc", false, twins).has_value());  // ambiguous
}

TEST(CudaDevices, WholeValue) {
  const auto gpus = two_gpus();
  EXPECT_FALSE(nvml_indices_of_cuda_visible_devices("0", false, gpus).has_value());
  EXPECT_EQ(nvml_indices_of_cuda_visible_devices("0", true, gpus), (std::vector<unsigned>{0}));
  // Every GPU by integer: the same set whatever the order.
  EXPECT_EQ(nvml_indices_of_cuda_visible_devices("1,0", false, gpus), (std::vector<unsigned>{0, 1}));
  EXPECT_FALSE(nvml_indices_of_cuda_visible_devices("0,0", false, gpus).has_value());
  EXPECT_EQ(nvml_indices_of_cuda_visible_devices("GPU-1111,GPU-0000", false, gpus),
            (std::vector<unsigned>{0, 1}));
  EXPECT_FALSE(nvml_indices_of_cuda_visible_devices("GPU-1111,0", false, gpus).has_value());
  EXPECT_EQ(nvml_indices_of_cuda_visible_devices("GPU-1111,0", true, gpus), (std::vector<unsigned>{0, 1}));
  EXPECT_FALSE(nvml_indices_of_cuda_visible_devices("", true, gpus).has_value());
  // One GPU: "0" is that GPU in any order.
  const std::vector<NvmlGpuRef> one = {{0, "GPU-x", {}, {}}};
  EXPECT_EQ(nvml_indices_of_cuda_visible_devices("0", false, one), (std::vector<unsigned>{0}));
}

TEST(JobGpus, NeverAnIntentFromAnIntegerAlone) {
  const auto gpus = two_gpus();
  using Labels = std::vector<std::pair<std::string, std::string>>;
  // The repro: CUDA_VISIBLE_DEVICES=0 without CUDA_DEVICE_ORDER, the job seen on GPU 1.
  EXPECT_EQ(store::job_gpus({1}, Labels{{"CUDA_VISIBLE_DEVICES", "0"}}, gpus), (std::vector<unsigned>{1}));
  EXPECT_EQ(
      store::job_gpus({1}, Labels{{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", "0"}}, gpus),
      (std::vector<unsigned>{0}));
  EXPECT_EQ(store::job_gpus({1}, Labels{{"CUDA_VISIBLE_DEVICES", "GPU-0000aaaa"}}, gpus),
            (std::vector<unsigned>{0}));
  EXPECT_EQ(store::job_gpus({}, Labels{{"CUDA_VISIBLE_DEVICES", "0"}}, gpus), (std::vector<unsigned>{}));
  EXPECT_EQ(store::job_gpus({1, 1, 0}, Labels{}, gpus), (std::vector<unsigned>{0, 1}));
  // A stored run: the same, from its GPUs' UUIDs and labels.
  store::RunInfo run;
  run.gpus = {{0, "GPU-0000aaaa-0000-4000-8000-000000000000", "T400", "", {}, {}, false},
              {1, "GPU-1111aaaa-0000-4000-8000-000000000001", "H100", "", {}, {}, true}};
  run.labels = {{"CUDA_VISIBLE_DEVICES", "0"}};
  EXPECT_EQ(store::job_gpus(run), (std::vector<unsigned>{1}));
  run.labels = {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", "0"}};
  EXPECT_EQ(store::job_gpus(run), (std::vector<unsigned>{0}));
}

TEST(ResolveRankGpu, TheSameRuleForARank) {
  auto gpus = two_gpus();
  TrainRank r;
  r.cuda_visible_devices = "0";
  EXPECT_FALSE(resolve_rank_gpu(r, gpus).has_value());  // an integer, fastest first: no guess
  r.cuda_device_order = "PCI_BUS_ID";
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 0u);
  r.cuda_visible_devices = "GPU-1111,GPU-0000";
  r.cuda_device_order.clear();
  r.cuda_device = 1;
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 0u);  // entry 1 is the T400's UUID
  r.cuda_device = 2;
  EXPECT_FALSE(resolve_rank_gpu(r, gpus).has_value());
  r.pid = 4711;
  gpus[1].procs = {{4711, 1ull << 30}};
  EXPECT_EQ(resolve_rank_gpu(r, gpus), 1u);  // the driver's process list first
  TrainRank bare;
  bare.cuda_device = 1;
  EXPECT_FALSE(resolve_rank_gpu(bare, two_gpus()).has_value());
  bare.cuda_device_order = "PCI_BUS_ID";
  EXPECT_EQ(resolve_rank_gpu(bare, two_gpus()), 1u);
}

}  // namespace
}  // namespace trainmon::diagnose
