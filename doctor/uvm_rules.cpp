// Scenario 27, "CUDA unknown error" (999): its causes in the order they are
// likeliest, each checked where this machine can show it: nvidia_uvm not
// loaded, /dev/nvidia-uvm missing (a container), nvidia_uvm loaded and
// present but cuInit still 999 (a driver in a bad state, usually after a
// suspend and resume). A hung or crashed driver (driver.hung / .crashed)
// and CUDA_VISIBLE_DEVICES (driver.visible_devices) have their own rules.
#include <algorithm>

#include "env/parsers.h"
#include "rules.h"

namespace cudabench::doctor {
using namespace env;
namespace {
using L = Verdict::Level;
constexpr int kCudaErrorUnknown = 999;
}  // namespace

void unified_memory(const Report& r, std::vector<Verdict>& out) {
  const SystemInfo& s = r.system;
  const DriverInfo& d = r.driver;
  if (!s.nvidia_module_loaded) return;  // no driver: driver.missing and its kin say so
  const bool unknown = d.init_result == kCudaErrorUnknown;
  const bool ctl = std::count(s.device_nodes.begin(), s.device_nodes.end(), "/dev/nvidiactl") > 0;
  const bool node = std::count(s.device_nodes.begin(), s.device_nodes.end(), "/dev/nvidia-uvm") > 0;
  const std::string init = "cuInit: " + (d.init_result < 0 ? std::string("not called") : std::to_string(d.init_result));
  if (!s.uvm_module_loaded) {
    out.push_back({"driver.uvm_missing", unknown ? L::Error : L::Info,
                   "the nvidia_uvm kernel module is not loaded" +
                       std::string(unknown ? ", and cuInit failed with 999 (unknown error): CUDA needs it"
                                           : ": CUDA loads it at first use (nvidia-modprobe); where that cannot run, "
                                             "CUDA fails with \"unknown error\" (999)"),
                   "sudo modprobe nvidia_uvm", {"/sys/module/nvidia_uvm: absent", init}});
  } else if (ctl && !node && (unknown || !s.container.empty())) {
    out.push_back({"driver.uvm_node_missing", L::Error,
                   "/dev/nvidia-uvm is missing" + std::string(s.container.empty() ? "" : " in this container") +
                       " while /dev/nvidiactl is there: CUDA fails with \"unknown error\" (999)",
                   s.container.empty() ? "sudo nvidia-modprobe -u -c=0 (it makes /dev/nvidia-uvm), or reboot"
                                       : "run the container with --gpus all (or add --device /dev/nvidia-uvm "
                                         "--device /dev/nvidia-uvm-tools)",
                   {"device nodes: " + (s.device_nodes.empty() ? std::string("none") : join(s.device_nodes)), init}});
  } else if (unknown) {
    out.push_back({"driver.bad_state", L::Error,
                   "cuInit failed with 999 (unknown error) although nvidia_uvm is loaded and /dev/nvidia-uvm is there: "
                   "the driver is in a bad state, most often nvidia_uvm after a suspend and resume",
                   "stop every CUDA process, then: sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm; if it stays, "
                   "look for Xid lines in dmesg and reboot",
                   {init, "/sys/module/nvidia_uvm: loaded", "/dev/nvidia-uvm: present"}});
  }
}

}  // namespace cudabench::doctor
