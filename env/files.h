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
// The entries of a folder, sorted; at most `limit` of them are read.
std::vector<std::filesystem::path> list_dir(const std::filesystem::path& d, std::size_t limit = SIZE_MAX);
// Why `p` cannot be read as a text file, in words ("a FIFO, not a file",
// "a dangling link", "a link loop", "unreadable: Permission denied", "not
// text: it holds NUL bytes"); "" when it can. Never blocks: a FIFO is not opened.
std::string file_problem(const std::filesystem::path& p);
// The non-empty parts of `s` between `sep`s ("a::b" -> a, b).
std::vector<std::string> split(const std::string& s, char sep);

}  // namespace cudabench::env
