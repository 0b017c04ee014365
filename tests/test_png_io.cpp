// PNG input and output (libpng; some test files from stb_image_write, an independent encoder):
// 8/16-bit round trips, rounding and clamping, colour -> luminance, bad files, size limits, the committed real slices.
#include <stb/stb_image_write.h>

#include <zlib.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "imflow/errors.hpp"
#include "imflow/io/png.hpp"
#include "imflow/io/written_text.hpp"
#include "engine/mri_outputs.hpp"
#include "io/mri_formats.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
// A palette PNG (colour type 3, 8-bit) built chunk by chunk: `entries` gray PLTE colours
// (index i -> 10 i), one row of `indices`, which may point past the PLTE.
void write_palette_png(const std::filesystem::path& path, const std::vector<unsigned char>& indices, int entries) {
  std::string file = "\x89PNG\r\n\x1a\n";
  auto chunk = [&](const char* type, const std::string& data) {
    const auto be32 = [](uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
    const std::string body = type + data;
    file += be32(static_cast<uint32_t>(data.size())) + body +
            be32(static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
  };
  const auto width = static_cast<uint32_t>(indices.size());
  chunk("IHDR", std::string{char(width >> 24), char(width >> 16), char(width >> 8), char(width), 0, 0, 0, 1, 8, 3, 0, 0, 0});
  std::string palette;
  for (int i = 0; i < entries; ++i) palette += std::string(3, static_cast<char>(10 * i));
  chunk("PLTE", palette);
  std::string row(1, '\0');  // filter: none
  row.append(indices.begin(), indices.end());
  uLongf packed_size = compressBound(static_cast<uLong>(row.size()));
  std::string packed(packed_size, '\0');
  REQUIRE(compress(reinterpret_cast<Bytef*>(packed.data()), &packed_size, reinterpret_cast<const Bytef*>(row.data()),
                   static_cast<uLong>(row.size())) == Z_OK);
  packed.resize(packed_size);
  chunk("IDAT", packed);
  chunk("IEND", "");
  std::ofstream(path, std::ios::binary) << file;
}
}  // namespace

TEST_CASE("PNG 8-bit and 16-bit round trips are exact", "[png]") {
  test::TempDir dir("png_roundtrip");
  for (int depth : {8, 16}) {
    const int max = depth == 8 ? 255 : 65535;
    std::vector<float> values(37 * 23);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 7919) % (max + 1));
    values[0] = 0.0f;
    values[1] = static_cast<float>(max);
    const auto path = dir / ("r" + std::to_string(depth) + ".png");
    write_png_gray(path, ConstImageView{values.data(), 37, 23}, depth);
    const PngInfo info = scan_png(path);
    CHECK(info.width == 37);
    CHECK(info.height == 23);
    CHECK(info.bit_depth == depth);
    ImageBuffer image;
    int read_depth = 0;
    CHECK(read_png(path, image, {}, &read_depth) == 37 * 23 * depth / 8);
    CHECK(read_depth == depth);
    REQUIRE(image.width() == 37);
    REQUIRE(image.height() == 23);
    for (size_t i = 0; i < values.size(); ++i) REQUIRE(image.data()[i] == values[i]);
    CHECK(scan_png_planes(path).at(0).bit_depth == depth);
  }
}

TEST_CASE("PNG output rounds to nearest and clamps; NaN becomes 0", "[png]") {
  test::TempDir dir("png_clamp");
  const std::vector<float> values = {-3.0f, 2.5f, 2.49f, 254.6f, 300.0f, NAN, 1e9f, 0.5f};
  write_png_gray(dir / "c8.png", ConstImageView{values.data(), 4, 2}, 8);
  write_png_gray(dir / "c16.png", ConstImageView{values.data(), 4, 2}, 16);
  ImageBuffer image;
  read_png(dir / "c8.png", image);
  CHECK(std::vector<float>(image.begin(), image.end()) == std::vector<float>{0, 3, 2, 255, 255, 0, 255, 1});
  read_png(dir / "c16.png", image);
  CHECK(std::vector<float>(image.begin(), image.end()) == std::vector<float>{0, 3, 2, 255, 300, 0, 65535, 1});
  CHECK_THROWS_AS(write_png_gray(dir / "bad.png", ConstImageView{values.data(), 4, 2}, 12), OutputError);
}

