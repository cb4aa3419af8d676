# The GPU build: CUDA's compiler, the CUDA runtime, cuBLAS and NCCL. ZERO_CUDA is AUTO, ON or OFF
# (CMakeLists.txt). AUTO turns ON only where `nvidia-smi -L` lists a GPU, so that a CPU machine's
# first build (scripts/demo.sh) does not compile the CUDA objects; the test command asks for ON.
# ON stays ON only when all of them are found; otherwise it turns OFF here with a message saying
# what is missing, and the build uses the no-CUDA files (no_cuda.cpp, gpt_kernels_no_cuda.cpp), which say so at run time.
#
# Where nvcc is not on the PATH (a fresh Debian 12 with CUDA installed at /usr/local/cuda), the
# compiler is taken from there; CUDACXX or -DCMAKE_CUDA_COMPILER=... choose another one.
string(TOUPPER "${ZERO_CUDA}" zero_cuda_choice)
if(NOT zero_cuda_choice MATCHES "^(AUTO|ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
  message(FATAL_ERROR "zero: ZERO_CUDA is '${ZERO_CUDA}'; it must be AUTO, ON or OFF")
endif()
if(zero_cuda_choice STREQUAL "AUTO")
  find_program(ZERO_NVIDIA_SMI nvidia-smi)
  set(zero_gpu_listing "")
  if(ZERO_NVIDIA_SMI)
    execute_process(COMMAND ${ZERO_NVIDIA_SMI} -L OUTPUT_VARIABLE zero_gpu_listing ERROR_QUIET RESULT_VARIABLE zero_smi_status TIMEOUT 20)
    if(NOT zero_smi_status EQUAL 0)
      set(zero_gpu_listing "")
    endif()
  endif()
  if(NOT zero_gpu_listing MATCHES "GPU [0-9]+:")
    message(STATUS "zero: CUDA off (ZERO_CUDA=AUTO and no GPU listed by nvidia-smi -L; -DZERO_CUDA=ON builds the CUDA backend anyway)")
    set(ZERO_CUDA OFF)
    return()
  endif()
  set(ZERO_CUDA ON)
endif()
if(NOT ZERO_CUDA)
  message(STATUS "zero: CUDA off (-DZERO_CUDA=OFF)")
  return()
endif()

include(CheckLanguage)
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  # nvcc from the PATH, else from where NVIDIA's packages put it (check_language looks on the PATH only).
  find_program(ZERO_NVCC nvcc PATHS /usr/local/cuda/bin)
  if(ZERO_NVCC)
    set(CMAKE_CUDA_COMPILER ${ZERO_NVCC} CACHE FILEPATH "CUDA compiler")
  endif()
endif()
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "zero: CUDA off (no CUDA compiler found: install the CUDA toolkit, or set CUDACXX)")
  set(ZERO_CUDA OFF)
  return()
endif()

# sm_90: the H200/H100's own machine code (HOPPER.md: with no target named, nvcc embeds older
# code and PTX the driver compiles at start). One architecture keeps the CUDA compile short.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
enable_language(CUDA)
# C++20 as the C++ files. CMake 3.25 does not know nvcc's C++20 flag (it knows it from 3.26 on),
# so it is named here, after the compiler check (which runs without a standard).
if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
# Dependencies found in /usr/include (OpenSSL, zlib, ...) must not reach nvcc as -isystem: it
# would reorder the system headers and break libstdc++'s #include_next <math.h>.
list(APPEND CMAKE_CUDA_IMPLICIT_INCLUDE_DIRECTORIES /usr/include)
# The shared CUDA runtime (libzero's C++ files call it too; CUDA::cudart is linked); programs
# linked by the C++ compiler find CUDA's own link-time libraries in the toolkit's directory.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
find_package(CUDAToolkit)
find_path(ZERO_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(ZERO_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})

set(zero_cuda_missing "")
if(NOT CUDAToolkit_FOUND)
  list(APPEND zero_cuda_missing "the CUDA runtime")
endif()
if(NOT TARGET CUDA::cublas)
  list(APPEND zero_cuda_missing "cuBLAS")
endif()
if(NOT ZERO_NCCL_INCLUDE_DIR OR NOT ZERO_NCCL_LIBRARY)
  list(APPEND zero_cuda_missing "NCCL (nccl.h, libnccl)")
endif()
if(zero_cuda_missing)
  list(JOIN zero_cuda_missing ", " zero_cuda_missing)
  message(STATUS "zero: CUDA off (missing: ${zero_cuda_missing})")
  set(ZERO_CUDA OFF)
  return()
endif()

add_library(zero_nccl UNKNOWN IMPORTED)
set_target_properties(zero_nccl PROPERTIES IMPORTED_LOCATION ${ZERO_NCCL_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES ${ZERO_NCCL_INCLUDE_DIR})
message(STATUS "zero: CUDA on (${CMAKE_CUDA_COMPILER}, CUDA ${CUDAToolkit_VERSION}, sm_${CMAKE_CUDA_ARCHITECTURES}, NCCL ${ZERO_NCCL_LIBRARY})")
