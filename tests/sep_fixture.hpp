// The files a tools/compare_sep_*.py script writes for a [sep] test: their directory (the
// environment variable's value when set, else the ctest fixture's IMFLOW_TEST_OUTPUT_DIR/<name>)
// and the cases.json that lists them, and how a catalog number in them reads.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>

namespace test {

struct SepFixture {
  std::filesystem::path dir;
  nlohmann::json cases;
};

inline SepFixture sep_fixture(const char* env_var, const char* name) {
  const char* other = std::getenv(env_var);
  SepFixture fixture;
  fixture.dir = other != nullptr ? std::filesystem::path(other) : std::filesystem::path(IMFLOW_TEST_OUTPUT_DIR) / name;
  std::ifstream in(fixture.dir / "cases.json");
  if (!in) throw std::runtime_error((fixture.dir / "cases.json").string() + ": missing (its tools/compare_sep_*.py writes it)");
  fixture.cases = nlohmann::json::parse(in);
  return fixture;
}

// A catalog number; null (SEP's NaN: a zero or negative flux) as NaN.
inline double number(const nlohmann::json& v) {
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

}  // namespace test
