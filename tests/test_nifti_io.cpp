// NIfTI-1 and NIfTI-2 input: datatypes, scl_slope/scl_inter, both byte orders, .nii.gz, pairs, slice
// axes, 4-D, bad headers (datatype, absurd dims, truncation), the cache, the committed real volumes.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <thread>

#include "imflow/errors.hpp"
#include "imflow/io/nifti.hpp"
#include "io/mri_formats.hpp"
#include "mri_test_helpers.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
// Values v(i, j, k) = i + 10 j + 100 k for a 4 x 3 x 2 volume, i fastest.
std::vector<double> ramp(int nx = 4, int ny = 3, int nz = 2) {
  std::vector<double> v;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i) v.push_back(i + 10 * j + 100 * k);
  return v;
}

std::vector<float> slice(const std::filesystem::path& path, int axis, int64_t plane) {
  ImageBuffer image;
  read_nifti_slice(path, axis, plane, image);
  return {image.begin(), image.end()};
}
}  // namespace

TEST_CASE("NIfTI-1 and NIfTI-2 datatypes in both byte orders, plain and gzipped", "[nifti]") {
  test::TempDir dir("nifti_types");
  const std::vector<float> expected = {100, 101, 102, 103, 110, 111, 112, 113, 120, 121, 122, 123};
  for (int version : {1, 2}) {
    for (bool big : {false, true}) {
      for (bool gz : {false, true}) {
      const std::string tag = "n" + std::to_string(version) + (big ? "be" : "le") + (gz ? ".nii.gz" : ".nii");
      // Write NAME+TAG with the datatype (stored as T) and read slice 1 back.
      auto check = [&]<typename T>(const std::string& name, int16_t datatype, int16_t bitpix, const std::vector<double>& values) {
        const auto path = dir / (name + tag);
        test::write_nifti<T>(path, {{4, 3, 2}, datatype, bitpix, 0.0f, 0.0f, big, gz, version}, values);
        INFO(path);
        CHECK(slice(path, 2, 1) == expected);
      };
      check.operator()<uint8_t>("u8", 2, 8, ramp());
      check.operator()<int16_t>("i16", 4, 16, ramp());
      check.operator()<uint16_t>("u16", 512, 16, ramp());
      check.operator()<int32_t>("i32", 8, 32, ramp());
      check.operator()<float>("f32", 16, 32, ramp());
      check.operator()<double>("f64", 64, 64, ramp());
      check.operator()<int8_t>("i8", 256, 8, ramp());
      check.operator()<uint32_t>("u32", 768, 32, ramp());
      check.operator()<int64_t>("i64", 1024, 64, ramp());
      check.operator()<uint64_t>("u64", 1280, 64, ramp());
      // Colour: gray voxels (R = G = B) give their value; bytes, so no swapping either way.
      std::vector<double> rgb, rgba;
      for (double v : ramp()) rgb.insert(rgb.end(), {v, v, v}), rgba.insert(rgba.end(), {v, v, v, 255 - v});
      check.operator()<uint8_t>("rgb", 128, 24, rgb);
      check.operator()<uint8_t>("rgba", 2304, 32, rgba);
      }
    }
  }
  // NIfTI-2 dims past NIfTI-1's int16 limit, and its double scaling.
  std::vector<double> wide(40000 * 2);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<double>(i % 251);
  test::write_nifti<uint8_t>(dir / "wide.nii.gz", {{40000, 2}, 2, 8, 0.5f, 3.0f, false, true, 2}, wide);
  const std::vector<float> wide_slice = slice(dir / "wide.nii.gz", 2, 0);
  REQUIRE(wide_slice.size() == wide.size());
  CHECK(wide_slice[39999] == static_cast<float>(wide[39999] * 0.5 + 3.0));
  CHECK(wide_slice[79999] == static_cast<float>(wide[79999] * 0.5 + 3.0));
  CHECK(scan_nifti(dir / "wide.nii.gz").dims[0] == 40000);
  // CIFTI-2 (a dense time series: 1 x 1 x 1 x 1 x 3 x 5, intent 3002) is not a stack of images.
  test::write_nifti<float>(dir / "x.dtseries.nii", {{1, 1, 1, 1, 3, 5}, 16, 32, 0, 0, false, false, 2, 3002},
                           std::vector<double>(15, 1.0));
  CHECK_THROWS_WITH(scan_nifti(dir / "x.dtseries.nii"), Catch::Contains("x.dtseries.nii") && Catch::Contains("CIFTI-2"));
  // Negative int8/int16 values and the full uint8/uint16/uint32 ranges survive.
  test::write_nifti<int8_t>(dir / "neg8.nii", {{2, 1, 1}, 256, 8}, {-128, 127});
  CHECK(slice(dir / "neg8.nii", 2, 0) == std::vector<float>{-128, 127});
  test::write_nifti<uint32_t>(dir / "big32.nii", {{2, 1, 1}, 768, 32, 0, 0, true}, {4294967295.0, 7});
  CHECK(slice(dir / "big32.nii", 2, 0) == std::vector<float>{4294967296.0f, 7});
  // Colour to luminance 0.299 R + 0.587 G + 0.114 B, as for PNG; scl_slope is not applied to colour.
  test::write_nifti<uint8_t>(dir / "colour.nii", {{3, 1, 1}, 128, 24, 2.0f, 5.0f}, {255, 0, 0, 0, 255, 0, 0, 0, 255});
  CHECK(slice(dir / "colour.nii", 2, 0) == std::vector<float>{static_cast<float>(0.299 * 255), static_cast<float>(0.587 * 255),
                                                              static_cast<float>(0.114 * 255)});
  CHECK(scan_nifti(dir / "colour.nii").bit_depth() == 8);
  // Negative int16 values and the full uint16 range survive.
  test::write_nifti<int16_t>(dir / "neg.nii", {{2, 1, 1}, 4, 16}, {-32768, 32767});
  CHECK(slice(dir / "neg.nii", 2, 0) == std::vector<float>{-32768, 32767});
  test::write_nifti<uint16_t>(dir / "big.nii", {{2, 1, 1}, 512, 16, 0, 0, true}, {65535, 1});
  CHECK(slice(dir / "big.nii", 2, 0) == std::vector<float>{65535, 1});
}

