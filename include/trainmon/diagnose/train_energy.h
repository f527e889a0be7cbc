// SPDX-License-Identifier: Apache-2.0
// What a training rank's steps cost in energy (docs/python.md "Energy"): the growth of NVML's
// total-energy counter (nvmlDeviceGetTotalEnergyConsumption) of the rank's GPU over the rank's steps,
// divided by the steps, samples and epochs it took. Pure: reads a RunSeries (GpuSeries::energy_j,
// the GPUs' process lists, the ranks' rows and epoch_end events), the same live and offline.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

#include "trainmon/diagnose/series.h"

namespace trainmon::diagnose {

/// One rank's GPU energy over its steps.
struct RankEnergy {
  unsigned gpu = 0;  ///< NVML index of the rank's GPU (TrainRank::gpu)
  /// Joules the GPU's counter grew from t0 to t1 (the counter linearly interpolated between ticks; a
  /// drop is a reset, the value after it counted from 0, as recorder::RunStats does). The whole GPU's:
  /// the rank's own only when `shared` is false.
  double energy_j = 0;
  double t0 = 0, t1 = 0;  ///< run clock: the rank's first step's start .. its last step's end, within
                          ///< the ticks that read the counter (steps outside are not counted)
  double steps = 0;       ///< the rank's steps that ended in (t0, t1]
  double samples = std::numeric_limits<double>::quiet_NaN();  ///< their samples; NaN: not sent
  std::size_t epochs = 0;  ///< epochs the job completed (distinct epoch numbers of epoch_end events)
  /// Another rank of the run resolves to the same GPU, or another process (not a rank of the run on
  /// another GPU: DDP's small context of a rank on GPU 0) is in the GPU's process list during the
  /// span: the energy is not the rank's alone, and no per-step figure is given.
  bool shared = false;

  /// energy_j / steps; NaN when shared.
  [[nodiscard]] double j_per_step() const noexcept {
    return shared || steps <= 0 ? std::numeric_limits<double>::quiet_NaN() : energy_j / steps;
  }
  /// energy_j / samples; NaN when shared or no samples were sent.
  [[nodiscard]] double j_per_sample() const noexcept {
    return shared || !(samples > 0) ? std::numeric_limits<double>::quiet_NaN() : energy_j / samples;
  }
  /// Watt-hours over the span (energy_j / 3600); the whole GPU's when shared.
  [[nodiscard]] double wh() const noexcept { return energy_j / 3600.0; }
  /// wh() / epochs: the rank's energy over its steps spread over the epochs the job completed (a job
  /// stopped inside an epoch counts that epoch's part too); NaN when shared or no epoch ended.
  [[nodiscard]] double wh_per_epoch() const noexcept {
    return shared || epochs == 0 ? std::numeric_limits<double>::quiet_NaN()
                                 : wh() / static_cast<double>(epochs);
  }
};

/// The energy of the GPU of `rank` (one of `s.train.ranks`) over its steps. nullopt (say nothing,
/// never zero) when the rank's GPU is unknown, the GPU's counter is unsupported or read fewer than
/// twice, or no step of the rank lies within the ticks that read it.
std::optional<RankEnergy> rank_energy(const RunSeries& s, const RankSeries& rank);

}  // namespace trainmon::diagnose
