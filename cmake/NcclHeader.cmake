# cudabench_nccl_include(<Torch_DIR> <out var>): the folder of the nccl.h
# that belongs to the NCCL LibTorch loads (c10d's ProcessGroupNCCL.hpp
# needs it, and its layout depends on NCCL's version), or "" when there is
# none. Each way torch is installed keeps NCCL elsewhere:
#   a pip wheel      <site-packages>/nvidia/nccl/include (the nvidia-nccl wheel
#                    torch depends on): taken as it is;
#   conda            <env>/include, beside <env>/lib/libnccl.so.X.Y.Z;
#   a container      /usr/include or /usr/local/include (libnccl-dev in NGC
#                    images), beside lib/, lib64/ or lib/<triplet>/.
# Outside a wheel a header is taken only beside a libnccl.so of its own
# version (NCCL_MAJOR.NCCL_MINOR.NCCL_PATCH), never a stray one.
# `cmake -DTORCH_DIR=... [-DSYSTEM_PREFIXES=a;b] -P cmake/NcclHeader.cmake`
# prints it (tests/test_gpu_check.py).
function(cudabench_nccl_include torch_dir out_var)
  get_filename_component(site "${torch_dir}/../../../.." ABSOLUTE)
  if(EXISTS "${site}/nvidia/nccl/include/nccl.h")
    set(${out_var} "${site}/nvidia/nccl/include" PARENT_SCOPE)
    return()
  endif()
  # <prefix>/lib/python3.X/site-packages: the conda env, or /usr/local.
  get_filename_component(prefix "${site}/../../.." ABSOLUTE)
  if(NOT DEFINED CUDABENCH_NCCL_SYSTEM_PREFIXES)
    set(CUDABENCH_NCCL_SYSTEM_PREFIXES /usr /usr/local)
  endif()
  foreach(p "${prefix}" ${CUDABENCH_NCCL_SYSTEM_PREFIXES})
    if(NOT EXISTS "${p}/include/nccl.h")
      continue()
    endif()
    file(STRINGS "${p}/include/nccl.h" defs REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
    set(v "")
    foreach(part MAJOR MINOR PATCH)
      string(REGEX MATCH "NCCL_${part} +([0-9]+)" _ "${defs}")
      list(APPEND v "${CMAKE_MATCH_1}")
    endforeach()
    list(JOIN v "." version)
    file(GLOB libs "${p}/lib/libnccl.so.${version}" "${p}/lib64/libnccl.so.${version}"
                   "${p}/lib/*-linux-gnu/libnccl.so.${version}")
    if(libs)
      set(${out_var} "${p}/include" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out_var} "" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(DEFINED SYSTEM_PREFIXES)
    set(CUDABENCH_NCCL_SYSTEM_PREFIXES ${SYSTEM_PREFIXES})
  endif()
  cudabench_nccl_include("${TORCH_DIR}" dir)
  message("${dir}")
endif()
