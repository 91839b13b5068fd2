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
    for (const char* word : {"error", "code", "err", "failure", "status", "result", "returned"}) {
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
                     j.value("covers", std::vector<std::string>{})});
    return out;
  }();
  return all;
}

std::vector<const Scenario*> match_scenarios(const std::string& text) {
  const std::string t = normalize(text);
  std::vector<const Scenario*> out;
  if (t.empty()) return out;
  for (const auto& s : scenarios()) {
    bool hit = false;
    for (int c : s.codes) hit = hit || code_in(t, c);
    for (const auto& n : s.names) hit = hit || t.find(n) != std::string::npos;
    for (const auto& p : s.patterns) {
      // A bare word ("wsl", "nouveau") must stand alone, not inside another word.
      if (p.find(' ') == std::string::npos && p.find('*') == std::string::npos && p.find('/') == std::string::npos) {
        for (std::size_t i = t.find(p); !hit && i != std::string::npos; i = t.find(p, i + 1)) {
          const bool left = i == 0 || !std::isalnum(static_cast<unsigned char>(t[i - 1]));
          const bool right = i + p.size() >= t.size() || !std::isalnum(static_cast<unsigned char>(t[i + p.size()]));
          hit = left && right;
        }
      } else {
        hit = hit || phrase_in(t, p);
      }
    }
    if (hit) out.push_back(&s);
  }
  return out;
}

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
  std::set<const Scenario*> found;
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
    for (const Scenario* s : match_scenarios(text)) found.insert(s);
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
  for (const auto& s : scenarios())
    if (found.count(&s)) p.scenarios.push_back(&s);
  p.libraries.assign(libraries.begin(), libraries.end());
  p.decoded = std::move(decoded);
  return p;
}

Pasted scan_pasted(const std::string& text) {
  std::istringstream in(text);
  return scan_pasted(in);
}

Explanation explain(const std::string& text, const Report& r) { return explain(scan_pasted(text), r); }

Explanation explain(const Pasted& pasted, const Report& r) {
  Explanation e;
  std::vector<Verdict> all = r.verdicts;  // the machine's, then each Python environment's
  for (const auto& env : r.python.envs) all.insert(all.end(), env.verdicts.begin(), env.verdicts.end());
  for (const Scenario* s : pasted.scenarios) {
    Explanation::Item item{s, {}, {}};
    for (const auto& v : all)
      if ((v.level == Verdict::Level::Warning || v.level == Verdict::Level::Error) &&
          std::find(s->verdict_ids.begin(), s->verdict_ids.end(), v.id) != s->verdict_ids.end())
        item.causes.push_back(v);
    for (const auto& [id, text] : pasted.decoded)
      if (id == s->id) item.decoded.push_back(text);
    // One that another matched scenario covers is its last cause: named there, not apart.
    const bool covered = std::any_of(pasted.scenarios.begin(), pasted.scenarios.end(), [&](const Scenario* o) {
      return std::find(o->covers.begin(), o->covers.end(), s->id) != o->covers.end();
    });
    if (covered && item.causes.empty()) continue;
    e.cause_found = e.cause_found || !item.causes.empty();
    e.items.push_back(std::move(item));
  }
  if (!r.status.usable)
    e.note = "this machine has no usable GPU (" + r.status.reason + "), so causes that need one to show cannot show here";
  return e;
}

std::string explanation_text(const Explanation& e) {
  std::ostringstream o;
  o << "This names " << e.items.size() << " known CUDA set-up failure" << (e.items.size() == 1 ? "" : "s") << ":\n";
  for (const auto& item : e.items) {
    const Scenario& s = *item.scenario;
    o << "\n[" << s.number << "] " << s.title << "\n";
    for (const auto& d : item.decoded) o << "  in the message: " << d << "\n";
    if (item.causes.empty()) {
      o << "  not on this machine: the probe checked " << s.checked << " and found no such cause\n";
      o << "  where it happened: " << s.fix << "\n";
      continue;
    }
    for (const auto& v : item.causes) {
      o << "  FOUND HERE (" << level_name(v.level) << ", " << v.id << "): " << v.message << "\n";
      for (const auto& x : v.evidence) o << "    seen: " << x << "\n";
      if (!v.fix.empty()) o << "    fix:  " << v.fix << "\n";
    }
  }
  if (!e.note.empty()) o << "\nNote: " << e.note << "\n";
  o << "\n" << (e.cause_found ? "A cause was found on this machine.\n"
                              : "None of these causes shows on this machine: the error came from another machine, "
                                "container or environment, or from a state that has since changed.\n");
  return o.str();
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

int explain_command(const std::string& given, const Report& examined, bool check) {
  BoundedStdin stdin_buf;
  std::istream stdin_stream(&stdin_buf);
  const Pasted pasted = given == "-" ? scan_pasted(stdin_stream) : scan_pasted(given);
  const std::string cut = stdin_buf.cut.empty() ? "" : " (standard input: " + stdin_buf.cut + ")";
  if (pasted.scenarios.empty()) {
    std::cerr << "bench: --explain: not a CUDA set-up error I know" << cut << "\n";
    return kExitBadInput;
  }
  if (!cut.empty()) std::cout << "Note: of the standard input, cudabench " << stdin_buf.cut << ".\n\n";
  Report r = examined;
  for (const auto* s : pasted.scenarios)
    if (s->id == "library_not_found")
      for (auto& v : lookups_of_named_libraries(pasted.libraries, r)) r.verdicts.push_back(std::move(v));
  const Explanation e = explain(pasted, r);
  std::cout << explanation_text(e);
  // Whether a cause shows here is the answer, not a failure; a script that
  // asks (--check) gets 1 when one does, as --env --check for an error.
  return check && e.cause_found ? kExitWrongResult : kExitOk;
}

}  // namespace cudabench::doctor
