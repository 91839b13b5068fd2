// `bench --explain`: the catalogue of the set-up failures, matching a
// pasted message to them, and the answer. The phrases are the messages'
// own words as users paste them (PyTorch, the CUDA runtime and driver API,
// NVML, nvidia-smi, modprobe, the loader, dmesg), lower-cased, matched
// after the text is lower-cased and its white space collapsed, so a
// message wrapped over lines still matches.
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/cli.h"
#include "doctor.h"
#include "env/probe.h"
#include "env/parsers.h"
#include "explain.h"
#include "rules.h"
#include "scenarios_json.h"

namespace cudabench::doctor {
using namespace env;
namespace {

std::string normalize(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (std::isspace(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}

// A phrase with '*' gaps (each at most 200 characters) anywhere in `t`.
bool phrase_in(const std::string& t, const std::string& phrase) {
  std::vector<std::string> parts;
  std::stringstream ss(phrase);
  for (std::string p; std::getline(ss, p, '*');) parts.push_back(p);
  if (parts.empty() || parts[0].empty()) return false;
  for (std::size_t start = t.find(parts[0]); start != std::string::npos; start = t.find(parts[0], start + 1)) {
    std::size_t pos = start + parts[0].size();
    bool ok = true;
    for (std::size_t i = 1; i < parts.size() && ok; ++i) {
      const std::size_t next = t.find(parts[i], pos);
      ok = next != std::string::npos && next - pos <= 200;
      if (ok) pos = next + parts[i].size();
    }
    if (ok) return true;
  }
  return false;
}

// An error code as people paste it: "Error 804", "error code 34", "CUDA
// failure 35:", "Cuda failure: 222", "cuda runtime error (802)",
// "code=802(cudaErrorSystemNotReady)", "error=48", "(803 vs. 0)", or the
// code alone. The word must stand right before the number ("line 46",
// "step 209", "H100" are not codes).
bool code_in(const std::string& t, int code) {
  const std::string n = std::to_string(code);
  if (t == n) return true;
  for (std::size_t p = t.find(n); p != std::string::npos; p = t.find(n, p + 1)) {
    const std::size_t after = p + n.size();
    if (p > 0 && (std::isalnum(static_cast<unsigned char>(t[p - 1])) || t[p - 1] == '_' || t[p - 1] == '.')) continue;
    if (after < t.size() && (std::isalnum(static_cast<unsigned char>(t[after])) || t[after] == '.' || t[after] == '_'))
      continue;
    if (t.compare(after, 4, " vs.") == 0 || t.compare(after, 3, " vs") == 0) {
      if (p > 0 && t[p - 1] == '(') return true;  // Caffe/glog: "(803 vs. 0)"
    }
    // Skip back over up to three separators (" ", ":", "=", "(", "#").
    std::size_t q = p;
    for (int k = 0; k < 3 && q > 0 && std::string(" :=(#").find(t[q - 1]) != std::string::npos; ++k) --q;
    if (q == p) continue;  // the number must be set apart from the word
    for (const char* word : {"error", "code", "err", "failure", "status", "result", "returned", "return value"}) {
      const std::size_t w = std::string(word).size();
      if (q >= w && t.compare(q - w, w, word) == 0 &&
          (q == w || !std::isalpha(static_cast<unsigned char>(t[q - w - 1])) || std::string(word) == "error"))
        return true;
    }
  }
  return false;
}

}  // namespace

const std::vector<Scenario>& scenarios() {
  // doctor/scenarios.json, compiled in (scripts/driver_probe.py reads the
  // same file before anything is built).
  static const std::vector<Scenario> all = [] {
    std::vector<Scenario> out;
    const auto table = nlohmann::json::parse(kScenariosJson);
    for (const auto& j : table.at("scenarios"))
      out.push_back({j.at("number"), j.at("id"), j.at("title"), j.at("codes"), j.at("names"), j.at("patterns"),
                     j.at("verdict_ids"), j.at("checked"), j.at("fix"),
                     j.value("covers", std::vector<std::string>{}), j.value("setup", true), j.value("build_fix", false)});
    return out;
  }();
  return all;
}

namespace {
// `w` in `t` as a whole word: "wsl", "nouveau" standing alone; "a10" not inside "a100".
bool word_in(const std::string& t, const std::string& w) {
  for (std::size_t i = t.find(w); i != std::string::npos; i = t.find(w, i + 1)) {
    const bool left = i == 0 || !std::isalnum(static_cast<unsigned char>(t[i - 1]));
    const bool right = i + w.size() >= t.size() || !std::isalnum(static_cast<unsigned char>(t[i + w.size()]));
    if (left && right) return true;
  }
  return false;
}

// How specifically `s` is named in `t` (0: not at all): the length of the
// longest phrase or name that matches, 12 for an error code.
std::size_t match_score(const Scenario& s, const std::string& t) {
  std::size_t best = 0;
  for (int c : s.codes)
    if (code_in(t, c)) best = std::max<std::size_t>(best, 12);
  for (const auto& n : s.names)
    if (t.find(n) != std::string::npos) best = std::max(best, n.size());
  for (const auto& p : s.patterns) {
    const bool bare = p.find(' ') == std::string::npos && p.find('*') == std::string::npos && p.find('/') == std::string::npos;
    if (bare ? word_in(t, p) : phrase_in(t, p))
      best = std::max(best, p.size() - static_cast<std::size_t>(std::count(p.begin(), p.end(), '*')));
  }
  return best;
}

std::vector<std::pair<const Scenario*, std::size_t>> scored(const std::string& text) {
  const std::string t = normalize(text);
  std::vector<std::pair<const Scenario*, std::size_t>> out;
  if (t.empty()) return out;
  for (const auto& s : scenarios())
    if (const std::size_t score = match_score(s, t)) out.emplace_back(&s, score);
  return out;
}

// The likeliest first: a scenario that covers another (its root cause:
// nouveau holding the GPU, for "Unable to load the kernel module") before
// it, then the most specifically named; ties in the table's order.
std::vector<const Scenario*> ranked(std::vector<std::pair<const Scenario*, std::size_t>> found) {
  for (auto& [a, score] : found)
    for (const auto& [b, other] : found)
      if (std::find(a->covers.begin(), a->covers.end(), b->id) != a->covers.end()) score = std::max(score, other + 1);
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first->number < b.first->number;
  });
  std::vector<const Scenario*> out;
  for (const auto& f : found) out.push_back(f.first);
  return out;
}
}  // namespace

std::vector<const Scenario*> match_scenarios(const std::string& text) { return ranked(scored(text)); }

std::vector<std::string> libraries_named(const std::string& text) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::size_t p = text.find("lib"); p != std::string::npos; p = text.find("lib", p + 1)) {
    if (p > 0 && (std::isalnum(static_cast<unsigned char>(text[p - 1])) || text[p - 1] == '_')) continue;
    std::size_t e = p;
    while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_' || text[e] == '-' ||
                               text[e] == '.' || text[e] == '+'))
      ++e;
    std::string name = text.substr(p, e - p);
    while (!name.empty() && name.back() == '.') name.pop_back();  // end of a sentence
    const auto so = name.find(".so");
    if (so == std::string::npos || so + 3 < name.size() && name[so + 3] != '.') continue;
    if (seen.insert(name).second) out.push_back(name);
  }
  return out;
}

