#include "results_file.h"

#include "bench_support.h"
#include "common/atomic_file.h"
#include "common/utf8.h"
#include "env/report.h"

namespace cudabench::bench {

ResultsFile::ResultsFile(std::string path, std::string format, const env::Report& report)
    : path_(std::move(path)), format_(std::move(format)), stream_(is_stream(path_)) {
  if (format_ == "json") env_ = env::to_json(report);
}

std::string ResultsFile::contents(bool finalized) const {
  std::string text = text_.str();
  if (format_ != "json") return text;
  // Google Benchmark's JSON reporter closes the list and the object in Finalize.
  if (!finalized) text += "\n  ]\n}\n";
  nlohmann::json j = nlohmann::json::parse(valid_utf8(bare_nonfinite_to_null(text)));
  j["context"]["cudabench_env"] = env_;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void ResultsFile::update() {
  if (!stream_) write_file_atomically(path_, contents(false));  // a failure is said by finish()
}

std::string ResultsFile::finish() {
  std::string why;
  return write_file_atomically(path_, contents(true), &why) ? "" : why;
}

}  // namespace cudabench::bench
