// The numeric settings taken from the environment (CUDABENCH_PROBE_SECONDS,
// ...): one table, common/settings.json, which the Python tools and lib.sh
// read too (scripts/cudabench/base/settings.py), and one grammar: digits,
// with a fraction where the setting is not whole; no sign, space or
// exponent; within [min, max]. Empty is unset (the default). A bad value is
// refused (exit 2, one line naming it), never replaced by the default.
// Raw calls only: the load guard parses CUDABENCH_PROBE_SECONDS before the
// C library is initialised.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cudabench {

struct Setting {
  const char* name;
  const char* expected;
  double min, max, fallback;
  bool whole;
};

inline constexpr Setting kSettings[] = {
#include "common/settings_table.h"
};

inline const Setting* find_setting(const char* name) {
  for (const auto& s : kSettings)
    if (std::strcmp(s.name, name) == 0) return &s;
  return nullptr;
}

// The value `raw` gives setting `s`: its default when unset or empty, NaN
// when it breaks the grammar or the range.
inline double setting_of(const Setting& s, const char* raw) {
  if (!raw || !*raw) return s.fallback;
  double v = 0, scale = 1;
  bool point = false;
  std::size_t digits = 0;
  for (const char* c = raw; *c; ++c) {
    if (*c == '.' && !point && !s.whole && digits > 0) {
      point = true;
    } else if (*c >= '0' && *c <= '9' && digits < 15) {
      ++digits;
      if (point) v += (*c - '0') * (scale /= 10);
      else v = v * 10 + (*c - '0');
    } else {
      return NAN;
    }
  }
  return v >= s.min && v <= s.max ? v : NAN;
}

// One line saying why `raw` is not a value of `s`, into `line`: the value
// shown with its first 100 bytes, a control character as "\x1b" (a value
// holding a newline must not print a line of its own).
inline void setting_problem(const Setting& s, const char* raw, char* line, std::size_t size) {
  char shown[401];
  std::size_t n = 0;
  const char* start = raw ? raw : "";
  for (const char* c = start; *c && n + 4 < sizeof shown && c - start < 100; ++c) {
    const auto b = static_cast<unsigned char>(*c);
    if (b >= 0x20 && b != 0x7f) shown[n++] = *c;
    else if (b == '\n' || b == '\r' || b == '\t') shown[n++] = '\\', shown[n++] = b == '\n' ? 'n' : b == '\r' ? 'r' : 't';
    else n += static_cast<std::size_t>(std::snprintf(shown + n, sizeof shown - n, "\\x%02x", b));
  }
  shown[n] = '\0';
  std::snprintf(line, size, "%s=%s: expected %s, %g to %g", s.name, shown, s.expected, s.min, s.max);
}

// The setting `name` from the environment (a bad value gives the default:
// the programs refuse one at their start, check_settings).
inline double setting(const char* name) {
  const Setting* s = find_setting(name);
  const double v = s ? setting_of(*s, std::getenv(name)) : NAN;
  return std::isnan(v) && s ? s->fallback : v;
}

// 0 when every setting in the environment is good, else one line on stderr
// naming the first bad one ("bench: CUDABENCH_PROBE_SECONDS=abc: expected
// ...") and 2.
inline int check_settings(const char* tool) {
  for (const auto& s : kSettings) {
    const char* raw = std::getenv(s.name);
    if (!std::isnan(setting_of(s, raw))) continue;
    char line[512];
    setting_problem(s, raw, line, sizeof line);
    std::fprintf(stderr, "%s: %s\n", tool, line);
    return 2;
  }
  return 0;
}

}  // namespace cudabench