Pasted scan_pasted(std::istream& in) {
  constexpr std::size_t kChunk = 1 << 20, kOverlap = 4096, kMaxLibraries = 64;
  std::map<const Scenario*, std::size_t> found;  // each scenario's best score
  PasteFacts facts;
  bool first = true;
  std::set<std::string> libraries;
  std::vector<std::pair<std::string, std::string>> decoded;
  std::string window, chunk(kChunk, '\0');
  for (bool more = true; more;) {
    more = static_cast<bool>(in.read(chunk.data(), static_cast<std::streamsize>(kChunk)));
    window.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    // Up to the last line's end: a word is never cut at the window's edge
    // (the rest waits for the next chunk); all of it at the end.
    const std::size_t last_line = more ? window.rfind('\n') : std::string::npos;
    const std::size_t end = last_line == std::string::npos ? window.size() : last_line + 1;
    const std::string text = window.substr(0, end);
    for (const auto& [s, score] : scored(text)) found[s] = std::max(found[s], score);
    if (first) facts = read_facts(normalize(text));  // the machine it came from shows at its start
    first = false;
    for (auto& d : decode_message(normalize(text)))
      if (decoded.size() < 16 && std::find(decoded.begin(), decoded.end(), d) == decoded.end()) decoded.push_back(d);
    for (auto& l : libraries_named(text))
      if (libraries.size() < kMaxLibraries) libraries.insert(l);
    // The last lines scanned (about 4 KiB, from a line's start) stay, for a
    // phrase across lines.
    std::size_t keep = end > kOverlap ? end - kOverlap : 0;
    if (const auto line = window.find('\n', keep); line != std::string::npos && line < end) keep = line + 1;
    window.erase(0, keep);
  }
  Pasted p;
  p.scenarios = ranked({found.begin(), found.end()});
  p.libraries.assign(libraries.begin(), libraries.end());
  p.decoded = std::move(decoded);
  p.facts = std::move(facts);
  p.facts.libraries = p.libraries;
  return p;
}

