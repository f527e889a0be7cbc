// SPDX-License-Identifier: Apache-2.0
// Attribution parsers: /proc/PID/environ, Slurm / kubelet / container cgroup paths, the kubelet's
// pod log directories. Odd and hostile shapes included.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "trainmon/host/attribution.h"

using namespace trainmon;
using namespace std::string_literals;

namespace {

const std::string kCid = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kCid2 = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
const std::string kUid = "8a1b2c3d-1111-2222-3333-444455556666";

ProcessAttribution from_env(std::string_view raw, bool truncated = false) {
  ProcessAttribution a;
  parse_environ_attribution(raw, a, truncated);
  return a;
}

ProcessAttribution from_cgroup(std::string_view text) {
  ProcessAttribution a;
  apply_cgroup_attribution(parse_cgroup(text), a);
  return a;
}

}  // namespace

// ---- environ ------------------------------------------------------------------------------------

TEST(EnvironAttribution, SlurmAndTorchrunKeys) {
  const auto a = from_env(
      "PATH=/usr/bin\0SLURM_JOB_ID=4242\0SLURM_STEP_ID=0\0SLURM_JOB_USER=alice\0"
      "SLURM_JOB_PARTITION=gpu\0SLURM_JOB_ACCOUNT=lab\0SLURM_ARRAY_JOB_ID=4240\0"
      "SLURM_ARRAY_TASK_ID=2\0RANK=3\0LOCAL_RANK=1\0HOME=/root\0"s);
  EXPECT_EQ(a.slurm_job_id, "4242");
  EXPECT_EQ(a.slurm_step, "0");
  EXPECT_EQ(a.slurm_user, "alice");
  EXPECT_EQ(a.slurm_partition, "gpu");
  EXPECT_EQ(a.slurm_account, "lab");
  EXPECT_EQ(a.slurm_array_job_id, "4240");
  EXPECT_EQ(a.slurm_array_task_id, "2");
  EXPECT_EQ(a.rank, 3);
  EXPECT_EQ(a.local_rank, 1);
  EXPECT_EQ(a.sources, kAttributionEnviron);
  EXPECT_EQ(a.job_key(), "slurm:4242");
  EXPECT_EQ(a.job_key(true), "slurm:4242.0");
}

TEST(EnvironAttribution, OldNamesAndPrioritiesWhateverTheOrder) {
  // SLURM_JOB_ID wins over SLURM_JOBID, RANK over OMPI/PMI/SLURM_PROCID, in either order.
  auto a = from_env("SLURM_JOBID=1\0SLURM_JOB_ID=2\0SLURM_PROCID=9\0PMI_RANK=8\0RANK=7\0"s);
  EXPECT_EQ(a.slurm_job_id, "2");
  EXPECT_EQ(a.rank, 7);
  a = from_env(
      "SLURM_JOBID=5\0SLURM_STEPID=batch\0OMPI_COMM_WORLD_RANK=4\0SLURM_PROCID=9\0"
      "SLURM_LOCALID=3\0OMPI_COMM_WORLD_LOCAL_RANK=2\0"s);
  EXPECT_EQ(a.slurm_job_id, "5");
  EXPECT_EQ(a.slurm_step, "batch");
  EXPECT_EQ(a.rank, 4);
  EXPECT_EQ(a.local_rank, 2);
  a = from_env("SLURM_PROCID=6\0SLURM_LOCALID=0\0"s);
  EXPECT_EQ(a.rank, 6);
  EXPECT_EQ(a.local_rank, 0);
}

TEST(EnvironAttribution, NonNumericRanksIgnoredAndFallBack) {
  auto a = from_env("RANK=abc\0PMI_RANK=5\0LOCAL_RANK=-1\0SLURM_LOCALID= 2\0"s);
  EXPECT_EQ(a.rank, 5);  // RANK is not a number: the next key gives it
  EXPECT_FALSE(a.local_rank.has_value());
  a = from_env("RANK=99999999999999999999\0LOCAL_RANK=1e3\0RANK=+1\0"s);
  EXPECT_FALSE(a.rank.has_value());
  EXPECT_FALSE(a.local_rank.has_value());
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.sources, 0u);
}

