#include "distributed.h"

#include "common/cli.h"  // short_number
#include "env/probe.h"    // command_output
#include "torch_versions.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <sstream>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#ifdef CUDABENCH_HAVE_C10D
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#endif

#ifdef CUDABENCH_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace cudabench::models {

bool have_data_parallel() {
#ifdef CUDABENCH_HAVE_C10D
  return true;
#else
  return false;
#endif
}

bool have_nccl() {
#if defined(CUDABENCH_HAVE_C10D) && defined(USE_C10D_NCCL)
  return true;
#else
  return false;
#endif
}

uint64_t fnv1a64(const void* data, std::size_t n, uint64_t h) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

uint64_t parameter_hash(const std::vector<torch::Tensor>& params) {
  uint64_t h = kFnv1aStart;
  for (const auto& p : params) {
    const auto t = p.detach().to(torch::kCPU).contiguous();
    h = fnv1a64(t.data_ptr(), static_cast<std::size_t>(t.numel()) * t.element_size(), h);
  }
  return h;
}

#ifndef CUDABENCH_HAVE_C10D

struct DistContext::Heartbeat {};
DistContext::DistContext(const Launch& launch, const std::string& backend, torch::Device device,
                         std::chrono::milliseconds timeout, const Settings&)
    : launch_(launch), backend_(backend), device_(device), timeout_(timeout) {
  throw std::runtime_error("this build has no data-parallel training (configure found no Gloo headers)");
}
DistContext::~DistContext() = default;
void DistContext::join_group() {}
void DistContext::stop_heartbeat() {}
void DistContext::all_reduce_sum(torch::Tensor&) {}
std::vector<int64_t> DistContext::all_gather(int64_t) { return {}; }
void DistContext::broadcast_from_0(std::vector<torch::Tensor>&) {}
void DistContext::barrier() {}
uint64_t DistContext::check_replicas(const std::vector<torch::Tensor>& params, const std::string&) {
  return parameter_hash(params);
}
std::string DistContext::diagnose() { return ""; }
void DistContext::finish() {}
AllreduceTiming DistContext::time_allreduce(const std::vector<int64_t>&, int) { return {}; }
DataParallel::DataParallel(DistContext& ctx, const std::vector<torch::Tensor>&, int64_t) : ctx_(ctx) {}
DataParallel::~DataParallel() = default;
void DataParallel::before_forward() {}
void DataParallel::before_backward() {}
std::vector<int64_t> DataParallel::bucket_bytes() const { return {}; }

#else

