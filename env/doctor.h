// The environment doctor: the CUDA set-up failures people actually hit
// (issue trackers are full of them: error 804 on a GeForce card, 802 on an
// NVSwitch machine without its fabric manager, "Driver/library version
// mismatch" after an upgrade without a reboot, ...), each diagnosed from
// what the probes saw, with its evidence and its fix; and `bench --explain`,
// which maps a pasted error message to those scenarios and checks this
// machine for each one's cause. Plain functions over env::Report, so every
// scenario is tested on fake machines without a GPU.
#pragma once

#include <string>
#include <vector>

#include "env_types.h"

namespace cudabench::env {

struct Scenario {
  int number;                // 1..20, as in the table of docs/doctor.md
  std::string id;            // "compat_not_supported"
  std::string title;         // one line
  std::vector<int> codes;    // CUDA error codes that name it ("error 804")
  std::vector<std::string> names;     // error enum names, lower case
  std::vector<std::string> patterns;  // lower-case phrases; '*' = any text (up to 200 characters)
  std::vector<std::string> verdict_ids;  // the verdicts that are its cause
  std::string checked;       // what the probe looks at, for "not seen here"
  std::string fix;           // the usual fix, for when it happened elsewhere
};

// The 20 scenarios, in order.
const std::vector<Scenario>& scenarios();
// The scenarios a pasted text names (by its wording, an error code such as
// "Error 804" or "code=802(...)", or an enum name).
std::vector<const Scenario*> match_scenarios(const std::string& text);
// Shared-library file names in a text ("libcudart.so.12: cannot open ...").
std::vector<std::string> libraries_named(const std::string& text);

// CUDA_VISIBLE_DEVICES as CUDA reads it: a comma-separated list of indices,
// GPU UUIDs (or unique prefixes of them) and MIG UUIDs, read up to the first
// entry that is not valid (CUDA documents that the devices after it are
// hidden; -1 is the usual way to write "stop here").
struct VisibleDevices {
  std::vector<std::string> used;  // the entries CUDA takes, in order
  std::string stopped_at;         // the first entry it cannot take ("" when none)
  std::string why;                // why not
  std::vector<std::string> repeated;  // entries given twice
};
// `gpu_count` and `uuids` are NVML's (-1 and {} when unknown: then only the
// syntax is checked).
VisibleDevices parse_visible_devices(const std::string& spec, int gpu_count,
                                     const std::vector<std::string>& uuids);

// Every scenario's check over a report (appended to evaluate()'s verdicts).
std::vector<Verdict> doctor_verdicts(const Report& r);
// A verdict for one library lookup (library.missing, or Ok when it resolves).
Verdict library_verdict(const LibraryLookup& l);

struct Explanation {
  struct Item {
    const Scenario* scenario;
    std::vector<Verdict> causes;  // this machine's verdicts that are its cause (Warning/Error)
  };
  std::vector<Item> items;
  bool cause_found = false;
  std::string note;  // why some causes cannot show here (no usable GPU)
};
// `r` must hold the library lookups for libraries_named(text) among its
// verdicts (bench --explain adds them).
Explanation explain(const std::string& text, const Report& r);
std::string explanation_text(const Explanation& e);

}  // namespace cudabench::env
