# PyTorch's wheels export copies of libstdc++'s std::filesystem functions
# (pytorch/pytorch#133437); when libtorch.so comes first in the load order,
# calls such as std::filesystem::remove_all bind to its copy and crash.
# Targets that link LibTorch call this first, so libstdc++ is loaded (and
# searched) before any LibTorch library.
function(cudabench_libstdcxx_first target)
  if(CUDABENCH_HAVE_TORCH)
    target_link_libraries(${target} PRIVATE "-Wl,--push-state,--no-as-needed" stdc++ "-Wl,--pop-state")
  endif()
endfunction()

# LibTorch: a user's own (Torch_DIR, or an importable torch in the active
# python3) takes precedence; else the stack's torch that scripts/setup.sh
# installs in CUDABENCH_VENV_DIR (docs/stacks.md; the scripts name it as
# Torch_DIR themselves).
set(CUDABENCH_HAVE_TORCH OFF)
set(CUDABENCH_TORCH_VERSION "")
set(_cb_torch_skipped OFF)
if(CUDABENCH_ENABLE_TORCH)
  if(NOT Torch_DIR AND DEFINED ENV{Torch_DIR})
    set(Torch_DIR "$ENV{Torch_DIR}")
  endif()
  if(NOT Torch_DIR)
    find_program(CUDABENCH_PYTHON3 python3)
    if(CUDABENCH_PYTHON3)
      execute_process(COMMAND ${CUDABENCH_PYTHON3} -c "import torch, os; print(os.path.join(torch.utils.cmake_prefix_path, 'Torch'))"
                      OUTPUT_VARIABLE _torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                      RESULT_VARIABLE _torch_rc ERROR_QUIET)
      if(_torch_rc EQUAL 0 AND EXISTS "${_torch_dir}/TorchConfig.cmake")
        set(Torch_DIR "${_torch_dir}")
      endif()
    endif()
  endif()
  if(NOT Torch_DIR)
    file(GLOB _venv_torch "${CUDABENCH_VENV_DIR}/lib/python3*/site-packages/torch/share/cmake/Torch")
    if(_venv_torch)
      list(GET _venv_torch 0 Torch_DIR)
    endif()
  endif()
  # A CUDA build of LibTorch (the PyPI wheel) needs the CUDA toolkit at
  # configure time: Caffe2Config stops with a fatal error without it. On a
  # machine without nvcc, leave LibTorch out with a message instead.
  if(Torch_DIR AND EXISTS "${Torch_DIR}/../../../lib/libtorch_cuda.so")
    include(CheckLanguage)
    check_language(CUDA)
    if(NOT CMAKE_CUDA_COMPILER)
      message(STATUS "cudabench: LibTorch OFF: ${Torch_DIR} is a CUDA build of LibTorch and needs the CUDA toolkit, which was not found (install it, or point Torch_DIR at a CPU LibTorch)")
      set(_cb_torch_skipped ON)
      unset(Torch_DIR)
      set(Torch_DIR "" CACHE PATH "" FORCE)
    endif()
  endif()
  if(Torch_DIR)
    # Caffe2's CUDA setup rewrites the project-wide CUDA flags with its own
    # -gencode list (sm_50 included, which nvcc 13 rejects) and warns about
    # CMAKE_CUDA_ARCHITECTURES. Our kernels keep our architectures: save the
    # settings, let it run with an explicit arch list, restore them.
    set(_cb_cuda_flags "${CMAKE_CUDA_FLAGS}")
    set(_cb_cuda_archs "${CMAKE_CUDA_ARCHITECTURES}")
    unset(CMAKE_CUDA_ARCHITECTURES)
    if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
      set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
    endif()
    set(CAFFE2_USE_CUDNN ON)
    find_package(Torch QUIET)
    set(CMAKE_CUDA_FLAGS "${_cb_cuda_flags}")
    set(CMAKE_CUDA_ARCHITECTURES "${_cb_cuda_archs}")
  endif()
  if(Torch_FOUND)
    set(CUDABENCH_HAVE_TORCH ON)
    set(CUDABENCH_TORCH_VERSION "${Torch_VERSION}")
    message(STATUS "cudabench: LibTorch ${CUDABENCH_TORCH_VERSION} from ${Torch_DIR}")
  elseif(NOT _cb_torch_skipped)
    message(STATUS "cudabench: LibTorch OFF: not found (run scripts/setup.sh, or pass -DTorch_DIR=<libtorch>/share/cmake/Torch); the training workload is not built")
  endif()
else()
  message(STATUS "cudabench: LibTorch OFF (CUDABENCH_ENABLE_TORCH=OFF)")
endif()