Pasted scan_pasted(const std::string& text) {
  std::istringstream in(text);
  return scan_pasted(in);
}

Explanation explain(const std::string& text, const Report& r, bool here) { return explain(scan_pasted(text), r, here); }

namespace {
// Is the paste this machine's? Only when the driver and the GPUs it names
// are this machine's; a paste that names neither is not taken for it.
std::pair<bool, std::string> paste_is_here(const PasteFacts& f, const Report& r) {
  const DriverInfo& d = r.driver;
  std::vector<std::string> drivers;
  for (const auto& v : {d.nvml_driver_version, d.kernel_module_version, d.libcuda_file_version})
    if (!v.empty()) drivers.push_back(v);
  std::vector<std::string> gpus;
  for (const auto& g : r.gpus) gpus.push_back(to_lower(g.name));
  for (const auto& g : r.nvml_gpus) gpus.push_back(to_lower(g.name));
  if (!f.driver.empty() && std::find(drivers.begin(), drivers.end(), f.driver) == drivers.end())
    return {false, "the paste's driver " + f.driver + " is not this machine's (" +
                       (drivers.empty() ? std::string("it has none") : drivers.front()) + ")"};
  if (f.driver_cuda && f.driver_cuda != usable_driver_cuda(r))
    return {false, "the paste's driver supports CUDA " + Version::from_cuda_int(f.driver_cuda).major_minor() +
                       ", this machine's " + (usable_driver_cuda(r) ? Version::from_cuda_int(usable_driver_cuda(r)).major_minor() : std::string("none"))};
  for (const auto& g : f.gpus)
    // The same GPU: the paste's name as whole words of this machine's ("a10" is not "a100").
    if (std::none_of(gpus.begin(), gpus.end(), [&](const std::string& h) { return word_in(h, g.name); }))
      return {false, "the paste's GPU " + g.name + " is not among this machine's (" +
                         (gpus.empty() ? std::string("it has none") : join(gpus, ", ")) + ")"};
  if (f.driver.empty() && f.gpus.empty())
    return {false, "the paste names no driver or GPU to compare with this machine's (--here: it came from this machine)"};
  return {true, "the paste's " + std::string(f.driver.empty() ? "GPU is" : f.gpus.empty() ? "driver is" : "driver and GPU are") +
                    " this machine's"};
}

// The scenario's fix, led by the build of the paste's package that runs on
// the paste's driver and GPU (the table --env's fixes come from).
std::string fitted_fix(const Scenario& s, const PasteFacts& f) {
  const Target none;
  if (!s.build_fix || package_builds(f.package, none).empty() || (f.driver_cuda == 0 && f.gpus.empty())) return s.fix;
  Target t{f.driver_cuda, f.driver, {}, f.driver.empty() ? "the paste's driver" : "the paste's driver " + f.driver};
  std::string gpus;
  for (const auto& g : f.gpus) {
    t.gpus.push_back({g.name, g.major, g.minor});
    gpus += (gpus.empty() ? " on the paste's " : ", ") + g.name;
  }
  return "for " + f.package + gpus + ": " + fix_for(f.package, t) + "; in general: " + s.fix;
}
}  // namespace

