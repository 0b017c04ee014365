# Third-party libraries, all from Debian packages (see tools/install-deps.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(TBB REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
pkg_check_modules(CFITSIO REQUIRED IMPORTED_TARGET cfitsio)

# yaml-cpp 0.7 (Debian 12) exports `yaml-cpp`, 0.8 exports `yaml-cpp::yaml-cpp`.
if(TARGET yaml-cpp::yaml-cpp)
  set(IMFLOW_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(IMFLOW_YAML_TARGET yaml-cpp)
endif()