TEST(EnvironAttribution, MalformedEntries) {
  // No '=', empty key, empty value, a key that only starts like ours, lower case.
  const auto a = from_env(
      "SLURM_JOB_ID\0=4242\0SLURM_JOB_ID=\0SLURM_JOB_IDX=1\0slurm_job_id=2\0"
      "SLURM_JOB_ID_=3\0 SLURM_JOB_ID=4\0"s);
  EXPECT_TRUE(a.slurm_job_id.empty());
  EXPECT_EQ(a.sources, 0u);
  EXPECT_TRUE(from_env("").empty());
  EXPECT_TRUE(from_env("\0\0\0\0"s).empty());
  EXPECT_TRUE(from_env("="s).empty());
}

TEST(EnvironAttribution, ValueWithEqualsQuotesNewlinesAndBadUtf8KeptAsText) {
  const auto a = from_env(
      "SLURM_JOB_ACCOUNT=a=b\0SLURM_JOB_USER=\"bob\"\nx\0SLURM_JOB_PARTITION=g\xff\xfe"
      "u\0"s);
  EXPECT_EQ(a.slurm_account, "a=b");
  EXPECT_EQ(a.slurm_user, "\"bob\"\nx");
  EXPECT_EQ(a.slurm_partition, "g\xEF\xBF\xBD\xEF\xBF\xBDu");
}

TEST(EnvironAttribution, LastEntryWithoutNulAndTheCap) {
  EXPECT_EQ(from_env("RANK=1\0SLURM_JOB_ID=77"s).slurm_job_id, "77");  // complete file, no final NUL
  // Cut by the read cap: the unterminated last entry may be "SLURM_JOB_ID=7" of "...=77": dropped.
  const auto a = from_env("RANK=1\0SLURM_JOB_ID=77"s, true);
  EXPECT_TRUE(a.slurm_job_id.empty());
  EXPECT_EQ(a.rank, 1);
}

TEST(EnvironAttribution, OverlongValueIgnored) {
  const std::string raw = "SLURM_JOB_USER=" + std::string(kAttributionValueMaxBytes + 1, 'x') + "\0RANK=2\0"s;
  const auto a = from_env(raw);
  EXPECT_TRUE(a.slurm_user.empty());
  EXPECT_EQ(a.rank, 2);
}

TEST(EnvironAttribution, BinaryAndHugeInput) {
  // 2 MiB of pseudo-random bytes (NULs, '=' and high bytes among them), then our keys: no crash, and
  // whatever it finds is valid UTF-8 text.
  std::string raw;
  raw.reserve(2 << 20);
  unsigned x = 12345;
  while (raw.size() < (2u << 20)) {
    x = x * 1103515245u + 12345u;
    raw.push_back(static_cast<char>(x >> 16));
  }
  raw += "\0SLURM_JOB_ID=9\0"s;
  const auto a = from_env(raw);
  EXPECT_EQ(a.slurm_job_id, "9");
  // The same bytes cut at the cap, as the reader gives them.
  const auto b = from_env(std::string_view(raw).substr(0, kEnvironMaxBytes), true);
  EXPECT_TRUE(b.slurm_job_id.empty());
  // A 2 MiB value of one variable followed by ours.
  const std::string big = "X=" + std::string(2 << 20, 'y') + "\0SLURM_JOB_ID=10\0"s;
  EXPECT_EQ(from_env(big).slurm_job_id, "10");
}

// ---- Slurm cgroup paths ------------------------------------------------------------------------

