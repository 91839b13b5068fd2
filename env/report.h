// Printers for env::Report: a text page a person reads in ten seconds, the
// same facts as JSON, and the flat key/value pairs that go into every
// benchmark JSON's context.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "env_types.h"

namespace cudabench::env {

std::string to_text(const Report& r);
nlohmann::json to_json(const Report& r);
// The flat facts for a benchmark JSON's context; the GPU facts are those of
// the CUDA device `device` (the first one benchmarked).
std::vector<std::pair<std::string, std::string>> context_entries(const Report& r, int device = 0);
// Every key of a benchmark JSON's context that cudabench, Google Benchmark
// or the sampling scripts write (env/context_keys.json): a user's
// --benchmark_context must not take one.
bool is_context_key(const std::string& key);
// Any verdict an error: the machine's or a Python environment's (--check), or only the
// environments' (--check=python: the user's problem, not cudabench's own build).
bool has_errors(const Report& r, bool python_only = false);
// A verdict as the report prints it (its level, message, seen: and fix:
// lines under it, each line starting with `indent`), and as JSON.
std::string verdict_text(const Verdict& v, const std::string& indent);
nlohmann::json verdict_json(const Verdict& v);
// The Python environments' section (report_python.cpp).
std::string python_text(const PythonScan& s);
nlohmann::json python_json(const PythonScan& s);
// "sm_80 sm_90 compute_90" (an arch held by under half of the containers
// shows its count: "sm_89(1/444)"), or why the file was not read.
std::string fatbin_summary(const FatbinArchs& f);

}  // namespace cudabench::env
