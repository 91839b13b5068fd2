// --import: the one place where a user's Python runs. Each package is
// imported by its environment's own interpreter, in a child that starts in
// "/" (so no folder of ours shadows the package) and is ended after its
// deadline (child.h); what it printed (warnings, a library's log lines) is
// kept for the doctor, which reads it as --explain reads a pasted message.
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "process/child.h"
#include "env/probe.h"

namespace cudabench::env {
namespace {

// Prints one line "cudabench-import: {json}" after whatever the import printed.
constexpr const char* kScript = R"PY(import sys
if sys.path and sys.path[0] in ("", "/"):
    del sys.path[0]
import json
name, r, m = sys.argv[1], {}, None
try:
    if name == "torch":
        import torch as m
        r["available"] = bool(m.cuda.is_available())
        r["devices"] = int(m.cuda.device_count())
    elif name == "jax":
        import jax as m
        try:
            r["devices"] = len(m.devices("cuda"))
        except Exception as e:
            print("RuntimeError: %s" % e, file=sys.stderr)
    elif name == "tensorflow":
        import tensorflow as m
        r["devices"] = len(m.config.list_physical_devices("GPU"))
    elif name == "cupy":
        import cupy as m
        try:
            r["devices"] = int(m.cuda.runtime.getDeviceCount())
        except Exception as e:
            print("%s: %s" % (type(e).__name__, e), file=sys.stderr)
    r["version"] = str(getattr(m, "__version__", ""))
except BaseException as e:
    r["error"] = "import %s failed: %s: %s" % (name, type(e).__name__, e)
sys.stderr.flush()
print("\ncudabench-import: " + json.dumps(r), flush=True)
)PY";

// A line as the report keeps it: at most 400 bytes, printable ASCII (a
// child may print any bytes, and the JSON report must stay UTF-8).
std::string kept(const std::string& line) {
  std::string out;
  for (char c : line.substr(0, 400)) out += (c >= 0x20 && c < 0x7f) || c == '\t' ? c : '?';
  return out;
}

PythonImport import_one(const std::string& interpreter, const std::string& package, int seconds) {
  PythonImport r;
  r.package = package;
  process::ChildOptions o;
  o.seconds = seconds;
  o.max_output = 1 << 20;
  o.keep_tail = true;  // the answer is the last line
  o.merge_stderr = true;
  o.cwd = "/";
  const process::ChildResult c = process::run_command({interpreter, "-c", kScript, package}, o);
  nlohmann::json answer;
  std::istringstream lines(c.output);
  std::size_t dropped = 0;  // the last 20 lines are kept: a traceback names its error last
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("cudabench-import: ", 0) == 0) {
      answer = nlohmann::json::parse(line.substr(18), nullptr, false);
    } else if (line.find_first_not_of(" \t\r") != std::string::npos) {
      r.warnings.push_back(kept(line));
      if (r.warnings.size() > 20) r.warnings.erase(r.warnings.begin()), ++dropped;
    }
  }
  if (dropped) r.warnings.insert(r.warnings.begin(), "(" + std::to_string(dropped) + " earlier lines not kept)");
  if (!c.started) {
    r.error = "import " + package + ": could not start " + interpreter;
    return r;
  }
  if (answer.is_object()) {
    const std::string not_ours = "import " + package + " gave an answer that is not cudabench's";
    try {  // an interpreter of the user's could print anything after our marker
      r.error = answer.value("error", "");
      r.version = answer.value("version", "");
      // A count, read as a number first: 1e300 or -1 is no count (an int
      // would take 1e300 as -2147483648).
      const double devices = answer.value("devices", 0.0);
      if (devices >= 0 && devices <= 1e6 && devices == std::floor(devices)) {
        r.device_count = static_cast<int>(devices);
        r.cuda_available = answer.value("available", r.device_count > 0);
      } else {
        r.error = not_ours + " (devices: " + answer["devices"].dump().substr(0, 40) + ")";
      }
    } catch (const nlohmann::json::exception&) {
      r.error = not_ours;
    }
  } else if (c.timed_out) {
    r.error = "import " + package + " hung: no answer in " + std::to_string(seconds) + " s";
  } else if (c.signal) {
    r.error = "import " + package + " crashed (" + process::signal_name(c.signal) + ")";
  } else {
    r.error = "import " + package + " gave no answer (exit " + std::to_string(c.exit_code) + ")";
  }
  return r;
}

}  // namespace

std::vector<PythonImport> imports(const PythonEnv& env, int seconds) {
  std::vector<PythonImport> out;
  if (env.interpreter.empty()) return out;
  for (const auto& p : env.packages)
    if (p.shadowed_by.empty()) out.push_back(import_one(env.interpreter, p.name, seconds));
  return out;
}

}  // namespace cudabench::env
