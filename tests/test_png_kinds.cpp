// PNG reader and writer beyond the round trips: every colour type and depth the reader accepts
// (files made with libpng's writer), Adam7, the damage libpng detects, exact half-up rounding,
// and outputs decoded by stb_image, a decoder independent of libpng.
#include <png.h>
#include <stb/stb_image.h>
#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/png.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
// A PNG written by libpng: `colour` type, `depth`, Adam7 when `interlaced`, rows packed as PNG
// stores them (16-bit samples big-endian), `palette` for colour type 3.
void write_libpng(const std::filesystem::path& path, int width, int height, int depth, int colour, bool interlaced,
                  const std::vector<unsigned char>& packed, const std::vector<png_color>& palette = {}) {
  FILE* file = std::fopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, file);
  png_set_IHDR(png, info, width, height, depth, colour, interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  const size_t row_bytes = packed.size() / height;
  std::vector<png_bytep> rows(height);
  for (int y = 0; y < height; ++y) rows[y] = const_cast<png_bytep>(packed.data()) + y * row_bytes;
  png_set_rows(png, info, rows.data());
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(file);
}

std::vector<float> read_values(const std::filesystem::path& path, int* depth = nullptr) {
  ImageBuffer image;
  read_png(path, image, {}, depth);
  return {image.begin(), image.end()};
}

// A file as its chunks: type + data, to damage one and write the file back with valid CRCs.
struct Chunk {
  std::string type, data;
};
std::vector<Chunk> chunks_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<Chunk> chunks;
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + at);
    const size_t length = size_t{p[0]} << 24 | size_t{p[1]} << 16 | size_t{p[2]} << 8 | p[3];
    chunks.push_back({bytes.substr(at + 4, 4), bytes.substr(at + 8, length)});
    at += 12 + length;
  }
  return chunks;
}
void write_chunks(const std::filesystem::path& path, const std::vector<Chunk>& chunks, bool bad_crc_on_idat = false) {
  std::string file = "\x89PNG\r\n\x1a\n";
  const auto be32 = [](uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
  for (const Chunk& chunk : chunks) {
    const std::string body = chunk.type + chunk.data;
    uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
    if (bad_crc_on_idat && chunk.type == "IDAT") crc ^= 1;
    file += be32(static_cast<uint32_t>(chunk.data.size())) + body + be32(crc);
  }
  std::ofstream(path, std::ios::binary) << file;
}
}  // namespace

TEST_CASE("1-, 2- and 4-bit gray expand to 8 bits; gray+alpha keeps the gray", "[png]") {
  test::TempDir dir("png_kinds_gray");
  // 8 pixels in one row: 1-bit 10110010, 2-bit 0 1 2 3 3 2 1 0, 4-bit 0 1 ... 15 in pairs.
  write_libpng(dir / "g1.png", 8, 1, 1, PNG_COLOR_TYPE_GRAY, false, {0b10110010});
  CHECK(read_values(dir / "g1.png") == std::vector<float>{255, 0, 255, 255, 0, 0, 255, 0});
  write_libpng(dir / "g2.png", 8, 1, 2, PNG_COLOR_TYPE_GRAY, false, {0b00011011, 0b11100100});
  CHECK(read_values(dir / "g2.png") == std::vector<float>{0, 85, 170, 255, 255, 170, 85, 0});
  write_libpng(dir / "g4.png", 4, 1, 4, PNG_COLOR_TYPE_GRAY, false, {0x01, 0xEF});
  int depth = 0;
  CHECK(read_values(dir / "g4.png", &depth) == std::vector<float>{0, 17, 238, 255});
  CHECK(depth == 8);
  write_libpng(dir / "ga8.png", 2, 1, 8, PNG_COLOR_TYPE_GRAY_ALPHA, false, {7, 0, 200, 255});
  CHECK(read_values(dir / "ga8.png") == std::vector<float>{7, 200});
  write_libpng(dir / "ga16.png", 2, 1, 16, PNG_COLOR_TYPE_GRAY_ALPHA, false, {0x12, 0x34, 0, 0, 0xFF, 0xFE, 0xFF, 0xFF});
  CHECK(read_values(dir / "ga16.png", &depth) == std::vector<float>{0x1234, 0xFFFE});
  CHECK(depth == 16);
}

