#include "parsers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

namespace cudabench::env {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

std::string_view dotted_at(std::string_view s, std::size_t at) {
  std::size_t i = at;
  while (i < s.size() && (is_digit(s[i]) || (s[i] == '.' && i > at && i + 1 < s.size() && is_digit(s[i + 1]))))
    ++i;
  return s.substr(std::min(at, s.size()), i - std::min(at, s.size()));
}

namespace {

// The dotted number right after the first `key` followed by spaces.
std::string_view number_after(std::string_view s, std::string_view key, bool need_space) {
  for (std::size_t pos = s.find(key); pos != std::string_view::npos; pos = s.find(key, pos + 1)) {
    std::size_t i = pos + key.size();
    const std::size_t start = i;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    if (need_space && i == start) continue;
    const auto num = dotted_at(s, i);
    if (!num.empty()) return num;
  }
  return {};
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace

Version parse_version_json(std::string_view text) {
  const auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return {};
  const auto cuda = j.find("cuda");
  if (cuda == j.end() || !cuda->is_object()) return {};
  const auto v = cuda->find("version");
  if (v == cuda->end() || !v->is_string()) return {};
  return Version::parse(v->get_ref<const std::string&>());
}

Version parse_version_txt(std::string_view text) {
  return Version::parse(number_after(text, "CUDA Version", true));
}

Version parse_wheel_dist_info(std::string_view name, std::string_view component) {
  // nvidia_cuda_<component>[_cu<N>]-<version>.dist-info
  if (!starts_with(name, "nvidia_cuda_") || !ends_with(name, ".dist-info")) return {};
  std::string_view rest = name.substr(12, name.size() - 12 - 10);
  std::string_view comp;
  for (std::string_view c : {std::string_view("nvcc"), std::string_view("runtime")})
    if (starts_with(rest, c) && (component.empty() || component == c)) comp = c;
  if (comp.empty()) return {};
  rest.remove_prefix(comp.size());
  if (starts_with(rest, "_cu")) {
    std::size_t i = 3;
    while (i < rest.size() && is_digit(rest[i])) ++i;
    if (i == 3) return {};
    rest.remove_prefix(i);
  }
  if (!starts_with(rest, "-")) return {};
  rest.remove_prefix(1);
  // The whole remainder is the version: digits and dots only.
  if (rest.empty() || !is_digit(rest[0])) return {};
  for (char c : rest)
    if (!is_digit(c) && c != '.') return {};
  return Version::parse(rest);
}

Version parse_conda_meta_name(std::string_view name) {
  // <package>-<version>-<build>.json for cuda-nvcc, cuda-cudart, cudatoolkit
  if (!ends_with(name, ".json")) return {};
  for (std::string_view pkg : {"cuda-nvcc-", "cuda-cudart-", "cudatoolkit-"}) {
    if (!starts_with(name, pkg)) continue;
    std::string_view rest = name.substr(pkg.size(), name.size() - pkg.size() - 5);
    const auto ver = dotted_at(rest, 0);
    if (ver.empty() || ver.size() >= rest.size() || rest[ver.size()] != '-') return {};
    return Version::parse(ver);
  }
  return {};
}

Version parse_cudart_header(std::string_view text) {
  constexpr std::string_view key = "#define";
  for (std::size_t pos = text.find(key); pos != std::string_view::npos; pos = text.find(key, pos + 1)) {
    std::size_t i = pos + key.size();
    const std::size_t gap = i;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i == gap || !starts_with(text.substr(i), "CUDART_VERSION")) continue;
    i += 14;
    const std::size_t gap2 = i;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i == gap2) continue;
    long v = 0;
    std::size_t digits = 0;
    for (; i < text.size() && is_digit(text[i]) && digits < 9; ++i, ++digits) v = v * 10 + (text[i] - '0');
    if (digits == 0 || (i < text.size() && is_digit(text[i]))) return {};  // none, or too long to be a version
    return Version::from_cuda_int(static_cast<int>(v));
  }
  return {};
}

std::string parse_proc_driver_version(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  constexpr std::string_view key = "Kernel Module";
  for (std::size_t pos = line.find(key); pos != std::string_view::npos; pos = line.find(key, pos + 1)) {
    std::size_t i = pos + key.size();
    while (i < line.size() && is_space(line[i])) ++i;
    if (starts_with(line.substr(i), "for ")) {  // "Kernel Module for aarch64  580.95.05"
      i += 4;
      while (i < line.size() && !is_space(line[i])) ++i;
      while (i < line.size() && is_space(line[i])) ++i;
    }
    const auto num = dotted_at(line, i);
    if (num.find('.') != std::string_view::npos) return std::string(num);
  }
  return std::string(line);
}

std::string read_text_file(const std::string& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  struct stat st {};
  std::string out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char buf[8192];
    while (out.size() < limit) {
      const ssize_t n = ::read(fd, buf, std::min(sizeof buf, limit - out.size()));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

std::string read_first_line(const std::string& path) {
  std::string line = read_text_file(path, 1 << 16);
  line = line.substr(0, line.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) line.pop_back();
  return line;
}

Version parse_nvcc_version(std::string_view text) {
  // The last line says it twice: "release 13.0, V13.0.88"; the V form is exact.
  constexpr std::string_view key = ", V";
  for (std::size_t pos = text.find(key); pos != std::string_view::npos; pos = text.find(key, pos + 1)) {
    const auto num = dotted_at(text, pos + key.size());
    if (num.find('.') != std::string_view::npos) return Version::parse(num);
  }
  return Version::parse(number_after(text, "release", true));
}

std::string version_from_soname(std::string_view path) {
  const std::size_t so = path.rfind(".so.");
  if (so == std::string_view::npos) return "";
  const std::string_view v = path.substr(so + 4);
  const auto num = dotted_at(v, 0);
  if (num.size() != v.size() || num.find('.') == std::string_view::npos) return "";
  return std::string(num);
}

std::string nccl_version_string(int code) {
  if (code <= 0) return "";
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code / 100) % 100 : (code / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

std::string to_lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& x : items) out += (out.empty() ? "" : sep) + x;
  return out;
}

namespace {
// The quoted text starting at `i` ('...' or "..."), or nullopt.
std::optional<std::string> quoted_at(std::string_view s, std::size_t i) {
  if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) return std::nullopt;
  const std::size_t end = s.find(s[i], i + 1);
  if (end == std::string_view::npos || s.substr(i, end - i).find('\n') != std::string_view::npos) return std::nullopt;
  return std::string(s.substr(i + 1, end - i - 1));
}
std::size_t skip_blanks(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}
// The position of the last character before `i` that is not a blank (0 when none).
std::size_t skip_back(std::string_view s, std::size_t i) {
  while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t' || s[i - 1] == '\n')) --i;
  return i > 0 ? i - 1 : 0;
}
}  // namespace

std::optional<std::string> python_string_assignment(std::string_view text, std::string_view name) {
  for (std::size_t pos = text.find(name); pos != std::string_view::npos; pos = text.find(name, pos + 1)) {
    if (pos > 0 && text[pos - 1] != '\n') continue;
    std::size_t i = skip_blanks(text, pos + name.size());
    if (i < text.size() && text[i] == ':') {  // an annotation: "cuda: Optional[str] = '13.0'"
      const std::size_t eq = text.find('=', i);
      if (eq == std::string_view::npos || text.substr(i, eq - i).find('\n') != std::string_view::npos) continue;
      i = eq;
    }
    if (i >= text.size() || text[i] != '=' || (i + 1 < text.size() && text[i + 1] == '=')) continue;
    i = skip_blanks(text, i + 1);
    if (starts_with(text.substr(i), "None")) return std::string();
    if (auto q = quoted_at(text, i)) return q;
  }
  return std::nullopt;
}

std::optional<std::string> python_dict_entry(std::string_view text, std::string_view key) {
  for (const char quote : {'\'', '"'}) {
    const std::string k = std::string(1, quote) + std::string(key) + quote;
    for (std::size_t pos = text.find(k); pos != std::string_view::npos; pos = text.find(k, pos + 1)) {
      std::size_t i = skip_blanks(text, pos + k.size());
      // {'key': value} or, as TensorFlow writes it, OrderedDict([('key', value)])
      const bool tuple = pos > 0 && text[skip_back(text, pos)] == '(';
      if (i >= text.size() || text[i] != (tuple ? ',' : ':')) continue;
      i = skip_blanks(text, i + 1);
      if (auto q = quoted_at(text, i)) return q;
      if (i < text.size() && text[i] == '[') {
        const std::size_t end = text.find(']', i);
        if (end == std::string_view::npos) return std::nullopt;
        std::vector<std::string> items;
        for (std::size_t j = i + 1; j < end; ++j)
          if (auto q = quoted_at(text, j); q && j < end) {
            items.push_back(*q);
            j += q->size() + 1;
          }
        return join(items, ",");
      }
      std::size_t end = i;
      while (end < text.size() && text[end] != ',' && text[end] != '}' && text[end] != '\n' && text[end] != ')') ++end;
      std::string v(text.substr(i, end - i));
      while (!v.empty() && is_space(v.back())) v.pop_back();
      return v;
    }
  }
  return std::nullopt;
}

std::pair<std::string, std::string> dist_info_name_version(std::string_view folder) {
  if (!ends_with(folder, ".dist-info")) return {};
  folder.remove_suffix(10);
  const std::size_t dash = folder.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash + 1 >= folder.size()) return {};
  return {std::string(folder.substr(0, dash)), std::string(folder.substr(dash + 1))};
}

std::vector<std::string> metadata_requires(std::string_view text) {
  std::vector<std::string> out;
  constexpr std::string_view key = "Requires-Dist:";
  for (std::size_t pos = text.find(key); pos != std::string_view::npos; pos = text.find(key, pos + 1)) {
    if (pos > 0 && text[pos - 1] != '\n') continue;
    std::size_t i = skip_blanks(text, pos + key.size());
    std::size_t end = text.find('\n', i);
    std::string v(text.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
    while (!v.empty() && is_space(v.back())) v.pop_back();
    if (!v.empty()) out.push_back(v);
  }
  return out;
}

}  // namespace cudabench::env