namespace {

constexpr auto kBeatInterval = std::chrono::milliseconds(500);
constexpr auto kDiagnoseWindow = std::chrono::milliseconds(3000);

constexpr auto kRendezvousGrace = std::chrono::milliseconds(5000);

std::string beat_key(int rank) { return "cudabench/beat/" + std::to_string(rank); }

// Rank 0's wait for the other ranks to add to a counter in the store (it
// serves the store, so it must not leave first), until `until` at most.
void wait_for_count(c10d::Store& store, const std::string& key, int64_t want,
                    std::chrono::steady_clock::time_point until) {
  while (store.add(key, 0) < want && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// Ends the process when the rendezvous has not finished by its deadline.
// TCPStore's client, and Gloo's rendezvous, can wait forever on a peer that
// accepted the connection and never answers, whatever their timeouts say:
// a watchdog thread is the one deadline that holds.
class Deadline {
 public:
  using Message = std::function<std::string()>;  // called only if the deadline passes
  Deadline(std::chrono::milliseconds limit, Message message) {
    state_->message = std::move(message);
    thread_ = std::thread([st = state_, limit] {
      std::unique_lock<std::mutex> lk(st->m);
      if (st->cv.wait_for(lk, limit, [&] { return st->disarmed; })) return;
      std::cerr << st->message() << std::endl;
      std::_Exit(kExitFailed);
    });
  }
  ~Deadline() { disarm(); }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;
  // What the process says if the deadline passes from now on: the step it
  // is in, not the first one.
  void say(Message message) {
    std::lock_guard<std::mutex> lk(state_->m);
    state_->message = std::move(message);
  }
  void disarm() {
    {
      std::lock_guard<std::mutex> lk(state_->m);
      state_->disarmed = true;
    }
    state_->cv.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct State {
    std::mutex m;
    std::condition_variable cv;
    bool disarmed = false;
    Message message;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;
};

// host:port's addresses, looked up now: the watchdog's probe must not wait
// on a name service (nullptr when the name does not resolve).
std::shared_ptr<addrinfo> addresses(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return nullptr;
  return std::shared_ptr<addrinfo>(res, ::freeaddrinfo);
}

// Whether anything at those addresses accepts a TCP connection, within a
// second for each.
bool accepts_connections(const addrinfo* addrs) {
  bool ok = false;
  for (const addrinfo* a = addrs; a && !ok; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = ::poll(&p, 1, 1000) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(fd);
  }
  return ok;
}

bool resolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const bool ok = ::getaddrinfo(host.c_str(), nullptr, &hints, &res) == 0;
  if (res) ::freeaddrinfo(res);
  return ok;
}

// A Slurm node name that DNS does not know (a test cluster on one machine,
// a cluster whose NodeAddr differs from NodeName): ask Slurm for the
// address it uses to reach the node.
std::string slurm_node_addr(const std::string& node) {
  const std::string out = env::command_output({"scontrol", "show", "node", "-o", node}, 5);
  const auto at = out.find("NodeAddr=");
  if (at == std::string::npos) return "";
  const auto start = at + 9;
  return out.substr(start, out.find_first_of(" \n", start) - start);
}

}  // namespace

// The heartbeat's thread owns its state through a shared_ptr and its own
// store connection, never the DistContext: a thread stuck in a store call
// (the store's host hung) can then be left behind, detached, at the end.
struct DistContext::Heartbeat {
  struct State {
    std::mutex m;
    std::condition_variable cv;
    bool stop = false, done = false;
  };
  std::shared_ptr<State> state = std::make_shared<State>();
  std::thread thread;

  Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank) {
    thread = std::thread([st = state, store = std::move(store), rank] {
      while (true) {
        try {
          store->add(beat_key(rank), 1);
        } catch (...) {
          break;  // the store is gone: stop beating, the main thread will find out
        }
        std::unique_lock<std::mutex> lk(st->m);
        if (st->cv.wait_for(lk, kBeatInterval, [&] { return st->stop; })) break;
      }
      std::lock_guard<std::mutex> lk(st->m);
      st->done = true;
      st->cv.notify_all();
    });
  }
  // Stops it on every path out, a throwing constructor's included (a
  // joinable thread destroyed would terminate the process).
  ~Heartbeat() {
    std::unique_lock<std::mutex> lk(state->m);
    state->stop = true;
    state->cv.notify_all();
    const bool done = state->cv.wait_for(lk, 2 * kBeatInterval, [&] { return state->done; });
    lk.unlock();
    if (done)
      thread.join();
    else
      thread.detach();
  }
};

DistContext::DistContext(const Launch& launch, const std::string& backend, torch::Device device,
                         std::chrono::milliseconds timeout, const Settings& settings)
    : launch_(launch), backend_(backend), device_(device), timeout_(timeout) {
  resolve_master();  // before the deadline: a slow name service is not a silent store
  const auto until = std::chrono::steady_clock::now() + timeout_;  // every rank's settings, by then
  const std::string head = "train: rank " + std::to_string(launch_.rank) + ": stopped: ";
  const std::string within =
      " within " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout_).count()) +
      " s (--dist-timeout) and a grace";
  // A loaded machine can keep TCPStore's client past its own timeout, and a
  // program that accepts and never answers keeps it forever: the line names
  // which, from whether anything accepts a connection there now.
  const auto unreached = [this, head, within, addrs = addresses(launch_.master_addr, launch_.master_port)] {
    return head + (accepts_connections(addrs.get())
                       ? "the rendezvous at " + store_address() + " did not answer" + within +
                             "; is another program listening on MASTER_PORT?"
                       : store_reach_failure("nothing accepted a connection" + within));
  };
  Deadline deadline(timeout_ + kRendezvousGrace, unreached);
  connect_store();
  deadline.say([msg = head + "the rendezvous at " + store_address() + " did not finish" + within +
                      "; is another program listening on MASTER_PORT?"] { return msg; });
  // A connection of its own: the main thread may sit in a store call.
  heartbeat_ = std::make_unique<Heartbeat>(store_->clone(), launch_.rank);
  try {
    compare_settings(settings, until);
    join_group();
  } catch (const GroupBadInput&) {
    throw;
  } catch (const RankLost&) {  // await_every_rank named the ranks
    throw;
  } catch (const std::exception& e) {
    deadline.disarm();
    // Gloo's rendezvous waits for every rank up to the timeout: name the
    // ranks that did not come, or that came and went.
    const auto m = error_line(e);
    const auto who = diagnose();
    stop_heartbeat();
    throw RankLost(who.empty() ? m : "lost " + who + ": " + m);
  }
}