TEST(SlurmCgroupPath, V1Layouts) {
  auto s = slurm_from_cgroup_path("/slurm/uid_1000/job_4242/step_0/task_1");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->uid, "1000");
  EXPECT_EQ(s->job_id, "4242");
  EXPECT_EQ(s->step, "0");
  EXPECT_EQ(s->task, "1");
  s = slurm_from_cgroup_path("/slurm_node17/uid_0/job_12/step_batch");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->job_id, "12");
  EXPECT_EQ(s->step, "batch");
  EXPECT_TRUE(s->task.empty());
  s = slurm_from_cgroup_path("/slurm/uid_0/job_12");  // the job's own cgroup
  ASSERT_TRUE(s);
  EXPECT_EQ(s->job_id, "12");
  EXPECT_TRUE(s->step.empty());
  s = slurm_from_cgroup_path("/slurm/uid_0/job_12/step_extern/");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, "extern");
}

TEST(SlurmCgroupPath, V2Layouts) {
  auto s = slurm_from_cgroup_path("/system.slice/slurmstepd.scope/job_4242/step_0/user/task_3");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->job_id, "4242");
  EXPECT_EQ(s->step, "0");
  EXPECT_EQ(s->task, "3");
  EXPECT_TRUE(s->uid.empty());
  s = slurm_from_cgroup_path("/system.slice/slurmstepd.scope/job_7/step_extern");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, "extern");
  s = slurm_from_cgroup_path("/system.slice/node3_slurmstepd.scope/job_7/step_interactive/user/task_0");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, "interactive");
  EXPECT_EQ(s->task, "0");
  EXPECT_FALSE(slurm_from_cgroup_path("/system.slice/slurmstepd.scope/system"));
}

TEST(SlurmCgroupPath, NotSlurm) {
  EXPECT_FALSE(slurm_from_cgroup_path("/job_12/step_0"));  // no Slurm ancestor
  EXPECT_FALSE(slurm_from_cgroup_path("/user.slice/user-1000.slice/session-3.scope"));
  EXPECT_FALSE(slurm_from_cgroup_path("/slurm/uid_0/job_/step_0"));
  EXPECT_FALSE(slurm_from_cgroup_path("/slurm/uid_0/job_12x/step_0"));
  EXPECT_FALSE(slurm_from_cgroup_path("/slurm"));
  EXPECT_FALSE(slurm_from_cgroup_path(""));
  EXPECT_FALSE(slurm_from_cgroup_path("/"));
  EXPECT_FALSE(slurm_from_cgroup_path("////"));
  // An unknown step name is not taken as a step.
  const auto s = slurm_from_cgroup_path("/slurm/uid_0/job_5/step_weird name\n/task_0");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->job_id, "5");
  EXPECT_TRUE(s->step.empty());
}

// ---- Kubernetes and container cgroup paths ------------------------------------------------------

TEST(KubepodsCgroupPath, CgroupfsDriver) {
  auto k = kubepods_from_cgroup_path("/kubepods/burstable/pod" + kUid + "/" + kCid);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->pod_uid, kUid);
  EXPECT_EQ(k->qos, "burstable");
  EXPECT_EQ(k->container.container_id, kCid);
  EXPECT_EQ(k->container.runtime, "");
  k = kubepods_from_cgroup_path("/kubepods/besteffort/pod" + kUid + "/" + kCid);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->qos, "besteffort");
  k = kubepods_from_cgroup_path("/kubepods/pod" + kUid + "/" + kCid);  // guaranteed
  ASSERT_TRUE(k);
  EXPECT_EQ(k->qos, "guaranteed");
  EXPECT_EQ(k->container.container_id, kCid);
  k = kubepods_from_cgroup_path("/kubepods/burstable/pod" + kUid);  // the pod's own cgroup
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->container.container_id.empty());
  // kind: the node's kubelet below a prefix; a crio container under cgroupfs.
  k = kubepods_from_cgroup_path("/kubelet/kubepods/burstable/pod" + kUid + "/crio-" + kCid);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->container.runtime, "crio");
  // A static pod: its uid is a 32-hex-digit hash.
  k = kubepods_from_cgroup_path("/kubepods/burstable/pod0123456789abcdef0123456789abcdef/" + kCid);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->pod_uid, "0123456789abcdef0123456789abcdef");
}

