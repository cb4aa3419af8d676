# `cmake --install build --prefix P` installs zero as a library for other C++ code bases:
#   P/lib/libzero.a                      every layer's objects in one static archive (the CLI apart),
#                                        with the mpi communicator where built with MPI
#   P/include/zero/*.h                   the public headers (the HEADERS of src/CMakeLists.txt's layers)
#   P/include/zero/internal/             the few internal headers the public ones still include
#                                        (communicator.h's members); not an API: they may change
#   P/lib/cmake/zero/                    find_package(zero CONFIG) -> zero::zero
#   P/lib/pkgconfig/zero.pc              pkg-config --cflags --libs zero
# Both describe the archive's dependencies (MPI, OpenBLAS, OpenMP, OpenSSL, zlib, PCRE2,
# SentencePiece; CUDA, cuBLAS and NCCL in a GPU build), since a static library carries none.
# docs/library.md shows a program built against the installed copy; tests/library/ builds one.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The internal headers communicator.h includes (its members' types).
set(ZERO_INTERNAL_HEADERS common/handle.h common/work_clock.h comm/order_check.h comm/transport.h)

if(ZERO_WITH_MPI)
  set(zero_library zero)
else()
  set(zero_library zero_without_mpi)  # installed as libzero.a all the same
  set_target_properties(zero_without_mpi PROPERTIES OUTPUT_NAME zero EXPORT_NAME zero)
endif()
set_target_properties(zero_objects PROPERTIES EXPORT_NAME objects)
set_target_properties(zero_deps PROPERTIES EXPORT_NAME deps)
install(TARGETS ${zero_library} zero_objects zero_deps EXPORT zeroTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
get_property(zero_public_headers GLOBAL PROPERTY ZERO_PUBLIC_HEADERS)
install(FILES ${zero_public_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/zero)
foreach(header IN LISTS ZERO_INTERNAL_HEADERS)
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES src/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/zero/internal/${folder})
endforeach()

set(zero_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/zero)
install(EXPORT zeroTargets NAMESPACE zero:: DESTINATION ${zero_cmake_dir})
# Dependencies that only some builds link (their targets exist only then).
set(ZERO_USES_DNNL OFF)
if(TARGET DNNL::dnnl)
  set(ZERO_USES_DNNL ON)
endif()
configure_package_config_file(cmake/zeroConfig.cmake.in ${PROJECT_BINARY_DIR}/zeroConfig.cmake INSTALL_DESTINATION ${zero_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/zeroConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/zeroConfig.cmake ${PROJECT_BINARY_DIR}/zeroConfigVersion.cmake DESTINATION ${zero_cmake_dir})

# pkg-config: relocatable (the prefix is found from the .pc file's own place). The archive's
# dependencies are in Libs, not Libs.private: a static archive needs them at every link.
set(ZERO_PC_REQUIRES "openblas libpcre2-8 sentencepiece liburing zlib libcrypto")
set(ZERO_PC_LIBS "")
if(ZERO_WITH_MPI)
  foreach(lib IN LISTS MPI_CXX_LIBRARIES)
    string(APPEND ZERO_PC_LIBS " ${lib}")
  endforeach()
endif()
if(ZERO_USES_DNNL)
  string(APPEND ZERO_PC_LIBS " -ldnnl")
endif()
if(ZERO_CUDA)
  string(APPEND ZERO_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcublas -lcudart ${ZERO_NCCL_LIBRARY}")
endif()
configure_file(cmake/zero.pc.in ${PROJECT_BINARY_DIR}/zero.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/zero.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