void DistContext::resolve_master() {
  if (resolves(launch_.master_addr)) return;
  if (launch_.master_addr_is_node_name) {
    const auto addr = slurm_node_addr(launch_.master_addr);
    if (addr.empty())
      throw std::runtime_error("rank 0's node " + launch_.master_addr +
                               " (first of the step's node list) has no address; set MASTER_ADDR");
    launch_.master_addr = addr;
    if (resolves(addr)) return;
  }
  throw GroupBadInput("MASTER_ADDR=" + launch_.master_addr + ": no such host (the name does not resolve)");
}

std::string DistContext::store_reach_failure(const std::string& why) const {
  const bool server = launch_.serves_store();
  return std::string(server ? "could not serve" : "could not reach") + " the rendezvous store at " + store_address() +
         (server ? "" : (launch_.agent_store ? " (torchrun's agent)" : " (rank 0: did a process start with RANK=0?)")) +
         ": " + why;
}

void DistContext::connect_store() {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(launch_.master_port);
  o.isServer = launch_.serves_store();
  o.numWorkers = launch_.world;
  o.waitWorkers = false;  // a rank that never comes is named by its missing heartbeat
  o.timeout = timeout_;
  try {
    c10::intrusive_ptr<c10d::Store> tcp = c10::make_intrusive<c10d::TCPStore>(launch_.master_addr, o);
    store_ = launch_.store_prefix.empty()
                 ? tcp
                 : c10::static_intrusive_pointer_cast<c10d::Store>(
                       c10::make_intrusive<c10d::PrefixStore>(launch_.store_prefix, tcp));
  } catch (const std::exception& e) {
    throw RankLost(store_reach_failure(error_line(e)));
  }
}

// Every rank publishes its settings and reads everyone's, so that each one
// finds the same difference and says the same line. Rank 0, which serves
// the store, leaves only once every rank has read them.
void DistContext::compare_settings(const Settings& mine, std::chrono::steady_clock::time_point until) {
  const std::string key = "cudabench/settings/";
  claim_rank();
  store_->set(key + std::to_string(launch_.rank), encode_settings(mine));
  await_every_rank(key, until);
  std::vector<Settings> all;
  for (int r = 0; r < launch_.world; ++r) {
    const auto bytes = store_->get(key + std::to_string(r));
    all.push_back(decode_settings(std::string(bytes.begin(), bytes.end())));
  }
  const std::string differs = settings_disagreement(all);
  // The heartbeat stops before this rank says it has read: rank 0 may leave
  // at once, and a heartbeat that saw it go would name a lost rank 0 instead.
  if (!differs.empty()) stop_heartbeat();
  store_->add(key + "read", 1);
  if (differs.empty()) return;
  // A rank that died before reading must not turn this into a timeout.
  if (launch_.serves_store())
    wait_for_count(*store_, key + "read", launch_.world, std::chrono::steady_clock::now() + kDiagnoseWindow);
  throw GroupBadInput(differs);
}

