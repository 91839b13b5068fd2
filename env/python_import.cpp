// --import: the one place where a user's Python runs. Each package is
// imported by its environment's own interpreter, in a child that starts in
// "/" (so no folder of ours shadows the package) and is ended by timeout(1)
// after its deadline; what it printed (warnings, a library's log lines) is
// kept for the doctor, which reads it as --explain reads a pasted message.
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "probe.h"

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

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A line as the report keeps it: at most 400 bytes, printable ASCII (a
// child may print any bytes, and the JSON report must stay UTF-8).
std::string kept(const std::string& line) {
  std::string out;
  for (char c : line.substr(0, 400)) out += (c >= 0x20 && c < 0x7f) || c == '\t' ? c : '?';
  return out;
}

// Runs `cmd`, handing each line of its output (stdout and stderr) to
// `line`, however much it prints; returns how the child ended.
template <typename Line>
int run(const std::string& cmd, Line line) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::string partial;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) {
    partial.append(buf, n);
    for (std::size_t end; (end = partial.find('\n')) != std::string::npos; partial.erase(0, end + 1))
      line(partial.substr(0, end));
    if (partial.size() > (1 << 20)) partial.erase(0, partial.size() - 4096);  // a line without end
  }
  if (!partial.empty()) line(partial);
  return ::pclose(p);
}

PythonImport import_one(const std::string& interpreter, const std::string& package, int seconds) {
  PythonImport r;
  r.package = package;
  nlohmann::json answer;
  const int status = run("cd / && exec timeout -k 5 " + std::to_string(seconds) + " " + quoted(interpreter) + " -c " +
                             quoted(kScript) + " " + quoted(package) + " 2>&1 </dev/null",
                         [&](const std::string& line) {
                           if (line.rfind("cudabench-import: ", 0) == 0)
                             answer = nlohmann::json::parse(line.substr(18), nullptr, false);
                           else if (line.find_first_not_of(" \t\r") != std::string::npos && r.warnings.size() < 20)
                             r.warnings.push_back(kept(line));
                         });
  if (status == -1) {
    r.error = "import " + package + ": could not start " + interpreter;
    return r;
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (answer.is_object()) {
    try {  // an interpreter of the user's could print anything after our marker
      r.error = answer.value("error", "");
      r.version = answer.value("version", "");
      r.device_count = answer.value("devices", 0);
      r.cuda_available = answer.value("available", r.device_count > 0);
    } catch (const nlohmann::json::exception&) {
      r.error = "import " + package + " gave an answer that is not cudabench's";
    }
  } else if (code == 124 || code == 128 + 9) {
    r.error = "import " + package + " hung: no answer in " + std::to_string(seconds) + " s";
  } else if (code > 128) {
    r.error = "import " + package + " crashed (signal " + std::to_string(code - 128) + ")";
  } else {
    r.error = "import " + package + " gave no answer (exit " + std::to_string(code) + ")";
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
