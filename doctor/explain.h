// `bench --explain`: the CUDA set-up failures people actually hit (issue
// trackers are full of them: error 804 on a GeForce card, 802 on an NVSwitch
// machine without its fabric manager, "Driver/library version mismatch"
// after an upgrade without a reboot, ...), as one table, scenarios(); a
// pasted error message matched to them; and this machine checked for each
// one's cause (the verdicts of rules.h).
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "env/env_types.h"

namespace cudabench::doctor {

struct Scenario {
  int number;                // 1..24, as in docs/doctor.md's table
  std::string id;            // "compat_not_supported"
  std::string title;         // one line
  std::vector<int> codes;    // CUDA error codes that name it ("error 804")
  std::vector<std::string> names;     // error enum names, lower case
  std::vector<std::string> patterns;  // lower-case phrases; '*' = any text (up to 200 characters)
  std::vector<std::string> verdict_ids;  // the verdicts that are its cause
  std::string checked;       // what the probe looks at, for "not seen here"
  std::string fix;           // the usual fix, for when it happened elsewhere
  std::vector<std::string> covers;  // scenarios whose cause is among its own: not listed apart when both match
  bool setup = true;          // false: not a set-up failure (out of memory, a label out of range): the answer says so
  bool build_fix = false;     // a build of the paste's package that fits its driver and GPU fixes it
};

// The scenarios, in order: the one table of them, doctor/scenarios.json
// (compiled in; scripts/driver_probe.py reads the file before any build).
const std::vector<Scenario>& scenarios();
// The scenarios a pasted text names (by its wording, an error code such as
// "Error 804" or "code=802(...)", or an enum name), the likeliest first: the
// one named by the longest phrase (a code counts as a short one), then in
// the table's order.
std::vector<const Scenario*> match_scenarios(const std::string& text);

// What a paste shows of the machine it came from (paste_facts.cpp), read
// from the lower-cased text: nvidia-smi's "Driver Version: 535.104.05" and
// "CUDA Version: 12.2", the module's version, PyTorch's "found version
// 11040", GPU names ("rtx 3070": 8.6) and "sm_120", and the package it is
// about (torch, jax, tensorflow, cupy, onnxruntime, numba).
struct PasteGpu {
  std::string name;  // as the paste spells it, lower case: "rtx 3070"
  int major = 0, minor = 0;
};
struct PasteFacts {
  std::string driver;    // "535.104.05", "" not named
  int driver_cuda = 0;   // the CUDA it supports (12020), 0 unknown
  std::vector<PasteGpu> gpus;
  std::string package;   // "" none named
  std::vector<std::string> libraries;  // the library files it names
};
PasteFacts read_facts(const std::string& normalized);
// "driver 535.104.05 (CUDA 12.2); GPU rtx 3070 (compute capability 8.6); ..."
std::string facts_text(const PasteFacts& f);
// Shared-library file names in a text ("libcudart.so.12: cannot open ...").
std::vector<std::string> libraries_named(const std::string& text);

// What a pasted text names: its scenarios (in the table's order) and the
// library files it mentions. Read in overlapping windows of 1 MiB, so that a
// whole journal (`journalctl -k | bench --explain -`) is read in bounded memory.
struct Pasted {
  std::vector<const Scenario*> scenarios;  // the likeliest first
  std::vector<std::string> libraries;
  PasteFacts facts;
  std::vector<std::pair<std::string, std::string>> decoded;  // scenario id, what its numbers mean (decode.cpp)
};
// What the numbers in a message mean, read out of it (lower-cased, white
// space collapsed): "found version 11040" is CUDA 11.4, JAX's "Found cuDNN
// version 8600, but JAX was built against version 8800" names cuDNN 8.6.0
// against 8.8.0, "sm_120 is not compatible" names the builds that carry it.
// Each with the id of the scenario it explains.
std::vector<std::pair<std::string, std::string>> decode_message(const std::string& normalized);
Pasted scan_pasted(std::istream& in);
Pasted scan_pasted(const std::string& text);

struct Explanation {
  struct Item {
    const Scenario* scenario;
    std::vector<env::Verdict> causes;  // this machine's verdicts that are its cause (Warning/Error)
    std::vector<std::string> decoded;  // what the message's numbers mean, for this scenario
    std::string fix;                   // the scenario's fix, and the build that fits the paste's driver and GPU
  };
  std::vector<Item> items;
  PasteFacts facts;
  // Whether this machine's state is offered as the paste's cause: the user
  // said the paste came from here (--here, --check), or its driver and GPU
  // are this machine's; `here_why` says which, or why not.
  bool here = false;
  std::string here_why;
  bool cause_found = false;  // a cause shows here (counted only when `here`)
  std::string note;  // why some causes cannot show here (no usable GPU)
};
// `r` must hold the library lookups for libraries_named(text) among its
// verdicts (explain_command adds them).
Explanation explain(const Pasted& pasted, const env::Report& r, bool here = false);
Explanation explain(const std::string& text, const env::Report& r, bool here = false);
// The answer: what the paste shows and its causes first, this machine
// after, under its own heading.
std::string explanation_text(const Explanation& e);
std::string explanation_json(const Explanation& e);

struct ExplainOptions {
  std::string text;    // the message; "-": standard input
  bool check = false;  // exit 1 when a cause shows here (the paste is taken as this machine's)
  bool here = false;   // the paste came from this machine
  bool json = false;   // the answer as JSON
};
// The whole of `bench --explain TEXT` ("-": standard input, bounded by size
// and, for a pipe, by time): prints the explanation and returns the exit
// code (0, or 2 for a text that is not an error it knows; with `check`, 1
// when a cause shows here). `r`: the report to check, examine_with_python()'s.
int explain_command(const ExplainOptions& o, const env::Report& r);

}  // namespace cudabench::doctor
