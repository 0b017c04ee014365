// The work-item pool grows while it limits a run: TokenTuner's windows and growth, the ceiling of
// an automatic CUDA pool, and GraphEnds adding the items the tuner asks for during a run.
#include <catch2/catch.hpp>
#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>

#include <cstdio>
#include <mutex>
#include <set>

#include "engine/graph_ends.hpp"
#include "engine/items_in_flight.hpp"
#include "engine/token_tuner.hpp"
#include "imflow/pipeline.hpp"
#include "imflow/summary.hpp"
#include "test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;

namespace {
// Reports `count` finished items of the same cycle and stage seconds; returns the growths.
std::vector<TokenTuner::Adjustment> report(TokenTuner& tuner, int count, double cycle, double stages) {
  std::vector<TokenTuner::Adjustment> grown;
  for (int i = 0; i < count; ++i) {
    if (auto adjustment = tuner.finished(cycle, stages)) grown.push_back(*adjustment);
  }
  return grown;
}
}  // namespace

TEST_CASE("a pool whose items never wait grows by half per window, up to its ceiling", "[token_tuner]") {
  TokenTuner tuner(4, 10);
  // Settling: 4 items, then a window of max(2 x 4, 16) = 16: the 20th item grows the pool to 6.
  CHECK(report(tuner, 19, 1.0, 0.9).empty());
  auto grown = report(tuner, 1, 1.0, 0.9);
  REQUIRE(grown.size() == 1);
  CHECK(grown[0].from == 4);
  CHECK(grown[0].to == 6);
  CHECK(grown[0].after_items == 20);
  CHECK(grown[0].in_stages == Approx(0.9));
  // Then 6 settling + 16 measured: 6 -> 9 at item 42; 9 + 18: 9 -> 10 (the ceiling) at item 69.
  grown = report(tuner, 49, 1.0, 0.9);
  REQUIRE(grown.size() == 2);
  CHECK(grown[0].after_items == 42);
  CHECK(grown[0].to == 9);
  CHECK(grown[1].after_items == 69);
  CHECK(grown[1].to == 10);
  // At the ceiling nothing more happens.
  CHECK(report(tuner, 200, 1.0, 1.0).empty());
  CHECK(tuner.items() == 10);
  const nlohmann::json json = tuner.to_json();
  CHECK(json.at("initial") == 4);
  CHECK(json.at("ceiling") == 10);
  CHECK(json.at("items_at_end") == 10);
  CHECK(json.at("adjustments").size() == 3);
  CHECK(json.at("in_stages_last_window").get<double>() == Approx(0.9));
}

TEST_CASE("a pool whose items wait in queues keeps its size", "[token_tuner]") {
  TokenTuner tuner(8, 64);
  // Half of every cycle waiting: a stage (or the host's threads) limits the run, not the pool.
  CHECK(report(tuner, 500, 2.0, 1.0).empty());
  CHECK(tuner.items() == 8);
  CHECK(tuner.to_json().at("in_stages_last_window").get<double>() == Approx(0.5));
  // The window's share is its sums' ratio, not the mean of the items' ratios: (1 + 1) / (1 + 3).
  TokenTuner mixed(2, 4);
  for (int i = 0; i < 9; ++i) {
    CHECK_FALSE(mixed.finished(1.0, 1.0));
    CHECK_FALSE(mixed.finished(3.0, 1.0));
  }
  CHECK(mixed.to_json().at("in_stages_last_window").get<double>() == Approx(0.5));
  // Without room above it (ceiling at or below the pool) the tuner never measures.
  TokenTuner full(16, 8);
  CHECK(report(full, 100, 1.0, 1.0).empty());
  CHECK(full.to_json().at("ceiling") == 16);
  CHECK(full.to_json().at("in_stages_last_window").is_null());
}

TEST_CASE("an automatic CUDA pool may grow to four items per host thread within the pinned budget", "[token_tuner][items_in_flight]") {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  constexpr int64_t kImage2048 = int64_t{2048} * 2048 * 4;
  const ItemsInFlight chosen = choose_gpu_tokens(4, 16, kImage2048, 128 * kGiB);  // 32 items
  CHECK(gpu_token_ceiling(chosen, 16, kImage2048, 128 * kGiB) == 64);
  // 8 GiB host: 1 GiB of 64 MiB items is 16, below the 32 chosen: no growth.
  const ItemsInFlight large = choose_gpu_tokens(1, 16, int64_t{64} << 20, 256 * kGiB);  // 16 (at most 16 per stream)
  CHECK(large.items == 16);
  CHECK(gpu_token_ceiling(large, 16, int64_t{64} << 20, 256 * kGiB) == 64);  // 8 GiB / 64 MiB = 128, 4 x 16 = 64
  CHECK(gpu_token_ceiling(large, 16, int64_t{64} << 20, 8 * kGiB) == 16);
  CHECK(gpu_token_ceiling(chosen, 16, 0, 128 * kGiB) == chosen.items);  // item size unknown
}

TEST_CASE("the graph's pool takes the items the tuner adds during the run", "[token_tuner][engine]") {
  const fs::path dir = fs::temp_directory_path() / "imflow_token_tuner";
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  std::vector<fs::path> files;
  for (int f = 0; f < 60; ++f) {
    char name[32];
    std::snprintf(name, sizeof name, "f%03d.fits", f);
    files.push_back(dir / "in" / name);
    test::write_fits(files.back(), -32, {6, 5}, std::vector<double>(30, f));
  }
  const Pipeline pipeline = parse_pipeline(
      "output: {dir: " + (dir / "out").string() + ", formats: []}\nsteps: [background]\n", "test.yaml");
  for (const double grow_at : {0.0, 2.0}) {  // every window grows the pool / none can
    INFO("grow at " << grow_at);
    RunSummary summary;
    RunContext run(pipeline, summary, nullptr, nullptr, nullptr);
    ItemSource source(files, dir / "in");
    TokenTuner tuner(2, 5, grow_at);
    std::mutex seen_mutex;
    std::multiset<int64_t> seen;
    tbb::task_arena arena(4);
    size_t pool = 0;
    arena.execute([&] {
      tbb::flow::graph graph;
      GraphEnds ends(graph, run, source, 4);
      tbb::flow::function_node<WorkItem*, WorkItem*> middle(graph, tbb::flow::unlimited, [&](WorkItem* item) {
        std::lock_guard lock(seen_mutex);
        seen.insert(item->ref.index);
        return item;
      });
      tbb::flow::make_edge(ends.read_items(), middle);
      tbb::flow::make_edge(middle, ends.writer());
      ends.start(2, pageable_allocator(), &tuner);
      graph.wait_for_all();
      pool = ends.pool_size();
    });
    // Every file once, whatever the pool's size when it was read.
    CHECK(seen.size() == files.size());
    for (int64_t index = 0; index < static_cast<int64_t>(files.size()); ++index) CHECK(seen.count(index) == 1);
    // 2 -> 3 after 18 items (2 settling, 16 measured), 3 -> 4 after 37, 4 -> 5 (the ceiling) after 57.
    CHECK(pool == (grow_at == 0.0 ? 5u : 2u));
    CHECK(tuner.items() == static_cast<int64_t>(pool));
    CHECK(tuner.to_json().at("adjustments").size() == (grow_at == 0.0 ? 3u : 0u));
  }
  fs::remove_all(dir);
}
