// SPDX-License-Identifier: Apache-2.0
// Advice texts shared by the local detectors and the Prometheus rules (`trainmon rules`,
// prom_rules.cpp), so that an alert says what the finding says: one source for each sentence.
#pragma once

#include <string_view>

#include "trainmon/core/i18n.h"  // N_: the catalogue has every sentence (shown translated)

namespace trainmon::diagnose::advice {

/// D2 when the busiest GPU is the straggler; `{}` is the GPU (an index, or a template in rules).
inline constexpr std::string_view kD2Straggler =
    N_("GPU{} is the straggler: in a synchronous job every GPU waits for the slowest. Fix that GPU, not the "
       "data loader: check its cooling (airflow, fans, blocked intakes) and power (`nvidia-smi -q -d "
       "PERFORMANCE,POWER,TEMPERATURE` shows why it slows down), or run the job without it.");
/// D2 otherwise.
inline constexpr std::string_view kD2Imbalance =
    N_("Healthy multi-GPU training moves all GPUs together (spread under 15 points). Check that every rank "
       "gets the same share of data (DistributedSampler), that the dataset sits on a local SSD, and tune "
       "DataLoader workers per rank with pin_memory=True; a single main process near one full core "
       "points at rank 0 doing extra work (logging, evaluation, data preparation).");
/// D3.
inline constexpr std::string_view kD3Leak =
    N_("The training process keeps memory it should release: look for global lists or caches in the Dataset "
       "(they are copied into every worker), tensors appended to Python lists (call .item() / "
       ".detach().cpu()), and call gc.collect() once per epoch. Until fixed the OOM killer will end the job "
       "(`Killed`).");
/// D3, when the process that grows is a DataLoader worker.
inline constexpr std::string_view kD3WorkerLeak = N_(
    "A DataLoader worker keeps what it loads: every worker holds its own copy of what the Dataset keeps. "
    "Keep "
    "per-sample data in numpy arrays or tensors, not Python lists or dicts (reading a Python object writes "
    "its "
    "reference count, so copy-on-write copies each page into every worker), do not cache loaded samples in "
    "the Dataset, and leave persistent_workers off (workers then start afresh every epoch); fewer workers "
    "and "
    "a lower prefetch_factor buy time. Until fixed the OOM killer ends a worker (`DataLoader worker ... is "
    "killed by signal: Killed`).");
/// D7, a GPU the job holds but leaves idle.
inline constexpr std::string_view kD7HeldUnused =
    N_("A GPU the job holds but never uses. Call torch.cuda.set_device(local_rank) before any CUDA work, set "
       "CUDA_VISIBLE_DEVICES per rank, and load checkpoints with map_location; in a multi-GPU job also check "
       "that DDP started on every GPU (see D8).");
/// D10.
inline constexpr std::string_view kD10Ecc = N_(
    "Uncorrectable memory errors: results on this GPU may be wrong. Stop training on it, save what you "
    "can, and have an administrator check the hardware (`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`, "
    "reset when idle, RMA if errors return).");
/// D12 by cause.
inline constexpr std::string_view kD12PowerCap =
    N_("The GPU holds its power limit by lowering clocks; normal under full load. If the enforced limit is "
       "below the default (`nvidia-smi -q -d POWER`) ask an administrator; see also D6.");
inline constexpr std::string_view kD12Thermal =
    N_("The GPU is too hot and slows down: check airflow, fan curves, blocked intakes and the room/rack "
       "temperature; spread jobs over GPUs that are not packed together.");
inline constexpr std::string_view kD12Hardware =
    N_("A hardware slowdown (HW slowdown / power brake): the board or the power supply signals a problem. "
       "Check PSU capacity and cables; report to the administrator if it persists.");
/// D14.
inline constexpr std::string_view kD14Lost =
    N_("The GPU needs a reset or a reboot by an administrator; check power, cooling and PCIe seating "
       "(`dmesg | grep -i xid`). trainmon never resets a GPU. Restart the job from its last checkpoint on "
       "healthy GPUs.");
/// D21, used memory at or above near_full_pct.
inline constexpr std::string_view kD21NearFull =
    N_("An OOM is close: lower the batch (see D22 for the largest safe one), enable AMP, or set "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.");
/// D23 without the ranks' stacks.
inline constexpr std::string_view kD23Hang =
    N_("The job makes no progress. Look at where each rank is: `py-spy dump --pid PID` (or run with the "
       "trainmon package, which sends its stacks when a hang is found). A rank that sleeps, waits on a "
       "lock or for data while the others sit in a collective holds them all; set a timeout in "
       "init_process_group(timeout=...) and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 so that a hang fails "
       "instead of holding the GPUs.");
/// D23 of a job with one process (no torch.distributed), when no stack came.
inline constexpr std::string_view kD23HangSingle =
    N_("The loop makes no progress. Look at where it is: `py-spy dump --pid PID` (or run with the "
       "trainmon package, which sends its stack when a hang is found): a lock, I/O, a sleep or an endless "
       "loop in the training loop itself.");
/// The same when it stalled waiting for data.
inline constexpr std::string_view kD23HangSingleData =
    N_("The loop makes no progress: it waits for its next batch. Its DataLoader's worker processes feed "
       "it: a worker stuck in the dataset's __getitem__ (I/O, a lock, a sleep) or gone holds it; look at "
       "them with `py-spy dump --pid PID` and set DataLoader(timeout=...) so that a stuck worker raises "
       "instead of hanging.");
/// D24 when no likely cause is known.
inline constexpr std::string_view kD24Straggler =
    N_("One rank is slower and every step waits for it. Compare that rank with the others: its GPU "
       "(clocks, temperature), its data share and loader, extra work it alone does (logging, "
       "checkpoints, evaluation on rank 0).");
/// D24 when the rank's data wait beyond the other ranks' is the cause.
inline constexpr std::string_view kD24DataWait =
    N_("This rank's loader is slower: check that every rank gets the same share of data "
       "(DistributedSampler), the same number of DataLoader workers and a local copy of the data.");
/// D24 in `trainmon rules` when the rank's compute per step (step - data wait - collective wait) is
/// the slower one.
inline constexpr std::string_view kD24Compute =
    N_("This rank computes more slowly and the others wait for it in every collective: compare its GPU "
       "(clocks, temperature, other processes on it), its CPU (a busy or shared core) and any work it alone "
       "does (logging, metrics, evaluation on rank 0).");
/// D27 in `trainmon rules` (the local D27 gives the same advice with its evidence).
inline constexpr std::string_view kD27CommBound =
    N_("Every rank waits in collectives for a large share of each step: keep DDP's overlap of the "
       "all-reduce with backward and tune bucket_cap_mb, use model.no_sync() for the micro-steps of gradient "
       "accumulation, a larger batch per rank, or compress the gradients (DDP comm hooks); check the link "
       "between the nodes and GPUs (`nvidia-smi topo -m`, NCCL_DEBUG=INFO for the transport NCCL chose).");

}  // namespace trainmon::diagnose::advice
