// PNG writer and the fast gray decoder against stb_image (an independent decoder and encoder):
// every compression level at 8 and 16 bits, the value map, every filter type, damaged files.
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "imflow/errors.hpp"
#include "imflow/io/png.hpp"
#include "io/png_gray_decode.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Samples as stb_image decodes them (8 or 16 bits, one channel).
std::vector<float> stb_samples(const std::string& png, int depth, int& width, int& height) {
  const auto* bytes = reinterpret_cast<const stbi_uc*>(png.data());
  int channels = 0;
  std::vector<float> out;
  if (depth == 16) {
    stbi_us* pixels = stbi_load_16_from_memory(bytes, static_cast<int>(png.size()), &width, &height, &channels, 1);
    REQUIRE(pixels != nullptr);
    out.assign(pixels, pixels + width * height);
    stbi_image_free(pixels);
  } else {
    stbi_uc* pixels = stbi_load_from_memory(bytes, static_cast<int>(png.size()), &width, &height, &channels, 1);
    REQUIRE(pixels != nullptr);
    out.assign(pixels, pixels + width * height);
    stbi_image_free(pixels);
  }
  return out;
}

// A smooth field with noise and edges: rows where each PNG filter wins somewhere.
std::vector<float> test_field(int width, int height, double max) {
  std::vector<float> values(static_cast<size_t>(width * height));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double smooth = 0.5 + 0.4 * std::sin(0.11 * x) * std::cos(0.07 * y);
      const double noise = ((x * 7919 + y * 104729) % 97) / 97.0 - 0.5;
      values[static_cast<size_t>(y * width + x)] = static_cast<float>(std::round((smooth + (x > width / 2 ? 0.1 : 0.0) * noise) * max));
    }
  }
  return values;
}
}  // namespace

TEST_CASE("PNG output at every compression level decodes exactly with stb_image and read_png", "[png]") {
  test::TempDir dir("png_levels");
  const int width = 61, height = 37;
  for (int depth : {8, 16}) {
    const std::vector<float> values = test_field(width, height, depth == 8 ? 255.0 : 65535.0);
    size_t stored_size = 0, smallest = SIZE_MAX;
    for (int level = 0; level <= 9; ++level) {
      const auto path = dir / ("l" + std::to_string(level) + "_" + std::to_string(depth) + ".png");
      write_png_gray(path, ConstImageView{values.data(), width, height}, depth, level);
      const std::string png = file_bytes(path);
      int w = 0, h = 0;
      REQUIRE(stb_samples(png, depth, w, h) == values);
      CHECK((w == width && h == height));
      ImageBuffer image;
      int read_depth = 0;
      read_png(path, image, {}, &read_depth);
      CHECK(read_depth == depth);
      REQUIRE(std::vector<float>(image.begin(), image.end()) == values);
      if (level == 0) stored_size = png.size();
      smallest = std::min(smallest, png.size());
    }
    CHECK(stored_size >= static_cast<size_t>(width * height * depth / 8));  // level 0: stored blocks
    CHECK(smallest < stored_size);
  }
}

TEST_CASE("PNG output through a value map equals writing the mapped float image", "[png]") {
  test::TempDir dir("png_map");
  const std::vector<float> normalized = {0.0f, 0.25f, 0.5f, 1.0f, -0.1f, 1.2f, NAN, 0.3333333f};
  const PngValueMap map{199.7, 12.25};
  std::vector<float> mapped;
  for (float v : normalized) mapped.push_back(static_cast<float>(v * map.scale + map.offset));
  for (int depth : {8, 16}) {
    write_png_gray(dir / "map.png", ConstImageView{normalized.data(), 4, 2}, depth, 1, &map);
    write_png_gray(dir / "plain.png", ConstImageView{mapped.data(), 4, 2}, depth, 1);
    CHECK(file_bytes(dir / "map.png") == file_bytes(dir / "plain.png"));
    ImageBuffer image;
    read_png(dir / "map.png", image);
    CHECK(std::vector<float>(image.begin(), image.end()) == std::vector<float>{12, 62, 112, 212, 0, 252, 0, 79});
  }
}

