// A libcuda.so.1 with no driver in it (its soname is libcuda.so.1), which
// env/load_guard.cpp preloads when the real one crashed or hung while
// loading: a library that loads the driver at start-up (LibTorch's
// cuSPARSELt does) gets this one, finds no entry point, and goes on.
extern "C" const char cudabench_libcuda_withheld[] = "the real libcuda.so.1 crashed or hung while loading";
