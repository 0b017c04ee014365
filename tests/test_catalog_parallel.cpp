// The parallel paths of a mosaic's merge give the serial results exactly: the CSV streamed in
// blocks is catalog_csv's text, the FITS table written in blocks reads back every value, and
// merge_tile_catalog is finish_sources of merge_tile_labels' sums, for any number of threads.
#include <catch2/catch.hpp>
#include <tbb/task_arena.h>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "imflow/io/catalog.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/written_text.hpp"
#include "imflow/kernels/label.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/kernels/tile_merge.hpp"
#include "imflow/tiling.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
// Sources with values of every magnitude and sign (long and short shortest forms, exponents).
Catalog random_catalog(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-12, 12);
  std::uniform_int_distribution<int64_t> integer(0, 40000);
  auto real = [&] { return mantissa(rng) * std::pow(10.0, exponent(rng)); };
  Catalog catalog(n);
  for (size_t i = 0; i < n; ++i) {
    Source& s = catalog[i];
    s.id = static_cast<int32_t>(i + 1);
    s.x = real();
    s.y = real();
    s.flux = real();
    s.npix = integer(rng);
    s.peak = real();
    s.peak_x = integer(rng);
    s.peak_y = integer(rng);
    s.xmin = integer(rng);
    s.xmax = integer(rng);
    s.ymin = integer(rng);
    s.ymax = integer(rng);
    s.flux_iso = real();
    s.x2 = real();
    s.y2 = real();
    s.xy = real();
    s.a = real();
    s.b = real();
    s.theta = real();
    s.flux_iso_err = real();
    s.errx2 = real();
    s.erry2 = real();
    s.errxy = real();
    s.cxx = real();
    s.cyy = real();
    s.cxy = real();
    s.flags = static_cast<int32_t>(i % 4);
  }
  return catalog;
}

bool same_source(const Source& a, const Source& b) {
  auto same = [](double u, double v) { return std::memcmp(&u, &v, sizeof u) == 0; };
  return a.id == b.id && same(a.x, b.x) && same(a.y, b.y) && same(a.flux, b.flux) && a.npix == b.npix &&
         same(a.peak, b.peak) && a.peak_x == b.peak_x && a.peak_y == b.peak_y && a.xmin == b.xmin && a.xmax == b.xmax &&
         a.ymin == b.ymin && a.ymax == b.ymax && same(a.flux_iso, b.flux_iso) && same(a.x2, b.x2) && same(a.y2, b.y2) &&
         same(a.xy, b.xy) && same(a.a, b.a) && same(a.b, b.b) && same(a.theta, b.theta) && same(a.flux_iso_err, b.flux_iso_err) &&
         same(a.errx2, b.errx2) && same(a.erry2, b.erry2) && same(a.errxy, b.errxy) && same(a.cxx, b.cxx) &&
         same(a.cyy, b.cyy) && same(a.cxy, b.cxy) && a.flags == b.flags;
}
}  // namespace

TEST_CASE("a catalog's CSV row has the columns in order, shortest float64 text (whole numbers of float columns with .0), NaN and Infinity as Python and Java read them", "[catalog]") {
  Catalog catalog(1);
  Source& s = catalog[0];
  s.id = 7;
  s.x = 1.25;
  s.y = -0.1;
  s.flux = 1e-300;
  s.npix = 12;
  s.peak = 3.0;
  s.peak_x = 1;
  s.peak_y = 2;
  s.xmin = 0;
  s.xmax = 4;
  s.ymin = 5;
  s.ymax = 6;
  s.flux_iso = 123456789.125;
  s.x2 = 0.3333333333333333;
  s.y2 = std::numeric_limits<double>::infinity();
  s.xy = -std::numeric_limits<double>::infinity();
  s.theta = -1.5707963267948966;
  s.flux_iso_err = std::numeric_limits<double>::quiet_NaN();
  s.errx2 = 2.5e-7;
  s.erry2 = 1.0;
  s.errxy = -0.0;
  s.cxx = 4.0;
  s.cyy = 0.1;
  s.cxy = -12.0;
  s.flags = 3;
  const std::string text = catalog_csv(catalog);
  CHECK(text ==
        "id,x,y,X_IMAGE,Y_IMAGE,ra,dec,flux,npix,peak,peak_x,peak_y,xmin,xmax,ymin,ymax,flux_iso,flux_iso_err,x2,y2,xy,"
        "errx2,erry2,errxy,erra,errb,errtheta,a,b,theta,elongation,ellipticity,cxx,cyy,cxy,flags\n"
        "7,1.25,-0.1,2.25,0.9,NaN,NaN,1e-300,12,3.0,1,2,0,4,5,6,123456789.125,NaN,0.3333333333333333,Infinity,-Infinity,"
        "2.5e-07,1.0,-0.0,1.0,0.0005000000000349445,-1.5707963267948966,0.0,0.0,-1.5707963267948966,NaN,NaN,4.0,0.1,-12.0,3\n");
}

