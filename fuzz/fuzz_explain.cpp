// libFuzzer target: the doctor's readers of untrusted bytes. The first byte
// picks one: a pasted error message (matched against the scenarios and
// explained over an empty report), the library names in it,
// CUDA_VISIBLE_DEVICES, or an ELF file's fatbins (any bytes as the file:
// the reader must stop at the end of the data, never loop or over-read).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "doctor/explain.h"
#include "doctor/fatbin.h"
#include "doctor/rules.h"
#include "env/report.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cudabench::env;
  using namespace cudabench::doctor;
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0: {
      static const Report empty;
      const Explanation e = explain(text, empty);
      if (e.items.size() > scenarios().size()) __builtin_trap();
      (void)explanation_text(e);
      (void)explanation_json(e);
      break;
    }
    case 1:
      for (const auto& name : libraries_named(text))
        if (name.size() > text.size()) __builtin_trap();
      break;
    case 2: {
      const VisibleDevices v = parse_visible_devices(text, data[0] / 4 % 9 - 1, {"GPU-0c4f", "GPU-0c4e", "GPU-77"});
      if (v.used.size() > text.size() + 1) __builtin_trap();
      break;
    }
    case 3: {
      const int fd = memfd_create("fatbin", 0);
      if (fd < 0) return 0;
      if (write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()))
        (void)fatbin_summary(read_fatbin_archs("/proc/self/fd/" + std::to_string(fd)));
      close(fd);
      break;
    }
  }
  return 0;
}
