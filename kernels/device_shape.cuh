// SM count and resident blocks per SM for a kernel at a block size on the
// current device, for launchers that size a grid-stride grid to the chip.
// Cached per (device, kernel, block): the occupancy query is not free.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "cuda_check.h"

namespace cudabench::hd {

struct DeviceShape {
  int sms = 1;
  int blocks_per_sm = 1;
};

template <typename Kernel>
DeviceShape device_shape(Kernel kernel, unsigned block) {
  static std::unordered_map<long long, DeviceShape> cache;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  const long long key = (static_cast<long long>(dev) << 32) ^
                        (reinterpret_cast<std::uintptr_t>(kernel) << 11) ^ block;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  DeviceShape s;
  CUDA_CHECK(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, dev));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s.blocks_per_sm, kernel, block, 0));
  cache.emplace(key, s);
  return s;
}

}  // namespace cudabench::hd