TEST_CASE("NIfTI scl_slope and scl_inter are applied; slope 0 means unscaled", "[nifti]") {
  test::TempDir dir("nifti_scale");
  test::write_nifti<int16_t>(dir / "scaled.nii", {{2, 2, 1}, 4, 16, 0.5f, -10.0f}, {0, 1, 2, 100});
  CHECK(slice(dir / "scaled.nii", 2, 0) == std::vector<float>{-10, -9.5f, -9, 40});
  CHECK(scan_nifti(dir / "scaled.nii").bit_depth() == 0);
  test::write_nifti<int16_t>(dir / "slope0.nii", {{2, 2, 1}, 4, 16, 0.0f, 5.0f}, {0, 1, 2, 100});
  CHECK(slice(dir / "slope0.nii", 2, 0) == std::vector<float>{0, 1, 2, 100});
  CHECK(scan_nifti(dir / "slope0.nii").bit_depth() == 16);
  test::write_nifti<uint8_t>(dir / "unit.nii.gz", {{2, 2, 1}, 2, 8, 1.0f, 0.0f, true, true}, {0, 1, 2, 255});
  CHECK(scan_nifti(dir / "unit.nii.gz").bit_depth() == 8);
}

TEST_CASE("NIfTI slices along each axis, and 4-D volumes", "[nifti]") {
  test::TempDir dir("nifti_axes");
  const auto path = dir / "ramp.nii.gz";
  test::write_nifti<int16_t>(path, {{4, 3, 2}, 4, 16, 0, 0, false, true}, ramp());
  // axis 2: width nx, rows along j.
  CHECK(slice(path, 2, 0) == std::vector<float>{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  // axis 1 (j = 2): width nx, rows along k.
  CHECK(slice(path, 1, 2) == std::vector<float>{20, 21, 22, 23, 120, 121, 122, 123});
  // axis 0 (i = 3): width ny, rows along k.
  CHECK(slice(path, 0, 3) == std::vector<float>{3, 13, 23, 103, 113, 123});
  set_nifti_slice_axis(0);
  auto planes = scan_nifti_planes(path);
  set_nifti_slice_axis(2);
  REQUIRE(planes.size() == 4);
  CHECK(planes[3].width == 3);
  CHECK(planes[3].height == 2);
  CHECK(planes[3].planes == 4);
  CHECK(planes[3].bit_depth == 16);
  // 4-D: 2 volumes of 4 x 3 x 2; plane p = volume * nz + k.
  std::vector<double> two = ramp();
  for (double v : ramp()) two.push_back(v + 1000);
  test::write_nifti<float>(dir / "t.nii", {{4, 3, 2, 2}, 16, 32}, two);
  CHECK(scan_nifti_planes(dir / "t.nii").size() == 4);
  CHECK(slice(dir / "t.nii", 2, 3).front() == 1100.0f);
  CHECK_THROWS_WITH(slice(dir / "t.nii", 2, 4), Catch::Contains("out of range"));
}

TEST_CASE("float NIfTI keeps NaN and Inf voxels (nifticlib would zero them) along every axis", "[nifti]") {
  test::TempDir dir("nifti_nan");
  std::vector<double> values = ramp();
  values[5] = std::nan("");                                 // i 1, j 1, k 0
  values[14] = std::numeric_limits<double>::infinity();     // i 2, j 0, k 1
  values[23] = -std::numeric_limits<double>::infinity();    // i 3, j 2, k 1
  auto same = [](const std::vector<float>& got, const std::vector<double>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i]) ? !std::isnan(got[i]) : got[i] != static_cast<float>(want[i])) return false;
    }
    return true;
  };
  for (bool big : {false, true}) {
    for (bool gz : {false, true}) {
      const std::string tag = std::string(big ? "be" : "le") + (gz ? ".nii.gz" : ".nii");
      INFO(tag);
      test::write_nifti<float>(dir / ("f32" + tag), {{4, 3, 2}, 16, 32, 0, 0, big, gz}, values);
      test::write_nifti<double>(dir / ("f64" + tag), {{4, 3, 2}, 64, 64, 0, 0, big, gz}, values);
      for (const char* type : {"f32", "f64"}) {
        const auto path = dir / (type + tag);
        CHECK(same(slice(path, 2, 0), {0, 1, 2, 3, 10, values[5], 12, 13, 20, 21, 22, 23}));
        CHECK(same(slice(path, 2, 1), {100, 101, values[14], 103, 110, 111, 112, 113, 120, 121, 122, values[23]}));
        CHECK(same(slice(path, 1, 2), {20, 21, 22, 23, 120, 121, 122, values[23]}));
        CHECK(same(slice(path, 0, 1), {1, values[5], 21, 101, 111, 121}));
      }
    }
  }
}

