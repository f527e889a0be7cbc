// SPDX-License-Identifier: Apache-2.0
// The cluster as `top --prometheus` shows it: every node's GPUs and ranks and the firing alerts,
// read from Prometheus (what `serve` on each node exports, docs/cluster.md) into the structures the
// local `top` renders (a Snapshot, live runs, findings), so that one renderer draws both.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainmon/cluster/prometheus_client.h"
#include "trainmon/core/snapshot.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/ipc/run_state_file.h"

namespace trainmon::cluster {

struct ClusterOptions {
  PromEndpoint endpoint;
  std::string job;            ///< only this job's nodes and ranks; empty: every node
  double stale_after_s = 30;  ///< a node whose newest snapshot is older than this is marked stale (ours:
                              ///< two 15 s scrapes missed)
  double lookback_s = 600;    ///< a node that sent nothing for this long is no longer listed
};

/// One node (a Hostname of trainmon_labels_info or of a GPU series).
struct ClusterNode {
  std::string host;
  std::string job_id;           ///< the first job label set (train_job, slurm_job_id, ...); empty: none
  double last_tick_unix_s = 0;  ///< trainmon_exporter_last_tick_timestamp_seconds; 0: unknown
  bool stale = false;           ///< no snapshot for stale_after_s
};

struct ClusterFrame {
  /// Every node's GPUs, ordered by job, node and GPU index; a GPU's info->group says its job and
  /// node ("job 4242 node-a"), with " STALE 45s" for a stale node. host.hostname: a summary;
  /// driver.driver_version: the DCGM_FI_DRIVER_VERSION label of the GPUs' series (several, joined
  /// with ", "); power limits: DCGM_FI_DEV_POWER_MGMT_LIMIT.
  Snapshot snapshot;
  std::vector<ipc::LiveRunState> runs;      ///< one per job with ranks; its findings: the job's alerts
  std::vector<diagnose::Finding> findings;  ///< firing alerts of no job
  std::vector<ClusterNode> nodes;
  std::string error;  ///< empty: read; else one sentence why nothing could be read (shown on screen)
  /// --job names a job of which Prometheus has no node and no rank within the lookback: `error`
  /// says so and lists the jobs it has (`top` exits 2, as `report --prometheus` for that job).
  bool job_not_found = false;
};

/// The job id of a series' labels (the precedence of `trainmon rules`' job_id; torchrun's "none" is
/// no id); empty when none is set.
std::string job_id_of(const std::map<std::string, std::string>& labels);

/// The instant query of one frame: the last value within `lookback_s` of every series top shows,
/// each labelled `trainmon_m` with its key, and the ranks' rates over 1 min. With `job`: only the
/// job's series (its nodes' by trainmon_labels_info joined on Hostname, its ranks' by their own
/// job labels: job_query.h), so that Prometheus sends no other node.
std::string frame_query(double lookback_s, std::string_view job = {});

/// Reads the cluster at `now_unix_s`: one instant query for the series and one for the alerts.
/// Never throws; a failed request leaves `error` set and the rest empty.
ClusterFrame read_cluster(const ClusterOptions& options, double now_unix_s);

}  // namespace trainmon::cluster
