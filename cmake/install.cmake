# `cmake --install BUILD --prefix P` installs:
#   P/lib/libtexplan_<stage>.a               the stage libraries
#   P/lib/libtexplan.so                      all of them as one shared library (texplan::texplan_shared)
#   P/include/texplan/texplan.h              the one-call API (#include <texplan/texplan.h>)
#   P/include/texplan/<stage>/<name>.h       each stage's public header (#include "plan/memory_plan.h"); the
#                                            rest (lowering, reference operators, kernels, CLI) stays inside
#   P/bin/texplan                            the CLI
#   P/lib/cmake/texplan/texplanConfig.cmake  find_package(texplan) -> texplan::texplan
#   P/lib/pkgconfig/texplan.pc               pkg-config --cflags --libs texplan
# Both package files are relocatable: the prefix may move after install.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(texplan_install_targets texplan texplan_shared)
set(texplan_pc_libs "")
# Link order for pkg-config: a library before the ones it uses.
foreach(stage pipeline offload runtime lower device import validate optimize kernels reference plan graph)
  if(TARGET texplan_${stage})
    list(APPEND texplan_install_targets texplan_${stage})
    string(APPEND texplan_pc_libs " -ltexplan_${stage}")
  endif()
endforeach()

# Users of the headers need C++20 (designated initializers in the API).
target_compile_features(texplan INTERFACE cxx_std_20)

install(TARGETS ${texplan_install_targets}
        EXPORT texplanTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS texplan_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/include/texplan/texplan.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/texplan)
# The public headers and everything they include (tests/test_packaging.cpp
# compiles each one alone against the install).
set(texplan_public_headers
    graph/graph.h plan/memory_plan.h plan/arena.h import/onnx_import.h optimize/optimize.h optimize/kernel_catalog.h
    optimize/storage.h optimize/half_range.h
    optimize/usage.h optimize/patch.h device/device.h runtime/device_tensor.h runtime/session.h lower/kernel_choice.h
    pipeline/pipeline.h)
foreach(h ${texplan_public_headers})
  get_filename_component(d ${h} DIRECTORY)
  install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/src/${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/texplan/${d})
endforeach()

set(texplan_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/texplan)
install(EXPORT texplanTargets NAMESPACE texplan:: DESTINATION ${texplan_cmake_dir})

# The dependencies the exported targets name (static libraries carry their
# link dependencies to the user).
set(texplan_config_deps "find_dependency(nlohmann_json)\nfind_dependency(Protobuf)\nfind_dependency(ONNX)\nfind_dependency(OpenCL)\n")
if(TARGET texplan_offload AND CLBlast_FOUND)
  string(APPEND texplan_config_deps "find_dependency(CLBlast)\n")
endif()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/texplanConfig.cmake.in "\
# find_package(texplan) gives the target texplan::texplan (every stage),
# and texplan::texplan_<stage> for one stage alone.
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
${texplan_config_deps}include(\"\${CMAKE_CURRENT_LIST_DIR}/texplanTargets.cmake\")
check_required_components(texplan)
")
configure_package_config_file(${CMAKE_CURRENT_BINARY_DIR}/texplanConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/texplanConfig.cmake
                              INSTALL_DESTINATION ${texplan_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/texplanConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/texplanConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/texplanConfigVersion.cmake
        DESTINATION ${texplan_cmake_dir})

# pkg-config: ONNX ships no .pc file, so its libraries are named directly.
set(texplan_pc_extra "")
if(TARGET texplan_offload AND CLBlast_FOUND)
  set(texplan_pc_extra " -lclblast")
endif()
file(RELATIVE_PATH texplan_pc_up /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)  # "../../"
string(REGEX REPLACE "/$" "" texplan_pc_up "${texplan_pc_up}")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/texplan.pc "\
prefix=\${pcfiledir}/${texplan_pc_up}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: texplan
Description: Runs ONNX models on OpenCL in the least device memory (planner, runtime, importer)
Version: ${PROJECT_VERSION}
Requires: protobuf OpenCL nlohmann_json
Cflags: -std=c++20 -I\${includedir} -I\${includedir}/texplan -DCL_TARGET_OPENCL_VERSION=120
Libs: -L\${libdir}${texplan_pc_libs}${texplan_pc_extra} -lonnx -lonnx_proto
")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/texplan.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