TEST_CASE("16-bit colour becomes luminance; palettes of 2 bits map their indices", "[png]") {
  test::TempDir dir("png_kinds_colour");
  // RGB 16-bit: pure red, and a gray pixel that must stay exact.
  write_libpng(dir / "rgb16.png", 2, 1, 16, PNG_COLOR_TYPE_RGB, false, {0xFF, 0xFF, 0, 0, 0, 0, 0x30, 0x39, 0x30, 0x39, 0x30, 0x39});
  const std::vector<float> rgb = read_values(dir / "rgb16.png");
  CHECK(rgb[0] == static_cast<float>(0.299 * 65535));
  CHECK(rgb[1] == 12345.0f);
  write_libpng(dir / "rgba16.png", 1, 1, 16, PNG_COLOR_TYPE_RGB_ALPHA, false, {0, 0, 0xFF, 0xFF, 0, 0, 0, 0});
  CHECK(read_values(dir / "rgba16.png")[0] == static_cast<float>(0.587 * 65535));
  const std::vector<png_color> palette = {{0, 0, 0}, {40, 40, 40}, {90, 90, 90}, {250, 250, 250}};
  write_libpng(dir / "p2.png", 5, 1, 2, PNG_COLOR_TYPE_PALETTE, false, {0b11100100, 0b10000000}, palette);
  CHECK(read_values(dir / "p2.png") == std::vector<float>{250, 90, 40, 0, 90});
}

TEST_CASE("Adam7-interlaced files decode to the same pixels as plain ones", "[png]") {
  test::TempDir dir("png_kinds_adam7");
  std::mt19937 random(7);
  struct Kind {
    int depth, colour, channels;
  };
  for (const Kind kind : {Kind{8, PNG_COLOR_TYPE_GRAY, 1}, Kind{16, PNG_COLOR_TYPE_GRAY, 1}, Kind{4, PNG_COLOR_TYPE_GRAY, 1},
                          Kind{8, PNG_COLOR_TYPE_RGB, 3}, Kind{16, PNG_COLOR_TYPE_RGB_ALPHA, 4}}) {
    const int width = 37, height = 23;
    const size_t row_bytes = (static_cast<size_t>(width) * kind.channels * kind.depth + 7) / 8;
    std::vector<unsigned char> packed(row_bytes * height);
    for (auto& byte : packed) byte = static_cast<unsigned char>(random());
    const std::string name = std::to_string(kind.depth) + "_" + std::to_string(kind.colour);
    write_libpng(dir / (name + "_plain.png"), width, height, kind.depth, kind.colour, false, packed);
    write_libpng(dir / (name + "_adam7.png"), width, height, kind.depth, kind.colour, true, packed);
    CAPTURE(name);
    CHECK(read_values(dir / (name + "_adam7.png")) == read_values(dir / (name + "_plain.png")));
  }
}

TEST_CASE("damaged PNGs fail naming the file and what libpng found", "[png]") {
  test::TempDir dir("png_kinds_damage");
  std::vector<float> values(40 * 30);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 37) % 256);
  write_png_gray(dir / "good.png", ConstImageView{values.data(), 40, 30}, 8);
  const std::vector<Chunk> good = chunks_of(dir / "good.png");
  REQUIRE(good.back().type == "IEND");
  ImageBuffer image;
  write_chunks(dir / "crc.png", good, true);
  CHECK_THROWS_WITH(read_png(dir / "crc.png", image), Catch::Contains("crc.png") && Catch::Contains("IDAT: CRC error"));
  std::vector<Chunk> adler = good;
  for (Chunk& chunk : adler) {
    if (chunk.type == "IDAT") chunk.data.back() = static_cast<char>(chunk.data.back() ^ 1);  // the Adler-32's last byte
  }
  write_chunks(dir / "adler.png", adler);
  CHECK_THROWS_WITH(read_png(dir / "adler.png", image), Catch::Contains("adler.png") && Catch::Contains("incorrect data check"));
  std::vector<Chunk> no_end(good.begin(), good.end() - 1);
  write_chunks(dir / "no_iend.png", no_end);
  CHECK_THROWS_WITH(read_png(dir / "no_iend.png", image),
                    Catch::Contains("no_iend.png") && Catch::Contains("it ends after a whole chunk, without IEND"));
  write_chunks(dir / "rewritten.png", good);  // the helpers themselves keep a good file good
  CHECK(read_values(dir / "rewritten.png") == values);
}

