// The `deblend` step: through the engine on a blended pair (two catalog rows at the stars, the
// label map showing them; mincont 1 or nthresh 1: one row; minarea drops the segment), the
// moments of a deblended object about its centre, segment's float32 comparison, the
// configuration rules (8-connectivity, compare: float32, parameter ranges, order, tiling, CUDA).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/tiling.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
// A Gaussian star: centre, peak and 2 sigma^2.
struct GaussianStar {
  double x, y, peak, two_sigma2;
  double at(int px, int py) const { return peak * std::exp(-((px - x) * (px - x) + (py - y) * (py - y)) / two_sigma2); }
};

// A w x h sky (100 +- 1, the noise drawn from `seed`) with two stars.
std::vector<double> two_stars(int w, int h, unsigned seed, const GaussianStar& first, const GaussianStar& second) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(100.0, 1.0);
  std::vector<double> image(static_cast<size_t>(w * h));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) image[static_cast<size_t>(y * w + x)] = noise(rng) + first.at(x, y) + second.at(x, y);
  return image;
}

// A 64 x 48 sky with two Gaussian stars 6 px apart: one 8-connected segment at 5 sigma.
constexpr double kStar1X = 24.0, kStar1Y = 24.0, kStar2X = 30.0, kStar2Y = 24.3;

std::vector<double> blended_pair() {
  return two_stars(64, 48, 3, {kStar1X, kStar1Y, 200.0, 4.5}, {kStar2X, kStar2Y, 140.0, 4.5});
}

std::string pipeline_text(const std::string& deblend) {
  return "output: {formats: [csv, labels]}\n"
         "device: cpu\n"
         "threads: 1\n"
         "steps:\n"
         "  - background\n"
         "  - segment: {nsigma: 5, compare: float32}\n"
         "  - label: {connectivity: 8}\n"
         "  - " + deblend + "\n"
         "  - measure\n";
}

// The CSV catalog as rows of column name -> value.
std::vector<std::map<std::string, double>> read_catalog(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> names;
  std::stringstream header(line);
  for (std::string name; std::getline(header, name, ',');) names.push_back(name);
  std::vector<std::map<std::string, double>> rows;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::map<std::string, double> row;
    size_t column = 0;
    for (std::string field; std::getline(fields, field, ',') && column < names.size(); ++column)
      row[names[column]] = std::strtod(field.c_str(), nullptr);
    rows.push_back(row);
  }
  return rows;
}

struct EngineRun {
  std::vector<std::map<std::string, double>> rows;
  std::map<int, int64_t> label_pixels;  // label map: pixels per label (0 included)
};

EngineRun run_engine(const std::string& deblend, const std::string& name) {
  test::TempDir dir("deblend_step_" + name);
  std::filesystem::create_directories(dir / "in");
  test::write_fits(dir / "in" / "pair.fits", -32, {64, 48}, blended_pair());
  Pipeline pipeline = test::pipeline_from(pipeline_text(deblend));
  pipeline.input.dir = dir / "in";
  pipeline.output.dir = dir / "out";
  const RunSummary summary = run_pipeline(pipeline, {});
  REQUIRE(summary.failed() == 0);
  EngineRun run;
  run.rows = read_catalog(dir / "out" / "pair.cat.csv");
  ImageBuffer labels;
  read_fits_plane(dir / "out" / "pair.labels.fits", 0, 0, labels);
  for (int64_t i = 0; i < labels.size(); ++i) ++run.label_pixels[static_cast<int>(labels.data()[i])];
  return run;
}
}  // namespace

