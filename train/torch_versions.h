// The LibTorch API differences between the stacks' versions (the table in
// scripts/stacks.py: 2.10 and 2.11), in one place.
#pragma once

#include <torch/version.h>

// True when building against LibTorch major.minor or newer.
#define CUDABENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// 2.11: the pinned host allocator takes part in CUDA graph memory pools
// (HostAllocator::end_allocate_to_pool, release_pool), and c10d::Reducer
// takes a per-bucket size list (bucket_bytes_cap_list).
#define CUDABENCH_TORCH_HOST_POOLS CUDABENCH_TORCH_AT_LEAST(2, 11)
#define CUDABENCH_TORCH_REDUCER_CAP_LIST CUDABENCH_TORCH_AT_LEAST(2, 11)
