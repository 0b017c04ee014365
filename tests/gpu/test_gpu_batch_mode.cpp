// The engine's GPU batch mode (batch > 1, gpu_batch_graph.cpp) end to end on the MRI samples
// against its per-item mode: partial batches, mixed shapes, one or several streams, a bad file
// that fails alone, and svd_reconstruct's measured solver choice (solver: auto); a step's own
// failure worded as on the CPU.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "imflow/engine.hpp"
#include "imflow/image.hpp"
#include "imflow/io/png.hpp"
#include "imflow/pipeline.hpp"
#include "svd_test_helpers.hpp"

using namespace svd_test;
namespace fs = std::filesystem;

TEST_CASE("The engine's batch mode matches its per-item mode (partial batches, mixed shapes, a bad file)",
          "[gpu][mri][pipeline][batched]") {
  const fs::path samples = fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples/mri";
  const fs::path base = fs::temp_directory_path() / ("imflow_gpu_batch_" + std::to_string(::getpid()));
  const fs::path input = base / "in";
  fs::create_directories(input);
  for (const auto& e : fs::directory_iterator(samples)) fs::copy(e.path(), input / e.path().filename());
  {  // a truncated PNG: fails alone, with its name
    std::ofstream bad(input / "zz_truncated.png", std::ios::binary);
    bad << "\x89PNG\r\n\x1a\n";
  }
  auto run = [&](const std::string& name, int batch, const std::string& step, int streams) {
    const fs::path out = base / name;
    const std::string yaml = "input: {dir: " + input.string() + "}\noutput: {dir: " + out.string() +
                             ", formats: [png, metrics]}\ndevice: cuda\nstreams: " + std::to_string(streams) +
                             "\nbatch: " + std::to_string(batch) + "\nsteps: [normalize, {svd_reconstruct: " + step + "}]\n";
    auto pipeline = imflow::parse_pipeline(yaml, name);
    const auto summary = imflow::run_pipeline(pipeline, {});
    CHECK(summary.failed() == 1);
    CHECK(summary.succeeded() == 3 + 62);
    return read_metrics_csv(out / "metrics.csv");
  };
  // The per-item path (cuSOLVER gesvdj, one slice per launch) is the reference.
  const auto per_item = run("per_item", 1, "{rank: 50, clip_rank: true, solver: gpu, svd_solver: gesvdj}", 2);
  REQUIRE(per_item.size() == 65);
  for (int batch : {2, 7, 64, 256}) {
    INFO("batch " << batch);
    const auto batched = run("batch", batch, "{rank: 50, clip_rank: true, solver: gpu}", batch == 7 ? 1 : 3);
    REQUIRE(batched.size() == per_item.size());
    for (const auto& [key, g] : batched) {
      const auto& c = per_item.at(key);
      CHECK(g[0] == c[0]);                   // rank
      CHECK(std::abs(g[1] - c[1]) < 1e-4);   // relative Frobenius error
      CHECK(std::abs(g[2] - c[2]) < 1e-4);   // energy kept
    }
  }
  // solver auto measures both ways on the first slice and records its choice.
  {
    const fs::path out = base / "auto";
    const std::string yaml = "input: {dir: " + input.string() + "}\noutput: {dir: " + out.string() +
                             ", formats: [metrics]}\ndevice: cuda\nbatch: 16\nsteps: [normalize, {svd_reconstruct: "
                             "{rank: 50, clip_rank: true}}]\n";
    auto pipeline = imflow::parse_pipeline(yaml, "auto");
    const auto summary = imflow::run_pipeline(pipeline, {});
    CHECK(summary.succeeded() == 3 + 62);
    const auto json = summary.to_json();
    REQUIRE(json.contains("device_choices"));
    const auto& choice = json["device_choices"][0];
    CHECK((choice["choice"] == "gpu" || choice["choice"] == "hybrid"));
    CHECK(choice["gpu_slices_per_second"].get<double>() > 0.0);
    CHECK(choice["cpu_slices_per_second"].get<double>() > 0.0);
    const auto rows = read_metrics_csv(out / "metrics.csv");
    for (const auto& [key, g] : rows) CHECK(std::abs(g[1] - per_item.at(key)[1]) < 1e-4);
  }
  fs::remove_all(base);
}

TEST_CASE("A step's own failure reads the same on the GPU, per item and batched, as on the CPU",
          "[gpu][mri][pipeline][batched]") {
  const fs::path base = fs::temp_directory_path() / ("imflow_gpu_step_failure_" + std::to_string(::getpid()));
  const fs::path input = base / "in";
  fs::create_directories(input);
  // 200x3: rank 50 is larger than the slice allows (without clip_rank).
  std::vector<float> thin(200 * 3);
  for (size_t i = 0; i < thin.size(); ++i) thin[i] = static_cast<float>((i * 37) % 251);
  imflow::write_png_gray(input / "thin.png", imflow::ConstImageView{thin.data(), 200, 3}, 8);
  imflow::write_png_gray(input / "wide.png", imflow::ConstImageView{thin.data(), 60, 10}, 8);
  std::map<std::string, std::vector<std::string>> errors;  // per file, one per run
  for (const std::string device : {"cpu", "cuda"}) {
    for (int batch : {1, 4}) {
      if (device == "cpu" && batch > 1) continue;
      const fs::path out = base / (device + std::to_string(batch));
      const std::string yaml = "input: {dir: " + input.string() + "}\noutput: {dir: " + out.string() +
                               ", formats: [metrics]}\ndevice: " + device + "\nbatch: " + std::to_string(batch) +
                               "\nsteps: [normalize, {svd_reconstruct: {rank: 50, solver: " +
                               (device == "cpu" ? "cpu" : "gpu") + "}}]\n";
      auto pipeline = imflow::parse_pipeline(yaml, device);
      const auto summary = imflow::run_pipeline(pipeline, {});
      CHECK(summary.failed() == 2);
      const auto json = summary.to_json();
      for (const auto& item : json["items"]) {
        errors[item["file"].get<std::string>()].push_back(item.value("error", std::string()));
      }
    }
  }
  REQUIRE(errors.size() == 2);
  for (const auto& [file, texts] : errors) {
    INFO(file);
    REQUIRE(texts.size() == 3);  // CPU, GPU per item, GPU batched
    CHECK(texts[0].find("step svd_reconstruct: rank 50 is larger than min(m, n)") != std::string::npos);
    CHECK(texts[1] == texts[0]);
    CHECK(texts[2] == texts[0]);
  }
  fs::remove_all(base);
}
