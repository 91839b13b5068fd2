#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <cerrno>
#include <cstring>
#include <sstream>

namespace cudabench::env {
namespace fs = std::filesystem;

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_link(const fs::path& p) {
  std::error_code ec;
  return fs::is_symlink(p, ec);
}

std::string canonical_str(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::canonical(p, ec);
  return ec ? p.lexically_normal().string() : c.string();
}

namespace {
std::optional<std::chrono::steady_clock::time_point> g_scan_deadline;
std::map<std::string, SiteListing> g_sites;  // this scan's, by folder

// Every entry of `d` that `keep` takes, until the scan's deadline (checked
// every 256 entries); false when it stopped there.
template <class Keep>
bool each_entry(const fs::path& d, std::vector<fs::path>* out, std::error_code* ec, Keep keep) {
  std::size_t seen = 0;
  for (fs::directory_iterator it(d, *ec), end; !*ec && it != end; it.increment(*ec)) {
    if (++seen % 256 == 0 && past_scan_deadline()) return false;
    if (keep(it->path())) out->push_back(it->path());
  }
  return true;
}
}  // namespace

void set_scan_deadline(double seconds) {
  g_scan_deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  g_sites.clear();
}

void clear_scan_deadline() {
  g_scan_deadline.reset();
  g_sites.clear();
}

bool past_scan_deadline() { return g_scan_deadline && std::chrono::steady_clock::now() > *g_scan_deadline; }

std::vector<fs::path> list_dir(const fs::path& d) {
  std::vector<fs::path> out;
  std::error_code ec;
  each_entry(d, &out, &ec, [](const fs::path&) { return true; });
  std::sort(out.begin(), out.end());
  return out;
}

const SiteListing& site_listing(const std::string& site) {
  if (auto it = g_sites.find(site); it != g_sites.end()) return it->second;
  SiteListing s;
  std::error_code ec;
  s.cut = !each_entry(site, &s.meta, &ec, [](const fs::path& p) {
    const std::string ext = p.extension().string();
    return ext == ".dist-info" || ext == ".egg-info" || ext == ".egg-link" || ext == ".pth";
  });
  if (ec) s.problem = ec.message();
  std::sort(s.meta.begin(), s.meta.end());
  return g_sites[site] = std::move(s);
}

std::string file_problem(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return errno == ENOENT ? "missing" : std::string("unreadable: ") + std::strerror(errno);
  const bool link = S_ISLNK(st.st_mode);
  if (::stat(p.c_str(), &st) != 0) {
    if (errno == ELOOP) return "a link loop";
    if (errno == ENOENT && link) return "a dangling link";
    return std::string("unreadable: ") + std::strerror(errno);
  }
  if (S_ISDIR(st.st_mode)) return "a folder, not a file";
  if (S_ISFIFO(st.st_mode)) return "a FIFO, not a file";
  if (!S_ISREG(st.st_mode)) return "a device or socket, not a file";
  const int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::string("unreadable: ") + std::strerror(errno);
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  const int err = errno;
  ::close(fd);
  if (n < 0) return std::string("unreadable: ") + std::strerror(err);
  if (std::memchr(buf, '\0', static_cast<std::size_t>(n))) return "not text: it holds NUL bytes";
  return "";
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, sep);)
    if (!p.empty()) out.push_back(p);
  return out;
}

}  // namespace cudabench::env
