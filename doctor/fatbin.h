// The architectures compiled into an ELF file's CUDA fatbins (this program's
// kernels, libtorch_cuda.so's), read without the toolkit.
#pragma once

#include <string>

#include "env/env_types.h"

namespace cudabench::doctor {

env::FatbinArchs read_fatbin_archs(const std::string& path);

}  // namespace cudabench::doctor
