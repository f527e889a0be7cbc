#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Synthetic cluster history in OpenMetrics text, for `promtool tsdb create-blocks-from openmetrics`:
NODES nodes x GPUS GPUs scraped every STEP_S seconds for HISTORY_S seconds, ending END_S (Unix s),
with the names and labels `trainmon serve` exports (src/serve/metrics_text.cpp): the DCGM_FI_DEV_*
gauges and trainmon_gpu_up per GPU (Hostname, gpu, UUID, pci_bus_id, device, modelName),
trainmon_labels_info and trainmon_exporter_last_tick_timestamp_seconds per node, and one rank per GPU
with the trainmon_train_* series (Hostname, run_id, run, rank, local_rank, node_rank, gpu and the run's
slurm_job_id). Nodes form jobs of JOB_NODES nodes (slurm_job_id 5000, 5001, ...).
Usage: cluster_history.py NODES GPUS HISTORY_S STEP_S END_S JOB_NODES > FILE"""
import sys


def main():
    nodes, gpus, history_s, step_s, end_s, job_nodes = (int(a) for a in sys.argv[1:7])
    times = list(range(end_s - history_s, end_s + 1, step_s))
    out = sys.stdout
    w = out.write
    model = 'modelName="NVIDIA H100 80GB HBM3"'

    def host(n):
        return f"node-{n:03d}"

    def job(n):
        return 5000 + n // job_nodes

    def gpu_labels(n, g):
        return (f'Hostname="{host(n)}",gpu="{g}",UUID="GPU-{n:08x}-0000-4000-8000-{g:012x}",'
                f'pci_bus_id="00000000:{0x18 + g * 0x10:02X}:00.0",device="nvidia{g}",{model}')

    def rank_labels(n, g):
        return (f'Hostname="{host(n)}",run_id="1",run="train",rank="{(n % job_nodes) * gpus + g}",'
                f'local_rank="{g}",node_rank="{n % job_nodes}",gpu="{g}",slurm_job_id="{job(n)}"')

    # Per GPU: (name, value at sample i of GPU (n, g)); deterministic, varying a little.
    def wobble(n, g, i, span):
        return (n * 7 + g * 13 + i * 5) % span

    gpu_metrics = [
        ("DCGM_FI_DEV_GPU_UTIL", lambda n, g, i: 85 + wobble(n, g, i, 11)),
        ("DCGM_FI_DEV_MEM_COPY_UTIL", lambda n, g, i: 30 + wobble(n, g, i, 9)),
        ("DCGM_FI_DEV_FB_USED", lambda n, g, i: 60000 + wobble(n, g, i, 500)),
        ("DCGM_FI_DEV_FB_FREE", lambda n, g, i: 20500 - wobble(n, g, i, 500)),
        ("DCGM_FI_DEV_FB_RESERVED", lambda n, g, i: 500),
        ("DCGM_FI_DEV_GPU_TEMP", lambda n, g, i: 60 + wobble(n, g, i, 8)),
        ("DCGM_FI_DEV_POWER_USAGE", lambda n, g, i: 550 + wobble(n, g, i, 60)),
        ("DCGM_FI_DEV_SM_CLOCK", lambda n, g, i: 1980),
        ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", lambda n, g, i: 0),
        ("trainmon_gpu_up", lambda n, g, i: 1),
    ]
    for name, value in gpu_metrics:
        for n in range(nodes):
            for g in range(gpus):
                lab = gpu_labels(n, g)
                for i, t in enumerate(times):
                    w(f"{name}{{{lab}}} {value(n, g, i)} {t}\n")
    for n in range(nodes):
        lab = f'Hostname="{host(n)}",slurm_job_id="{job(n)}",slurm_job_name="bench"'
        for t in times:
            w(f"trainmon_labels_info{{{lab}}} 1 {t}\n")
    for n in range(nodes):
        for t in times:
            w(f'trainmon_exporter_last_tick_timestamp_seconds{{Hostname="{host(n)}"}} {t} {t}\n')
    # Ranks: 2 steps a second of 64 samples, 0.45 s each with 0.02 s data wait; always computing.
    rank_metrics = [
        ("trainmon_train_steps_total", "", lambda t, k: 2 * k),
        ("trainmon_train_samples_total", "", lambda t, k: 128 * k),
        ("trainmon_train_data_wait_seconds_total", "", lambda t, k: round(0.04 * k, 3)),
        ("trainmon_train_last_step_timestamp_seconds", "", lambda t, k: t - 0.2),
        ("trainmon_train_phase", ',phase="data"', lambda t, k: 0),
        ("trainmon_train_phase", ',phase="compute"', lambda t, k: 1),
        ("trainmon_train_phase", ',phase="idle"', lambda t, k: 0),
        ("trainmon_train_phase_since_timestamp_seconds", "", lambda t, k: t - 0.1),
        ("trainmon_train_step_seconds", ',quantile="0.5"', lambda t, k: 0.45),
        ("trainmon_train_step_seconds", ',quantile="0.9"', lambda t, k: 0.48),
        ("trainmon_train_step_seconds", ',quantile="0.99"', lambda t, k: 0.5),
        ("trainmon_train_step_seconds_sum", "", lambda t, k: round(0.9 * k, 3)),
        ("trainmon_train_step_seconds_count", "", lambda t, k: 2 * k),
    ]
    for name, extra, value in rank_metrics:
        for n in range(nodes):
            for g in range(gpus):
                lab = rank_labels(n, g) + extra
                for k, t in enumerate(times):
                    w(f"{name}{{{lab}}} {value(t, k * step_s)} {t}\n")
    w("# EOF\n")


if __name__ == "__main__":
    main()
