# `make package` (cpack -G DEB): one .deb of the installed tree, the Python module included.
# Its Depends are runtime only: the shared libraries ptq and the module link (dpkg-shlibdeps
# reads them from the binaries), the runtime set of scripts/deps/runtime.txt and the python3
# the module was built for; a Vulkan driver is recommended, not required (the CPU backend
# needs none).
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../scripts/deps/runtime.txt PTQ_RUNTIME_PACKAGES
     REGEX "^[^#]")
list(JOIN PTQ_RUNTIME_PACKAGES ", " PTQ_RUNTIME_DEPENDS)
# The Python module is built for one python3.X: the package needs that version.
if(PTQ_PYTHON)
  math(EXPR PTQ_PYTHON_NEXT_MINOR "${PYTHON_VERSION_MINOR} + 1")
  set(PTQ_PYTHON_X "${PYTHON_VERSION_MAJOR}.${PYTHON_VERSION_MINOR}")
  set(PTQ_PYTHON_NEXT "${PYTHON_VERSION_MAJOR}.${PTQ_PYTHON_NEXT_MINOR}")
  string(APPEND PTQ_RUNTIME_DEPENDS
         ", python3 (>= ${PTQ_PYTHON_X}), python3 (<< ${PTQ_PYTHON_NEXT})")
endif()

set(CPACK_PACKAGE_NAME ptqkit)
set(CPACK_PACKAGE_VENDOR ptqkit)
set(CPACK_PACKAGE_CONTACT "ptqkit maintainers <ptqkit@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "post-training quantization for ONNX models")
set(CPACK_PACKAGE_DESCRIPTION
    "The ptq command line, the ptqkit C++ library and Python module: calibrates a float ONNX \
model on sample inputs and writes an INT8 model with QuantizeLinear/DequantizeLinear nodes for \
TensorRT and ONNX Runtime.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${PTQ_RUNTIME_DEPENDS}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS vulkan-icd)
include(CPack)
