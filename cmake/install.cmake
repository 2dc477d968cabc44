# The installed package: `cmake --install build --prefix P` puts
#   P/include/nkigraph/<dir>/*.h     the headers, included as in this tree
#                                    ("builder/tracer.h", "proto/nkigraph.pb.h")
#   P/lib/libnkigraph_*.a            the static libraries
#   P/bin/nkigraph                   the command
#   P/lib/cmake/nkigraph/            the package config and version file
#   P/share/nkigraph/proto/*.proto   the schema
# and `find_package(nkigraph 0.1 REQUIRED)` then gives nkigraph::<name> for
# every library below, each bringing its dependencies (Protobuf, Abseil,
# nlohmann_json, Graphviz and OpenBLAS through pkg-config: found again by
# the package config).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Target, the name users write after nkigraph::.
set(NKIGRAPH_EXPORTED_LIBRARIES
  nkigraph_proto proto
  nkigraph_util util
  nkigraph_ops ops
  nkigraph_graph graph
  nkigraph_builder builder
  nkigraph_interp interp
  nkigraph_cost cost
  nkigraph_kernels kernels
  nkigraph_viz viz
  nkigraph_view view
  nkigraph_diff diff
  nkigraph_cli cli
)
if(NKIGRAPH_HAVE_MPI)
  list(APPEND NKIGRAPH_EXPORTED_LIBRARIES nkigraph_dist dist)
endif()
set(NKIGRAPH_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/nkigraph)

set(nkigraph_targets "")
list(LENGTH NKIGRAPH_EXPORTED_LIBRARIES count)
math(EXPR last "${count} - 1")
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET NKIGRAPH_EXPORTED_LIBRARIES ${i} target)
  list(GET NKIGRAPH_EXPORTED_LIBRARIES ${j} name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  # The same names inside this build (the Python module links them).
  add_library(nkigraph::${name} ALIAS ${target})
  list(APPEND nkigraph_targets ${target})
endforeach()
# Every library includes from the tree's root here (the top-level
# include_directories) and from include/nkigraph once installed; the proto
# library is everyone's dependency, so saying it there says it for all.
target_include_directories(nkigraph_proto INTERFACE
  $<INSTALL_INTERFACE:${NKIGRAPH_INSTALL_INCLUDEDIR}>)
set_target_properties(nkigraph PROPERTIES EXPORT_NAME nkigraph)

install(TARGETS ${nkigraph_targets} nkigraph
  EXPORT nkigraphTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Headers: every header of the libraries, so that whatever a public header
# includes is there too (tests/install checks they resolve from the prefix
# alone).
set(NKIGRAPH_HEADER_DIRS util ops graph builder interp cost kernels viz view
  diff tools)
if(NKIGRAPH_HAVE_MPI)
  list(APPEND NKIGRAPH_HEADER_DIRS dist)
endif()
foreach(dir ${NKIGRAPH_HEADER_DIRS})
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/${dir}/
    DESTINATION ${NKIGRAPH_INSTALL_INCLUDEDIR}/${dir}
    FILES_MATCHING PATTERN "*.h"
    PATTERN "defs" EXCLUDE)
endforeach()
install(DIRECTORY ${CMAKE_BINARY_DIR}/proto/
  DESTINATION ${NKIGRAPH_INSTALL_INCLUDEDIR}/proto
  FILES_MATCHING PATTERN "*.pb.h"
  PATTERN "CMakeFiles" EXCLUDE)
install(FILES ${CMAKE_SOURCE_DIR}/proto/nkigraph.proto
  ${CMAKE_SOURCE_DIR}/proto/diagnostic.proto
  DESTINATION ${CMAKE_INSTALL_DATADIR}/nkigraph/proto)

set(NKIGRAPH_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/nkigraph)
install(EXPORT nkigraphTargets
  NAMESPACE nkigraph::
  DESTINATION ${NKIGRAPH_CMAKE_DIR})
configure_package_config_file(
  ${CMAKE_SOURCE_DIR}/cmake/nkigraphConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/nkigraphConfig.cmake
  INSTALL_DESTINATION ${NKIGRAPH_CMAKE_DIR}
  PATH_VARS NKIGRAPH_INSTALL_INCLUDEDIR)
# 0.x: a minor version may break what the one before it offered.
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/cmake/nkigraphConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_BINARY_DIR}/cmake/nkigraphConfig.cmake
  ${CMAKE_BINARY_DIR}/cmake/nkigraphConfigVersion.cmake
  DESTINATION ${NKIGRAPH_CMAKE_DIR})