TEST(KubepodsCgroupPath, SystemdDriver) {
  std::string u = kUid;
  std::replace(u.begin(), u.end(), '-', '_');
  auto k = kubepods_from_cgroup_path("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u +
                                     ".slice/cri-containerd-" + kCid + ".scope");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->pod_uid, kUid);  // underscores turned into dashes
  EXPECT_EQ(k->qos, "burstable");
  EXPECT_EQ(k->container.runtime, "containerd");
  EXPECT_EQ(k->container.container_id, kCid);
  k = kubepods_from_cgroup_path("/kubepods.slice/kubepods-pod" + u + ".slice/docker-" + kCid + ".scope");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->qos, "guaranteed");
  EXPECT_EQ(k->container.runtime, "docker");
  k = kubepods_from_cgroup_path(
      "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
      "kubelet-kubepods-besteffort-pod" +
      u + ".slice/crio-" + kCid + ".scope");
  // A kubelet whose cgroup root is /kubelet (kind with the systemd driver): "kubelet-kubepods-...".
  ASSERT_TRUE(k);
  EXPECT_EQ(k->pod_uid, kUid);
  EXPECT_EQ(k->qos, "besteffort");
  EXPECT_EQ(k->container.runtime, "crio");
  k = kubepods_from_cgroup_path(
      "/kubelet.slice/kubepods.slice/kubepods-besteffort.slice/"
      "kubepods-besteffort-pod" +
      u + ".slice/crio-" + kCid + ".scope");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->qos, "besteffort");
  EXPECT_EQ(k->container.runtime, "crio");
  // cgroup v2 nested below the container's scope.
  k = kubepods_from_cgroup_path("/kubepods.slice/kubepods-pod" + u + ".slice/cri-containerd-" + kCid +
                                ".scope/init");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->container.container_id, kCid);
}

TEST(KubepodsCgroupPath, NotKubernetes) {
  EXPECT_FALSE(kubepods_from_cgroup_path("/pod" + kUid + "/" + kCid));  // no kubepods ancestor
  EXPECT_FALSE(kubepods_from_cgroup_path("/kubepods/burstable/podman/" + kCid));
  EXPECT_FALSE(kubepods_from_cgroup_path("/kubepods/burstable/pod/" + kCid));
  EXPECT_FALSE(kubepods_from_cgroup_path("/kubepods.slice/kubepods-pod.slice"));
  EXPECT_FALSE(kubepods_from_cgroup_path("/system.slice/docker-" + kCid + ".scope"));
  EXPECT_FALSE(kubepods_from_cgroup_path(""));
  EXPECT_FALSE(kubepods_from_cgroup_path("/kubepods"));
  EXPECT_FALSE(kubepods_from_cgroup_path("/kubepods/burstable/pod" + kUid + " x/" + kCid));
}

TEST(ContainerCgroupPath, Runtimes) {
  auto c = container_from_cgroup_path("/docker/" + kCid);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->runtime, "docker");
  EXPECT_EQ(c->container_id, kCid);
  c = container_from_cgroup_path("/system.slice/docker-" + kCid + ".scope");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->runtime, "docker");
  c = container_from_cgroup_path("/machine.slice/libpod-" + kCid + ".scope/container");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->runtime, "podman");
  c = container_from_cgroup_path("/libpod_parent/libpod-" + kCid);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->runtime, "podman");
  c = container_from_cgroup_path("/system.slice/containerd.service/cri-containerd-" + kCid + ".scope");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->runtime, "containerd");
  c = container_from_cgroup_path("/system.slice/crio-" + kCid + ".scope");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->runtime, "crio");
  c = container_from_cgroup_path("/default/" + kCid);  // containerd without CRI: runtime unknown
  ASSERT_TRUE(c);
  EXPECT_EQ(c->runtime, "");
  // The deepest id wins (docker in docker).
  c = container_from_cgroup_path("/docker/" + kCid + "/docker/" + kCid2);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->container_id, kCid2);
  EXPECT_FALSE(container_from_cgroup_path("/docker/" + kCid.substr(1)));  // 63 digits
  EXPECT_FALSE(container_from_cgroup_path("/docker/" + kCid + "0"));      // 65 digits
  EXPECT_FALSE(container_from_cgroup_path("/user.slice/user-1000.slice"));
}

