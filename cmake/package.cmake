# `make package` (cpack -G DEB): one .deb of the installed tree. Its Depends are runtime only:
# the shared libraries ptq links (dpkg-shlibdeps reads them from the binary) and the runtime set
# of scripts/deps/runtime.txt; a Vulkan driver is recommended, not required (the CPU backend
# needs none).
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../scripts/deps/runtime.txt PTQ_RUNTIME_PACKAGES
     REGEX "^[^#]")
list(JOIN PTQ_RUNTIME_PACKAGES ", " PTQ_RUNTIME_DEPENDS)

set(CPACK_PACKAGE_NAME ptqkit)
set(CPACK_PACKAGE_VENDOR ptqkit)
set(CPACK_PACKAGE_CONTACT "ptqkit maintainers <ptqkit@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "post-training quantization for ONNX models")
set(CPACK_PACKAGE_DESCRIPTION
    "The ptq command line and the ptqkit C++ library: calibrates a float ONNX model on sample \
inputs and writes an INT8 model with QuantizeLinear/DequantizeLinear nodes for TensorRT and \
ONNX Runtime.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${PTQ_RUNTIME_DEPENDS}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS vulkan-icd)
include(CPack)
