// OUT/catalog.csv made while the run goes on (MergedCatalogStream): the same bytes as the merge
// after the run, whatever order the items finish in and from however many threads; given up, with
// nothing left under its name, whenever its items are not exactly the summary's.
#include <catch2/catch.hpp>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/merged_catalog_stream.hpp"
#include "engine/summary_merge.hpp"
#include "test_helpers.hpp"

namespace {
// 200 items with 0..6 rows each (one of them failed, one with no rows), their catalogs in `dir`.
nlohmann::json make_items(const std::filesystem::path& dir) {
  nlohmann::json items = nlohmann::json::array();
  for (int i = 0; i < 200; ++i) {
    const std::string name = "c" + std::to_string(i) + ".cat.csv";
    std::ofstream catalog(dir / name);
    catalog << "id,v\n";
    for (int row = 0; row < i % 7; ++row) catalog << row << "," << i * 10 + row << "\n";
    items.push_back({{"file", "in/f" + std::to_string(1000 + i) + ".fits"}, {"hdu", i % 2}, {"plane", 0},
                     {"status", i == 77 ? "failed" : "ok"}, {"outputs", {(dir / name).string()}}});
  }
  return items;
}

std::vector<const nlohmann::json*> pointers(const nlohmann::json& items) {
  std::vector<const nlohmann::json*> out;
  for (const nlohmann::json& item : items) out.push_back(&item);
  return out;
}

// Item `index` finished: its part made and queued, as the run's finishing thread does.
void add(imflow::MergedCatalogStream& stream, int64_t index, const nlohmann::json& record) {
  stream.queue(index, stream.part(record));
}

bool no_temporaries(const std::filesystem::path& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("the merged catalog made during the run is the merge's, in any finishing order", "[summary]") {
  test::TempDir dir("merged_catalog_stream");
  const nlohmann::json items = make_items(dir.path());
  imflow::write_merged_catalog(nlohmann::json{{"items", items}}, dir / "merged.csv");
  std::vector<int> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3; ++trial) {
    std::shuffle(order.begin(), order.end(), rng);
    std::filesystem::remove(dir / "catalog.csv");
    imflow::MergedCatalogStream stream(dir / "catalog.csv", size_t{64} << 20);
    std::atomic<int> waits{0};  // the bound is never reached: no thread waits for the writer
    tbb::parallel_for(size_t{0}, order.size(), [&](size_t k) {
      const auto queued = stream.queue(order[k], stream.part(items[order[k]]));
      waits += queued.waited || queued.copied ? 1 : 0;
    });
    CHECK(waits == 0);
    REQUIRE(stream.finish(pointers(items)));
    CHECK(test::read_text(dir / "catalog.csv") == test::read_text(dir / "merged.csv"));
  }
  CHECK(no_temporaries(dir.path()));
}

TEST_CASE("items past the queue's bound wait for the writer rather than give the stream up", "[summary]") {
  // In list order, every part over the 200-byte bound comes while the writer has the parts before
  // it to write: the thread waits, and the file is the merge's, however far behind the writer is.
  test::TempDir dir("merged_catalog_stream_waits");
  const nlohmann::json items = make_items(dir.path());
  imflow::write_merged_catalog(nlohmann::json{{"items", items}}, dir / "merged.csv");
  for (int trial = 0; trial < 3; ++trial) {
    std::filesystem::remove(dir / "catalog.csv");
    imflow::MergedCatalogStream stream(dir / "catalog.csv", 200);  // bytes: about two parts
    for (size_t i = 0; i < items.size(); ++i) add(stream, static_cast<int64_t>(i), items[i]);
    REQUIRE(stream.finish(pointers(items)));
    CHECK(test::read_text(dir / "catalog.csv") == test::read_text(dir / "merged.csv"));
  }
  CHECK(no_temporaries(dir.path()));
}

TEST_CASE("threads over the queue's bound copy the parts due next into the file themselves", "[summary]") {
  // Without the writer thread nothing else empties the queue: in list order every part over the
  // 200-byte bound finds the parts before it queued and copies them into the file, in order.
  test::TempDir dir("merged_catalog_stream_copies");
  const nlohmann::json items = make_items(dir.path());
  imflow::write_merged_catalog(nlohmann::json{{"items", items}}, dir / "merged.csv");
  imflow::MergedCatalogStream stream(dir / "catalog.csv", 200, /*writer_thread=*/false);
  int copied = 0, waited = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto queued = stream.queue(static_cast<int64_t>(i), stream.part(items[i]));
    copied += queued.copied ? 1 : 0;
    waited += queued.waited ? 1 : 0;
  }
  CHECK(copied > 100);
  CHECK(waited == 0);
  REQUIRE(stream.finish(pointers(items)));  // the parts still queued go in here
  CHECK(test::read_text(dir / "catalog.csv") == test::read_text(dir / "merged.csv"));
  CHECK(no_temporaries(dir.path()));
}