// ---- apply_cgroup_attribution ---------------------------------------------------------------------

TEST(CgroupAttribution, HybridV1PathsAndV2Root) {
  const auto a = from_cgroup(
      "12:memory:/slurm/uid_0/job_4242/step_0/task_0\n"
      "11:cpu,cpuacct:/slurm/uid_0/job_4242/step_0/task_0\n"
      "1:name=systemd:/system.slice/slurmd.service\n"
      "0::/\n");
  EXPECT_EQ(a.slurm_job_id, "4242");
  EXPECT_EQ(a.slurm_step, "0");
  EXPECT_EQ(a.sources, kAttributionCgroup);
  EXPECT_TRUE(a.pod_uid.empty());
}

TEST(CgroupAttribution, EnvironmentWinsForTheJob) {
  ProcessAttribution a;
  parse_environ_attribution("SLURM_JOB_ID=4242\0"s, a);
  apply_cgroup_attribution(parse_cgroup("0::/system.slice/slurmstepd.scope/job_4242/step_3/user/task_0\n"),
                           a);
  EXPECT_EQ(a.slurm_job_id, "4242");
  EXPECT_EQ(a.slurm_step, "3");  // the same job: the path's step fills the gap
  EXPECT_EQ(a.sources, kAttributionEnviron | kAttributionCgroup);
  ProcessAttribution b;
  parse_environ_attribution("SLURM_JOB_ID=1\0SLURM_STEP_ID=0\0"s, b);
  apply_cgroup_attribution(parse_cgroup("0::/system.slice/slurmstepd.scope/job_2/step_5\n"), b);
  EXPECT_EQ(b.slurm_job_id, "1");
  EXPECT_EQ(b.slurm_step, "0");
  EXPECT_EQ(b.sources, kAttributionEnviron);
}

TEST(CgroupAttribution, PodAndContainer) {
  const auto a = from_cgroup("0::/kubepods/burstable/pod" + kUid + "/" + kCid + "\n");
  EXPECT_EQ(a.pod_uid, kUid);
  EXPECT_EQ(a.container_id, kCid);
  EXPECT_EQ(a.job_key(), "pod:" + kUid);
  const auto d = from_cgroup("0::/system.slice/docker-" + kCid + ".scope\n");
  EXPECT_TRUE(d.pod_uid.empty());
  EXPECT_EQ(d.container_runtime, "docker");
  EXPECT_EQ(d.job_key(), "container:" + kCid.substr(0, 12));
  EXPECT_TRUE(from_cgroup("").empty());
  EXPECT_TRUE(from_cgroup("garbage\n\0\xff:\n::\n"s).empty());
  EXPECT_TRUE(from_cgroup("0::/user.slice/user-0.slice/session-1.scope\n").empty());
}

// ---- kubelet pod log directories ------------------------------------------------------------------

TEST(KubeletNames, PodLogDirName) {
  auto p = parse_pod_log_dir_name("team-a_trainer-0_" + kUid);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pod_namespace, "team-a");
  EXPECT_EQ(p->pod_name, "trainer-0");
  EXPECT_EQ(p->pod_uid, kUid);
  EXPECT_FALSE(parse_pod_log_dir_name("a_b"));
  EXPECT_FALSE(parse_pod_log_dir_name("a_b_c_d"));
  EXPECT_FALSE(parse_pod_log_dir_name("_b_c"));
  EXPECT_FALSE(parse_pod_log_dir_name("a__c"));
  EXPECT_FALSE(parse_pod_log_dir_name("a_b_"));
  EXPECT_FALSE(parse_pod_log_dir_name("a_b c_" + kUid));
  EXPECT_FALSE(parse_pod_log_dir_name("a_b\n_" + kUid));
  EXPECT_FALSE(parse_pod_log_dir_name(""));
}