TEST_CASE("deblend step: two Gaussians 6 px apart are two catalog rows at the stars", "[deblend]") {
  const EngineRun run = run_engine("deblend", "split");
  REQUIRE(run.rows.size() == 2);
  // Rows in SEP's order; each at one star (SEP's centre: its branch's barycentre), flagged.
  const bool first_left = run.rows[0].at("x") < run.rows[1].at("x");
  const auto& a = first_left ? run.rows[0] : run.rows[1];
  const auto& b = first_left ? run.rows[1] : run.rows[0];
  CHECK(a.at("x") == Approx(kStar1X).margin(0.15));
  CHECK(a.at("y") == Approx(kStar1Y).margin(0.15));
  CHECK(b.at("x") == Approx(kStar2X).margin(0.15));
  CHECK(b.at("y") == Approx(kStar2Y).margin(0.15));
  for (const auto& row : run.rows) {
    CHECK(row.at("flags") == kFlagDeblended);
    CHECK(row.at("npix") > 20);
  }
  CHECK(a.at("flux_iso") > b.at("flux_iso"));  // the brighter star's share is the larger
  // The label map shows the two objects, with the catalog's areas.
  REQUIRE(run.label_pixels.size() == 3);
  CHECK(run.label_pixels.at(1) == static_cast<int64_t>(run.rows[0].at("npix")));
  CHECK(run.label_pixels.at(2) == static_cast<int64_t>(run.rows[1].at("npix")));

  // mincont 1 (and nthresh 1): deblending off, one row for the whole segment, not flagged.
  for (const std::string off : {"deblend: {mincont: 1}", "deblend: {nthresh: 1}"}) {
    INFO(off);
    const EngineRun whole = run_engine(off, "off");
    REQUIRE(whole.rows.size() == 1);
    CHECK(whole.rows[0].at("flags") == 0);
    CHECK(whole.rows[0].at("npix") == run.rows[0].at("npix") + run.rows[1].at("npix"));
    CHECK(whole.rows[0].at("x") > kStar1X + 1.0);
    CHECK(whole.rows[0].at("x") < kStar2X - 1.0);
    CHECK(whole.rows[0].at("flux_iso") == Approx(a.at("flux_iso") + b.at("flux_iso")).epsilon(1e-9));
  }
  // minarea applies to the segments, also with deblending off (SEP's DETECT_MINAREA); branches
  // need min(minarea, 3) pixels, so a segment of exactly minarea pixels is still split. CLEAN's
  // threshold of an object is its minarea-th brightest pixel, 0 for an object smaller than
  // minarea: then the fainter child is cleaned away, as in SEP.
  const auto npix = static_cast<int64_t>(run.rows[0].at("npix") + run.rows[1].at("npix"));
  CHECK(run_engine("deblend: {minarea: " + std::to_string(npix) + ", clean: false}", "keep").rows.size() == 2);
  CHECK(run_engine("deblend: {minarea: " + std::to_string(npix) + "}", "keep_clean").rows.size() == 1);
  CHECK(run_engine("deblend: {minarea: " + std::to_string(npix + 1) + "}", "drop").rows.empty());
  CHECK(run_engine("deblend: {minarea: " + std::to_string(npix + 1) + ", mincont: 1}", "drop1").rows.empty());
}

TEST_CASE("deblend step: a deblended object's moments and their errors are about its centre", "[deblend]") {
  WorkItem item;
  const auto image = blended_pair();
  item.pixels.resize(64, 48);
  for (size_t i = 0; i < image.size(); ++i) item.pixels.data()[i] = static_cast<float>(image[i]);
  const Pipeline pipeline = test::pipeline_from(pipeline_text("deblend"));
  for (const auto& step : pipeline.steps) step->run_cpu(item);
  REQUIRE(item.catalog);
  REQUIRE(item.catalog->size() == 2);
  CHECK(item.metrics.at("deblend_split") == 1);
  const double median = item.background->median, rms = item.background->std;
  for (const Source& s : *item.catalog) {
    INFO("object " << s.id);
    REQUIRE((s.flags & kFlagDeblended) != 0);
    // Directly: x2 = sum w (x - cx)^2 / sum w over the object's pixels, w = p - median; errx2 =
    // sum rms^2 (x - cx)^2 / (sum w)^2; (cx, cy) the catalog's x, y.
    double sw = 0, sxx = 0, syy = 0, sxy = 0, exx = 0, eyy = 0, exy = 0;
    for (int64_t y = 0; y < 48; ++y)
      for (int64_t x = 0; x < 64; ++x) {
        if (item.labels[static_cast<size_t>(y * 64 + x)] != s.id) continue;
        const double w = item.pixels.data()[y * 64 + x] - median, dx = x - s.x, dy = y - s.y;
        sw += w;
        sxx += w * dx * dx;
        syy += w * dy * dy;
        sxy += w * dx * dy;
        exx += rms * rms * dx * dx;
        eyy += rms * rms * dy * dy;
        exy += rms * rms * dx * dy;
      }
    REQUIRE(sxx / sw * (syy / sw) - (sxy / sw) * (sxy / sw) > 0.00694);  // not SEP's singular case
    CHECK(s.flux_iso == Approx(sw).epsilon(1e-12));
    CHECK(s.x2 == Approx(sxx / sw).epsilon(1e-10));
    CHECK(s.y2 == Approx(syy / sw).epsilon(1e-10));
    CHECK(s.xy == Approx(sxy / sw).epsilon(1e-10).margin(1e-12));
    CHECK(s.errx2 == Approx(exx / (sw * sw)).epsilon(1e-10));
    CHECK(s.erry2 == Approx(eyy / (sw * sw)).epsilon(1e-10));
    CHECK(s.errxy == Approx(exy / (sw * sw)).epsilon(1e-10).margin(1e-16));
    // The centre is not the object's own centroid (SEP keeps its branch's barycentre), so these
    // moments are larger than the central ones.
    double cx = 0;
    for (int64_t i = 0; i < 64 * 48; ++i)
      if (item.labels[static_cast<size_t>(i)] == s.id) cx += (item.pixels.data()[i] - median) * static_cast<double>(i % 64);
    CHECK(std::fabs(cx / sw - s.x) > 1e-3);
  }
}

