#include "launch.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace cudabench::models {
namespace {

long whole(const char* name, const char* value, long lo, long hi) {
  const std::string v = value ? value : "";
  char* end = nullptr;
  errno = 0;
  const long x = v.empty() ? 0 : std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || v[0] == '+' || v[0] == ' ')
    throw LaunchError(std::string(name) + "=" + v + ": not a whole number");
  if (x < lo || x > hi)
    throw LaunchError(std::string(name) + "=" + v + ": expected " + std::to_string(lo) + ".." + std::to_string(hi));
  return x;
}

const char* required(const EnvLookup& env, const char* name, const char* launcher) {
  const char* v = env(name);
  if (!v || !*v) throw LaunchError(std::string(name) + " is not set (" + launcher + " launch needs it)");
  return v;
}

constexpr long kMaxWorld = 1 << 20;

}  // namespace

std::string first_slurm_host(const std::string& list) {
  // The first item at bracket depth 0, up to a comma.
  std::string item;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) break;
    if (c == ',' && depth == 0) break;
    item += c;
  }
  if (item.empty() || depth != 0) throw LaunchError("Slurm node list '" + list + "': cannot read its first host");
  // Each bracket group contributes its first element's start: "n[07-09]x[1-2]" -> "n07x1".
  std::string host;
  for (size_t i = 0; i < item.size();) {
    if (item[i] != '[') {
      host += item[i++];
      continue;
    }
    const auto close = item.find(']', i);
    std::string first = item.substr(i + 1, close - i - 1);
    first = first.substr(0, first.find(','));
    first = first.substr(0, first.find('-'));
    if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos)
      throw LaunchError("Slurm node list '" + list + "': cannot read its first host");
    host += first;
    i = close + 1;
  }
  return host;
}

std::optional<Launch> launch_from_env(const EnvLookup& env) {
  Launch l;
  const auto set = [&](const char* name) {
    const char* v = env(name);
    return v && *v;
  };
  if (set("RANK") || set("WORLD_SIZE")) {
    l.launcher = "torchrun";
    l.world = static_cast<int>(whole("WORLD_SIZE", required(env, "WORLD_SIZE", "a torchrun"), 1, kMaxWorld));
    l.rank = static_cast<int>(whole("RANK", required(env, "RANK", "a torchrun"), 0, l.world - 1));
    l.local_rank = set("LOCAL_RANK") ? static_cast<int>(whole("LOCAL_RANK", env("LOCAL_RANK"), 0, kMaxWorld)) : 0;
    l.master_addr = required(env, "MASTER_ADDR", "a torchrun");
    l.master_port = static_cast<int>(whole("MASTER_PORT", required(env, "MASTER_PORT", "a torchrun"), 1, 65535));
    const char* agent = env("TORCHELASTIC_USE_AGENT_STORE");
    if (agent && std::string(agent) == "True") {
      l.agent_store = true;
      const char* restarts = env("TORCHELASTIC_RESTART_COUNT");
      l.store_prefix = std::string("/worker/attempt_") + (restarts && *restarts ? restarts : "0");
    }
    return l;
  }
  if (!set("SLURM_STEP_NUM_TASKS")) return std::nullopt;  // not in an srun step
  l.launcher = "srun";
  l.world = static_cast<int>(whole("SLURM_STEP_NUM_TASKS", env("SLURM_STEP_NUM_TASKS"), 1, kMaxWorld));
  // A step of one task (srun --pty bash, a script started by srun) runs
  // plain processes, not a group of one.
  if (l.world == 1) return std::nullopt;
  l.rank = static_cast<int>(whole("SLURM_PROCID", required(env, "SLURM_PROCID", "an srun"), 0, l.world - 1));
  l.local_rank = static_cast<int>(whole("SLURM_LOCALID", required(env, "SLURM_LOCALID", "an srun"), 0, kMaxWorld));
  if (set("MASTER_ADDR")) {
    l.master_addr = env("MASTER_ADDR");
  } else {
    const char* list = set("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_JOB_NODELIST");
    if (!list || !*list) throw LaunchError("SLURM_STEP_NODELIST is not set (an srun launch needs it, or MASTER_ADDR)");
    l.master_addr = first_slurm_host(list);
    l.master_addr_is_node_name = true;
  }
  if (set("MASTER_PORT")) {
    l.master_port = static_cast<int>(whole("MASTER_PORT", env("MASTER_PORT"), 1, 65535));
  } else {
    const long job = whole("SLURM_JOB_ID", required(env, "SLURM_JOB_ID", "an srun"), 0, 1L << 40);
    const long step = set("SLURM_STEP_ID") ? whole("SLURM_STEP_ID", env("SLURM_STEP_ID"), 0, 1L << 32) : 0;
    l.master_port = static_cast<int>(15000 + (4 * job + step) % 10000);
  }
  return l;
}

std::string encode_settings(const Settings& s) {
  std::string out;
  for (const auto& [flag, value] : s) out += flag + "=" + value + "\n";
  return out;
}

Settings decode_settings(const std::string& text) {
  Settings out;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    const auto eq = line.find('=');
    if (eq != std::string::npos) out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    start = end + 1;
  }
  return out;
}

std::string settings_disagreement(const std::vector<Settings>& by_rank) {
  if (by_rank.empty()) return "";
  const Settings& first = by_rank.front();
  for (std::size_t r = 1; r < by_rank.size(); ++r) {
    for (std::size_t i = 0; i < std::max(first.size(), by_rank[r].size()); ++i) {
      const auto a = i < first.size() ? first[i] : std::pair<std::string, std::string>{"?", "(none)"};
      const auto b = i < by_rank[r].size() ? by_rank[r][i] : std::pair<std::string, std::string>{a.first, "(none)"};
      if (a.first != b.first)
        return "ranks disagree on what they check: rank 0 has " + a.first + ", rank " + std::to_string(r) + " has " +
               b.first + " (are they the same build of train?)";
      if (a.second != b.second)
        return "ranks disagree on " + a.first + ": " + a.second + " on rank 0, " + b.second + " on rank " +
               std::to_string(r) + " (give every rank the same)";
    }
  }
  return "";
}

}  // namespace cudabench::models
