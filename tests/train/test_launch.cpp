// Who a data-parallel rank is, from torchrun's or srun's variables.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "train/launch.h"

namespace cb = cudabench::models;

namespace {

using Env = std::map<std::string, std::string>;

std::optional<cb::Launch> launch(const Env& env) {
  return cb::launch_from_env([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string error_of(const Env& env) {
  try {
    launch(env);
  } catch (const cb::LaunchError& e) {
    return e.what();
  }
  return "";
}

const Env kTorchrun = {{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                       {"MASTER_ADDR", "node07"}, {"MASTER_PORT", "29500"}};
const Env kSrun = {{"SLURM_PROCID", "5"},         {"SLURM_STEP_NUM_TASKS", "6"}, {"SLURM_LOCALID", "2"},
                   {"SLURM_STEP_NODELIST", "gpu[07-09,12]"}, {"SLURM_JOB_ID", "4242"},    {"SLURM_STEP_ID", "1"},
                   {"SLURM_NTASKS", "6"}};

// Who the launch says this rank is.
void expect_rank(const std::optional<cb::Launch>& l, const std::string& launcher, int rank, int world, int local_rank,
                 const std::string& addr, int port) {
  ASSERT_TRUE(l);
  EXPECT_EQ(l->launcher, launcher);
  EXPECT_EQ(l->rank, rank);
  EXPECT_EQ(l->world, world);
  EXPECT_EQ(l->local_rank, local_rank);
  EXPECT_EQ(l->master_addr, addr);
  EXPECT_EQ(l->master_port, port);
}

}  // namespace

TEST(Launch, PlainProcessIsNotARank) {
  EXPECT_FALSE(launch({}).has_value());
  // A batch script's own process has Slurm's job variables but no step.
  EXPECT_FALSE(launch({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "7"}}).has_value());
  // Nor is a step of one task (srun --pty bash; a script srun started).
  auto one = kSrun;
  one["SLURM_STEP_NUM_TASKS"] = "1";
  one["SLURM_PROCID"] = "0";
  EXPECT_FALSE(launch(one).has_value());
  // torchrun's one rank is a group of one (NCCL at world size 1).
  auto t = kTorchrun;
  t["RANK"] = "0";
  t["WORLD_SIZE"] = "1";
  EXPECT_EQ(launch(t)->world, 1);
}

TEST(Launch, TorchrunVariables) {
  const auto l = launch(kTorchrun);
  expect_rank(l, "torchrun", 3, 8, 1, "node07", 29500);
  EXPECT_FALSE(l->agent_store);
  EXPECT_EQ(l->store_prefix, "");
}

TEST(Launch, TorchrunAgentStoreIsSharedUnderItsAttemptPrefix) {
  auto env = kTorchrun;
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  env["TORCHELASTIC_RESTART_COUNT"] = "2";
  const auto l = launch(env);
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->agent_store);
  EXPECT_EQ(l->store_prefix, "/worker/attempt_2");
}

TEST(Launch, TorchrunWinsOverSlurm) {
  auto env = kSrun;
  for (const auto& [k, v] : kTorchrun) env[k] = v;
  EXPECT_EQ(launch(env)->launcher, "torchrun");
}

TEST(Launch, SrunStepVariables) {
  const auto l = launch(kSrun);
  expect_rank(l, "srun", 5, 6, 2, "gpu07", 15000 + (4 * 4242 + 1) % 10000);
  EXPECT_TRUE(l->master_addr_is_node_name);
}

TEST(Launch, SrunTakesMasterAddrAndPortWhenGiven) {
  auto env = kSrun;
  env["MASTER_ADDR"] = "10.0.0.5";
  env["MASTER_PORT"] = "23456";
  const auto l = launch(env);
  EXPECT_EQ(l->master_addr, "10.0.0.5");
  EXPECT_FALSE(l->master_addr_is_node_name);
  EXPECT_EQ(l->master_port, 23456);
}

TEST(Launch, SrunFallsBackToTheJobNodeList) {
  auto env = kSrun;
  env.erase("SLURM_STEP_NODELIST");
  env["SLURM_JOB_NODELIST"] = "login1,gpu[1-4]";
  EXPECT_EQ(launch(env)->master_addr, "login1");
}

TEST(Launch, MalformedVariablesAreNamed) {
  struct Bad {
    const Env& base;
    const char* name;
    const char* value;  // nullptr: unset it
    const char* error;
  };
  const Bad cases[] = {
      {kTorchrun, "WORLD_SIZE", "abc", "WORLD_SIZE=abc: not a whole number"},
      {kTorchrun, "RANK", "8", "RANK=8: expected 0..7"},
      {kTorchrun, "MASTER_PORT", "70000", "MASTER_PORT=70000: expected 1..65535"},
      {kTorchrun, "MASTER_ADDR", nullptr, "MASTER_ADDR is not set (a torchrun launch needs it)"},
      {kTorchrun, "WORLD_SIZE", "0", "WORLD_SIZE=0: expected 1..1048576"},
      {kTorchrun, "RANK", "-1", "RANK=-1: expected 0..7"},
      {kTorchrun, "RANK", "1 ", "RANK=1 : not a whole number"},
      {kSrun, "SLURM_PROCID", "6", "SLURM_PROCID=6: expected 0..5"},
      {kSrun, "SLURM_JOB_ID", nullptr, "SLURM_JOB_ID is not set (an srun launch needs it)"},
  };
  for (const auto& c : cases) {
    auto env = c.base;
    if (c.value)
      env[c.name] = c.value;
    else
      env.erase(c.name);
    EXPECT_EQ(error_of(env), c.error) << c.name;
  }
}

TEST(Launch, FirstHostOfSlurmHostLists) {
  EXPECT_EQ(cb::first_slurm_host("node1"), "node1");
  EXPECT_EQ(cb::first_slurm_host("node[1-2]"), "node1");
  EXPECT_EQ(cb::first_slurm_host("gpu[07-09,12],login1"), "gpu07");
  EXPECT_EQ(cb::first_slurm_host("a1,b[2-3]"), "a1");
  EXPECT_EQ(cb::first_slurm_host("rack[3-4]-n[010-020]"), "rack3-n010");
  EXPECT_EQ(cb::first_slurm_host("n[5,1-3]"), "n5");
  for (const char* bad : {"", "n[", "n[]", "n[a-b]", "]n", "[1-2"}) {
    EXPECT_THROW(cb::first_slurm_host(bad), cb::LaunchError) << bad;
  }
}

TEST(Launch, RanksSettingsComparedFlagByFlag) {
  const cb::Settings a{{"--seed", "1"}, {"--test-limit", "512"}};
  EXPECT_EQ(cb::decode_settings(cb::encode_settings(a)), a);
  EXPECT_EQ(cb::settings_disagreement({a, a, a}), "");
  auto b = a;
  b[1].second = "320";
  EXPECT_EQ(cb::settings_disagreement({a, a, b}),
            "ranks disagree on --test-limit: 512 on rank 0, 320 on rank 2 (give every rank the same)");
  EXPECT_EQ(cb::settings_disagreement({b, a}),
            "ranks disagree on --test-limit: 320 on rank 0, 512 on rank 1 (give every rank the same)");
  // Another build of train checks other settings: said, not compared value by value.
  const cb::Settings c{{"--seed", "1"}};
  EXPECT_NE(cb::settings_disagreement({a, c}).find("ranks disagree on --test-limit: 512 on rank 0, (none)"),
            std::string::npos);
  const cb::Settings d{{"--seed", "1"}, {"--epochs", "1"}};
  EXPECT_NE(cb::settings_disagreement({a, d}).find("the same build of train"), std::string::npos);
}
