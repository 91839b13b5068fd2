// Text that JSON can hold. An environment variable, a path or a device name
// may carry bytes that are not UTF-8 (CUDA_VISIBLE_DEVICES=$'\xff', a
// Latin-1 folder name); nlohmann_json refuses to write them (type_error 316)
// and to read them back. Every JSON text cudabench writes is made valid
// first: each byte that starts no valid sequence becomes U+FFFD.
#pragma once

#include <cstdio>
#include <cstring>
#include <string>

namespace cudabench {

inline std::string valid_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    // The sequence's length and the range its second byte must be in (RFC 3629).
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    bool ok = len > 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) ok = p[i + k] >= (k == 1 ? lo : 0x80) && p[i + k] <= (k == 1 ? hi : 0xBF);
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// The code point of a UTF-8 character at s[i] that moves the cursor, ends
// a line or reorders what is shown beyond C0 and DEL: a C1 control, U+2028,
// U+2029, the bidi marks and overrides (U+200E/F, U+202A-E, U+2066-9), with
// its length in `len`; 0 for any other.
inline unsigned wide_control(const std::string& s, std::size_t i, std::size_t* len) {
  const auto b = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  if (b(0) == 0xC2 && b(1) >= 0x80 && b(1) <= 0x9F) return *len = 2, b(1);
  if (b(0) != 0xE2 || b(1) < 0x80 || b(1) > 0x81 || b(2) < 0x80 || b(2) > 0xBF) return 0;
  const unsigned cp = 0x2000 + ((b(1) & 0x3F) << 6) + (b(2) & 0x3F);
  const bool control = cp == 0x200E || cp == 0x200F || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
                       (cp >= 0x2066 && cp <= 0x2069);
  return control ? (*len = 3, cp) : 0;
}

// Text from outside (a path, a variable, a device's name) as a text report
// shows it: a control character (a newline, a carriage return, a terminal
// escape, DEL, a C1 control, a line separator, a bidi override) written as
// an escape, "\n", "\x1b", "\u2028", as the Python tools write it
// (base/text.py), so that it can neither start a line of its own (a fake
// verdict or row) nor drive the terminal. `keep` names the characters left
// as they are (the report's own newlines, in its last pass: to_text).
inline std::string visible(const std::string& s, const char* keep = "") {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 1;
    const unsigned wide = wide_control(s, i, &len);
    if ((c >= 0x20 && c != 0x7f && !wide) || (c && std::strchr(keep, c))) {
      out += s[i];
      continue;
    }
    const unsigned code = wide ? wide : c;
    i += len - 1;
    char buf[8];
    if (code == '\n') std::snprintf(buf, sizeof buf, "\\n");
    else if (code == '\r') std::snprintf(buf, sizeof buf, "\\r");
    else if (code == '\t') std::snprintf(buf, sizeof buf, "\\t");
    else std::snprintf(buf, sizeof buf, code < 0x100 ? "\\x%02x" : "\\u%04x", code);
    out += buf;
  }
  return out;
}

}  // namespace cudabench