Explanation explain(const Pasted& pasted, const Report& r, bool here) {
  Explanation e;
  e.facts = pasted.facts;
  std::tie(e.here, e.here_why) = paste_is_here(pasted.facts, r);
  if (here) e.here_why = "you said the paste came from here", e.here = true;
  std::vector<Verdict> all = r.verdicts;  // the machine's, then each Python environment's
  for (const auto& env : r.python.envs) all.insert(all.end(), env.verdicts.begin(), env.verdicts.end());
  for (const Scenario* s : pasted.scenarios) {
    Explanation::Item item{s, {}, {}, fitted_fix(*s, pasted.facts)};
    for (const auto& v : all)
      if ((v.level == Verdict::Level::Warning || v.level == Verdict::Level::Error) &&
          std::find(s->verdict_ids.begin(), s->verdict_ids.end(), v.id) != s->verdict_ids.end())
        item.causes.push_back(v);
    for (const auto& [id, text] : pasted.decoded)  // a decoded "fix: ..." leads the scenario's fix
      if (id == s->id && text.rfind("fix: ", 0) == 0) item.fix = text.substr(5) + "; or: " + item.fix;
      else if (id == s->id) item.decoded.push_back(text);
    // One that another matched scenario covers is its last cause: named there, not apart.
    const bool covered = std::any_of(pasted.scenarios.begin(), pasted.scenarios.end(), [&](const Scenario* o) {
      return std::find(o->covers.begin(), o->covers.end(), s->id) != o->covers.end();
    });
    if (covered && (item.causes.empty() || !e.here)) continue;
    e.cause_found = e.cause_found || (e.here && !item.causes.empty());
    e.items.push_back(std::move(item));
  }
  if (!r.status.usable)
    e.note = "this machine has no usable GPU (" + r.status.reason + "), so causes that need one to show cannot show here";
  return e;
}

namespace {
void verdict_lines(std::ostringstream& o, const Verdict& v, const std::string& head) {
  o << "  " << head << " (" << level_name(v.level) << ", " << v.id << "): " << v.message << "\n";
  for (const auto& x : v.evidence) o << "    seen: " << x << "\n";
  if (!v.fix.empty()) o << "    fix:  " << v.fix << "\n";
}

// This machine, under its own heading: the paste's cause only when `here`.
void machine_part(std::ostringstream& o, const Explanation& e) {
  const bool setup = std::any_of(e.items.begin(), e.items.end(), [](const auto& i) { return i.scenario->setup; });
  if (!setup) return;
  o << "\nOn this machine (" << (e.here ? "taken as the paste's: " : "not the paste's cause: ") << e.here_why << "):\n";
  bool any = false;
  for (const auto& item : e.items) {
    if (!item.scenario->setup) continue;
    const std::string n = "[" + std::to_string(item.scenario->number) + "]";
    if (item.causes.empty() && e.here)
      o << "  " << n << " not here: the probe checked " << item.scenario->checked << " and found no such cause\n";
    for (const auto& v : item.causes) verdict_lines(o, v, n + (e.here ? " FOUND HERE" : " this machine also shows"));
    any = any || !item.causes.empty();
  }
  if (!any && !e.here) o << "  none of these causes shows here\n";
}
}  // namespace

std::string explanation_text(const Explanation& e) {
  std::ostringstream o;
  const std::string facts = facts_text(e.facts);
  o << "What the paste shows: " << (facts.empty() ? "no driver, GPU or package named" : facts) << "\n";
  o << "It names " << e.items.size() << " known cause" << (e.items.size() == 1 ? "" : "s") << ", the likeliest first:\n";
  for (const auto& item : e.items) {
    const Scenario& s = *item.scenario;
    o << "\n[" << s.number << "] " << s.title << "\n";
    for (const auto& d : item.decoded) o << "  in the message: " << d << "\n";
    o << "  fix: " << item.fix << "\n";
  }
  machine_part(o, e);
  if (!e.note.empty() && e.here) o << "\nNote: " << e.note << "\n";
  if (!e.here) return o.str();
  o << "\n" << (e.cause_found ? "A cause was found on this machine.\n"
                              : "None of these causes shows on this machine: the error came from another machine, "
                                "container or environment, or from a state that has since changed.\n");
  return o.str();
}