const std::string kDuplicateKey = "cudabench/duplicate-rank", kClaimsKey = "cudabench/claims";
const std::string kRankKey = "cudabench/rank/";

// Each rank claims its number once: a second process with the same RANK
// is told so (and says so to the others), instead of leaving one rank out
// for everyone to wait for. Claims are counted once the rank's key is set.
void DistContext::claim_rank() {
  const std::string r = std::to_string(launch_.rank);
  const bool first = store_->add(kRankKey + r, 1) == 1;
  store_->add(kClaimsKey, 1);
  if (first) return;
  store_->set(kDuplicateKey, r);
  stop_heartbeat();
  throw GroupBadInput("RANK=" + r + " is given to two processes: each of the WORLD_SIZE=" +
                      std::to_string(launch_.world) + " ranks must be one process");
}

// Every rank's settings, waited for until --dist-timeout: a rank that never
// comes is named, and so is a duplicate RANK that left it out.
void DistContext::await_every_rank(const std::string& key, std::chrono::steady_clock::time_point until) {
  store_->add("cudabench/arrived", 1);
  for (;;) {
    const bool duplicate = store_->check({kDuplicateKey}), gave_up = store_->check({"cudabench/gave-up"});
    if (store_->add("cudabench/arrived", 0) >= launch_.world && !duplicate) return;
    if (!duplicate && !gave_up && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    // With a duplicate, the ranks still on their way are waited for: only
    // the rank nobody was given is named.
    if (duplicate)
      wait_for_count(*store_, kClaimsKey, launch_.world, std::chrono::steady_clock::now() + kDiagnoseWindow);
    std::string missing;
    int present = 0;
    for (int r = 0; r < launch_.world; ++r) {
      if (store_->check({(duplicate ? kRankKey : key) + std::to_string(r)})) ++present;
      else missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    // Everything is read from the store, and the heartbeat stopped, before
    // this rank says it has seen why: rank 0 serves the store and leaves once
    // every rank here has (a heartbeat that saw it go would name a lost rank 0).
    std::string dup;
    if (duplicate) {
      const auto v = store_->get(kDuplicateKey);
      dup.assign(v.begin(), v.end());
    }
    stop_heartbeat();
    store_->add("cudabench/gave-up", 1);
    if (launch_.serves_store())
      wait_for_count(*store_, "cudabench/gave-up", present, std::chrono::steady_clock::now() + kDiagnoseWindow);
    const std::string world = std::to_string(launch_.world);
    if (duplicate)
      throw GroupBadInput("RANK=" + dup + " is given to two processes" +
                          (missing.empty() ? "" : ", so rank " + missing + " never came") + ": each of the WORLD_SIZE=" +
                          world + " ranks must be one process");
    throw RankLost("rank " + missing + " of " + world + " never arrived within " +
                   std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout_).count()) +
                   " s (--dist-timeout): was a process started with RANK=" + missing + "?");
  }
}

void DistContext::join_group() {
  pg_ = c10::make_intrusive<c10d::ProcessGroup>(store_, launch_.rank, launch_.world);
  c10::intrusive_ptr<c10d::Backend> be;
  c10d::ProcessGroup::BackendType type{};
  if (backend_ == "gloo") {
    auto opts = c10d::ProcessGroupGloo::Options::create_default(timeout_);
    be = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, launch_.rank, launch_.world, opts);
    type = c10d::ProcessGroup::BackendType::GLOO;
    pg_->setBackend(c10::DeviceType::CPU, type, be);
    if (device_.is_cuda()) pg_->setBackend(c10::DeviceType::CUDA, type, be);
  } else if (backend_ == "nccl") {
#ifdef USE_C10D_NCCL
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = timeout_;
    be = c10::make_intrusive<c10d::ProcessGroupNCCL>(store_, launch_.rank, launch_.world, opts);
    type = c10d::ProcessGroup::BackendType::NCCL;
    pg_->setBackend(c10::DeviceType::CUDA, type, be);
#else
    throw std::runtime_error("this build has no NCCL");
#endif
  } else {
    throw std::invalid_argument("unknown backend " + backend_);
  }
  pg_->setDefaultBackend(type);
  pg_->setGroupName("0");  // after setBackend: it names the backends too
}

