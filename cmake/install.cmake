# `cmake --install build --prefix P`: the headers under P/include/routelab/,
# the libraries, the routelab program and a package config, so that another
# CMake project can write
#   find_package(routelab CONFIG REQUIRED [COMPONENTS cuda mpi])
#   target_link_libraries(app PRIVATE routelab::core)   # or routelab::cuda
# examples/ holds two such projects; docs/api.md lists the public headers.
include(CMakePackageConfigHelpers)

set(ROUTELAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/routelab)
set(ROUTELAB_INCLUDE_DIR ${CMAKE_INSTALL_INCLUDEDIR}/routelab)

# Every header under lib/, in its place: the public headers (docs/api.md)
# include internal ones. Of lib/cuda/ the core has device.h; the rest comes
# with the CUDA library.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/lib/ DESTINATION ${ROUTELAB_INCLUDE_DIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "cuda" EXCLUDE)
install(FILES ${CMAKE_SOURCE_DIR}/lib/cuda/device.h DESTINATION ${ROUTELAB_INCLUDE_DIR}/cuda)
if(ROUTELAB_CUDA)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/lib/cuda/ DESTINATION ${ROUTELAB_INCLUDE_DIR}/cuda
    FILES_MATCHING PATTERN "*.h")
endif()

# Eigen's ABI. Eigen chooses from the instruction set how it aligns and
# allocates: under -march=native on an AVX-512 machine (ROUTELAB_NATIVE)
# EIGEN_MAX_ALIGN_BYTES is 64 and a MatrixXd's buffer comes from Eigen's own
# aligned allocator; a consumer compiled for plain x86-64 gets 16 and glibc's
# malloc. A Mat made on one side (StepLaw::mean(), matrix()) and freed on the
# other is then freed by the wrong allocator, and one made by the consumer is
# read by the library with 64-byte aligned loads: both crash. -march=native is
# not forced on consumers for this (it would tie their whole program to this
# CPU); instead the installed target pins the three settings to the values
# Eigen takes under routelab_core's own flags, measured here, which any x86-64
# compiler accepts. The in-tree build is unchanged. The library itself still
# runs only where it was compiled for: -DROUTELAB_NATIVE=OFF makes a package
# that runs on any x86-64.
set(ROUTELAB_EIGEN_PROBE_KEY "${CMAKE_CXX_COMPILER};${CMAKE_CXX_FLAGS};${ROUTELAB_NATIVE};${Eigen3_VERSION}")
if(NOT ROUTELAB_EIGEN_PROBE_KEY STREQUAL ROUTELAB_EIGEN_PROBED_FOR)
  set(probe_flags "")
  if(ROUTELAB_NATIVE)
    set(probe_flags -march=native)
  endif()
  try_run(eigen_abi_ran eigen_abi_compiled ${CMAKE_BINARY_DIR}/eigen_abi_probe ${CMAKE_SOURCE_DIR}/cmake/eigen_abi.cpp
    COMPILE_DEFINITIONS ${probe_flags} LINK_LIBRARIES Eigen3::Eigen
    COMPILE_OUTPUT_VARIABLE probe_log RUN_OUTPUT_VARIABLE probe_out)
  if(NOT eigen_abi_compiled OR NOT eigen_abi_ran EQUAL 0)
    message(FATAL_ERROR "routelab: could not read Eigen's alignment settings (cmake/eigen_abi.cpp):\n${probe_log}")
  endif()
  set(ROUTELAB_EIGEN_ABI "${probe_out}" CACHE INTERNAL "Eigen settings pinned in the installed routelab::core")
  set(ROUTELAB_EIGEN_PROBED_FOR "${ROUTELAB_EIGEN_PROBE_KEY}" CACHE INTERNAL "")
endif()
message(STATUS "routelab: the installed routelab::core pins ${ROUTELAB_EIGEN_ABI}")
foreach(definition IN LISTS ROUTELAB_EIGEN_ABI)
  target_compile_definitions(routelab_core INTERFACE $<INSTALL_INTERFACE:${definition}>)
endforeach()

set_target_properties(routelab_core PROPERTIES EXPORT_NAME core)
install(TARGETS routelab_core EXPORT routelabTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(ROUTELAB_CUDA)
  set_target_properties(routelab_cuda PROPERTIES EXPORT_NAME cuda)
  install(TARGETS routelab_cuda EXPORT routelabTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
# The program too, when it was built (a build of the libraries alone installs without it).
install(TARGETS routelab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} OPTIONAL)
install(EXPORT routelabTargets NAMESPACE routelab:: DESTINATION ${ROUTELAB_CMAKE_DIR})

# The components this build has, for the config's checks.
set(ROUTELAB_PACKAGE_CUDA ${ROUTELAB_CUDA})
if(MPI_CXX_FOUND)
  set(ROUTELAB_PACKAGE_MPI ON)
else()
  set(ROUTELAB_PACKAGE_MPI OFF)
endif()
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/routelabConfig.cmake.in
  ${CMAKE_BINARY_DIR}/routelabConfig.cmake INSTALL_DESTINATION ${ROUTELAB_CMAKE_DIR})
# While the major version is 0 a minor release may change the API (lib/base/version.h):
# a request for 0.2 accepts 0.2.x only. From 1.0 on this becomes SameMajorVersion.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/routelabConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/routelabConfig.cmake ${CMAKE_BINARY_DIR}/routelabConfigVersion.cmake
  DESTINATION ${ROUTELAB_CMAKE_DIR})
