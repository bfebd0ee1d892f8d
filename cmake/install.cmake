# What `cmake --install` puts under the prefix:
#   bin/ptq, share/man/man1/ptq.1            the command line and its man page (from --help)
#   include/ptq/                             the public headers (and the generated version.h)
#   lib/libptqkit.a                          every module library in one archive: ptqkit::ptqkit
#   lib/cmake/ptqkit/, lib/pkgconfig/ptqkit.pc   find_package(ptqkit) and pkg-config ptqkit
# The modules stay separate targets inside the build; the archive reuses their objects, so it
# costs no compile of its own.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(PTQ_LIBRARY_MODULES GLOBAL PROPERTY PTQ_MODULES)  # every ptq_module() target
add_library(ptqkit STATIC)
add_library(ptqkit::ptqkit ALIAS ptqkit)
foreach(module ${PTQ_LIBRARY_MODULES})
  target_sources(ptqkit PRIVATE $<TARGET_OBJECTS:${module}>)
endforeach()
set_target_properties(ptqkit PROPERTIES LINKER_LANGUAGE CXX)
target_include_directories(ptqkit PUBLIC
  $<BUILD_INTERFACE:${PTQ_INCLUDE}> $<BUILD_INTERFACE:${PTQ_GENERATED_INCLUDE}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(ptqkit PUBLIC cxx_std_20)

# The libraries the modules' objects call: fmt is public (ptq/status.h formats messages), the
# rest private, which a static archive hands on to every link: ptqkitConfig.cmake finds them
# (find_dependency) and ptqkit.pc lists them (Requires.private, Libs.private). Eigen, CLI11,
# nlohmann_json and stb are compiled in and needed by no consumer.
# (ZLIB and Vulkan are found again here: their modules found them in their own folders' scope.)
find_package(ZLIB REQUIRED)
set(PTQ_FIND_DEPENDENCIES "fmt;Protobuf;ONNX;ZLIB;OpenMP;Threads")
set(PTQ_PC_REQUIRES_PRIVATE "protobuf zlib")
set(PTQ_PC_LIBS_PRIVATE "-lonnx -lonnx_proto ${OpenMP_CXX_FLAGS} -pthread")
set(PTQ_PC_CFLAGS "")
target_link_libraries(ptqkit PUBLIC fmt::fmt PRIVATE onnx onnx_proto protobuf::libprotobuf
                      ZLIB::ZLIB OpenMP::OpenMP_CXX Threads::Threads)
if(TARGET ptq_runtime_vulkan)
  find_package(Vulkan REQUIRED)
  list(APPEND PTQ_FIND_DEPENDENCIES Vulkan)
  string(APPEND PTQ_PC_REQUIRES_PRIVATE " vulkan")
  string(APPEND PTQ_PC_CFLAGS " -DPTQ_HAVE_VULKAN=1")
  target_link_libraries(ptqkit PRIVATE Vulkan::Vulkan)
  target_compile_definitions(ptqkit PUBLIC PTQ_HAVE_VULKAN=1)
endif()
# Sanitized objects need the sanitizer runtimes in every program that links them.
if(PTQ_SANITIZE)
  target_link_options(ptqkit INTERFACE -fsanitize=address,undefined)
  string(APPEND PTQ_PC_LIBS_PRIVATE " -fsanitize=address,undefined")
endif()

# The man page: help2man runs the built ptq for --help and --version.
option(PTQ_MAN "Generate and install the ptq(1) man page (needs help2man)" ON)
if(PTQ_MAN AND TARGET ptq)
  find_program(PTQ_HELP2MAN help2man)
  if(NOT PTQ_HELP2MAN)
    message(FATAL_ERROR "help2man not found: run scripts/install-deps.sh build (or -DPTQ_MAN=OFF)")
  endif()
  set(PTQ_MAN_PAGE ${CMAKE_BINARY_DIR}/ptq.1)
  add_custom_command(OUTPUT ${PTQ_MAN_PAGE}
    COMMAND ${PTQ_HELP2MAN} --no-info
            --name "post-training quantization for ONNX models" --output ${PTQ_MAN_PAGE}
            $<TARGET_FILE:ptq>
    DEPENDS ptq
    COMMENT "help2man ptq.1"
    VERBATIM)
  add_custom_target(ptq_man ALL DEPENDS ${PTQ_MAN_PAGE})
  install(FILES ${PTQ_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

if(TARGET ptq)
  install(TARGETS ptq RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${PTQ_INCLUDE}/ptq ${PTQ_GENERATED_INCLUDE}/ptq
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ptqkit EXPORT ptqkitTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

set(PTQ_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ptqkit)
install(EXPORT ptqkitTargets NAMESPACE ptqkit:: DESTINATION ${PTQ_CMAKE_DIR})
configure_package_config_file(cmake/ptqkitConfig.cmake.in
  ${CMAKE_BINARY_DIR}/ptqkitConfig.cmake INSTALL_DESTINATION ${PTQ_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/ptqkitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/ptqkitConfig.cmake ${CMAKE_BINARY_DIR}/ptqkitConfigVersion.cmake
        DESTINATION ${PTQ_CMAKE_DIR})
# ptqkit.pc names the prefix relative to its own folder, so the installed tree can move.
file(RELATIVE_PATH PTQ_PC_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" PTQ_PC_PREFIX "${PTQ_PC_PREFIX}")
configure_file(cmake/ptqkit.pc.in ${CMAKE_BINARY_DIR}/ptqkit.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/ptqkit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