TEST_CASE("a float slice's PNG stretches its finite range; infinities go to the ends, NaN to 0", "[png]") {
  test::TempDir dir("png_stretch");
  WorkItem item;  // ref.bit_depth 0: float input (a float NIfTI, a FITS image)
  const std::vector<float> values = {10.0f, 20.0f, INFINITY, NAN, -INFINITY, 15.0f};
  item.pixels.resize(3, 2);
  std::copy(values.begin(), values.end(), item.pixels.begin());
  write_png_output(item, dir / "slice.png");
  ImageBuffer image;
  int depth = 0;
  read_png(dir / "slice.png", image, {}, &depth);
  CHECK(depth == 16);
  CHECK(std::vector<float>(image.begin(), image.end()) == std::vector<float>{0, 65535, 65535, 0, 0, 32768});
}

TEST_CASE("PNG output with a sample map is the file of the mapped values", "[png]") {
  test::TempDir dir("png_map");
  std::vector<float> values = {-3.0f, 2.5f, 2.49f, 254.6f, 300.0f, NAN, 1e9f, 0.5f, -0.0f, INFINITY};
  for (int i = 0; i < 590; ++i) values.push_back(static_cast<float>(std::sin(i * 0.37) * 400.0 + 200.0));
  const PngSampleMap map{0.73176, -11.5};  // a normalization's scale and offset
  std::vector<float> mapped;
  for (float v : values) mapped.push_back(static_cast<float>(v * map.scale + map.offset));
  for (int depth : {8, 16}) {
    INFO("depth " << depth);
    write_png_gray(dir / "map.png", ConstImageView{values.data(), 40, 15}, depth, 1, &map);
    write_png_gray(dir / "mapped.png", ConstImageView{mapped.data(), 40, 15}, depth, 1);
    const std::string a = test::read_text(dir / "map.png"), b = test::read_text(dir / "mapped.png");
    CHECK(a == b);
    ImageBuffer image;
    read_png(dir / "map.png", image);
    CHECK(image.data()[3] == 175.0f);  // 254.6 * 0.73176 - 11.5 = 174.80, rounded
  }
}

TEST_CASE("a written PNG is noted as its file's bytes until the thread's next PNG", "[png]") {
  test::TempDir dir("png_notes");
  std::vector<float> a(64 * 48), b(64 * 48);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 251);
    b[i] = static_cast<float>((i * 7) % 253);
  }
  write_png_gray(dir / "a.png", ConstImageView{a.data(), 64, 48}, 8, 1);
  CHECK(test::noted_text(dir / "a.png") == test::read_text(dir / "a.png"));
  // The next PNG reuses the first one's buffer: the first note goes, the new one is its file.
  write_png_gray(dir / "b.png", ConstImageView{b.data(), 64, 48}, 16, 6);
  CHECK(written_text(dir / "a.png") == nullptr);
  CHECK(test::noted_text(dir / "b.png") == test::read_text(dir / "b.png"));
  // A failed write (its folder is a file) leaves no note behind: its buffer was about to change.
  std::ofstream(dir / "file") << "not a folder";
  CHECK_THROWS(write_png_gray(dir / "file" / "c.png", ConstImageView{a.data(), 64, 48}, 8, 1));
  CHECK(written_text(dir / "b.png") == nullptr);
  CHECK(written_text(dir / "file" / "c.png") == nullptr);
  forget_written_text();
}

TEST_CASE("colour PNG becomes BT.601 luminance; gray RGB stays exact", "[png]") {
  test::TempDir dir("png_rgb");
  const unsigned char rgb[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 10, 10};
  REQUIRE(stbi_write_png((dir / "rgb.png").c_str(), 2, 2, 3, rgb, 6) != 0);
  ImageBuffer image;
  CHECK(read_png(dir / "rgb.png", image) == 2 * 2 * 3);
  CHECK(image.data()[0] == Approx(0.299 * 255));
  CHECK(image.data()[1] == Approx(0.587 * 255));
  CHECK(image.data()[2] == Approx(0.114 * 255));
  CHECK(image.data()[3] == 10.0f);
  const unsigned char rgba[] = {7, 7, 7, 0, 200, 200, 200, 255};
  REQUIRE(stbi_write_png((dir / "rgba.png").c_str(), 2, 1, 4, rgba, 8) != 0);
  read_png(dir / "rgba.png", image);
  CHECK(image.data()[0] == 7.0f);
  CHECK(image.data()[1] == 200.0f);
}

