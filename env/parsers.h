// The text parsers of the environment probe, apart from the files they read
// so that tests and the fuzz targets (fuzz/) can drive them with any bytes.
// Hand-written scans, not std::regex: libstdc++'s regex recurses once per
// character and overflows the stack on a long enough file.
// Each returns an unknown Version (or "") when the text states none.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "env_types.h"

namespace cudabench::env {

// version.json of a toolkit install: {"cuda": {"version": "13.0.88", ...}}.
Version parse_version_json(std::string_view text);
// version.txt (CUDA <= 11.0): "CUDA Version 10.2.89".
Version parse_version_txt(std::string_view text);
// A wheel's dist-info folder name: nvidia_cuda_nvcc-13.0.88.dist-info,
// nvidia_cuda_runtime_cu12-12.4.127.dist-info. `component` is "nvcc",
// "runtime", or "" for either.
Version parse_wheel_dist_info(std::string_view name, std::string_view component = "");
// A conda-meta record's file name: cuda-nvcc-12.4.131-0.json,
// cuda-cudart-12.4.127-h99ab3db_0.json, cudatoolkit-11.8.0-h6a678d5_0.json.
Version parse_conda_meta_name(std::string_view name);
// The runtime header's "#define CUDART_VERSION 13000".
Version parse_cudart_header(std::string_view text);
// /proc/driver/nvidia/version's first line: "NVRM version: NVIDIA UNIX
// x86_64 Kernel Module  580.95.05  Tue ..." (also "... Kernel Module for
// aarch64  580.95.05"); the line itself when it has no version, "" when empty.
std::string parse_proc_driver_version(std::string_view text);
// The first `limit` bytes of a regular file (or a /proc or /sys file); ""
// when it is missing, unreadable, a folder or a device. Never throws: a
// std::ifstream over a folder throws from its first read in libstdc++.
std::string read_text_file(const std::string& path, std::size_t limit = 1 << 20);
// Its first line, without the line end and trailing blanks.
std::string read_first_line(const std::string& path);

// `nvcc --version`: "Cuda compilation tools, release 13.0, V13.0.88".
Version parse_nvcc_version(std::string_view text);
// A versioned library file name: libcuda.so.580.95.05 -> "580.95.05",
// libcudart.so.13.0.96 -> "13.0.96"; "" when unversioned.
std::string version_from_soname(std::string_view path);
// The dotted number at `at` ("13.0.88" in "release 13.0.88,"): digits, and
// dots between digits; "" when none starts there.
std::string_view dotted_at(std::string_view s, std::size_t at);
// The text in lower case (ASCII), and items joined by `sep`: small helpers
// the probes, the doctor and the printers share.
std::string to_lower(std::string s);
std::string join(const std::vector<std::string>& items, const std::string& sep = ", ");

// Python sources and wheel metadata, read without Python.
// `name = 'text'` or `name: Optional[str] = "text"` at a line's start
// (torch/version.py, jaxlib/version.py): the text, "" for None, nullopt
// when the name is not assigned so.
std::optional<std::string> python_string_assignment(std::string_view text, std::string_view name);
// A dict entry of Python source, `'key': value` or `('key', value)`
// (tensorflow's build_info.py: an OrderedDict of pairs): a quoted value's text, a list's items joined by ',',
// anything else as written up to the next ',' or '}' ("True"); nullopt
// when the key is absent.
std::optional<std::string> python_dict_entry(std::string_view text, std::string_view key);
// A dist-info folder's name and version: "torch-2.11.0+cu130.dist-info" ->
// {"torch", "2.11.0+cu130"}; {"", ""} for anything else.
std::pair<std::string, std::string> dist_info_name_version(std::string_view folder);
// A wheel METADATA file's Requires-Dist values, in order.
std::vector<std::string> metadata_requires(std::string_view text);

// ncclGetVersion's code: 22703 -> "2.27.3" (since 2.9: major*10000 +
// minor*100 + patch; before: major*1000 + minor*100 + patch); "" for <= 0.
std::string nccl_version_string(int code);

}  // namespace cudabench::env