DistContext::~DistContext() { stop_heartbeat(); }

void DistContext::stop_heartbeat() { heartbeat_.reset(); }


namespace {

// What diagnose() needs, by value: it runs on a thread that may be left
// behind, blocked in a store that stopped answering.
struct DiagnoseInput {
  c10::intrusive_ptr<c10d::Store> store;
  Launch launch;
  std::chrono::milliseconds timeout;
};

std::vector<int64_t> beats_of(c10d::Store& store, int world) {
  std::vector<int64_t> b(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) b[static_cast<size_t>(r)] = store.add(beat_key(r), 0);
  return b;
}

// The first survivor to find the lost ranks publishes them; the others read
// that verdict, and rank 0, which serves the store, stays until they have:
// its leaving would make it look lost too. Throws when the store fails
// before a verdict is known.
std::string diagnose_with(const DiagnoseInput& in) {
  auto& store = *in.store;
  const auto& l = in.launch;
  const std::string verdict_key = "cudabench/lost", read_key = "cudabench/lost-read";
  const std::string of = " of " + std::to_string(l.world);
  const auto read_verdict = [&]() -> std::optional<std::string> {
    if (!store.check({verdict_key})) return std::nullopt;
    const auto v = store.get(verdict_key);
    return std::string(v.begin(), v.end());
  };
  std::string verdict;
  try {
    auto published = read_verdict();
    if (!published) {
      const auto before = beats_of(store, l.world);
      const auto until = std::chrono::steady_clock::now() + kDiagnoseWindow;
      while (!published && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        published = read_verdict();
      }
      if (!published) {
        const auto after = beats_of(store, l.world);
        std::ostringstream lost;
        int n = 0;
        const double secs = std::chrono::duration<double>(kDiagnoseWindow).count();
        for (int r = 0; r < l.world; ++r) {
          const auto i = static_cast<size_t>(r);
          if (r == l.rank || after[i] > before[i]) continue;
          lost << (n++ ? ", " : "") << "rank " << r << of;
          lost << (after[i] == 0 ? " (it never joined)" : " (no heartbeat for " + short_number(secs) + " s)");
        }
        if (n == 0) return "";  // every rank still beats: the error is this rank's own
        const auto mine = std::to_string(n) + "|" + lost.str();
        const auto won = store.compareSet(verdict_key, {}, std::vector<uint8_t>(mine.begin(), mine.end()));
        published = std::string(won.begin(), won.end());
      }
    }
    const auto bar = published->find('|');
    const int lost_count = std::atoi(published->substr(0, bar).c_str());
    verdict = published->substr(bar + 1);
    store.add(read_key, 1);
    if (l.serves_store()) {
      // A survivor still waiting on a live peer gets here when its own
      // collective times out: wait that long, and no longer.
      wait_for_count(store, read_key, l.world - lost_count,
                     std::chrono::steady_clock::now() + in.timeout + kDiagnoseWindow);
    }
  } catch (...) {
    if (verdict.empty()) throw;
  }
  return verdict;
}

}  // namespace

