# Google Benchmark, nlohmann_json, CLI11, RE2, OpenMP (and GoogleTest in tests/).
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

# RE2 matches bench's --benchmark_filter in linear time (std::regex, which
# Google Benchmark uses, backtracks without bound on (.*)*z).
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(RE2 QUIET IMPORTED_TARGET re2)
endif()
add_library(cudabench_re2 INTERFACE)
if(RE2_FOUND)
  target_link_libraries(cudabench_re2 INTERFACE PkgConfig::RE2)
elseif(EXISTS "${CUDABENCH_DEPS_DIR}/re2/CMakeLists.txt")
  set(RE2_BUILD_TESTING OFF CACHE BOOL "" FORCE)
  add_subdirectory("${CUDABENCH_DEPS_DIR}/re2" "${CMAKE_BINARY_DIR}/_deps/re2" EXCLUDE_FROM_ALL)
  target_link_libraries(cudabench_re2 INTERFACE re2::re2)
  message(STATUS "cudabench: RE2 from ${CUDABENCH_DEPS_DIR}/re2")
else()
  message(FATAL_ERROR "RE2 not found: run scripts/setup.sh (or scripts/vendor-deps.sh)")
endif()

# zlib reads the .gz IDX files Debian ships; without it they must be gunzipped.
find_package(ZLIB QUIET)