TEST_CASE("palette PNGs: indices map to their colours; an index past the PLTE fails the file", "[png]") {
  test::TempDir dir("png_palette");
  ImageBuffer image;
  write_palette_png(dir / "good.png", {0, 1, 2, 1}, 3);
  read_png(dir / "good.png", image, {});
  CHECK(std::vector<float>(image.begin(), image.end()) == std::vector<float>{0, 10, 20, 10});
  // stb_image would expand index 5 from uninitialised memory: a different value from run to run.
  write_palette_png(dir / "bad.png", {0, 1, 5, 1}, 3);
  CHECK_THROWS_WITH(read_png(dir / "bad.png", image, {}),
                    Catch::Contains("bad.png") && Catch::Contains("palette index beyond the 3 PLTE entries") &&
                        Catch::Contains("pixel 2,0"));
}

TEST_CASE("bad PNG files and size limits give errors naming the file", "[png]") {
  test::TempDir dir("png_bad");
  std::ofstream(dir / "corrupt.png") << "\x89PNG\r\n\x1a\n this is not a PNG";
  ImageBuffer image;
  CHECK_THROWS_WITH(read_png(dir / "corrupt.png", image), Catch::Contains("corrupt.png"));
  CHECK_THROWS_AS(scan_png(dir / "missing.png"), InputError);
  // A valid PNG cut short: the header is fine, decoding fails.
  std::vector<float> values(64 * 64, 100.0f);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 251);
  write_png_gray(dir / "full.png", ConstImageView{values.data(), 64, 64}, 8);
  std::ifstream in(dir / "full.png", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(dir / "truncated.png", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  CHECK_THROWS_WITH(read_png(dir / "truncated.png", image), Catch::Contains("truncated.png"));
  ReadLimits limits;
  limits.max_pixels = 64 * 63;
  CHECK_THROWS_WITH(read_png(dir / "full.png", image, limits), Catch::Contains("exceeds the limit"));
  // A header of 2^31 - 1 rows in a 57-byte file (under max_pixels): refused before anything is
  // allocated, when listed and when read.
  std::string huge = bytes.substr(0, 33);
  const unsigned char size[8] = {0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff};  // 1 x 2^31 - 1
  huge.replace(16, 8, reinterpret_cast<const char*>(size), 8);
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(huge.data() + 12), 17);
  for (int i = 0; i < 4; ++i) huge[29 + i] = static_cast<char>((crc >> (24 - 8 * i)) & 0xff);
  huge += bytes.substr(bytes.size() - 12);  // IEND
  huge.insert(33, std::string("\0\0\0\0IDAT\x35\xaf\x06\x1e", 12));  // an empty IDAT
  std::ofstream(dir / "huge.png", std::ios::binary) << huge;
  CHECK_THROWS_WITH(scan_png(dir / "huge.png"), Catch::Contains("huge.png") && Catch::Contains("cannot be held by a file of 57 bytes"));
  CHECK_THROWS_WITH(read_png(dir / "huge.png", image), Catch::Contains("1x2147483647 pixels cannot be held"));
  CHECK(image.capacity_bytes() < size_t{1} << 20);
}

TEST_CASE("the committed real MRI PNG slices read with their bit depth", "[png]") {
  const auto samples = test::source_dir() / "datasets/samples/mri";
  ImageBuffer image;
  int depth = 0;
  read_png(samples / "BrainProtonDensitySlice.png", image, {}, &depth);
  CHECK(image.width() == 181);
  CHECK(image.height() == 217);
  CHECK(depth == 8);
  read_png(samples / "inia19_t1_s064_16bit.png", image, {}, &depth);
  CHECK(image.width() == 168);
  CHECK(depth == 16);
  CHECK(*std::max_element(image.begin(), image.end()) > 255.0f);
}
