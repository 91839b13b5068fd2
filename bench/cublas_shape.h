// How VectorAdd/cublas_geam shows cuBLAS at its best: cublasSgeam is an
// add of two matrices (C = alpha A + beta B), so the n floats of each array
// are given to it as a matrix: rows x cols, column-major, a leading
// dimension of rows, with the floats a whole matrix cannot hold (a prime n)
// as one column in a second call. Called on one column of n rows, as it
// once was, it moved 6% of an H200's peak.
#pragma once

#include <cstddef>
#include <string>

namespace cudabench::bench {

struct GeamShape {
  std::size_t rows = 0, cols = 0;  // the matrix: rows x cols, lda = rows
  std::size_t rest = 0;            // elements after it, a second call's rest x 1
};
// The shape for n elements: a column of at least sqrt(n) elements, a
// multiple of 32 (whole warps, 128-byte lines), dividing n where a divisor
// up to 4 sqrt(n) does (no second call: every size bench runs is one
// matrix); otherwise the multiple of 32 nearest above sqrt(n). Below 32
// elements, one column.
GeamShape geam_shape(std::size_t n);
// "cublasSgeam on a 16384 x 8192 matrix (lda 16384)" and the second call's
// shape, for the row's label.
std::string geam_label(std::size_t n);

}  // namespace cudabench::bench