TEST_CASE("bad NIfTI files give errors naming the file and the reason", "[nifti]") {
  test::TempDir dir("nifti_bad");
  ImageBuffer image;
  test::write_nifti<float>(dir / "complex.nii", {{2, 2, 1}, 32, 64}, {1, 2, 3, 4, 5, 6, 7, 8});
  CHECK_THROWS_WITH(scan_nifti(dir / "complex.nii"),
                    Catch::Contains("complex.nii") && Catch::Contains("COMPLEX64") && Catch::Contains("not supported"));
  // A header claiming 30000^3 voxels in a tiny .nii.gz: rejected before any allocation.
  test::write_nifti<uint8_t>(dir / "bomb.nii.gz", {{30000, 30000, 30000}, 2, 8, 0, 0, false, true}, {1, 2, 3});
  CHECK_THROWS_WITH(scan_nifti(dir / "bomb.nii.gz"), Catch::Contains("bomb.nii.gz") && Catch::Contains("claims"));
  test::write_nifti<uint8_t>(dir / "bomb.nii", {{30000, 30000, 3}, 2, 8}, {1, 2, 3});
  CHECK_THROWS_WITH(scan_nifti(dir / "bomb.nii"), Catch::Contains("bomb.nii") && Catch::Contains("truncated"));
  ReadLimits limits;
  limits.max_pixels = 1000;
  CHECK_THROWS_WITH(read_nifti_slice(dir / "bomb.nii", 2, 0, image, limits), Catch::Contains("exceeds the limit"));
  // Truncated .nii.gz: the header is fine, the data stops early.
  std::vector<double> values(64 * 64 * 4, 7.0);
  test::write_nifti<int16_t>(dir / "cut.nii.gz", {{64, 64, 4}, 4, 16, 0, 0, false, true}, values, 64 * 64 * 2 * 2 + 10);
  CHECK_NOTHROW(read_nifti_slice(dir / "cut.nii.gz", 2, 0, image));
  CHECK_THROWS_WITH(read_nifti_slice(dir / "cut.nii.gz", 2, 3, image), Catch::Contains("cut.nii.gz"));
  // The same for float data, which is read without nifticlib's slice reader.
  test::write_nifti<float>(dir / "cutf.nii.gz", {{64, 64, 4}, 16, 32, 0, 0, false, true}, values, 64 * 64 * 4 * 2 + 10);
  CHECK_NOTHROW(read_nifti_slice(dir / "cutf.nii.gz", 2, 0, image));
  CHECK_THROWS_WITH(read_nifti_slice(dir / "cutf.nii.gz", 2, 3, image), Catch::Contains("cutf.nii.gz") && Catch::Contains("truncated"));
  // A NIfTI-2 header without its magic, and empty files: named as such.
  std::string nifti2(540, '\0');
  nifti2[0] = static_cast<char>(540 & 255);
  nifti2[1] = static_cast<char>(540 >> 8);
  std::ofstream(dir / "two.nii", std::ios::binary) << nifti2;
  CHECK_THROWS_WITH(scan_nifti(dir / "two.nii"), Catch::Contains("two.nii") && Catch::Contains("dim[0] = 0"));
  // A FITS header kept as X.hdr beside X.img (astropy's WCS test headers): not taken for an Analyze pair.
  std::ofstream(dir / "wcs.hdr") << "SIMPLE  =                    T" << std::string(50, ' ') << "END" << std::string(77, ' ');
  std::ofstream(dir / "wcs.img") << "x";
  CHECK_THROWS_WITH(scan_nifti(dir / "wcs.hdr"), Catch::Contains("wcs.hdr") && Catch::Contains("sizeof_hdr is neither 348 nor 540"));
  std::filesystem::remove(dir / "wcs.img");
  CHECK_THROWS_WITH(scan_nifti(dir / "wcs.hdr"), Catch::Contains("wcs.hdr") && Catch::Contains("not a NIfTI-1, NIfTI-2 or Analyze"));
  std::ofstream(dir / "zero.nii").close();
  CHECK_THROWS_WITH(scan_nifti(dir / "zero.nii"), Catch::Contains("zero.nii") && Catch::Contains("empty"));
  std::ofstream(dir / "junk.nii") << "not a nifti file at all";
  CHECK_THROWS_WITH(scan_nifti(dir / "junk.nii"), Catch::Contains("junk.nii"));
  CHECK_THROWS_AS(set_nifti_slice_axis(3), ConfigError);
}

