// The imflow version string (from CMake's project version).
#pragma once

#ifndef IMFLOW_VERSION
#define IMFLOW_VERSION "unknown"
#endif

namespace imflow {
inline constexpr const char* kVersion = IMFLOW_VERSION;
}  // namespace imflow
