// imflow bench --ceiling, the output side: a run's files written again (sizes, counts, rates).
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "bench/output_ceiling.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using imflow::bench::measure_output_ceiling;

namespace {
void write_bytes(const fs::path& path, size_t size, char fill) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << std::string(size, fill);
}
}  // namespace

TEST_CASE("the output ceiling writes every file of the run again with its size", "[bench][ceiling]") {
  test::TempDir dir("output_ceiling");
  const fs::path written = dir / "out", scratch = dir / "copies";
  // A large file (copied in 8 MiB blocks on all threads, the last one partial), small ones in
  // nested directories, an empty one.
  const std::pair<const char*, size_t> files[] = {
      {"catalog.csv", (size_t{8} << 20) * 2 + 12345}, {"a.cat.csv", 1000}, {"sub/b.cat.fits", 5760}, {"sub/deeper/empty", 0}};
  size_t total = 0;
  for (const auto& [name, size] : files) {
    write_bytes(written / name, size, 'x');
    total += size;
  }
  write_bytes(scratch / "stale", 10, 'y');  // emptied before each pass
  const nlohmann::json ceiling = measure_output_ceiling(written, scratch, 3, 2, 3);
  CHECK(ceiling["threads"] == 2);
  CHECK(ceiling["files"] == 4);
  CHECK(ceiling["items"] == 3);
  CHECK(ceiling["megabytes"].get<double>() == Approx(static_cast<double>(total) * 1e-6).epsilon(1e-12));
  const auto& seconds = ceiling["seconds"];
  CHECK(0 < seconds["min"].get<double>());
  CHECK(seconds["min"].get<double>() <= seconds["median"].get<double>());
  CHECK(seconds["median"].get<double>() <= seconds["max"].get<double>());
  CHECK(ceiling["images_per_second"]["median"].get<double>() == Approx(3.0 / seconds["median"].get<double>()));
  CHECK(ceiling["images_per_second"]["min"].get<double>() == Approx(3.0 / seconds["max"].get<double>()));
  CHECK(ceiling["megabytes_per_second"].get<double>() ==
        Approx(static_cast<double>(total) * 1e-6 / seconds["median"].get<double>()));
  // The last pass's files: the same names and sizes, nothing else; the run's files untouched.
  size_t copies = 0;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(scratch)) copies += entry.is_regular_file();
  CHECK(copies == 4);
  for (const auto& [name, size] : files) {
    INFO(name);
    REQUIRE(fs::is_regular_file(scratch / name));
    CHECK(fs::file_size(scratch / name) == size);
    CHECK(fs::file_size(written / name) == size);
  }
  CHECK(test::read_text(written / "a.cat.csv") == std::string(1000, 'x'));
}

TEST_CASE("the output ceiling is skipped when the run wrote nothing", "[bench][ceiling]") {
  test::TempDir dir("output_ceiling_none");
  fs::create_directories(dir / "out" / "empty");
  CHECK(measure_output_ceiling(dir / "out", dir / "copies", 3, 2, 2) ==
        nlohmann::json{{"skipped", "the run wrote no files"}});
  CHECK(measure_output_ceiling(dir / "missing", dir / "copies", 3, 2, 2) ==
        nlohmann::json{{"skipped", "the run wrote no files"}});
}
