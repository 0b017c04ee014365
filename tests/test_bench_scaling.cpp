// imflow bench scaling analysis on synthetic data: Amdahl fit with a known serial fraction,
// Karp-Flatt, Gustafson, medians and the sweep grid; the report's lines.
#include <catch2/catch.hpp>

#include <cmath>

#include "bench/report.hpp"
#include "bench/scaling.hpp"
#include "bench/sweep.hpp"

using namespace imflow::bench;

namespace {
// A point of bench.json with what format_report reads: 512 items at `rate` images/s.
nlohmann::json report_point(const char* label, double rate, nlohmann::json engine = nlohmann::json::object()) {
  return nlohmann::json{{"label", label},
                        {"items", 512},
                        {"images_per_second", {{"median", rate}, {"min", rate}, {"max", rate}}},
                        {"wall_seconds", {{"median", 512 / rate}}},
                        {"end_to_end_seconds", {{"median", 512 / rate}}},
                        {"scaling", {{"speedup", 1.0}}},
                        {"bottleneck", {{"stage", "read"}, {"utilisation", 0.9}}},
                        {"engine", std::move(engine)}};
}
}  // namespace

TEST_CASE("Amdahl fit recovers a known serial fraction", "[bench]") {
  const double f = 0.08;
  const std::vector<double> n = {1, 2, 4, 8, 16, 32};
  std::vector<double> s;
  for (double w : n) s.push_back(amdahl_speedup(f, w));
  const AmdahlFit fit = fit_amdahl(n, s);
  CHECK(fit.points == 5);
  CHECK(fit.serial_fraction == Approx(f).margin(1e-12));
  CHECK(fit.max_speedup == Approx(1 / f));
  CHECK(fit.rms_residual < 1e-12);
  for (size_t i = 1; i < n.size(); ++i) CHECK(karp_flatt(s[i], n[i]) == Approx(f));

  // +-2% multiplicative noise on the speedups still gives f within 0.01.
  std::vector<double> noisy = s;
  for (size_t i = 0; i < noisy.size(); ++i) noisy[i] *= 1 + 0.02 * (i % 2 == 0 ? 1 : -1);
  CHECK(std::abs(fit_amdahl(n, noisy).serial_fraction - f) < 0.01);
}

TEST_CASE("Amdahl fit edge cases: perfect scaling, single point, no points", "[bench]") {
  CHECK(fit_amdahl({1, 2, 4}, {1, 2, 4}).serial_fraction == Approx(0).margin(1e-12));
  CHECK(fit_amdahl({1, 2, 4}, {1, 2, 4}).max_speedup == 0);  // unbounded
  CHECK(fit_amdahl({1, 2}, {1, 1.5}).serial_fraction == Approx(karp_flatt(1.5, 2)));
  CHECK(fit_amdahl({1}, {1}).points == 0);
}

TEST_CASE("Gustafson fit recovers a known serial fraction", "[bench]") {
  const double s = 0.15;
  const std::vector<double> n = {1, 2, 4, 8};
  std::vector<double> scaled;
  for (double w : n) scaled.push_back(w - s * (w - 1));
  const GustafsonFit fit = fit_gustafson(n, scaled);
  CHECK(fit.points == 3);
  CHECK(fit.serial_fraction == Approx(s));
}

TEST_CASE("spread: median of odd and even counts, min, max", "[bench]") {
  const Spread odd = spread({3, 1, 2});
  CHECK(odd.median == 2);
  CHECK(odd.min == 1);
  CHECK(odd.max == 3);
  CHECK(spread({4, 1, 3, 2}).median == 2.5);
  CHECK(spread({}).median == 0);
}

TEST_CASE("sweep specs and the grid", "[bench]") {
  const SweepAxis threads = parse_sweep("threads=1,2,4");
  CHECK(threads.values == std::vector<int>{1, 2, 4});
  CHECK_THROWS(parse_sweep("thread=1"));
  CHECK_THROWS(parse_sweep("threads=1,x"));
  CHECK_THROWS(parse_sweep("threads=0"));
  const auto grid = expand_grid({threads, parse_sweep("buffers=1,2")});
  REQUIRE(grid.size() == 6);
  CHECK(point_label(grid[1]) == "buffers=2 threads=1");
  CHECK(expand_grid({}).size() == 1);
  CHECK(parse_sweep("batch=64,256").values == std::vector<int>{64, 256});
  CHECK(point_label(expand_grid({parse_sweep("batch=128"), parse_sweep("streams=4")})[0]) == "batch=128 streams=4");
}

