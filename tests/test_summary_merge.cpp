// Merging the summaries of MPI ranks, and the merged catalog.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>

#include "engine/summary_merge.hpp"
#include "test_helpers.hpp"

namespace {
// A summary item for image f<index>.fits (HDU 0) whose catalog is `catalog`.
nlohmann::json catalog_item(int index, int plane, const std::filesystem::path& catalog) {
  return {{"file", "f" + std::to_string(index) + ".fits"}, {"hdu", 0}, {"plane", plane}, {"status", "ok"},
          {"outputs", {catalog.string()}}};
}
}  // namespace

TEST_CASE("rank summaries merge: items sorted and tagged, totals summed, wall the longest", "[summary]") {
  nlohmann::json a = {{"device", "cpu"},
                      {"totals", {{"items", 2}, {"succeeded", 1}, {"failed", 1}, {"wall_seconds", 2.0},
                                  {"input_megabytes", 4.0}, {"megapixels", 1.0}, {"peak_rss_megabytes", 50.0},
                                  {"stage_busy_seconds", {{"read", 0.5}}}}},
                      {"items", {{{"file", "b.fits"}, {"hdu", 0}, {"plane", 0}, {"status", "ok"}},
                                 {{"file", "c.fits"}, {"hdu", 0}, {"plane", 0}, {"status", "failed"}}}}};
  nlohmann::json b = {{"device", "cpu"},
                      {"totals", {{"items", 1}, {"succeeded", 1}, {"failed", 0}, {"wall_seconds", 4.0},
                                  {"input_megabytes", 8.0}, {"megapixels", 2.0}, {"peak_rss_megabytes", 70.0},
                                  {"megabytes_per_second", nullptr}, {"stage_busy_seconds", {{"read", 1.5}}}}},
                      {"items", {{{"file", "a.fits"}, {"hdu", 1}, {"plane", 0}, {"status", "ok"}}}}};
  const nlohmann::json merged = imflow::merge_summaries({a, b});
  CHECK(merged["totals"]["items"] == 3);
  CHECK(merged["totals"]["failed"] == 1);
  CHECK(merged["totals"]["wall_seconds"] == 4.0);
  CHECK(merged["totals"]["images_per_second"] == Approx(0.5));
  CHECK(merged["totals"]["megabytes_per_second"] == Approx(3.0));
  CHECK(merged["totals"]["stage_busy_seconds"]["read"] == Approx(2.0));
  REQUIRE(merged["items"].size() == 3);
  CHECK(merged["items"][0]["file"] == "a.fits");
  CHECK(merged["items"][0]["rank"] == 1);
  CHECK(merged["items"][2]["file"] == "c.fits");
  CHECK(merged["ranks"].size() == 2);
}

TEST_CASE("the merged catalog prefixes every row with its file, HDU and plane", "[summary]") {
  test::TempDir dir("merged_catalog");
  std::ofstream(dir / "x.cat.csv") << "id,x\n1,2.5\n2,3.5\n";
  std::ofstream(dir / "y.cat.csv") << "id,x\n1,9\n";
  const nlohmann::json summary = {
      {"items",
       {{{"file", "in/x,1.fits"}, {"hdu", 0}, {"plane", 2}, {"status", "ok"}, {"outputs", {(dir / "x.cat.csv").string()}}},
        {{"file", "in/z.fits"}, {"hdu", 0}, {"plane", 0}, {"status", "failed"}, {"outputs", nlohmann::json::array()}},
        {{"file", "in/y.fits"}, {"hdu", 1}, {"plane", 0}, {"status", "ok"}, {"outputs", {(dir / "y.cat.csv").string()}}}}}};
  CHECK(imflow::write_merged_catalog(summary, dir / "catalog.csv") == 3);
  CHECK(test::read_text(dir / "catalog.csv") == "file,hdu,plane,id,x\n\"in/x,1.fits\",0,2,1,2.5\n\"in/x,1.fits\",0,2,2,3.5\nin/y.fits,1,0,1,9\n");
}

TEST_CASE("the merged catalog keeps the items' order when they are read in parallel", "[summary]") {
  test::TempDir dir("merged_catalog_order");
  nlohmann::json items = nlohmann::json::array();
  std::string expected = "file,hdu,plane,id,v\n";
  for (int i = 0; i < 300; ++i) {
    const std::string name = "c" + std::to_string(i) + ".cat.csv";
    std::ofstream catalog(dir / name);
    catalog << "id,v\n";
    for (int row = 0; row <= i % 7; ++row) {  // 1..7 rows, and item 150 has none
      if (i == 150) break;
      catalog << row << "," << i * 10 + row << "\n";
      expected += "f" + std::to_string(i) + ".fits,0," + std::to_string(i % 3) + "," + std::to_string(row) + "," +
                  std::to_string(i * 10 + row) + "\n";
    }
    items.push_back(catalog_item(i, i % 3, dir / name));
  }
  const int64_t rows = imflow::write_merged_catalog(nlohmann::json{{"items", items}}, dir / "catalog.csv");
  CHECK(test::read_text(dir / "catalog.csv") == expected);
  CHECK(rows == static_cast<int64_t>(std::count(expected.begin(), expected.end(), '\n')) - 1);
}

TEST_CASE("a catalog too large for one block is merged in blocks copied side by side, in order", "[summary]") {
  // Over 8 MiB of rows (kParallelPrefixBytes): prefixed in 1 MiB blocks, each copied into its own
  // place in the file on any thread; small catalogs before and after it.
  test::TempDir dir("merged_catalog_large");
  nlohmann::json items = nlohmann::json::array();
  std::string expected = "file,hdu,plane,id,v\n";
  for (int i = 0; i < 3; ++i) {
    const std::string name = "c" + std::to_string(i) + ".cat.csv";
    const int rows = i == 1 ? 700000 : 5;
    std::string text = "id,v\n";
    for (int row = 0; row < rows; ++row) {
      const std::string line = std::to_string(row) + "," + std::to_string(int64_t{row} * 7919 % 100003) + "\n";
      text += line;
      expected += "f" + std::to_string(i) + ".fits,0,0," + line;
    }
    std::ofstream(dir / name) << text;
    items.push_back(catalog_item(i, 0, dir / name));
  }
  REQUIRE(expected.size() > (size_t{16} << 20));
  CHECK(imflow::write_merged_catalog(nlohmann::json{{"items", items}}, dir / "catalog.csv") == 700010);
  CHECK(test::read_text(dir / "catalog.csv") == expected);
}