TEST_CASE("segment compare: float32 thresholds as SEP does, in float", "[deblend]") {
  // p - back is 1 + 2^-25 exactly (above the threshold 1 in float64) but 1.0f in float32: SEP
  // does not detect that pixel.
  WorkItem item;
  item.pixels.resize(2, 1);
  item.pixels.data()[0] = 1.0f + std::ldexp(1.0f, -23);
  item.pixels.data()[1] = 3.0f;
  item.background_map = {std::ldexp(3.0f, -25), 0.0f};
  BackgroundStats stats;
  stats.std = 1.0;
  item.background = stats;
  for (const bool float32 : {false, true}) {
    const Pipeline pipeline = test::pipeline_from(std::string("steps: [background, {segment: {nsigma: 1") +
                                                  (float32 ? ", compare: float32" : "") + "}}]");
    pipeline.steps[1]->run_cpu(item);
    CHECK(item.mask[0] == (float32 ? 0 : 1));
    CHECK(item.mask[1] == 1);
    REQUIRE(item.segment_threshold);
    CHECK(item.segment_threshold->float32 == float32);
#ifdef IMFLOW_HAVE_CUDA
    CHECK(pipeline.steps[1]->has_cuda());  // both comparisons on the GPU too (cuda/sep_detection.hpp)
#endif
  }
}

TEST_CASE("deblend step: configuration errors", "[deblend]") {
  const auto fails = [](const std::string& deblend, const std::string& label, const std::string& segment) {
    return "steps:\n  - background\n  - segment: " + segment + "\n  - label: " + label + "\n  - " + deblend +
           "\n  - measure\n";
  };
  const std::string s32 = "{compare: float32}", l8 = "{connectivity: 8}";
  CHECK_NOTHROW(test::pipeline_from(fails("deblend", l8, s32)));
  CHECK_THROWS_WITH(test::pipeline_from(fails("deblend", "{connectivity: 4}", s32)),
                    Catch::Contains("test.yaml:5:5: steps[3].deblend: needs 8-connected segments") &&
                        Catch::Contains("connectivity 4 (set label: {connectivity: 8})"));
  CHECK_THROWS_WITH(test::pipeline_from(fails("deblend", l8, "{nsigma: 3}")),
                    Catch::Contains("steps[3].deblend: needs the segments thresholded as SEP does") &&
                        Catch::Contains("compare: float32"));
  CHECK_THROWS_WITH(test::pipeline_from(fails("deblend", l8, "{compare: float16}")),
                    Catch::Contains("steps[1].segment.compare"));
  for (const char* bad : {"{nthresh: 0}", "{nthresh: 2000}", "{mincont: -0.1}", "{mincont: 1.5}", "{clean_param: 0}",
                          "{clean_param: -1}", "{minarea: 0}", "{clean: maybe}", "{min_area: 5}",
                          "{clean_style: sextractor, memory_bufsize: 4}", "{clean_style: sextractor, memory_objstack: 8}"}) {
    INFO(bad);
    CHECK_THROWS_AS(test::pipeline_from(fails(std::string("deblend: ") + bad, l8, s32)), ConfigError);
  }
  CHECK_THROWS_WITH(test::pipeline_from(fails("deblend: {mincont: 1.5}", l8, s32)), Catch::Contains("steps[3].deblend.mincont"));
  CHECK_NOTHROW(test::pipeline_from(fails("deblend: {clean_style: sextractor, memory_bufsize: 4096, memory_objstack: 65000}", l8, s32)));
  CHECK_THROWS_WITH(test::pipeline_from(fails("deblend: {memory_bufsize: 4096}", l8, s32)),
                    Catch::Contains("memory_bufsize") && Catch::Contains("clean_style: sextractor"));
  CHECK_THROWS_WITH(test::pipeline_from(fails("deblend: {memory_objstack: 65000}", l8, s32)),
                    Catch::Contains("memory_objstack") && Catch::Contains("clean_style: sextractor"));
  CHECK_NOTHROW(test::pipeline_from(fails("deblend: {memory_bufsize: 1024, memory_objstack: 3000}", l8, s32)));
  // Order: after label, once.
  CHECK_THROWS_WITH(test::pipeline_from("steps: [background, {segment: {compare: float32}}, deblend, {label: {connectivity: 8}}]"),
                    Catch::Contains("steps[2].deblend: needs 'labels'"));
  CHECK_THROWS_WITH(test::pipeline_from(fails("deblend\n  - deblend", l8, s32)), Catch::Contains("deblend runs once"));
  // Every parameter resolved for `imflow validate`.
  const Pipeline p = test::pipeline_from(fails("deblend", l8, s32));
  const YAML::Node params = p.steps[3]->params();
  CHECK(params["nthresh"].as<int>() == 32);
  CHECK(params["mincont"].as<double>() == 0.005);
  CHECK(params["clean"].as<bool>());
  CHECK(params["clean_param"].as<double>() == 1.0);
  CHECK(params["minarea"].as<int>() == 5);
#ifdef IMFLOW_HAVE_CUDA
  CHECK(p.steps[3]->has_cuda());  // cuda/deblend_objects.hpp
#endif
  // Tiles: a pipeline with deblend processes large images whole (a segment is split once,
  // whole); asking for tiles explicitly is an error.
  const TilingPlan plan = plan_tiling(p);
  CHECK(plan.size == 0);
  CHECK(plan.whole_above == 4096);
  CHECK(plan.off_reason.find("deblend") != std::string::npos);
  CHECK_THROWS_WITH(test::pipeline_from("tiling: {size: 64}\n" + fails("deblend", l8, s32)),
                    Catch::Contains("cannot run on tiles: deblend splits each segment as a whole"));
}