namespace {
// v(i, j, k) = i + 100 j + 10000 k + offset for an nx x ny x nz volume, i fastest.
std::vector<double> volume_values(int nx, int ny, int nz, double offset = 0) {
  std::vector<double> v;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i) v.push_back(i + 100 * j + 10000 * k + offset);
  return v;
}

// Slice `plane` along `axis` of volume_values(nx, ny, nz, offset) (base 10: of ramp(nx, ny, nz)),
// as read_nifti_slice lays it out.
std::vector<float> expected_slice(int nx, int ny, int nz, int axis, int plane, double offset = 0, int base = 100) {
  std::vector<float> out;
  const int width = axis == 0 ? ny : nx, height = axis == 2 ? ny : nz;
  for (int r = 0; r < height; ++r) {
    for (int c = 0; c < width; ++c) {
      const int i = axis == 0 ? plane : c, j = axis == 0 ? c : axis == 1 ? plane : r, k = axis == 2 ? plane : r;
      out.push_back(static_cast<float>(i + base * j + base * base * k + offset));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("NIfTI slices are the same read whole into the cache and one by one", "[nifti]") {
  test::TempDir dir("nifti_cache");
  const int nx = 7, ny = 5, nz = 6;
  for (const char* name : {"v.nii.gz", "v.nii"}) {
    const auto path = dir / name;
    test::write_nifti<int32_t>(path, {{nx, ny, nz}, 8, 32, 0, 0, true, std::string(name).ends_with(".gz")},
                               volume_values(nx, ny, nz));
    for (uint64_t budget : {uint64_t{1} << 30, uint64_t{0}, uint64_t{100}}) {  // whole, off, too small
      test::NiftiCacheBudget cache(budget);
      for (int axis = 0; axis < 3; ++axis) {
        const int count = axis == 0 ? nx : axis == 1 ? ny : nz;
        for (int plane = count - 1; plane >= 0; --plane) {  // backwards: a gzip stream cannot seek back cheaply
          INFO(name << " budget " << budget << " axis " << axis << " plane " << plane);
          CHECK(slice(path, axis, plane) == expected_slice(nx, ny, nz, axis, plane));
        }
      }
    }
  }
  // A file rewritten in place, same size and dimensions, is read again, not served from the cache.
  const auto path = dir / "v.nii.gz";
  CHECK(slice(path, 2, 1) == expected_slice(nx, ny, nz, 2, 1));
  test::write_nifti<int32_t>(path, {{nx, ny, nz}, 8, 32, 0, 0, true, true}, volume_values(nx, ny, nz, 3));
  CHECK(slice(path, 2, 1) == expected_slice(nx, ny, nz, 2, 1, 3));
}

TEST_CASE("prefetching (at scan time) fills the cache without evicting volumes not yet read", "[nifti]") {
  test::TempDir dir("nifti_prefetch");
  const int nx = 8, ny = 6, nz = 5;
  for (const char* name : {"a.nii.gz", "b.nii.gz"}) {
    test::write_nifti<int16_t>(dir / name, {{nx, ny, nz}, 4, 16, 0, 0, false, true}, ramp(nx, ny, nz));
  }
  test::write_nifti<int16_t>(dir / "plain.nii", {{nx, ny, nz}, 4, 16}, ramp(nx, ny, nz));
  test::NiftiCacheBudget cache(uint64_t{nx} * ny * nz * 2);  // room for one volume
  CHECK_FALSE(prefetch_nifti(dir / "plain.nii", 2));  // slices along k of a .nii are read directly
  CHECK(prefetch_nifti(dir / "a.nii.gz", 2));
  CHECK(prefetch_nifti(dir / "a.nii.gz", 2));         // already there
  CHECK_FALSE(prefetch_nifti(dir / "b.nii.gz", 2));   // would evict a.nii.gz, which nobody has read yet
  CHECK(slice(dir / "a.nii.gz", 2, 4) == expected_slice(nx, ny, nz, 2, 4, 0, 10));
  CHECK(prefetch_nifti(dir / "b.nii.gz", 2));         // a.nii.gz has been read from: it may go
  CHECK(prefetch_nifti(dir / "plain.nii", 0) == false);  // axis 0 of the .nii: 480 bytes, no room beside b
  CHECK(slice(dir / "b.nii.gz", 2, 0) == expected_slice(nx, ny, nz, 2, 0, 0, 10));
  CHECK(slice(dir / "plain.nii", 0, 3) == expected_slice(nx, ny, nz, 0, 3, 0, 10));  // a read may evict
  CHECK(slice(dir / "a.nii.gz", 1, 2) == expected_slice(nx, ny, nz, 1, 2, 0, 10));
}

TEST_CASE("threads reading slices of gzipped volumes share the cache, also while it evicts", "[nifti]") {
  test::TempDir dir("nifti_cache_threads");
  const int nx = 40, ny = 30, nz = 24, files = 3;
  for (int f = 0; f < files; ++f) {
    test::write_nifti<float>(dir / ("v" + std::to_string(f) + ".nii.gz"), {{nx, ny, nz}, 16, 32, 0, 0, false, true},
                             volume_values(nx, ny, nz, f));
  }
  test::NiftiCacheBudget cache(uint64_t{nx} * ny * nz * 4 + 1);  // one volume: each file evicts the one before
  std::atomic<int> reads{0}, wrong{0};
  std::vector<std::string> errors(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < 2 * files; ++round) {
          const int f = (t + round) % files;
          for (int n = 0; n < nz; ++n) {
            const int plane = t % 2 ? nz - 1 - n : n;
            if (slice(dir / ("v" + std::to_string(f) + ".nii.gz"), 2, plane) != expected_slice(nx, ny, nz, 2, plane, f)) ++wrong;
            ++reads;
          }
        }
      } catch (const std::exception& error) {
        errors[t] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& error : errors) CHECK(error.empty());
  CHECK(reads == 8 * 2 * files * nz);
  CHECK(wrong == 0);
}

TEST_CASE("NIfTI-1 pairs and Analyze 7.5 (.hdr + .img) read like single files", "[nifti]") {
  test::TempDir dir("nifti_pairs");
  const int nx = 5, ny = 4, nz = 3;
  for (bool big : {false, true}) {
    const std::string tag = big ? "be" : "le";
    test::write_nifti<int16_t>(dir / ("one" + tag + ".nii"), {{nx, ny, nz}, 4, 16, 0, 0, big}, ramp(nx, ny, nz));
    test::split_nifti_pair(dir / ("one" + tag + ".nii"), dir / ("pair" + tag), "ni1");
    test::split_nifti_pair(dir / ("one" + tag + ".nii"), dir / ("analyze" + tag), "");
    for (const std::string name : {"pair", "analyze"}) {
      const auto header = dir / (name + tag + ".hdr");
      INFO(header);
      REQUIRE(std::string(input_format_for(header)->name) == "nifti");
      const NiftiInfo info = scan_nifti(header);
      CHECK(info.dims[2] == nz);
      CHECK(info.bit_depth() == 16);
      for (int axis = 0; axis < 3; ++axis) CHECK(slice(header, axis, 1) == slice(dir / ("one" + tag + ".nii"), axis, 1));
    }
  }
  // The data gzipped (X.img.gz, where nifticlib names X.img) reads the same.
  const std::string data = test::read_text(dir / "pairle.img");
  gzFile packed = gzopen((dir / "packed.img.gz").c_str(), "wb");
  gzwrite(packed, data.data(), static_cast<unsigned>(data.size()));
  gzclose(packed);
  std::filesystem::copy_file(dir / "pairle.hdr", dir / "packed.hdr");
  CHECK(slice(dir / "packed.hdr", 2, 1) == slice(dir / "onele.nii", 2, 1));
  // SPM's Analyze scaling (funused1, funused2: scl_slope's and scl_inter's places), as nibabel reads it.
  test::write_nifti<int16_t>(dir / "scaled.nii", {{nx, ny, nz}, 4, 16, 2.5f, -1.0f}, ramp(nx, ny, nz));
  test::split_nifti_pair(dir / "scaled.nii", dir / "spm", "");
  std::vector<float> expected = slice(dir / "onele.nii", 2, 1);
  for (float& v : expected) v = v * 2.5f - 1.0f;
  CHECK(slice(dir / "spm.hdr", 2, 1) == expected);
  // The header alone, and a data file too short for the header: errors naming the file.
  std::filesystem::copy_file(dir / "pairle.hdr", dir / "lonely.hdr");
  CHECK_THROWS_WITH(scan_nifti(dir / "lonely.hdr"), Catch::Contains("lonely.hdr") && Catch::Contains(".img"));
  std::filesystem::copy_file(dir / "pairle.hdr", dir / "short.hdr");
  std::ofstream(dir / "short.img", std::ios::binary) << std::string(10, 'x');
  CHECK_THROWS_WITH(scan_nifti(dir / "short.hdr"), Catch::Contains("short.hdr") && Catch::Contains("short.img") &&
                                                       Catch::Contains("truncated"));
}

TEST_CASE("the committed real NIfTI volume (ITK KmeansTest, int16) reads", "[nifti]") {
  const auto path = test::source_dir() / "datasets/samples/mri/KmeansTest_T1UCharRaw.nii.gz";
  const NiftiInfo info = scan_nifti(path);
  CHECK(info.dims[0] == 128);
  CHECK(info.dims[1] == 128);
  CHECK(info.dims[2] == 62);
  CHECK(info.slices(2) == 62);
  ImageBuffer image;
  CHECK(read_nifti_slice(path, 2, 31, image) == 128 * 128 * 2);
  CHECK(*std::max_element(image.begin(), image.end()) > 100.0f);
}

TEST_CASE("the committed real NIfTI-2 volume (nibabel's example_nifti2, 4-D int16) reads as nibabel reads it", "[nifti]") {
  // Values from nibabel 5.0: d = np.asarray(nib.load(path).dataobj), shape (32, 20, 12, 2).
  const auto path = test::source_dir() / "datasets/samples/nifti2/example_nifti2.nii.gz";
  const NiftiInfo info = scan_nifti(path);
  CHECK(info.dims[0] == 32);
  CHECK(info.dims[1] == 20);
  CHECK(info.dims[2] == 12);
  CHECK(info.dims[3] == 2);
  CHECK(info.slices(2) == 24);
  CHECK(info.bit_depth() == 16);
  const std::vector<float> t1k1 = slice(path, 2, 12 + 1);  // volume-major: plane = k + 12 t -> d[:, :, 1, 1].T
  REQUIRE(t1k1.size() == 32 * 20);
  CHECK(t1k1[0] == 386.0f);
  CHECK(t1k1[19 * 32 + 31] == 540.0f);
  CHECK(t1k1[7 * 32 + 5] == 396.0f);
  CHECK(std::accumulate(t1k1.begin(), t1k1.end(), 0.0) == 266185.0);
  const std::vector<float> t0k11 = slice(path, 2, 11);
  CHECK(std::accumulate(t0k11.begin(), t0k11.end(), 0.0) == 324813.0);
}