TEST_CASE("the CSV streamed in blocks on many threads is catalog_csv's text", "[catalog][parallel]") {
  test::TempDir dir("catalog_csv_blocks");
  // 131,073 rows: 17 blocks, copied into the file on all threads once placed.
  for (size_t n : {size_t{0}, size_t{1}, size_t{8191}, size_t{8192}, size_t{8193}, size_t{40000}, size_t{131073}}) {
    const Catalog catalog = random_catalog(n, static_cast<unsigned>(n) + 1);
    const std::string expected = catalog_csv(catalog);
    CHECK(static_cast<size_t>(std::count(expected.begin(), expected.end(), '\n')) == n + 1);
    for (int threads : {1, 2, 4, 7}) {
      INFO(n << " rows, " << threads << " threads");
      const auto path = dir / ("cat" + std::to_string(n) + "_" + std::to_string(threads) + ".csv");
      tbb::task_arena(threads).execute([&] { write_catalog_csv(path, catalog); });
      CHECK(test::read_text(path) == expected);
    }
  }
}

TEST_CASE("a CSV catalog written from one buffer notes its text for its path, until forgotten", "[catalog][manifest]") {
  // The item's manifest CRC and merged rows read the noted text instead of the file.
  test::TempDir dir("catalog_csv_noted");
  const auto first = dir / "first.cat.csv", second = dir / "second.cat.csv";
  write_catalog_csv(first, random_catalog(300, 1));
  const std::string_view* noted = written_text(first);
  REQUIRE(noted != nullptr);
  CHECK(std::string(*noted) == test::read_text(first));
  CHECK(written_text(second) == nullptr);
  write_catalog_csv(second, random_catalog(20, 2));  // the buffer now holds the second file's text
  CHECK(written_text(first) == nullptr);
  REQUIRE(written_text(second) != nullptr);
  CHECK(std::string(*written_text(second)) == test::read_text(second));
  std::thread([&] { CHECK(written_text(second) == nullptr); }).join();  // another thread's note
  forget_written_text();
  CHECK(written_text(second) == nullptr);
  write_catalog_csv(second, random_catalog(9000, 3));  // streamed in blocks: nothing noted
  CHECK(written_text(second) == nullptr);
}