TEST_CASE("the merged catalog made during the run is given up unless its items are the summary's", "[summary]") {
  test::TempDir dir("merged_catalog_stream_given_up");
  const nlohmann::json items = make_items(dir.path());
  const auto all = pointers(items);
  const auto catalog = dir / "catalog.csv";
  SECTION("an item never finished") {
    imflow::MergedCatalogStream stream(catalog, size_t{64} << 20);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i != 120) add(stream, static_cast<int64_t>(i), items[i]);
    }
    CHECK_FALSE(stream.finish(all));
  }
  SECTION("the summary's order is another") {
    imflow::MergedCatalogStream stream(catalog, size_t{64} << 20);
    for (size_t i = 0; i < items.size(); ++i) add(stream, static_cast<int64_t>(i), items[i]);
    auto swapped = all;
    std::swap(swapped[3], swapped[4]);
    CHECK_FALSE(stream.finish(swapped));
  }
  SECTION("given up by the run (a tiled image)") {
    imflow::MergedCatalogStream stream(catalog, size_t{64} << 20);
    for (size_t i = 0; i < 50; ++i) add(stream, static_cast<int64_t>(i), items[i]);
    stream.give_up();
    for (size_t i = 50; i < items.size(); ++i) add(stream, static_cast<int64_t>(i), items[i]);
    CHECK_FALSE(stream.finish(all));
  }
  SECTION("too much waiting for a missing item") {
    imflow::MergedCatalogStream stream(catalog, 200);  // bytes
    for (size_t i = 1; i < items.size(); ++i) add(stream, static_cast<int64_t>(i), items[i]);
    add(stream, 0, items[0]);
    CHECK_FALSE(stream.finish(all));
  }
  CHECK_FALSE(std::filesystem::exists(catalog));
  CHECK(no_temporaries(dir.path()));
}

TEST_CASE("without a catalog among the items, the stream leaves no file, as the merge does", "[summary]") {
  test::TempDir dir("merged_catalog_stream_empty");
  const nlohmann::json items = {{{"file", "a.fits"}, {"hdu", 0}, {"plane", 0}, {"status", "failed"}, {"outputs", nlohmann::json::array()}},
                                {{"file", "b.fits"}, {"hdu", 0}, {"plane", 0}, {"status", "ok"}, {"outputs", nlohmann::json::array()}}};
  imflow::MergedCatalogStream stream(dir / "catalog.csv", size_t{1} << 20);
  add(stream, 1, items[1]);
  add(stream, 0, items[0]);
  CHECK(stream.finish(pointers(items)));
  CHECK_FALSE(std::filesystem::exists(dir / "catalog.csv"));
  CHECK(imflow::write_merged_catalog(nlohmann::json{{"items", items}}, dir / "catalog.csv") == 0);
  CHECK_FALSE(std::filesystem::exists(dir / "catalog.csv"));
}
