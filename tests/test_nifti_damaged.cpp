// NIfTI files damaged in ways nifticlib alone would misread or misname: a vox_offset inside the
// header, a zero dim, a single file without NIfTI's magic, a gzip stream whose trailer is wrong
// (every slice fails, cached or read one by one).
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "imflow/io/nifti.hpp"
#include "mri_test_helpers.hpp"
#include "test_helpers.hpp"

using namespace imflow;

TEST_CASE("damaged NIfTI headers and gzip streams are named by what is wrong", "[nifti]") {
  test::TempDir dir("nifti_damaged");
  std::vector<double> values(5 * 6 * 3);
  std::iota(values.begin(), values.end(), 100.0);
  test::write_nifti<int16_t>(dir / "ok.nii", {{5, 6, 3}, 4, 16}, values);
  REQUIRE_NOTHROW(scan_nifti(dir / "ok.nii"));
  const std::string bytes = test::read_text(dir / "ok.nii");
  const auto write = [&](const char* name, std::string content) {
    std::ofstream(dir / name, std::ios::binary) << content;
    return dir / name;
  };
  // vox_offset (float32 at byte 108) 0: the voxels would start inside the header.
  std::string moved = bytes;
  const float zero = 0.0f;
  std::memcpy(moved.data() + 108, &zero, sizeof zero);
  CHECK_THROWS_WITH(scan_nifti(write("moved.nii", moved)),
                    Catch::Contains("moved.nii") && Catch::Contains("vox_offset") && Catch::Contains("inside the header"));
  // vox_offset 1e12: past the end of the file, not "inside the header".
  const float far = 1e12f;
  std::memcpy(moved.data() + 108, &far, sizeof far);
  CHECK_THROWS_WITH(scan_nifti(write("far.nii", moved)), Catch::Contains("far.nii: NIfTI vox_offset 1e+12 is past the end of the file"));
  // dim[1] (int16 at byte 42) 0: said by imflow, not printed by nifticlib.
  std::string flat = bytes;
  flat[42] = flat[43] = 0;
  CHECK_THROWS_WITH(scan_nifti(write("flat.nii", flat)), Catch::Contains("flat.nii") && Catch::Contains("dim[1] = 0"));
  // dim[0..7] (int16 from byte 40) 7 and 32767 each: the claim said in full, not cut to 31 digits.
  std::string huge = bytes;
  huge[40] = 7, huge[41] = 0;
  for (int d = 1; d <= 7; ++d) huge[40 + 2 * d] = '\xff', huge[41 + 2 * d] = '\x7f';
  CHECK_THROWS_WITH(scan_nifti(write("huge.nii", huge)), Catch::Contains("huge.nii: NIfTI header claims 8.111e+31 bytes"));
  // datatype (int16 at byte 70) 77: no NIfTI code.
  std::string typo = bytes;
  typo[70] = 77, typo[71] = 0;
  CHECK_THROWS_WITH(scan_nifti(write("typo.nii", typo)), Catch::Contains("typo.nii") && Catch::Contains("datatype 77, which is no NIfTI"));
  // The magic (byte 344) zeroed: nifticlib would read it as Analyze 7.5, without its scaling.
  std::string unmarked = bytes;
  std::memset(unmarked.data() + 344, 0, 4);
  CHECK_THROWS_WITH(scan_nifti(write("unmarked.nii", unmarked)),
                    Catch::Contains("unmarked.nii: NIfTI-1 header without its magic \"n+1\" at byte 344") && Catch::Contains("damaged"));
  // A gzip whose CRC-32 trailer is wrong: the stream, not the header, is named.
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size()));
  gzFile packed = gzopen((dir / "crc.nii.gz").c_str(), "wb");
  gzwrite(packed, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(packed);
  std::string gz = test::read_text(dir / "crc.nii.gz");
  const uint32_t wrong = static_cast<uint32_t>(crc) ^ 1u;
  std::memcpy(gz.data() + gz.size() - 8, &wrong, sizeof wrong);  // little-endian CRC, then ISIZE
  CHECK_THROWS_WITH(scan_nifti(write("crc.nii.gz", gz)),
                    Catch::Contains("crc.nii.gz: corrupt gzip stream (incorrect data check)"));
}

TEST_CASE("a .nii.gz whose damage only its CRC-32 shows fails every slice, cached or read one by one", "[nifti]") {
  test::TempDir dir("nifti_crc_slices");
  // Noise: the stream is as long as the data, so the header's read stops far before its trailer.
  const int nx = 64, ny = 64, nz = 8;
  std::mt19937 rng(5);
  std::vector<double> values(static_cast<size_t>(nx) * ny * nz);
  for (double& v : values) v = static_cast<double>(rng() % 30000);
  test::write_nifti<int16_t>(dir / "noise.nii.gz", {{nx, ny, nz}, 4, 16, 0, 0, false, true}, values);
  std::string gz = test::read_text(dir / "noise.nii.gz");
  gz[gz.size() - 6] = static_cast<char>(gz[gz.size() - 6] ^ 0x10);  // the CRC-32's third byte
  std::ofstream(dir / "crc.nii.gz", std::ios::binary) << gz;
  REQUIRE_NOTHROW(scan_nifti(dir / "crc.nii.gz"));
  for (const uint64_t budget : {uint64_t{1} << 30, uint64_t{0}}) {  // read whole into the cache; slice by slice
    test::NiftiCacheBudget cache(budget);
    for (int plane = 0; plane < nz; ++plane) {
      INFO("budget " << budget << " slice " << plane);
      ImageBuffer image;
      CHECK_THROWS_WITH(read_nifti_slice(dir / "crc.nii.gz", 2, plane, image),
                        (dir / "crc.nii.gz").string() + ": corrupt gzip stream (incorrect data check)");
      CHECK_NOTHROW(read_nifti_slice(dir / "noise.nii.gz", 2, plane, image));
      CHECK(image.data()[7] == static_cast<float>(values[static_cast<size_t>(plane) * nx * ny + 7]));
    }
  }
}