TEST_CASE("a CSV copied into its file on all threads notes the file's CRC, trusted while the file is unchanged",
          "[catalog][manifest]") {
  // The item's manifest takes the CRC instead of reading the file back.
  test::TempDir dir("catalog_csv_crc");
  const auto path = dir / "big.cat.csv";
  tbb::task_arena(4).execute([&] { write_catalog_csv(path, random_catalog(131073, 5)); });  // 17 blocks
  const std::string bytes = test::read_text(path);
  const auto noted = take_written_crc(path);
  REQUIRE(noted.has_value());
  CHECK(noted->size == bytes.size());
  CHECK(noted->crc32 == crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
  CHECK(!take_written_crc(path).has_value());  // taken once
  write_catalog_csv(path, random_catalog(131073, 6));
  { std::ofstream(path, std::ios::app) << "1\n"; }  // changed since: not trusted
  CHECK(!take_written_crc(path).has_value());
  write_catalog_csv(dir / "small.cat.csv", random_catalog(9000, 3));  // written in order by one thread
  CHECK(!take_written_crc(dir / "small.cat.csv").has_value());
}

TEST_CASE("the FITS table written in blocks reads back every value, the same bytes on any threads",
          "[catalog][parallel]") {
  test::TempDir dir("catalog_fits_blocks");
  const size_t n = 20000;  // three blocks of 8192 rows
  const Catalog catalog = random_catalog(n, 11);
  const auto one = dir / "one.fits", four = dir / "four.fits";
  tbb::task_arena(1).execute([&] { write_catalog_fits(one, catalog, {{"SRCFILE", "a.fits", "", false}}); });
  tbb::task_arena(4).execute([&] { write_catalog_fits(four, catalog, {{"SRCFILE", "a.fits", "", false}}); });
  CHECK(test::read_text(one) == test::read_text(four));

  fitsfile* file = nullptr;
  int status = 0;
  fits_open_table(&file, four.c_str(), READONLY, &status);
  REQUIRE(status == 0);
  long rows = 0;
  fits_get_num_rows(file, &rows, &status);
  REQUIRE(rows == static_cast<long>(n));
  std::vector<double> reals(n);
  std::vector<long long> integers(n);
  auto real_column = [&](const char* name) {
    int column = 0;
    fits_get_colnum(file, CASEINSEN, const_cast<char*>(name), &column, &status);
    fits_read_col(file, TDOUBLE, column, 1, 1, static_cast<LONGLONG>(n), nullptr, reals.data(), nullptr, &status);
    REQUIRE(status == 0);
  };
  auto integer_column = [&](const char* name) {
    int column = 0;
    fits_get_colnum(file, CASEINSEN, const_cast<char*>(name), &column, &status);
    fits_read_col(file, TLONGLONG, column, 1, 1, static_cast<LONGLONG>(n), nullptr, integers.data(), nullptr, &status);
    REQUIRE(status == 0);
  };
  real_column("flux");
  integer_column("npix");
  size_t flux_differ = 0, npix_differ = 0;
  for (size_t i = 0; i < n; ++i) {
    flux_differ += reals[i] != catalog[i].flux;
    npix_differ += integers[i] != catalog[i].npix;
  }
  CHECK(flux_differ == 0);
  CHECK(npix_differ == 0);
  real_column("theta");
  integer_column("id");
  size_t theta_differ = 0, id_differ = 0;
  for (size_t i = 0; i < n; ++i) {
    theta_differ += reals[i] != catalog[i].theta;
    id_differ += integers[i] != catalog[i].id;
  }
  CHECK(theta_differ == 0);
  CHECK(id_differ == 0);
  fits_close_file(file, &status);
  CHECK(status == 0);
}

namespace {
// The tiles of a random field (labels, first pixels, borders, sums), as the engine records them.
std::vector<kernels::TileLabels> random_tiles(const TileGrid& grid, int connectivity, unsigned seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution on(0.4);
  std::uniform_real_distribution<float> value(1.0f, 50.0f);
  const int64_t w = grid.width, h = grid.height;
  std::vector<uint8_t> mask(static_cast<size_t>(w * h));
  std::vector<float> pixels(mask.size());
  for (size_t i = 0; i < mask.size(); ++i) {
    mask[i] = on(rng) ? 1 : 0;
    pixels[i] = value(rng);
  }
  std::vector<kernels::TileLabels> tiles(static_cast<size_t>(grid.count()));
  for (int64_t t = 0; t < grid.count(); ++t) {
    const TileRect core = grid.core(t);
    std::vector<uint8_t> m(static_cast<size_t>(core.size()));
    std::vector<float> p(m.size());
    for (int64_t y = 0; y < core.height; ++y) {
      for (int64_t x = 0; x < core.width; ++x) {
        m[y * core.width + x] = mask[(core.y + y) * w + core.x + x];
        p[y * core.width + x] = pixels[(core.y + y) * w + core.x + x];
      }
    }
    std::vector<int32_t> labels(m.size());
    const int32_t n = kernels::label_components({m.data(), core.width, core.height}, connectivity, labels.data());
    kernels::describe_tile_labels(labels.data(), core, core, n, w, tiles[t]);
    tiles[t].sums = kernels::accumulate_sources({p.data(), core.width, core.height}, labels.data(), n, core.x, core.y,
                                                {nullptr, 10.0});
  }
  return tiles;
}
}  // namespace

TEST_CASE("merge_tile_catalog is finish_sources of the merged sums, on any threads", "[tiling][merge][parallel]") {
  const TileGrid grid{301, 283, 37, 0};  // 9 x 8 tiles, 1,500-3,500 sources, many across borders
  for (int connectivity : {4, 8}) {
    INFO("connectivity " << connectivity);
    auto tiles = random_tiles(grid, connectivity, 5);
    const auto labels = kernels::merge_tile_labels(tiles, grid.columns(), grid.rows(), connectivity);
    const Catalog expected = kernels::finish_sources(labels.sums, grid.width, grid.height);
    REQUIRE(expected.size() > 1400);  // several blocks of the parallel merge
    REQUIRE(static_cast<int32_t>(expected.size()) == labels.count);
    for (int threads : {1, 3, 8}) {
      INFO(threads << " threads");
      tiles = random_tiles(grid, connectivity, 5);
      std::vector<std::vector<kernels::SourceSums>> parts;  // the merge releases them
      for (const auto& tile : tiles) parts.push_back(tile.sums);
      kernels::MergedSources merged;
      tbb::task_arena(threads).execute([&] {
        merged = kernels::merge_tile_catalog(tiles, grid.columns(), grid.rows(), connectivity, grid.width, grid.height);
      });
      CHECK(merged.count == labels.count);
      CHECK(merged.final_id == labels.final_id);
      CHECK(merged.sums.empty());
      REQUIRE(merged.catalog.size() == expected.size());
      size_t differ = 0;
      for (size_t i = 0; i < expected.size(); ++i) differ += !same_source(merged.catalog[i], expected[i]);
      CHECK(differ == 0);
      for (const auto& tile : tiles) CHECK(tile.sums.empty());  // released once merged
      // The reference fold: every source's parts in tile order, then label order (the serial
      // merge's order, so the sums are the same to the last bit whatever the threads).
      std::vector<kernels::SourceSums> folded(static_cast<size_t>(merged.count));
      for (size_t t = 0; t < parts.size(); ++t) {
        for (size_t l = 0; l < parts[t].size(); ++l) folded[merged.final_id[t][l] - 1].merge(parts[t][l]);
      }
      size_t fold_differ = 0;
      for (size_t k = 0; k < folded.size(); ++k) {
        const Source reference = folded[k].finish(static_cast<int32_t>(k + 1), grid.width, grid.height);
        fold_differ += !same_source(merged.catalog[k], reference);
      }
      CHECK(fold_differ == 0);
      // finish_sources in parallel (more rows than its serial cut) equals one row at a time.
      std::vector<kernels::SourceSums> many;  // > 16384: finished in parallel
      for (int copy = 0; copy < 16; ++copy) many.insert(many.end(), labels.sums.begin(), labels.sums.end());
      Catalog finished;
      tbb::task_arena(threads).execute([&] { finished = kernels::finish_sources(many, grid.width, grid.height); });
      REQUIRE(finished.size() == many.size());
      size_t finish_differ = 0;
      for (size_t k = 0; k < many.size(); ++k) {
        const Source reference = many[k].finish(static_cast<int32_t>(k + 1), grid.width, grid.height);
        finish_differ += !same_source(finished[k], reference);
      }
      CHECK(finish_differ == 0);
    }
  }
}
