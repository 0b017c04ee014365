// FITS reading: every BITPIX, BSCALE/BZERO, BLANK, multi-extension files, cubes, tile
// compression; writing images and catalog tables that read back.
#include <catch2/catch.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "test_helpers.hpp"

using namespace imflow;

TEST_CASE("every BITPIX reads back as float32 physical values", "[fits]") {
  test::TempDir dir("fits_bitpix");
  const std::vector<double> values = {0, 1, 2, 3, 100, 120};
  for (int bitpix : {8, 16, 32, 64, -32, -64}) {
    INFO("BITPIX " << bitpix);
    const auto path = dir / ("b" + std::to_string(bitpix) + ".fits");
    test::write_fits(path, bitpix, {3, 2}, values);
    const auto images = scan_fits(path);
    REQUIRE(images.size() == 1);
    CHECK(images[0].bitpix == bitpix);
    ImageBuffer image;
    const int64_t bytes = read_fits_plane(path, 0, 0, image);
    CHECK(bytes == 6 * std::abs(bitpix) / 8);
    REQUIRE(image.width() == 3);
    REQUIRE(image.height() == 2);
    for (int i = 0; i < 6; ++i) CHECK(image.data()[i] == static_cast<float>(values[i]));
  }
}

TEST_CASE("BSCALE/BZERO (unsigned 16-bit) and BLANK are honoured", "[fits]") {
  test::TempDir dir("fits_scaling");
  const auto path = dir / "u16.fits";
  // BZERO 32768 with BITPIX 16 is unsigned 16-bit.
  test::write_fits(path, 16, {2, 2}, {0, 1, 40000, 65535}, 1.0, 32768.0);
  ImageBuffer image;
  read_fits_plane(path, 0, 0, image);
  CHECK(image.data()[2] == 40000.f);
  CHECK(image.data()[3] == 65535.f);

  const auto scaled = dir / "scaled.fits";
  const long long blank = -999;
  test::write_fits(scaled, 16, {2, 2}, {1.5, 2.5, -3.0, 10.0}, 0.5, 10.0, &blank);
  // Overwrite one raw value with BLANK through a raw write.
  fitsfile* file = nullptr;
  int status = 0;
  fits_open_file(&file, scaled.c_str(), READWRITE, &status);
  fits_set_bscale(file, 1.0, 0.0, &status);
  short raw = -999;
  fits_write_img(file, TSHORT, 4, 1, &raw, &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  read_fits_plane(scaled, 0, 0, image);
  CHECK(image.data()[0] == 1.5f);
  CHECK(image.data()[2] == -3.0f);
  CHECK(std::isnan(image.data()[3]));
}

TEST_CASE("multi-extension files and cubes list one item per image plane", "[fits]") {
  test::TempDir dir("fits_mef");
  const auto path = dir / "mef.fits";
  test::write_empty_primary(path);
  test::write_fits(path, -32, {4, 3}, std::vector<double>(12, 1.0), 1, 0, nullptr, false);
  test::write_fits(path, 16, {4, 3, 2}, std::vector<double>(24, 2.0), 1, 0, nullptr, false);
  const auto images = scan_fits(path);
  REQUIRE(images.size() == 2);
  CHECK(images[0].hdu == 1);
  CHECK(images[1].hdu == 2);
  CHECK(images[1].planes() == 2);
  ImageBuffer image;
  std::vector<double> cube(24);
  for (int i = 0; i < 24; ++i) cube[i] = i;
  test::write_fits(dir / "cube.fits", -32, {4, 3, 2}, cube);
  read_fits_plane(dir / "cube.fits", 0, 1, image);
  CHECK(image.data()[0] == 12.f);
  CHECK(image.data()[11] == 23.f);
  CHECK_THROWS_AS(read_fits_plane(dir / "cube.fits", 0, 2, image), InputError);
}

TEST_CASE("tile-compressed images read like plain ones", "[fits]") {
  test::TempDir dir("fits_fz");
  const auto plain = dir / "plain.fits";
  std::vector<double> values(64 * 48);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>((i * 37) % 1000);
  test::write_fits(plain, 16, {64, 48}, values);
  const auto packed = dir / "packed.fits.fz";
  test::write_tile_compressed(plain, packed);
  const auto images = scan_fits(packed);
  REQUIRE(images.size() == 1);
  CHECK(images[0].hdu == 1);
  ImageBuffer image;
  read_fits_plane(packed, 1, 0, image);
  for (size_t i = 0; i < values.size(); ++i) REQUIRE(image.data()[i] == static_cast<float>(values[i]));
}

TEST_CASE("bad files give errors naming the file and the reason", "[fits]") {
  test::TempDir dir("fits_bad");
  // The file's error, or its HDU's (that HDU's item fails alone).
  auto message = [](const std::filesystem::path& path) -> std::string {
    try {
      for (const FitsImageInfo& image : scan_fits(path)) {
        if (!image.error.empty()) return image.error;
      }
    } catch (const InputError& error) {
      return error.what();
    }
    return "no error";
  };
  std::ofstream(dir / "text.fits") << "this is not FITS\n";
  CHECK_THAT(message(dir / "text.fits"), Catch::Contains("text.fits") && Catch::Contains("not a readable FITS"));
  std::ofstream(dir / "empty.fits").close();
  CHECK_THAT(message(dir / "empty.fits"), Catch::Contains("empty.fits") && Catch::Contains("empty"));
  // A header claiming far more data than the file holds.
  test::write_fits(dir / "full.fits", -32, {100, 100}, std::vector<double>(10000, 1.0));
  std::filesystem::resize_file(dir / "full.fits", 2880 * 3);
  CHECK_THAT(message(dir / "full.fits"), Catch::Contains("full.fits") && Catch::Contains("claims"));
  test::write_empty_primary(dir / "noimage.fits");
  CHECK_THAT(message(dir / "noimage.fits"), Catch::Contains("no image"));
  // "claims N bytes": N as an integer, not 40000.000000.
  CHECK_THAT(message(dir / "full.fits"), Catch::Contains("claims 40000 bytes"));
}

TEST_CASE("an error names this file's reason, not messages CFITSIO left from another file", "[fits]") {
  test::TempDir dir("fits_stale");
  // Opening a losslessly GZIP-compressed float image succeeds but leaves "ffgcnn could not find
  // column: ZZERO/ZSCALE" lines on CFITSIO's process-wide message stack.
  const auto plain = dir / "plain.fits", packed = dir / "packed.fits.fz";
  test::write_fits(plain, -32, {16, 16}, std::vector<double>(256, 1.5));
  test::write_tile_compressed(plain, packed, GZIP_1, 0.0f);  // no quantisation: no ZSCALE/ZZERO columns
  ImageBuffer image;
  read_fits_plane(packed, 1, 0, image);
  CHECK(image.data()[0] == 1.5f);
  // Then a header whose second keyword is not BITPIX.
  std::string bad = "SIMPLE  =                    T";
  bad.resize(80, ' ');
  std::string naxis = "NAXIS   =                    0";
  naxis.resize(80, ' ');
  std::string end = "END";
  end.resize(80, ' ');
  std::string text = bad + naxis + end;
  text.resize(2880, ' ');
  std::ofstream(dir / "order.fits", std::ios::binary) << text;
  std::string message;
  try {
    scan_fits(dir / "order.fits");
  } catch (const InputError& error) {
    message = error.what();
  }
  CHECK_THAT(message, Catch::Contains("order.fits") && Catch::Contains("BITPIX"));
  CHECK_THAT(message, !Catch::Contains("ffgcnn") && !Catch::Contains("ZZERO") && !Catch::Contains("packed"));
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("files failing on several threads at once each get their own messages", "[fits]") {
  // CFITSIO's message stack is one per process: without FitsMessages a thread's error picked up
  // the lines another thread's failed open pushed, naming that other file.
  test::TempDir dir("fits_concurrent_errors");
  const std::vector<std::string> names = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"};
  for (const std::string& name : names) {
    std::ofstream(dir / (name + ".fits"), std::ios::binary) << std::string(3000, 'x');  // not FITS
  }
  std::atomic<int> foreign{0}, unexplained{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < names.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 200; ++round) {
        std::string message;
        try {
          scan_fits(dir / (names[t] + ".fits"));
        } catch (const InputError& error) {
          message = error.what();
        }
        if (message.find(names[t] + ".fits: not a readable FITS file") == std::string::npos) ++unexplained;
        for (size_t other = 0; other < names.size(); ++other) {
          if (other != t && message.find(names[other]) != std::string::npos) ++foreign;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(unexplained == 0);
  CHECK(foreign == 0);
}

TEST_CASE("an image above max_pixels is refused before allocation", "[fits]") {
  test::TempDir dir("fits_limit");
  test::write_fits(dir / "big.fits", 8, {100, 100}, std::vector<double>(10000, 1.0));
  ImageBuffer image;
  ReadLimits limits;
  limits.max_pixels = 5000;
  CHECK_THROWS_WITH(read_fits_plane(dir / "big.fits", 0, 0, image, limits), Catch::Contains("exceeds the limit"));
  CHECK(image.capacity_bytes() == 0);
}

TEST_CASE("written images and catalogs read back", "[fits]") {
  test::TempDir dir("fits_write");
  std::vector<float> pixels = {1, 2, 3, 4, 5, 6};
  write_fits_image(dir / "out" / "image.fits", {pixels.data(), 3, 2}, {{"BKG_MED", "1.5", "", true}});
  ImageBuffer image;
  read_fits_plane(dir / "out" / "image.fits", 0, 0, image);
  CHECK(image.data()[5] == 6.f);
  Catalog catalog(2);
  catalog[0].id = 1;
  catalog[0].x = 1.25;
  catalog[1].id = 2;
  catalog[1].flux = 99.5;
  catalog[1].npix = 7;
  write_catalog_fits(dir / "cat.fits", catalog, {{"SRCFILE", "a.fits", "", false}});
  fitsfile* file = nullptr;
  int status = 0;
  fits_open_table(&file, (dir / "cat.fits").c_str(), READONLY, &status);
  long rows = 0;
  fits_get_num_rows(file, &rows, &status);
  CHECK(rows == 2);
  int column = 0;
  fits_get_colnum(file, CASEINSEN, const_cast<char*>("flux"), &column, &status);
  double flux[2] = {0, 0};
  fits_read_col(file, TDOUBLE, column, 1, 1, 2, nullptr, flux, nullptr, &status);
  CHECK(flux[1] == 99.5);
  fits_close_file(file, &status);
  CHECK(status == 0);
  // A path past one card's 68 characters is continued (CONTINUE), not cut; an HDU number is an integer.
  const std::string long_path = "survey/night-2026-11-29/chip-07/" + std::string(60, 'x') + ".fits";
  write_catalog_fits(dir / "long.fits", catalog,
                     {{"SRCFILE", long_path, "input file", false}, {"SRCHDU", "3", "input HDU", true, false, true}});
  fits_open_table(&file, (dir / "long.fits").c_str(), READONLY, &status);
  char* text = nullptr;
  fits_read_key_longstr(file, "SRCFILE", &text, nullptr, &status);
  REQUIRE(status == 0);
  CHECK(std::string(text) == long_path);
  fits_free_memory(text, &status);
  char value[FLEN_VALUE] = {0};
  fits_read_keyword(file, "SRCHDU", value, nullptr, &status);
  CHECK(std::string(value) == "3");  // not 3. (a real): astropy indexes HDUs with it
  fits_close_file(file, &status);
  CHECK(status == 0);
  // No temporary files are left behind.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);
  }
}

TEST_CASE("NaN pixels of float images stay NaN, with and without scaling", "[fits]") {
  test::TempDir dir("fits_float_nan");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  test::write_fits(dir / "f32.fits", -32, {3, 1}, {1.5, nan, -2.0});
  test::write_fits(dir / "f64.fits", -64, {3, 1}, {nan, 4.0, 8.0});
  ImageBuffer image;
  read_fits_plane(dir / "f32.fits", 0, 0, image);
  CHECK(image.data()[0] == 1.5f);
  CHECK(std::isnan(image.data()[1]));
  CHECK(image.data()[2] == -2.0f);
  read_fits_plane(dir / "f64.fits", 0, 0, image);
  CHECK(std::isnan(image.data()[0]));
  CHECK(image.data()[2] == 8.0f);
}

TEST_CASE("float64 values beyond float32's range read as invalid pixels, with a warning naming the HDU", "[fits]") {
  test::TempDir dir("fits_float64_range");
  std::vector<double> values(40 * 30, 100.0);
  values[5] = 1e300;
  values[17] = -1e39;
  values[18] = 3e38;  // within range
  const auto path = dir / "wide.fits";
  test::write_fits(path, -64, {40, 30}, values);
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(8);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  ImageBuffer image;
  read_fits_plane(path, 0, 0, image);
  spdlog::set_default_logger(previous);
  CHECK(std::isinf(image.data()[5]));
  CHECK(std::isinf(image.data()[17]));
  CHECK(image.data()[18] == 3e38f);
  CHECK(image.data()[0] == 100.0f);
  const std::vector<std::string> logged = sink->last_formatted();
  REQUIRE(logged.size() == 1);
  CHECK_THAT(logged[0], Catch::Contains("wide.fits: HDU 0 plane 0: 2 pixel(s) infinite or beyond float32's range"));
}

TEST_CASE("integers that BSCALE carries beyond float32's range read as invalid pixels, with the same warning", "[fits]") {
  test::TempDir dir("fits_scaled_range");
  std::vector<double> values(20 * 10, 1e37);  // stored 1 each
  values[3] = 1e39;                            // stored 100: beyond float32
  values[4] = -2e38;                           // stored -20: within range
  values[7] = -5e38;                           // stored -50: beyond
  const auto path = dir / "scaled.fits";
  test::write_fits(path, 16, {20, 10}, values, 1e37);
  test::write_fits(dir / "plain.fits", 16, {20, 10}, std::vector<double>(200, 8.0), 2.0, 32768.0);
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(8);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  ImageBuffer image;
  read_fits_plane(path, 0, 0, image);
  ImageBuffer plain;
  read_fits_plane(dir / "plain.fits", 0, 0, plain);  // its largest value, 2 x 32767 + 32768, is far within range
  spdlog::set_default_logger(previous);
  CHECK(std::isinf(image.data()[3]));
  CHECK(std::isinf(image.data()[7]));
  CHECK(image.data()[4] == -2e38f);
  CHECK(image.data()[0] == 1e37f);
  CHECK(plain.data()[0] == 8.0f);
  const std::vector<std::string> logged = sink->last_formatted();
  REQUIRE(logged.size() == 1);
  CHECK_THAT(logged[0], Catch::Contains("scaled.fits: HDU 0 plane 0: 2 pixel(s) infinite or beyond float32's range"));
}