std::string explanation_json(const Explanation& e) {
  using nlohmann::json;
  json gpus = json::array();
  for (const auto& g : e.facts.gpus) gpus.push_back({{"name", g.name}, {"compute_capability", std::to_string(g.major) + "." + std::to_string(g.minor)}});
  json causes = json::array();
  for (const auto& item : e.items) {
    json here = json::array();
    for (const auto& v : item.causes)
      here.push_back({{"id", v.id}, {"level", level_name(v.level)}, {"message", v.message}, {"fix", v.fix}, {"evidence", v.evidence}});
    causes.push_back({{"number", item.scenario->number}, {"id", item.scenario->id}, {"title", item.scenario->title},
                      {"setup", item.scenario->setup}, {"in_the_message", item.decoded}, {"fix", item.fix},
                      {"on_this_machine", here}});  // the paste's cause only when "here"
  }
  const json paste = {{"driver", e.facts.driver},
                      {"driver_cuda", e.facts.driver_cuda ? Version::from_cuda_int(e.facts.driver_cuda).major_minor() : ""},
                      {"gpus", gpus}, {"package", e.facts.package}, {"libraries", e.facts.libraries}};
  return json{{"paste", paste}, {"causes", causes}, {"here", e.here}, {"here_why", e.here_why},
              {"cause_found", e.cause_found}, {"note", e.note}}.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {
// A library the message names: does the loader find it here? Names of one
// library ("Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9,
// libcudnn_ops.so}") are alternatives: one found is enough.
std::vector<Verdict> lookups_of_named_libraries(const std::vector<std::string>& names, const Report& r) {
  const auto dirs = library_search_dirs(r.toolkits, r.loaded);
  std::map<std::string, std::vector<LibraryLookup>> by_library;
  for (const auto& name : names)
    by_library[name.substr(0, name.find(".so"))].push_back(look_up_library(name, "the pasted error", dirs));
  std::vector<Verdict> out;
  for (const auto& [base, lookups] : by_library) {
    const auto found = std::find_if(lookups.begin(), lookups.end(),
                                    [](const LibraryLookup& l) { return !l.resolved.empty(); });
    const auto elsewhere = std::find_if(lookups.begin(), lookups.end(),
                                        [](const LibraryLookup& l) { return !l.elsewhere.empty(); });
    out.push_back(library_verdict(found != lookups.end()       ? *found
                                  : elsewhere != lookups.end() ? *elsewhere
                                                               : lookups.front()));
  }
  return out;
}
}  // namespace

// Standard input, read until it ends, kMaxStdinBytes, or (a pipe or a
// terminal that may never end: `journalctl -f`, /dev/zero) kStdinSeconds;
// `cut` then says where it stopped.
class BoundedStdin : public std::streambuf {
 public:
  static constexpr std::size_t kMaxStdinBytes = std::size_t(64) << 20;
  static constexpr int kStdinSeconds = 20;
  std::string cut;

 private:
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline_ = Clock::now() + std::chrono::seconds(kStdinSeconds);
  const bool timed_ = !is_regular_file(0);
  std::size_t total_ = 0;
  char buf_[1 << 16];

  static bool is_regular_file(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  }
  int_type underflow() override {
    if (total_ >= kMaxStdinBytes) {
      cut = "read its first " + std::to_string(kMaxStdinBytes >> 20) + " MiB";
      return traits_type::eof();
    }
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      pollfd p{0, POLLIN, 0};
      const int ready = timed_ && left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 1;
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return traits_type::eof();
      if (timed_ && (left <= 0 || ready == 0)) {
        cut = "it had not ended after " + std::to_string(kStdinSeconds) + " s; read what came";
        return traits_type::eof();
      }
      const ssize_t n = ::read(0, buf_, std::min(sizeof buf_, kMaxStdinBytes - total_));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return traits_type::eof();
      total_ += static_cast<std::size_t>(n);
      setg(buf_, buf_, buf_ + n);
      return traits_type::to_int_type(buf_[0]);
    }
  }
};

int explain_command(const ExplainOptions& o, const Report& examined) {
  BoundedStdin stdin_buf;
  std::istream stdin_stream(&stdin_buf);
  const Pasted pasted = o.text == "-" ? scan_pasted(stdin_stream) : scan_pasted(o.text);
  const std::string cut = stdin_buf.cut.empty() ? "" : " (standard input: " + stdin_buf.cut + ")";
  if (pasted.scenarios.empty()) {
    std::cerr << "bench: --explain: not a CUDA set-up error I know" << cut << "\n";
    return kExitBadInput;
  }
  if (!cut.empty() && !o.json) std::cout << "Note: of the standard input, cudabench " << stdin_buf.cut << ".\n\n";
  Report r = examined;
  for (const auto* s : pasted.scenarios)
    if (s->id == "library_not_found")
      for (auto& v : lookups_of_named_libraries(pasted.libraries, r)) r.verdicts.push_back(std::move(v));
  // --check asks whether the cause is on this machine: the paste is taken as its.
  const Explanation e = explain(pasted, r, o.here || o.check);
  std::cout << (o.json ? explanation_json(e) : explanation_text(e));
  // Whether a cause shows here is the answer, not a failure; a script that
  // asks (--check) gets 1 when one does, as --env --check for an error.
  return o.check && e.cause_found ? kExitWrongResult : kExitOk;
}

}  // namespace cudabench::doctor
