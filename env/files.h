// Small file-system helpers the probes share. None throws: a folder that
// cannot be read is an empty one, a path that cannot be resolved stays as
// given (normalised).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cudabench::env {

bool path_exists(const std::filesystem::path& p);
bool is_dir(const std::filesystem::path& p);
// A regular file (a link to one counts; a FIFO or a device does not).
bool is_regular(const std::filesystem::path& p);
// A symbolic link, dangling or not.
bool is_link(const std::filesystem::path& p);
// `s` begins with `prefix`.
inline bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
// The canonical path, or `p` normalised when it cannot be resolved.
std::string canonical_str(const std::filesystem::path& p);
// The entries of a folder, sorted: all of them (no bound that could cut
// what is looked for: the scan's deadline stops a listing that is too long).
std::vector<std::filesystem::path> list_dir(const std::filesystem::path& d);

// The Python scan's deadline, which work inside one environment checks too
// (a site of 100,000 entries, 4,000 .egg-links), not only the scan between
// environments: set by probe_python for its run (and cleared after), so
// every listing stops at it; past_scan_deadline() says when it passed.
void set_scan_deadline(double seconds_from_now);
void clear_scan_deadline();
bool past_scan_deadline();

// What a site folder (site-packages) holds that the scan looks for by
// listing: the names of its .dist-info, .egg-info, .egg-link and .pth
// entries (a package's own folder, torch/, is looked up by name). Read
// whole once per scan, whatever its size; `problem` says why it could not
// be read ("Permission denied"), `cut` that the scan's deadline stopped it.
struct SiteListing {
  std::vector<std::filesystem::path> meta;
  std::string problem;
  bool cut = false;
};
const SiteListing& site_listing(const std::string& site);
// Why `p` cannot be read as a text file, in words ("a FIFO, not a file",
// "a dangling link", "a link loop", "unreadable: Permission denied", "not
// text: it holds NUL bytes"); "" when it can. Never blocks: a FIFO is not opened.
std::string file_problem(const std::filesystem::path& p);
// The non-empty parts of `s` between `sep`s ("a::b" -> a, b).
std::vector<std::string> split(const std::string& s, char sep);

}  // namespace cudabench::env
