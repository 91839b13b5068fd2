// --benchmark_out, valid at every moment. Google Benchmark's file reporter
// writes into memory; after each finished benchmark the results so far are
// written whole (a temporary file renamed over the target; a JSON file with
// the environment report in its context). So any stop (a signal, a host
// out of memory, a crash in the next benchmark) keeps every finished row,
// and a file is never partial. A stream (/dev/stdout, a pipe) cannot be
// replaced: it is written once, at the end.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>

#include "env/env_types.h"

namespace cudabench::bench {

class ResultsFile {
 public:
  ResultsFile(std::string path, std::string format, const env::Report& report);
  std::ostream* sink() { return &text_; }  // where the file reporter writes
  void update();                           // after each finished benchmark
  // At the end, after the reporter's Finalize: "" or why it could not be written.
  std::string finish();

 private:
  std::string contents(bool finalized) const;
  std::string path_, format_;
  nlohmann::json env_;
  std::ostringstream text_;
  bool stream_;
};

}  // namespace cudabench::bench
