# Third-party libraries, all from Debian packages (see tools/install-deps.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(TBB REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(dragonbox REQUIRED)  # shortest float64 digits for the CSV catalogs (src/io/shortest_double.cpp)
pkg_check_modules(CFITSIO REQUIRED IMPORTED_TARGET cfitsio)
find_package(BZip2 REQUIRED)  # why a .bz2 FITS file failed (src/io/bzip2_stream_end.cpp)
pkg_check_modules(WCSLIB REQUIRED IMPORTED_TARGET wcslib)  # sky coordinates (include/imflow/io/wcs.hpp)

# yaml-cpp 0.7 (Debian 12) exports `yaml-cpp`, 0.8 exports `yaml-cpp::yaml-cpp`.
if(TARGET yaml-cpp::yaml-cpp)
  set(IMFLOW_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(IMFLOW_YAML_TARGET yaml-cpp)
endif()

# MRI workload, found by path so an unpacked-.deb prefix (CMAKE_PREFIX_PATH) works too:
# LAPACKE + OpenBLAS (sgesdd), libpng (PNG in and out) + libdeflate, nifticlib + zlib (NIfTI); stb_image_write
# (libstb) only for the tests, as an encoder independent of ours.
find_path(LAPACKE_INCLUDE_DIR lapacke.h REQUIRED)
find_library(LAPACKE_LIBRARY lapacke REQUIRED)
find_library(OPENBLAS_LIBRARY openblas REQUIRED)
find_path(STB_INCLUDE_DIR stb/stb_image.h REQUIRED)
find_library(STB_LIBRARY stb REQUIRED)
find_package(PNG REQUIRED)
find_package(ZLIB REQUIRED)
pkg_check_modules(LIBDEFLATE REQUIRED IMPORTED_TARGET libdeflate)  # PNG image data at levels 1..5 (src/io/png_writer.cpp)
find_path(NIFTI2_INCLUDE_DIR nifti2_io.h PATH_SUFFIXES nifti REQUIRED)
find_library(NIFTI2_LIBRARY nifti2 REQUIRED)  # nifti2_io: NIfTI-1, NIfTI-2 and Analyze 7.5
find_library(NIFTI_ZNZ_LIBRARY znz REQUIRED)
add_library(imflow_mri_deps INTERFACE)
target_include_directories(imflow_mri_deps INTERFACE ${LAPACKE_INCLUDE_DIR} ${NIFTI2_INCLUDE_DIR})
target_link_libraries(imflow_mri_deps INTERFACE
  ${LAPACKE_LIBRARY} ${OPENBLAS_LIBRARY} PNG::PNG PkgConfig::LIBDEFLATE ${NIFTI2_LIBRARY} ${NIFTI_ZNZ_LIBRARY} ZLIB::ZLIB m)
add_library(imflow_test_stb INTERFACE)
target_include_directories(imflow_test_stb INTERFACE ${STB_INCLUDE_DIR})
target_link_libraries(imflow_test_stb INTERFACE ${STB_LIBRARY})