TEST_CASE("scaling analysis: speedup against the fewest-workers point of each line", "[bench]") {
  nlohmann::json bench = {{"scaling_axis", "threads"}, {"mode", "fixed-size"}, {"points", nlohmann::json::array()}};
  const double ips[2][3] = {{10, 18, 30}, {12, 20, 36}};
  int id = 0;
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t < 3; ++t) {
      bench["points"].push_back({{"id", id++},
                                 {"params", {{"threads", 1 << t}, {"buffers", b + 1}}},
                                 {"engine", {{"threads", 1 << t}}},
                                 {"images_per_second", {{"median", ips[b][t]}}}});
    }
  }
  analyse_scaling(bench);
  REQUIRE(bench["scaling"]["lines"].size() == 2);
  CHECK(bench["points"][0]["scaling"]["speedup"] == 1.0);
  CHECK(bench["points"][5]["scaling"]["baseline_point"] == 3);
  CHECK(bench["points"][5]["scaling"]["speedup"].get<double>() == Approx(3.0));
  CHECK(bench["points"][2]["scaling"]["karp_flatt"].get<double>() == Approx(karp_flatt(3.0, 4)));
  CHECK(bench["scaling"]["lines"][0]["amdahl"]["points"] == 2);
}

TEST_CASE("the report sets the engine's chosen buffers beside the best point, and a pool that grew", "[bench]") {
  nlohmann::json bench = {{"points", nlohmann::json::array()}, {"scaling", {{"lines", nlohmann::json::array()}}}};
  bench["points"].push_back(report_point("streams=4", 900, {{"buffers", 8}, {"buffers_automatic", true}, {"items_at_end", 48}}));
  bench["points"].push_back(report_point("streams=8", 1000, {{"buffers", 4}, {"buffers_automatic", true}}));
  const std::string text = format_report(bench);
  CHECK_THAT(text, Catch::Contains("streams=4: 8 buffers per stream chosen (the pool grew to 48 items during the run), "
                                   "900.0 images/s = 0.90 x the best point (streams=8, 1000.0)"));
  CHECK_THAT(text, Catch::Contains("streams=8: 4 buffers per stream chosen, 1000.0 images/s = 1.00 x the best point"));
}

TEST_CASE("the report sets the best point against the input and output ceilings, or says why there is none", "[bench][ceiling]") {
  nlohmann::json bench = {{"points", {report_point("streams=4", 900), report_point("streams=8", 1000)}},
                          {"scaling", {{"lines", nlohmann::json::array()}}}};
  bench["input_ceiling"] = {{"what", "read"},
                            {"threads", 16},
                            {"images_per_second", {{"median", 1250.0}, {"min", 1200.0}, {"max", 1300.0}}},
                            {"megabytes_per_second", 20971.52}};
  CHECK_THAT(format_report(bench), Catch::Contains("input ceiling (read, 16 threads): 1250.0 images/s (1200.0 .. 1300.0), "
                                                   "20972 MB/s; the best point (streams=8) runs at 80% of it\n"));
  bench["input_ceiling"] = {{"skipped", "m.fits: images above 1 GiB are read in tiles or strips"}};
  CHECK_THAT(format_report(bench),
             Catch::Contains("input ceiling not measured: m.fits: images above 1 GiB are read in tiles or strips\n"));
  bench["output_ceiling"] = {{"what", "written"},
                             {"threads", 16},
                             {"images_per_second", {{"median", 4000.0}, {"min", 3900.0}, {"max", 4100.0}}},
                             {"megabytes_per_second", 15600.4}};
  CHECK_THAT(format_report(bench), Catch::Contains("output ceiling (written, 16 threads): 4000.0 images/s (3900.0 .. 4100.0), "
                                                   "15600 MB/s; the best point (streams=8) runs at 25% of it\n"));
  bench["output_ceiling"] = {{"skipped", "the run wrote no files"}};
  CHECK_THAT(format_report(bench), Catch::Contains("output ceiling not measured: the run wrote no files\n"));
}
