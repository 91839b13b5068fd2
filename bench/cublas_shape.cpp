#include "cublas_shape.h"

#include <cmath>

namespace cudabench::bench {

GeamShape geam_shape(std::size_t n) {
  constexpr std::size_t kWarp = 32;
  if (n < kWarp) return {n, n ? 1u : 0u, 0};
  std::size_t root = static_cast<std::size_t>(std::sqrt(static_cast<double>(n)));
  while (root * root < n) ++root;  // ceil(sqrt(n)), exact for any size_t the double rounds
  const std::size_t first = (root + kWarp - 1) / kWarp * kWarp;
  for (std::size_t rows = first; rows <= 4 * root; rows += kWarp)
    if (n % rows == 0) return {rows, n / rows, 0};
  return {first, n / first, n % first};
}

std::string geam_label(std::size_t n) {
  const GeamShape g = geam_shape(n);
  std::string s = "cublasSgeam on a " + std::to_string(g.rows) + " x " + std::to_string(g.cols) + " matrix (lda " +
                  std::to_string(g.rows) + ")";
  if (g.rest) s += " and a " + std::to_string(g.rest) + " x 1 one for the rest";
  return s;
}

}  // namespace cudabench::bench