TEST(KubeletNames, ContainerLogName) {
  auto c = parse_container_log_name("trainer-0_team-a_pytorch-" + kCid + ".log");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->pod_name, "trainer-0");
  EXPECT_EQ(c->pod_namespace, "team-a");
  EXPECT_EQ(c->container_name, "pytorch");
  EXPECT_EQ(c->container_id, kCid);
  EXPECT_FALSE(parse_container_log_name("trainer-0_team-a_pytorch-" + kCid));
  EXPECT_FALSE(parse_container_log_name("trainer-0_team-a_pytorch_" + kCid + ".log"));
  EXPECT_FALSE(parse_container_log_name("trainer-0_pytorch-" + kCid + ".log"));
  EXPECT_FALSE(parse_container_log_name("-" + kCid + ".log"));
  EXPECT_FALSE(parse_container_log_name(".log"));
}

namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/trainmon_kubelet_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

void touch(const std::filesystem::path& p) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << "";
}

}  // namespace

TEST(KubeletPods, NamesFromTheLogDirectories) {
  TempDir t;
  const auto pods = t.path / "pods";
  const std::string uid2 = "99999999-1111-2222-3333-444455556666";
  touch(pods / ("team-a_trainer-0_" + kUid) / "pytorch" / "0.log");
  touch(pods / ("team-b_two-ctr_" + uid2) / "main" / "0.log");
  touch(pods / ("team-b_two-ctr_" + uid2) / "sidecar" / "0.log");
  touch(pods / "not-a-pod-dir" / "x" / "0.log");
  touch(pods / "stray_file_here");  // a file, not a directory
  std::filesystem::create_directories(t.path / "containers");
  std::filesystem::create_symlink(pods / ("team-b_two-ctr_" + uid2) / "sidecar" / "0.log",
                                  t.path / "containers" / ("two-ctr_team-b_sidecar-" + kCid2 + ".log"));

  KubeletPods k(pods.string(), std::chrono::milliseconds(0));
  ProcessAttribution a;
  a.pod_uid = kUid;
  a.container_id = kCid;
  ASSERT_TRUE(k.apply(a));
  EXPECT_EQ(a.pod_namespace, "team-a");
  EXPECT_EQ(a.pod_name, "trainer-0");
  EXPECT_EQ(a.container_name, "pytorch");  // the pod's only container
  EXPECT_EQ(a.sources, kAttributionKubelet);
  EXPECT_EQ(a.job_key(), "pod:team-a/trainer-0");

  ProcessAttribution b;  // two containers: matched by id through /var/log/containers
  b.pod_uid = uid2;
  b.container_id = kCid2;
  ASSERT_TRUE(k.apply(b));
  EXPECT_EQ(b.container_name, "sidecar");
  ProcessAttribution c;  // two containers, unknown id: no container name
  c.pod_uid = uid2;
  c.container_id = kCid;
  ASSERT_TRUE(k.apply(c));
  EXPECT_EQ(c.pod_name, "two-ctr");
  EXPECT_TRUE(c.container_name.empty());

  ProcessAttribution d;  // a pod without a log directory
  d.pod_uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_FALSE(k.apply(d));
  EXPECT_TRUE(d.pod_name.empty());

  // A pod whose directory appears later is found at the next refresh.
  touch(pods / ("late_pod-x_" + d.pod_uid) / "c" / "0.log");
  EXPECT_TRUE(k.apply(d));
  EXPECT_EQ(d.pod_name, "pod-x");
}

TEST(KubeletPods, MissingRootAndNoPod) {
  KubeletPods k("/nonexistent/trainmon/pods");
  ProcessAttribution a;
  a.pod_uid = kUid;
  EXPECT_FALSE(k.apply(a));
  ProcessAttribution none;
  EXPECT_FALSE(k.apply(none));
  KubeletPods empty("");
  EXPECT_FALSE(empty.apply(a));
}