TEST_CASE("gray PNGs with every filter type and split IDATs decode as stb_image decodes them", "[png]") {
  test::TempDir dir("png_filters");
  const int width = 53, height = 41;
  const std::vector<float> field = test_field(width, height, 255.0);
  const std::vector<unsigned char> gray(field.begin(), field.end());
  // stb_image_write picks the filter per row among all five; force each in turn too.
  for (int filter : {-1, 0, 1, 2, 3, 4}) {
    stbi_write_force_png_filter = filter;
    const auto path = dir / ("f" + std::to_string(filter + 1) + ".png");
    REQUIRE(stbi_write_png(path.c_str(), width, height, 1, gray.data(), width) != 0);
    const std::string png = file_bytes(path);
    ImageBuffer image;
    int depth = 0;
    REQUIRE(detail::decode_gray_png(reinterpret_cast<const unsigned char*>(png.data()), png.size(), INT64_MAX, image, depth));
    CHECK(depth == 8);
    REQUIRE(std::vector<float>(image.begin(), image.end()) == field);
  }
  stbi_write_force_png_filter = -1;
  // The same zlib stream split over three IDAT chunks.
  write_png_gray(dir / "one.png", ConstImageView{field.data(), width, height}, 8, 9);
  const std::string one = file_bytes(dir / "one.png");
  const size_t idat = one.find("IDAT") - 4;
  const uint32_t length = static_cast<uint32_t>(static_cast<unsigned char>(one[idat]) << 24 | static_cast<unsigned char>(one[idat + 1]) << 16 |
                                                static_cast<unsigned char>(one[idat + 2]) << 8 | static_cast<unsigned char>(one[idat + 3]));
  const std::string stream = one.substr(idat + 8, length);
  std::string split = one.substr(0, idat);
  for (const std::string& part : {stream.substr(0, 10), stream.substr(10, 1), stream.substr(11)}) {
    split += test::png_chunk("IDAT", part);
  }
  split += one.substr(idat + 12 + length);
  ImageBuffer image;
  int depth = 0;
  REQUIRE(detail::decode_gray_png(reinterpret_cast<const unsigned char*>(split.data()), split.size(), INT64_MAX, image, depth));
  CHECK(std::vector<float>(image.begin(), image.end()) == field);
}

TEST_CASE("damaged gray PNGs: the fast decoder declines, libpng names the damage or reads past it", "[png]") {
  test::TempDir dir("png_damage");
  const std::vector<float> field = test_field(40, 30, 255.0);
  write_png_gray(dir / "good.png", ConstImageView{field.data(), 40, 30}, 8);
  const std::string good = file_bytes(dir / "good.png");
  const size_t idat = good.find("IDAT");
  const auto fast = [](const std::string& png) {
    ImageBuffer image;
    int depth = 0;
    return detail::decode_gray_png(reinterpret_cast<const unsigned char*>(png.data()), png.size(), INT64_MAX, image, depth);
  };
  CHECK(fast(good));
  CHECK_FALSE(fast(good.substr(0, good.size() - 12)));  // no IEND
  std::string flipped = good;
  flipped[idat + 10] = static_cast<char>(flipped[idat + 10] ^ 0x40);  // IDAT data: its CRC no longer matches
  CHECK_FALSE(fast(flipped));
  std::ofstream(dir / "flipped.png", std::ios::binary) << flipped;
  ImageBuffer image;
  // libpng meets the damage inflating the chunk, before its CRC.
  CHECK_THROWS_WITH(read_png(dir / "flipped.png", image), Catch::Contains("flipped.png") && Catch::Contains("cannot decode the PNG"));
  // An ancillary chunk with a wrong CRC: libpng skips it with a warning, the pixels are fine.
  std::string text = test::png_chunk("tEXt", std::string("Comment\0x", 9));
  text[text.size() - 1] = static_cast<char>(text[text.size() - 1] ^ 1);
  const std::string ancillary = good.substr(0, idat - 4) + text + good.substr(idat - 4);
  CHECK_FALSE(fast(ancillary));
  std::ofstream(dir / "ancillary.png", std::ios::binary) << ancillary;
  read_png(dir / "ancillary.png", image);
  CHECK(std::vector<float>(image.begin(), image.end()) == field);
  // A header claiming more pixels than the IDATs could inflate to (deflate's ~1032:1): declined
  // before the rows are allocated.
  const std::string big_header = test::png_chunk("IHDR", std::string{0, 0, 0x0f, char(0xa0), 0, 0, 0x0b, char(0xb8), 8, 0, 0, 0, 0});
  CHECK_FALSE(fast(good.substr(0, 8) + big_header + good.substr(33)));
  ReadLimits limits;
  limits.max_pixels = 40 * 30 - 1;
  CHECK_THROWS_WITH(read_png(dir / "good.png", image, limits), Catch::Contains("exceeds the limit"));
}
