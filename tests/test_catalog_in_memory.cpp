// FITS and FITS_LDAC catalogs up to kMemoryTableMaxBytes of rows are built in memory (CFITSIO
// makes the headers, the rows are encoded after them) and written whole: the same bytes as CFITSIO
// writing the file itself, and each noted as its file's bytes (written_text.hpp) beside the CSV's,
// so that the manifest's CRCs read memory.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <random>
#include <string>
#include <vector>

#include "imflow/io/catalog.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/ldac.hpp"
#include "imflow/io/written_text.hpp"
#include "io/catalog_output.hpp"
#include "io/fits_output.hpp"
#include "io/fits_table.hpp"
#include "test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;

namespace {
Catalog some_sources(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Catalog catalog(n);
  for (size_t i = 0; i < n; ++i) {
    Source& s = catalog[i];
    s.id = static_cast<int32_t>(i + 1);
    s.x = 1000 * (u(rng) + 1);
    s.y = 1000 * (u(rng) + 1);
    s.flux = 1e5 * u(rng);
    s.npix = static_cast<int64_t>(rng() % 500) + 1;
    s.a = 2 + u(rng);
    s.b = 1 + u(rng) / 2;
    s.theta = u(rng);
    s.flags = static_cast<int32_t>(rng() % 4);
  }
  return catalog;
}

// The same table written by CFITSIO into a file under a temporary name (the images' way).
void write_catalog_fits_on_disk(const fs::path& path, const Catalog& catalog, const std::vector<FitsCard>& cards) {
  AtomicOutput output(path);
  detail::FitsFile file = detail::create_output_fits(output);
  detail::write_catalog_table(file.get(), path, "CATALOG", catalog, nullptr, detail::catalog_output_columns(nullptr),
                              cards);
  detail::finish_output_fits(file, output);
}

}  // namespace

TEST_CASE("a FITS catalog built in memory is the file CFITSIO writes", "[catalog][fits]") {
  // 12,000: encoded in blocks; 20,000 and 60,000: rows past kMemoryTableMaxBytes, copied into the file in blocks.
  const size_t rows = GENERATE(size_t{0}, size_t{1}, size_t{3100}, size_t{12000}, size_t{20000}, size_t{60000});
  test::TempDir dir("catalog_in_memory");
  const Catalog catalog = some_sources(rows, 5);
  const std::vector<FitsCard> cards = {{"SRCFILE", "a[1].fits", "the input", false}, {"GAIN", "4.5", "e-/ADU", true}};
  write_catalog_fits(dir / "memory.cat.fits", catalog, cards);
  write_catalog_fits_on_disk(dir / "disk.cat.fits", catalog, cards);
  const std::string bytes = test::read_text(dir / "memory.cat.fits");
  CHECK(bytes.size() % 2880 == 0);
  CHECK(bytes.size() >= 3 * 2880 + rows * 8);  // primary and table headers, the rows
  CHECK(bytes == test::read_text(dir / "disk.cat.fits"));
  const bool in_memory = rows * detail::table_row_bytes(detail::catalog_output_columns(nullptr)) <= detail::kMemoryTableMaxBytes;
  CHECK(in_memory == (rows <= 12000));
  if (in_memory) {
    CHECK(test::noted_text(dir / "memory.cat.fits") == bytes);
  } else {
    CHECK(written_text(dir / "memory.cat.fits") == nullptr);  // no thread keeps a buffer of its size
    // Its rows written in blocks on all threads, the file's CRC joined from theirs.
    const auto noted = take_written_crc(dir / "memory.cat.fits");
    REQUIRE(noted.has_value());
    CHECK(noted->size == bytes.size());
    CHECK(noted->crc32 == crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
  }
  forget_written_text();
}

TEST_CASE("an item's CSV, FITS and LDAC catalogs are each noted as their file's bytes", "[catalog][fits]") {
  test::TempDir dir("catalog_notes");
  const Catalog catalog = some_sources(700, 9);
  const std::vector<std::string> image_header = {std::string("SIMPLE  =                    T").append(50, ' '),
                                                 std::string("END").append(77, ' ')};
  write_catalog_csv(dir / "a.cat.csv", catalog);
  write_catalog_fits(dir / "a.cat.fits", catalog, {});
  write_catalog_ldac(dir / "a.ldac", catalog, image_header, {});
  for (const char* name : {"a.cat.csv", "a.cat.fits", "a.ldac"}) {
    INFO(name);
    CHECK(test::noted_text(dir / name) == test::read_text(dir / name));
  }
  // The next FITS catalog reuses the first one's memory: its note goes, the others stay.
  write_catalog_fits(dir / "b.cat.fits", some_sources(50, 10), {});
  CHECK(written_text(dir / "a.cat.fits") == nullptr);
  CHECK(test::noted_text(dir / "b.cat.fits") == test::read_text(dir / "b.cat.fits"));
  CHECK(test::noted_text(dir / "a.cat.csv") == test::read_text(dir / "a.cat.csv"));
  CHECK(test::noted_text(dir / "a.ldac") == test::read_text(dir / "a.ldac"));
  forget_written_text();
  CHECK(written_text(dir / "a.cat.csv") == nullptr);
  CHECK(written_text(dir / "a.ldac") == nullptr);
}

TEST_CASE("a large FITS_LDAC catalog's rows are copied into the file in blocks: CFITSIO reads every one", "[catalog][ldac]") {
  test::TempDir dir("catalog_ldac_blocks");
  const size_t rows = 30000;  // past kMemoryTableMaxBytes: the rows in blocks on all threads
  const Catalog catalog = some_sources(rows, 12);
  const std::vector<std::string> image_header = {std::string("SIMPLE  =                    T").append(50, ' '),
                                                 std::string("END").append(77, ' ')};
  const fs::path path = dir / "big.ldac";
  write_catalog_ldac(path, catalog, image_header, {});
  const std::string bytes = test::read_text(path);
  CHECK(bytes.size() % 2880 == 0);
  const auto noted = take_written_crc(path);
  REQUIRE(noted.has_value());
  CHECK(noted->crc32 == crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
  fitsfile* file = nullptr;
  int status = 0, column = 0;
  long count = 0;
  fits_open_table(&file, (path.string() + "[LDAC_OBJECTS]").c_str(), READONLY, &status);
  fits_get_num_rows(file, &count, &status);
  fits_get_colnum(file, CASEINSEN, const_cast<char*>("NUMBER"), &column, &status);
  std::vector<long long> numbers(rows);
  fits_read_col(file, TLONGLONG, column, 1, 1, static_cast<LONGLONG>(rows), nullptr, numbers.data(), nullptr, &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  CHECK(count == static_cast<long>(rows));
  size_t wrong = 0;
  for (size_t i = 0; i < rows; ++i) wrong += numbers[i] == static_cast<long long>(catalog[i].id) ? 0 : 1;
  CHECK(wrong == 0);
}
