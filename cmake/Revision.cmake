# cudabench_revision(<source dir> <deps dir> <out var>): the commit a build
# records, `git rev-parse --short HEAD` in the source tree; without .git (a
# tree copied to a GPU machine) the one scripts/vendor-deps.sh wrote to
# <deps dir>/REVISION; else "unknown".
# `cmake -DSOURCE_DIR=... -DDEPS_DIR=... -P cmake/Revision.cmake` prints it
# (tests/test_gpu_check.py).
function(cudabench_revision source_dir deps_dir out_var)
  execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY "${source_dir}"
                  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0)
    set(rev "")
  endif()
  if(NOT rev AND EXISTS "${deps_dir}/REVISION")
    file(STRINGS "${deps_dir}/REVISION" rev LIMIT_COUNT 1)
  endif()
  if(NOT rev)
    set(rev "unknown")
  endif()
  set(${out_var} "${rev}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  cudabench_revision("${SOURCE_DIR}" "${DEPS_DIR}" rev)
  message("${rev}")
endif()
