// The doctor: judges what env's probes found. examine() is what bench and
// train call for the report with its verdicts.
#pragma once

#include "env/probe.h"

namespace cudabench::doctor {

// env::collect()'s report, with the architectures of this program's and
// LibTorch's fatbins, and every verdict. Cached like collect().
const env::Report& examine();
// examine()'s report with the user's own Python environments: found and
// read from files (env::probe_python), their kernels' fatbins read,
// imported when `in.import` asks, and judged (bench --env, --explain).
env::Report examine_with_python(const env::PythonScanInput& in);

}  // namespace cudabench::doctor
