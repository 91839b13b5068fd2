// Data-parallel training over c10d, the engine inside LibTorch: a TCPStore
// rendezvous, a Gloo (CPU) or NCCL (GPU) process group, and c10d's Reducer,
// which all-reduces the gradients in buckets while backward is still
// running, exactly as torch.nn.parallel.DistributedDataParallel does.
//
// What is ours: who the ranks are (launch.h), a heartbeat per rank in the
// store so that a failed collective can name the rank that was lost, a hash
// of the parameters to prove the replicas agree, and a timed all-reduce of
// the gradients' size for the bus bandwidth.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "launch.h"

namespace c10d {
class ProcessGroup;
class Reducer;
class Store;
}  // namespace c10d

namespace cudabench::models {

// Whether this build can train data-parallel (LibTorch and Gloo's headers
// were found at configure time), and whether it has NCCL.
bool have_data_parallel();
bool have_nccl();

// A failure of the group that names who was lost: what() is one line.
struct RankLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The replicas' parameters differ (a wrong result): what() names the step
// and the ranks.
struct ReplicasDiffer : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct AllreduceTiming {
  double bytes = 0;          // per all-reduce (all gradients, as the Reducer's buckets)
  int buckets = 0;
  double seconds = 0;        // median of the timed iterations, per step
  double algbw = 0;          // bytes / seconds
  double busbw = 0;          // algbw * 2(n-1)/n, the nccl-tests bus bandwidth
};

class DistContext {
 public:
  // Joins the group: the store (rank 0 serves it unless torchrun's agent
  // does), the heartbeat, the ranks' settings compared, then the process
  // group. `timeout` bounds every collective; the whole rendezvous ends
  // within it and a few seconds, whatever a peer does (a silent listener
  // on MASTER_PORT): else the process exits 3, naming the store. Throws
  // RankLost when a rank does not join in time, GroupBadInput when
  // MASTER_ADDR does not resolve or the ranks' `settings` differ.
  DistContext(const Launch& launch, const std::string& backend, torch::Device device,
              std::chrono::milliseconds timeout, const Settings& settings);
  ~DistContext();
  DistContext(const DistContext&) = delete;
  DistContext& operator=(const DistContext&) = delete;

  int rank() const { return launch_.rank; }
  int world() const { return launch_.world; }
  const Launch& launch() const { return launch_; }
  // The rendezvous store, "MASTER_ADDR:MASTER_PORT".
  std::string store_address() const { return launch_.master_addr + ":" + std::to_string(launch_.master_port); }
  const std::string& backend() const { return backend_; }
  torch::Device device() const { return device_; }
  const c10::intrusive_ptr<c10d::ProcessGroup>& group() const { return pg_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Sums `t` over the ranks, in place (a tensor on this rank's device).
  void all_reduce_sum(torch::Tensor& t);
  // Every rank's value of `x`, in rank order.
  std::vector<int64_t> all_gather(int64_t x);
  void broadcast_from_0(std::vector<torch::Tensor>& tensors);
  void barrier();
  // Hashes `params` and compares the hash over the ranks: returns it when
  // all agree, else throws ReplicasDiffer naming `when` and the ranks.
  uint64_t check_replicas(const std::vector<torch::Tensor>& params, const std::string& when);

  // After an exception from the group (or any error while in it): which
  // ranks are lost, in one line ("rank 2 of 4 (no heartbeat for 3.0 s)"),
  // or "" when every rank still beats. Watches the heartbeats for a while.
  std::string diagnose();
  // The orderly end: every rank has finished; rank 0, which serves the
  // store, waits until the others have left it.
  void finish();

  // Times `iterations` all-reduces of `bucket_bytes` (one per bucket, as
  // the Reducer sends them) after a warm-up; device time on GPUs.
  AllreduceTiming time_allreduce(const std::vector<int64_t>& bucket_bytes, int iterations);

 private:
  void resolve_master();
  void connect_store();
  std::string store_reach_failure(const std::string& why) const;  // "could not reach the store at ...: why"
  void compare_settings(const Settings& mine, std::chrono::steady_clock::time_point until);
  void claim_rank();
  void await_every_rank(const std::string& key, std::chrono::steady_clock::time_point until);
  void join_group();
  struct Heartbeat;
  void stop_heartbeat();

  Launch launch_;
  std::string backend_;
  torch::Device device_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  std::unique_ptr<Heartbeat> heartbeat_;
};

// DistributedDataParallel's part that matters for training: one Reducer on
// the model's parameters, buckets of at most `bucket_bytes` (the first one
// 1 MiB), rebuilt in backward order after the first step, as DDP does.
class DataParallel {
 public:
  DataParallel(DistContext& ctx, const std::vector<torch::Tensor>& params, int64_t bucket_bytes);
  ~DataParallel();
  void before_forward();   // rebuild buckets (first steps), then mark the forward
  void before_backward();  // arms the autograd hooks for this backward
  // The sizes in bytes of the Reducer's buckets now.
  std::vector<int64_t> bucket_bytes() const;

 private:
  DistContext& ctx_;
  std::vector<torch::Tensor> params_;
  std::shared_ptr<c10d::Reducer> reducer_;
};

// FNV-1a, 64 bits, over `n` bytes, continuing from `h`.
constexpr uint64_t kFnv1aStart = 1469598103934665603ull;
uint64_t fnv1a64(const void* data, std::size_t n, uint64_t h = kFnv1aStart);
// A hash of the parameters' values (FNV-1a over their bytes on the host):
// equal on every rank exactly when the replicas agree bit for bit.
uint64_t parameter_hash(const std::vector<torch::Tensor>& params);

}  // namespace cudabench::models
