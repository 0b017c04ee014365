// The libdeflate path for 8/16-bit grayscale PNGs (src/io/png_gray_decode.cpp): files built here
// chunk by chunk (every row filter, IDATs split anywhere, ancillary chunks) and by stb_image_write
// (an independent encoder with its own filter choices) decode to the samples written; damaged or
// unusual files are left to libpng, which still names the file and the damage.
#include <stb/stb_image_write.h>

#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/png.hpp"
#include "io/png_gray_decode.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
struct GrayPngSpec {
  int width = 1, height = 1, depth = 8;
  std::vector<int> filters;  // per row, cycled; values 0-4 (5 makes a damaged file)
  size_t idat_bytes = 0;     // the stream split into IDATs of this many bytes (0: one IDAT)
  bool text_before = false, text_after = false;  // a tEXt chunk before the IDATs / after them
  bool interlaced = false;   // only the IHDR's flag (for files the path must leave to libpng)
  std::string extra_stream;  // bytes deflated after the rows (too much image data)
};

std::string be32(uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

void add_chunk(std::string& file, const char* type, const std::string& data) {
  const std::string body = type + data;
  file += be32(static_cast<uint32_t>(data.size())) + body +
          be32(static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

// The PNG filter `type` applied to one row of raw bytes (`above`: the raw row above, zeros first),
// written out as the spec defines each predictor.
std::string filter_row(int type, const std::string& raw, const std::string& above, int bpp) {
  std::string out(1, static_cast<char>(type));
  for (size_t i = 0; i < raw.size(); ++i) {
    const int a = i >= static_cast<size_t>(bpp) ? static_cast<unsigned char>(raw[i - bpp]) : 0;
    const int b = static_cast<unsigned char>(above[i]);
    const int c = i >= static_cast<size_t>(bpp) ? static_cast<unsigned char>(above[i - bpp]) : 0;
    int predicted = 0;
    if (type == 1) predicted = a;
    if (type == 2) predicted = b;
    if (type == 3) predicted = (a + b) / 2;
    if (type == 4) {
      const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
      predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
    }
    out += static_cast<char>(static_cast<unsigned char>(raw[i]) - predicted);
  }
  return out;
}

std::string gray_png(const GrayPngSpec& spec, const std::vector<int>& samples) {
  const int bpp = spec.depth / 8;
  std::string file = "\x89PNG\r\n\x1a\n", stream;
  const std::string header = be32(spec.width) + be32(spec.height) +
                             std::string{char(spec.depth), 0, 0, 0, char(spec.interlaced ? 1 : 0)};
  add_chunk(file, "IHDR", header);
  std::string above(static_cast<size_t>(spec.width) * bpp, '\0');
  for (int y = 0; y < spec.height; ++y) {
    std::string raw;
    for (int x = 0; x < spec.width; ++x) {
      const int v = samples[static_cast<size_t>(y) * spec.width + x];
      if (bpp == 2) raw += static_cast<char>(v >> 8);
      raw += static_cast<char>(v & 0xff);
    }
    stream += filter_row(spec.filters[static_cast<size_t>(y) % spec.filters.size()], raw, above, bpp);
    above = raw;
  }
  stream += spec.extra_stream;
  uLongf packed_size = compressBound(static_cast<uLong>(stream.size()));
  std::string packed(packed_size, '\0');
  REQUIRE(compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size, reinterpret_cast<const Bytef*>(stream.data()),
                    static_cast<uLong>(stream.size()), 9) == Z_OK);
  packed.resize(packed_size);
  if (spec.text_before) add_chunk(file, "tEXt", std::string("Comment") + '\0' + "before");
  const size_t step = spec.idat_bytes == 0 ? packed.size() : spec.idat_bytes;
  for (size_t at = 0; at < packed.size(); at += step) add_chunk(file, "IDAT", packed.substr(at, step));
  if (spec.text_after) add_chunk(file, "tEXt", std::string("Comment") + '\0' + "after");
  add_chunk(file, "IEND", "");
  return file;
}

std::vector<int> random_samples(const GrayPngSpec& spec, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> value(0, spec.depth == 8 ? 255 : 65535);
  std::vector<int> samples(static_cast<size_t>(spec.width) * spec.height);
  for (int& v : samples) v = value(random);
  if (samples.size() > 2) samples[1] = samples[2];  // some equal neighbours: Paeth's ties
  return samples;
}

std::span<const unsigned char> bytes_of(const std::string& file) {
  return {reinterpret_cast<const unsigned char*>(file.data()), file.size()};
}

void check_samples(const ImageBuffer& image, const std::vector<int>& samples) {
  for (size_t i = 0; i < samples.size(); ++i) {
    INFO("pixel " << i);
    REQUIRE(image.data()[i] == static_cast<float>(samples[i]));
  }
}
}  // namespace

TEST_CASE("Grayscale PNGs decode to their samples on the libdeflate path: every filter, IDATs split, ancillary chunks", "[png]") {
  test::TempDir dir("png_gray_decode");
  std::vector<unsigned char> scratch;
  uint32_t seed = 1;
  for (int depth : {8, 16}) {
    for (const std::vector<int>& filters : std::vector<std::vector<int>>{{0}, {1}, {2}, {3}, {4}, {4, 0, 3, 1, 2, 4, 4}}) {
      for (int width : {1, 2, 3, 37}) {
        GrayPngSpec spec{.width = width, .height = 11, .depth = depth, .filters = filters};
        spec.idat_bytes = width == 37 ? 7 : 0;
        spec.text_before = width == 2, spec.text_after = width == 3 || width == 37;
        const std::vector<int> samples = random_samples(spec, seed++);
        const std::string file = gray_png(spec, samples);
        INFO("depth " << depth << " filter " << filters.front() << " of " << filters.size() << " width " << width);
        ImageBuffer image;
        const auto decoded = detail::decode_gray_png(bytes_of(file), int64_t{1} << 40, image, scratch);
        REQUIRE(decoded.has_value());
        CHECK(decoded->width == width);
        CHECK(decoded->height == 11);
        CHECK(decoded->depth == depth);
        check_samples(image, samples);
        // read_png gives the same through the file.
        const auto path = dir / "gray.png";
        std::ofstream(path, std::ios::binary) << file;
        ImageBuffer read;
        int bit_depth = 0;
        CHECK(read_png(path, read, {}, &bit_depth) == int64_t{width} * 11 * (depth / 8));
        CHECK(bit_depth == depth);
        check_samples(read, samples);
      }
    }
  }
}

TEST_CASE("An 8-bit grayscale PNG from stb_image_write decodes on the libdeflate path to the written values", "[png]") {
  GrayPngSpec spec{.width = 61, .height = 47, .depth = 8, .filters = {0}};
  std::vector<int> samples = random_samples(spec, 77);
  for (int y = 0; y < spec.height; ++y) {  // smooth rows too, where stb picks other filters
    if (y % 3 == 0) {
      for (int x = 0; x < spec.width; ++x) samples[static_cast<size_t>(y) * spec.width + x] = (x * 4 + y) % 256;
    }
  }
  std::vector<unsigned char> pixels(samples.begin(), samples.end());
  std::string file;
  const auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  REQUIRE(stbi_write_png_to_func(append, &file, spec.width, spec.height, 1, pixels.data(), spec.width) != 0);
  ImageBuffer image;
  std::vector<unsigned char> scratch;
  REQUIRE(detail::decode_gray_png(bytes_of(file), int64_t{1} << 40, image, scratch).has_value());
  check_samples(image, samples);
}

TEST_CASE("Damaged and unusual grayscale PNGs are left to libpng, which names the file", "[png]") {
  test::TempDir dir("png_gray_left");
  std::vector<unsigned char> scratch;
  GrayPngSpec spec{.width = 19, .height = 9, .depth = 8, .filters = {4, 1}};
  const std::vector<int> samples = random_samples(spec, 5);
  const auto left_to_libpng = [&](const std::string& file, bool libpng_fails) {
    ImageBuffer image;
    CHECK_FALSE(detail::decode_gray_png(bytes_of(file), int64_t{1} << 40, image, scratch).has_value());
    const auto path = dir / "left.png";
    std::ofstream(path, std::ios::binary) << file;
    if (libpng_fails) CHECK_THROWS_WITH(read_png(path, image), Catch::Contains("left.png"));
  };
  const std::string good = gray_png(spec, samples);
  SECTION("a flipped byte in the IDAT data: its CRC") {
    std::string file = good;
    file[file.find("IDAT") + 8] ^= 0x10;
    left_to_libpng(file, true);
  }
  SECTION("truncated before IEND") { left_to_libpng(good.substr(0, good.size() - 14), true); }
  SECTION("a filter byte of 5") {
    GrayPngSpec bad = spec;
    bad.filters = {4, 5};
    left_to_libpng(gray_png(bad, samples), true);
  }
  SECTION("more image data than the image holds") {
    GrayPngSpec extra = spec;
    extra.extra_stream = std::string(40, '\x07');
    left_to_libpng(gray_png(extra, samples), false);
  }
  SECTION("IDATs with a chunk between them") {
    std::string file = good;
    GrayPngSpec split = spec;
    split.idat_bytes = 5;
    file = gray_png(split, samples);
    const size_t second = file.find("IDAT", file.find("IDAT") + 4) - 4;
    std::string text;
    add_chunk(text, "tEXt", std::string("k") + '\0' + "v");
    file.insert(second, text);
    left_to_libpng(file, true);
  }
  SECTION("interlaced") {
    GrayPngSpec interlaced = spec;
    interlaced.interlaced = true;
    left_to_libpng(gray_png(interlaced, samples), false);
  }
  SECTION("more pixels than the limit") {
    ImageBuffer image;
    CHECK_FALSE(detail::decode_gray_png(bytes_of(good), 19 * 9 - 1, image, scratch).has_value());
    const auto path = dir / "limit.png";
    std::ofstream(path, std::ios::binary) << good;
    ReadLimits limits;
    limits.max_pixels = 19 * 9 - 1;
    CHECK_THROWS_WITH(read_png(path, image, limits), Catch::Contains("exceeds the limit"));
  }
}
