// Inputs for the input-ceiling tests (CPU and GPU): float32, scaled int16, a 3-plane cube and a
// file that is not FITS, with the bytes their planes occupy as stored.
#pragma once
#include <filesystem>
#include <fstream>

#include "test_helpers.hpp"

namespace ceiling_test {

struct CeilingInputs {
  int64_t items = 6;       // 1 + 1 + 3 planes + the broken file's failed item
  int64_t failed = 1;      // broken.fits
  double megabytes = (64 * 48 * 4 + 40 * 30 * 2 + 3 * 20 * 10 * 4) * 1e-6;
};

inline CeilingInputs make_ceiling_inputs(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  test::write_fits(dir / "a.fits", FLOAT_IMG, {64, 48}, test::star_field(64, 48, 1));
  test::write_fits(dir / "b.fits", SHORT_IMG, {40, 30}, std::vector<double>(40 * 30, 1234.0), 1.0, 32768.0);
  test::write_fits(dir / "c.fits", FLOAT_IMG, {20, 10, 3}, std::vector<double>(20 * 10 * 3, 5.5));
  std::ofstream(dir / "broken.fits") << "not a FITS file";
  return {};
}

inline imflow::Pipeline ceiling_pipeline(const std::filesystem::path& dir, const char* device) {
  return test::pipeline_from("input: {dir: " + dir.string() + "}\noutput: {dir: " + (dir / "out").string() +
                       "}\ndevice: " + device + "\nsteps: [background]\n");
}

}  // namespace ceiling_test
