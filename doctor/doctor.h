// The doctor: judges what env's probes found. examine() is what bench and
// train call for the report with its verdicts.
#pragma once

#include "env/env_types.h"

namespace cudabench::doctor {

// env::collect()'s report, with the architectures of this program's and
// LibTorch's fatbins, and every verdict. Cached like collect().
const env::Report& examine();

}  // namespace cudabench::doctor