TEST_CASE("PNG output rounds halves up exactly, at every boundary of both depths", "[png]") {
  test::TempDir dir("png_kinds_rounding");
  std::vector<float> values = {0.49999997f, 0.5f, -0.0f, -0.4f, -0.5f, INFINITY, -INFINITY, NAN, 65534.5f,
                               std::nextafter(65534.5f, 0.0f), 65535.4f, 70000.0f, 1e-45f};
  for (int k = 0; k <= 300; ++k) {
    const float half = static_cast<float>(k) + 0.5f;
    values.insert(values.end(), {half, std::nextafter(half, 0.0f), std::nextafter(half, 1e9f), static_cast<float>(k)});
  }
  for (int depth : {8, 16}) {
    const double max = depth == 8 ? 255.0 : 65535.0;
    const auto path = dir / ("r" + std::to_string(depth) + ".png");
    write_png_gray(path, ConstImageView{values.data(), static_cast<int64_t>(values.size()), 1}, depth);
    const std::vector<float> read = read_values(path);
    REQUIRE(read.size() == values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      const double v = std::isnan(values[i]) ? 0.0 : std::clamp(static_cast<double>(values[i]), 0.0, max);
      CAPTURE(depth, i, values[i]);
      REQUIRE(read[i] == static_cast<float>(std::floor(v + 0.5)));
    }
  }
}

TEST_CASE("written PNGs decode with stb_image to the same samples, at every compression level", "[png]") {
  test::TempDir dir("png_kinds_stb");
  std::mt19937 random(11);
  std::vector<float> values(61 * 47);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i / 61) * 700 + random() % 300);
  for (int depth : {8, 16}) {
    for (int level : {0, 1, 5, 6, 9}) {
      const auto path = dir / ("s" + std::to_string(depth) + "_" + std::to_string(level) + ".png");
      write_png_gray(path, ConstImageView{values.data(), 61, 47}, depth, level);
      const std::vector<float> ours = read_values(path);
      int width = 0, height = 0, channels = 0;
      CAPTURE(depth, level);
      if (depth == 8) {
        stbi_uc* pixels = stbi_load(path.c_str(), &width, &height, &channels, 1);
        REQUIRE(pixels != nullptr);
        CHECK(std::vector<float>(pixels, pixels + width * height) == ours);
        stbi_image_free(pixels);
      } else {
        stbi_us* pixels = stbi_load_16(path.c_str(), &width, &height, &channels, 1);
        REQUIRE(pixels != nullptr);
        CHECK(std::vector<float>(pixels, pixels + width * height) == ours);
        stbi_image_free(pixels);
      }
      CHECK((width == 61 && height == 47 && channels == 1));
    }
  }
}

TEST_CASE("levels 1..5: signature, IHDR, one IDAT of UP-filtered rows in a checked zlib stream, IEND", "[png]") {
  test::TempDir dir("png_kinds_chunks");
  std::vector<float> values(300 * 7);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 37) % 251);
  for (int level : {1, 3, 5}) {
    const auto path = dir / ("c" + std::to_string(level) + ".png");
    write_png_gray(path, ConstImageView{values.data(), 300, 7}, 8, level);
    std::ifstream in(path, std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(file.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
    std::vector<std::string> types;
    std::string idat;
    for (size_t at = 8; at + 12 <= file.size();) {
      const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(file[i])); };
      const uint32_t length = byte(at) << 24 | byte(at + 1) << 16 | byte(at + 2) << 8 | byte(at + 3);
      REQUIRE(at + 12 + length <= file.size());
      const std::string body = file.substr(at + 4, 4 + length);
      const uint32_t crc = byte(at + 8 + length) << 24 | byte(at + 9 + length) << 16 | byte(at + 10 + length) << 8 |
                           byte(at + 11 + length);
      CHECK(crc == crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
      types.push_back(body.substr(0, 4));
      if (types.back() == "IDAT") idat += body.substr(4);
      at += 12 + length;
    }
    CAPTURE(level);
    CHECK(types == std::vector<std::string>{"IHDR", "IDAT", "IEND"});
    // zlib's own inflate checks the stream and its Adler-32; every row carries filter type 2 (UP).
    std::vector<unsigned char> rows(7 * 301);
    uLongf size = static_cast<uLongf>(rows.size());
    REQUIRE(uncompress(rows.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), static_cast<uLong>(idat.size())) == Z_OK);
    CHECK(size == rows.size());
    for (int y = 0; y < 7; ++y) CHECK(rows[y * 301] == 2);
    CHECK(read_values(path) == values);
  }
}
