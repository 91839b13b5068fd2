// Where a data-parallel rank learns who it is: from torchrun's variables
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) or from an srun
// step's (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, the first host
// of SLURM_STEP_NODELIST). No LibTorch here: plain functions of the
// environment, tested without launching anything.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cudabench::models {

// A launch variable that is malformed or missing: what() is one line that
// names it ("WORLD_SIZE=abc: not a whole number").
struct LaunchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Launch {
  std::string launcher;  // "torchrun" or "srun"
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr;  // where rank 0 (or torchrun's agent) keeps the rendezvous store
  int master_port = 0;
  bool master_addr_is_node_name = false;  // taken from a Slurm node list, not given
  // torchrun's agent already serves the store at MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank is a client, and keys
  // live under "/worker/attempt_<restart count>", as torch.distributed does.
  bool agent_store = false;
  std::string store_prefix;
  // This process serves the rendezvous store (rank 0 without torchrun's agent).
  bool serves_store() const { return rank == 0 && !agent_store; }
};

using EnvLookup = std::function<const char*(const char*)>;

// The launch this process is part of, or nullopt when no launcher set it up
// (a plain `train`). torchrun's variables win over Slurm's. Under Slurm only
// an srun step of two tasks or more counts (SLURM_STEP_NUM_TASKS): a batch
// script's own process, or anything run in a step of one task (srun --pty
// bash), is not a rank. MASTER_ADDR and MASTER_PORT, when set, override
// what Slurm's variables give; the port defaults to one derived from the
// job and step ids (15000 + (4 * job + step) % 10000).
std::optional<Launch> launch_from_env(const EnvLookup& env);

// The first host of a Slurm host list: "gpu[07-09,12],login1" -> "gpu07".
// Throws LaunchError on a list it cannot read.
std::string first_slurm_host(const std::string& nodelist);

// Bad input that shows only when the ranks meet (a MASTER_ADDR that does
// not resolve, ranks given different settings): what() is one line, exit 2.
struct GroupBadInput : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The settings every rank must be given alike, as (flag, value) pairs,
// published by each rank at the rendezvous and compared there.
using Settings = std::vector<std::pair<std::string, std::string>>;
std::string encode_settings(const Settings& s);  // one "flag=value" line each
Settings decode_settings(const std::string& text);
// "" when every rank has rank 0's settings, else one line naming the first
// flag that differs and its values: "ranks disagree on --seed: 1 on rank 0,
// 2 on rank 1 (give every rank the same)".
std::string settings_disagreement(const std::vector<Settings>& by_rank);

}  // namespace cudabench::models
