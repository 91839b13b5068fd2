# Google Benchmark, nlohmann_json, CLI11, OpenMP (and GoogleTest in tests/).
# Each comes from the system (Debian's packages; Google Benchmark as the
# Release build scripts/setup.sh makes) or, failing that, from sources in
# CUDABENCH_DEPS_DIR (scripts/vendor-deps.sh), for machines with no registry.
find_package(OpenMP REQUIRED COMPONENTS CXX)

find_package(benchmark QUIET)
if(NOT benchmark_FOUND)
  if(EXISTS "${CUDABENCH_DEPS_DIR}/benchmark/CMakeLists.txt")
    set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "" FORCE)
    set(BENCHMARK_ENABLE_WERROR OFF CACHE BOOL "" FORCE)
    set(BENCHMARK_ENABLE_INSTALL OFF CACHE BOOL "" FORCE)
    set(GIT_VERSION "1.7.1" CACHE STRING "" FORCE)
    add_subdirectory("${CUDABENCH_DEPS_DIR}/benchmark" "${CMAKE_BINARY_DIR}/_deps/benchmark" EXCLUDE_FROM_ALL)
    message(STATUS "cudabench: Google Benchmark from ${CUDABENCH_DEPS_DIR}/benchmark")
  else()
    message(FATAL_ERROR "Google Benchmark not found: run scripts/setup.sh (or scripts/vendor-deps.sh)")
  endif()
else()
  message(STATUS "cudabench: Google Benchmark ${benchmark_VERSION} from ${benchmark_DIR}")
endif()

find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND)
  if(EXISTS "${CUDABENCH_DEPS_DIR}/nlohmann/json.hpp")
    add_library(nlohmann_json INTERFACE)
    target_include_directories(nlohmann_json INTERFACE "${CUDABENCH_DEPS_DIR}")
    add_library(nlohmann_json::nlohmann_json ALIAS nlohmann_json)
  else()
    message(FATAL_ERROR "nlohmann_json not found: run scripts/setup.sh (or scripts/vendor-deps.sh)")
  endif()
endif()

find_package(CLI11 QUIET)
if(NOT CLI11_FOUND)
  if(EXISTS "${CUDABENCH_DEPS_DIR}/CLI/CLI.hpp")
    add_library(CLI11 INTERFACE)
    target_include_directories(CLI11 INTERFACE "${CUDABENCH_DEPS_DIR}")
    add_library(CLI11::CLI11 ALIAS CLI11)
  else()
    message(FATAL_ERROR "CLI11 not found: run scripts/setup.sh (or scripts/vendor-deps.sh)")
  endif()
endif()

# zlib reads the .gz IDX files Debian ships; without it they must be gunzipped.
find_package(ZLIB QUIET)
