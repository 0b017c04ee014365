// The trace's stage parts: on the stage's own thread nested under it, on a helper thread on that
// thread's "helper #N" track with the stage's item, and nothing in an untraced run; a run whose
// catalogs are written in parallel records each file's part once per item.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "imflow/engine.hpp"
#include "imflow/trace.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
struct RecordedPart {
  std::string track;
  int64_t item;
};

// The complete events of a written trace, by name, with their track's name.
std::multimap<std::string, RecordedPart> recorded(const Trace& trace, const std::filesystem::path& path) {
  trace.write(path);
  const nlohmann::json json = nlohmann::json::parse(test::read_text(path));
  std::map<int, std::string> track_names;
  for (const auto& event : json["traceEvents"]) {
    if (event["name"] == "thread_name") track_names[event["tid"]] = event["args"]["name"];
  }
  std::multimap<std::string, RecordedPart> parts;
  for (const auto& event : json["traceEvents"]) {
    if (event["ph"] != "X") continue;
    parts.insert({event["name"], {track_names.at(event["tid"]), event["args"]["item"].get<int64_t>()}});
  }
  return parts;
}
}  // namespace

TEST_CASE("a part is recorded on its stage's track, or on the helper thread's track with the stage's item", "[trace]") {
  test::TempDir dir("trace_parts");
  Trace trace;
  const std::string write_track = "write #0", other_track = "write #1";
  {
    TraceStage stage(&trace, write_track, 3);
    REQUIRE(TraceStage::open() == &stage);
    { TracePart part("catalog csv"); }
    const TraceStage* handed = TraceStage::open();
    // A thread that is timing a stage of its own (item 7) writes a file of item 3.
    std::thread helper([&] {
      TraceStage own(&trace, other_track, 7);
      { TracePart part("catalog fits", handed); }
      { TracePart part("sky positions"); }
    });
    helper.join();
  }
  CHECK(TraceStage::open() == nullptr);
  const auto parts = recorded(trace, dir / "trace.json");
  REQUIRE(parts.count("catalog csv") == 1);
  CHECK(parts.find("catalog csv")->second.track == write_track);
  CHECK(parts.find("catalog csv")->second.item == 3);
  REQUIRE(parts.count("catalog fits") == 1);
  const RecordedPart fits = parts.find("catalog fits")->second;
  CHECK(fits.track.rfind("helper #", 0) == 0);
  CHECK(fits.item == 3);
  // The helper's own part stays with its own stage.
  REQUIRE(parts.count("sky positions") == 1);
  CHECK(parts.find("sky positions")->second.track == other_track);
  CHECK(parts.find("sky positions")->second.item == 7);
}

TEST_CASE("an untraced stage records no parts and hands none on", "[trace]") {
  const std::string track = "write #0";
  TraceStage stage(nullptr, track, 1);
  CHECK(TraceStage::open() == nullptr);
  TracePart part("catalog csv", TraceStage::open());  // nothing to record into: no crash at its end
}

TEST_CASE("catalogs written in parallel blocks trace each file once per item", "[trace][engine]") {
  test::TempDir dir("trace_parallel_catalogs");
  // A 1,100 x 1,000 grid of point sources 10 pixels apart: ~10,000 rows, more than one block of
  // kCatalogBlockRows, so the CSV and FITS catalogs are written at once; a checkerboard of +-1
  // around 100 as the sky (std 1).
  const int width = 1100, height = 1000;
  std::vector<double> pixels(static_cast<size_t>(width) * height);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = 100.0 + ((i % width + i / width) % 2 == 0 ? 1.0 : -1.0);
  for (int y = 5; y < height; y += 10) {
    for (int x = 5; x < width; x += 10) {
      pixels[static_cast<size_t>(y) * width + x] += 400.0;
      for (const auto [dx, dy] : {std::pair{1, 0}, std::pair{-1, 0}, std::pair{0, 1}, std::pair{0, -1}}) {
        pixels[static_cast<size_t>(y + dy) * width + x + dx] += 150.0;
      }
    }
  }
  std::filesystem::create_directories(dir / "in");
  test::write_fits(dir / "in" / "grid0.fits", -32, {width, height}, pixels);
  test::write_fits(dir / "in" / "grid1.fits", -32, {width, height}, pixels);
  Pipeline pipeline = test::pipeline_from(
      "output: {formats: [csv, fits]}\n"
      "device: cpu\n"
      "steps: [background, segment, label, measure]\n");
  pipeline.input.dir = dir / "in";
  pipeline.output.dir = dir / "out";
  pipeline.engine.threads = 4;
  RunOptions options;
  options.trace_path = dir / "trace.json";
  const RunSummary summary = run_pipeline(pipeline, options);
  REQUIRE(summary.succeeded() == 2);
  const nlohmann::json json = nlohmann::json::parse(test::read_text(dir / "out" / "summary.json"));
  for (const auto& item : json["items"]) CHECK(item["nsources"].get<int>() == 110 * 100);
  const nlohmann::json trace = nlohmann::json::parse(test::read_text(options.trace_path));
  std::map<std::pair<std::string, int64_t>, int> parts;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X" && event.contains("args") && event["args"].contains("item")) {
      ++parts[{event["name"], event["args"]["item"].get<int64_t>()}];
    }
  }
  for (int64_t item : {0, 1}) {
    INFO("item " << item);
    CHECK(parts[{"catalog csv", item}] == 1);
    CHECK(parts[{"catalog fits", item}] == 1);
  }
}