TEST_CASE("deblend step: a CLEAN survivor keeps its own moments, SExtractor's merge sums", "[deblend]") {
  // A bright star and a faint one 12 px away in its wing, each its own segment: CLEAN (clean_style
  // sextractor) merges the faint one into the bright one, whose position, moments, shape and
  // their errors stay those of its own pixels (the clean: false row), its fluxes, pixel count and
  // box those of both.
  test::TempDir dir("deblend_step_merged_moments");
  std::filesystem::create_directories(dir / "in");
  test::write_fits(dir / "in" / "wing.fits", -32, {96, 64},
                   two_stars(96, 64, 5, {40.2, 31.7, 5000.0, 8.0}, {52.1, 32.4, 12.0, 2.88}));
  auto run = [&](const std::string& deblend) {
    Pipeline pipeline = test::pipeline_from(pipeline_text(deblend));
    pipeline.input.dir = dir / "in";
    pipeline.output.dir = dir / deblend.substr(deblend.size() - 6, 5);
    REQUIRE(run_pipeline(pipeline, {}).failed() == 0);
    return read_catalog(pipeline.output.dir / "wing.cat.csv");
  };
  const auto both = run("deblend: {clean: false}");
  const auto merged = run("deblend: {clean_style: sextractor}");
  REQUIRE(both.size() == 2);
  REQUIRE(merged.size() == 1);
  const auto& bright = both[0].at("flux") > both[1].at("flux") ? both[0] : both[1];
  const auto& faint = both[0].at("flux") > both[1].at("flux") ? both[1] : both[0];
  // Its position is SEP's centre of its pixels (as for any merged or deblended object: SEP's
  // float32 sums), the clean: false row's the measured centroid: the moments about the two agree
  // to 1e-6; with the faint star's pixels x2 would grow by ~3%.
  CHECK(std::hypot(merged[0].at("x") - bright.at("x"), merged[0].at("y") - bright.at("y")) < 0.005);
  const double size = bright.at("x2") + bright.at("y2"), error_size = bright.at("errx2") + bright.at("erry2");
  for (const auto& [column, scale] : std::vector<std::pair<const char*, double>>{
           {"x2", size}, {"y2", size}, {"xy", size}, {"a", bright.at("a")}, {"b", bright.at("a")},
           {"errx2", error_size}, {"erry2", error_size}, {"errxy", error_size}}) {
    INFO(column << ": " << std::setprecision(17) << merged[0].at(column) << " vs " << bright.at(column));
    CHECK(std::abs(merged[0].at(column) - bright.at(column)) <= 1e-6 * scale);
  }
  CHECK(merged[0].at("npix") == bright.at("npix") + faint.at("npix"));
  CHECK(merged[0].at("flux_iso") == Approx(bright.at("flux_iso") + faint.at("flux_iso")).epsilon(1e-12));
  CHECK(merged[0].at("xmax") == faint.at("xmax"));
  CHECK(merged[0].at("peak") == bright.at("peak"));
}