std::string DistContext::diagnose() {
  const std::string where = store_address();
  const std::string store_gone =
      launch_.agent_store ? "torchrun's agent store at " + where + " (it no longer answers)"
      : launch_.rank == 0 ? ""
                          : "rank 0 of " + std::to_string(launch_.world) + " (the rendezvous store it served at " +
                                where + " no longer answers)";
  // TCPStore's calls have no deadline of their own against a host that is
  // alive but silent (stopped, hung): run them on a thread, wait a bounded
  // time, and leave it behind if it does not come back.
  auto promise = std::make_shared<std::promise<std::string>>();
  auto result = promise->get_future();
  std::thread([promise, in = DiagnoseInput{store_, launch_, timeout_}] {
    try {
      promise->set_value(diagnose_with(in));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  }).detach();
  auto allowed = kDiagnoseWindow + std::chrono::milliseconds(2000);
  if (launch_.serves_store()) allowed += timeout_;
  if (result.wait_for(allowed) != std::future_status::ready) return store_gone;
  try {
    return result.get();
  } catch (...) {
    return store_gone;
  }
}

void DistContext::all_reduce_sum(torch::Tensor& t) {
  std::vector<at::Tensor> v{t};
  pg_->allreduce(v)->wait(timeout_);
}

std::vector<int64_t> DistContext::all_gather(int64_t x) {
  auto t = torch::zeros({launch_.world}, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  t[launch_.rank] = x;
  all_reduce_sum(t);
  const auto c = t.to(torch::kCPU);
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + launch_.world);
}

void DistContext::broadcast_from_0(std::vector<torch::Tensor>& tensors) {
  for (auto& t : tensors) {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = 0;
    pg_->broadcast(v, o)->wait(timeout_);
  }
}

void DistContext::barrier() {
  // An all-reduce rather than ProcessGroup::barrier: NCCL's barrier guesses
  // a device; this one runs where the training does.
  auto t = torch::ones({1}, torch::TensorOptions().device(device_));
  all_reduce_sum(t);
  (void)t.item<float>();
}

uint64_t DistContext::check_replicas(const std::vector<torch::Tensor>& params, const std::string& when) {
  const uint64_t h = parameter_hash(params);
  const auto all = all_gather(static_cast<int64_t>(h));
  std::ostringstream differ;
  int n = 0;
  for (int r = 1; r < launch_.world; ++r)
    if (all[static_cast<size_t>(r)] != all[0])
      differ << (n++ ? ", " : "") << "rank " << r << " has fnv1a64 " << std::hex
             << static_cast<uint64_t>(all[static_cast<size_t>(r)]) << std::dec;
  if (n) {
    differ << "; rank 0 has " << std::hex << static_cast<uint64_t>(all[0]);
    throw ReplicasDiffer("after " + when + " the replicas' parameters differ: " + differ.str());
  }
  return h;
}

void DistContext::finish() {
  // The store's calls have no deadline of their own against a silent host.
  Deadline watchdog(2 * timeout_ + kRendezvousGrace,
                    [msg = "train: rank " + std::to_string(launch_.rank) +
                           ": stopped: the group did not finish leaving within twice --dist-timeout (" +
                           store_address() + " no longer answers)"] { return msg; });
  barrier();
  // As destroy_process_group does: NCCL's communicators and watchdog end
  // here, not in a destructor at exit.
  pg_->shutdown();
  stop_heartbeat();
  const std::string left = "cudabench/left";
  if (!launch_.serves_store()) {
    store_->add(left, 1);
    return;
  }
  wait_for_count(*store_, left, launch_.world - 1, std::chrono::steady_clock::now() + timeout_);
}

AllreduceTiming DistContext::time_allreduce(const std::vector<int64_t>& bucket_bytes, int iterations) {
  std::vector<torch::Tensor> bufs;
  AllreduceTiming r;
  for (auto b : bucket_bytes) {
    bufs.push_back(torch::zeros({std::max<int64_t>(1, b / 4)}, torch::TensorOptions().device(device_)));
    r.bytes += static_cast<double>(bufs.back().numel()) * 4;
  }
  r.buckets = static_cast<int>(bufs.size());
  auto issue = [&] {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto& b : bufs) {
      std::vector<at::Tensor> v{b};
      works.push_back(pg_->allreduce(v));
    }
    return works;
  };
  // Host-side waits (bounded by the timeout) on CPUs and for the warm-up.
  auto once = [&] {
    for (auto& w : issue()) w->wait(timeout_);
  };
  for (int i = 0; i < 3; ++i) once();  // warm-up: connections, NCCL's communicator
  std::vector<double> secs;
  if (device_.is_cuda()) {
#ifdef CUDABENCH_TORCH_CUDA
    // Device time: an event pair per iteration on the current stream; an
    // unbounded wait() only makes this stream wait for NCCL's (no host
    // polling inside the pair); the host waits once, at the end. As before
    // the kernels, a delay on the stream before each start event keeps the
    // GPU busy while the host enqueues the pair and the collective, so
    // that the enqueue is not timed (NCCL's stream waits for this one).
    constexpr int64_t kEnqueueCoverCycles = 200'000;  // ~100 us at 2 GHz
    c10::cuda::CUDAGuard g(device_);
    std::vector<at::cuda::CUDAEvent> start, stop;
    start.reserve(static_cast<size_t>(iterations));
    stop.reserve(static_cast<size_t>(iterations));
    for (int i = 0; i < iterations; ++i) {
      at::cuda::sleep(kEnqueueCoverCycles);
      start.emplace_back(cudaEventDefault).record();
      for (auto& w : issue()) w->wait();
      stop.emplace_back(cudaEventDefault).record();
    }
    for (int i = 0; i < iterations; ++i) {
      stop[static_cast<size_t>(i)].synchronize();
      secs.push_back(start[static_cast<size_t>(i)].elapsed_time(stop[static_cast<size_t>(i)]) / 1e3);
    }
#endif
  } else {
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      once();
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::sort(secs.begin(), secs.end());
  const double median = secs.empty() ? 0 : secs[secs.size() / 2];
  // The slowest rank's median: the step waits for it.
  const auto all = all_gather(static_cast<int64_t>(median * 1e9));
  r.seconds = static_cast<double>(*std::max_element(all.begin(), all.end())) / 1e9;
  const double n = launch_.world;
  r.algbw = r.seconds > 0 ? r.bytes / r.seconds : 0;
  r.busbw = r.algbw * 2 * (n - 1) / n;
  return r;
}

DataParallel::DataParallel(DistContext& ctx, const std::vector<torch::Tensor>& params, int64_t bucket_bytes)
    : ctx_(ctx), params_(params) {
  // DDP's start: every replica takes rank 0's weights, and the shapes agree.
  {
    torch::NoGradGuard ng;
    std::vector<torch::Tensor> data;
    for (auto& p : params_) data.push_back(p.detach());
    ctx_.broadcast_from_0(data);
  }
  c10d::verify_params_across_processes(ctx_.group(), params_, std::nullopt);
  // One bucket for the first step; the Reducer then rebuilds them in the
  // order the gradients became ready (DDP without find_unused_parameters).
  const std::vector<bool> sparse(params_.size(), false);
  auto [indices, limits] = c10d::compute_bucket_assignment_by_size(
      params_, {static_cast<size_t>(std::numeric_limits<int64_t>::max())}, sparse);
  std::reverse(indices.begin(), indices.end());
  reducer_ = std::make_shared<c10d::Reducer>(params_, indices, ctx_.group(), sparse, bucket_bytes,
                                             /*find_unused_parameters=*/false,
                                             /*gradient_as_bucket_view=*/false,
                                             std::unordered_map<size_t, std::string>{},
                                             /*first_bucket_bytes_cap=*/c10d::kDefaultFirstBucketBytes,
                                             /*skip_all_reduce_unused_params=*/false,
                                             /*use_python_reducer=*/false
#if CUDABENCH_TORCH_REDUCER_CAP_LIST
                                             , /*bucket_bytes_cap_list=*/std::vector<int64_t>{}
#endif
  );
}

DataParallel::~DataParallel() = default;

void DataParallel::before_forward() {
  reducer_->rebuild_buckets();
  reducer_->prepare_for_forward();
}

void DataParallel::before_backward() { reducer_->prepare_for_backward({}); }

std::vector<int64_t> DataParallel::bucket_bytes() const {
  std::vector<int64_t> out;
  for (const auto& b : reducer_->get_grad_buckets(/*return_zero_tensors=*/false))
    out.push_back(b.getBuffer().numel() * static_cast<int64_t>(b.getBuffer().element_size()));
  return out;
}

#endif

}  // namespace cudabench::models
