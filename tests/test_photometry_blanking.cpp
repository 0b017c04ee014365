// Which pixels the photometry takes as other objects' (SExtractor's BLANK with MASK_TYPE CORRECT):
// with the detection mask, every detected pixel not the source's own, detections under minarea
// included, and none of the pixels CLEAN removed; end to end, a detection `label` drops for its
// minarea weighs on a star's FLUX_AUTO exactly as the same pixels labelled as an object do.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <vector>

#include "imflow/engine.hpp"
#include "imflow/kernels/photometry.hpp"
#include "test_helpers.hpp"

namespace k = imflow::kernels;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kBlankSide = 64;
constexpr double kStarAt = 32.0, kStarSigma = 1.5;
constexpr int64_t kSpikeRow = 32, kSpikeFirst = 35, kSpikeLast = 36;  // a 2-pixel detection 3-4 px off

// A Gaussian star (label 1 within 3 px, detected) and a bright 2-pixel spike beside it.
struct SpikeField {
  std::vector<float> pixels = std::vector<float>(kBlankSide * kBlankSide);
  std::vector<int32_t> labels = std::vector<int32_t>(kBlankSide * kBlankSide, 0);
  std::vector<uint8_t> detected = std::vector<uint8_t>(kBlankSide * kBlankSide, 0);
  SpikeField() {
    for (int64_t y = 0; y < kBlankSide; ++y) {
      for (int64_t x = 0; x < kBlankSide; ++x) {
        const double r2 = (x - kStarAt) * (x - kStarAt) + (y - kStarAt) * (y - kStarAt);
        pixels[y * kBlankSide + x] = static_cast<float>(100.0 * std::exp(-r2 / (2 * kStarSigma * kStarSigma)));
        if (r2 < 9.0) labels[y * kBlankSide + x] = detected[y * kBlankSide + x] = 1;
      }
    }
    for (int64_t x = kSpikeFirst; x <= kSpikeLast; ++x) {
      pixels[kSpikeRow * kBlankSide + x] += 50.0f;
      detected[kSpikeRow * kBlankSide + x] = 1;
    }
  }
  k::ApertureImage image(const uint8_t* mask) const {
    k::ApertureImage out{{pixels.data(), kBlankSide, kBlankSide}};
    out.neighbours = labels.data();
    out.detected = mask;
    out.neighbour_id = 1;
    out.mirror_x = out.mirror_y = kStarAt;
    return out;
  }
  k::AutoFlux auto_flux(const uint8_t* mask) const {
    k::AutoParams params;
    params.min_kron_radius = 3.5;
    return k::auto_flux(image(mask), kStarAt, kStarAt, kStarSigma, kStarSigma, 0.0, params);
  }
};

void check_same_auto_flux(const k::AutoFlux& a, const k::AutoFlux& b) {
  CHECK(a.kron_radius == b.kron_radius);
  CHECK(a.flux == b.flux);
  CHECK(a.flux_err == b.flux_err);
  CHECK(a.flag == b.flag);
  CHECK(a.crowded == b.crowded);
}

}  // namespace

TEST_CASE("blanked pixels: detected and not the object's own, else labelled by another", "[photometry]") {
  const std::vector<int32_t> labels = {0, 1, 2, 2, 0};
  const std::vector<uint8_t> detected = {0, 1, 1, 0, 1};  // [3]: merged into object 2 by CLEAN; [4]: under minarea
  CHECK_FALSE(k::blanked_pixel(nullptr, detected.data(), 1, 2));
  // Without the mask: any other label.
  CHECK_FALSE(k::blanked_pixel(labels.data(), nullptr, 1, 0));
  CHECK_FALSE(k::blanked_pixel(labels.data(), nullptr, 1, 1));
  CHECK(k::blanked_pixel(labels.data(), nullptr, 1, 2));
  CHECK(k::blanked_pixel(labels.data(), nullptr, 1, 3));
  CHECK_FALSE(k::blanked_pixel(labels.data(), nullptr, 1, 4));
  // With it: what is detected, less the object's own.
  CHECK_FALSE(k::blanked_pixel(labels.data(), detected.data(), 1, 0));
  CHECK_FALSE(k::blanked_pixel(labels.data(), detected.data(), 1, 1));
  CHECK(k::blanked_pixel(labels.data(), detected.data(), 1, 2));
  CHECK_FALSE(k::blanked_pixel(labels.data(), detected.data(), 1, 3));
  CHECK(k::blanked_pixel(labels.data(), detected.data(), 1, 4));
  CHECK_FALSE(k::blanked_pixel(labels.data(), detected.data(), 2, 2));  // its own, merged or not
  CHECK_FALSE(k::blanked_pixel(labels.data(), detected.data(), 2, 3));
}

TEST_CASE("a detection without an object is mirrored as a labelled neighbour would be", "[photometry]") {
  SpikeField field;
  const k::AutoFlux ignored = field.auto_flux(nullptr);  // label 0 and no mask: the spike is the star's light
  const k::AutoFlux blanked = field.auto_flux(field.detected.data());
  SpikeField labelled;  // the same spike as object 2, read without the mask
  for (int64_t x = kSpikeFirst; x <= kSpikeLast; ++x) labelled.labels[kSpikeRow * kBlankSide + x] = 2;
  check_same_auto_flux(blanked, labelled.auto_flux(nullptr));
  // The spike's 100 counts are in reach: mirrored, the star keeps its own light only.
  CHECK(ignored.flux - blanked.flux > 90.0);
  CHECK(blanked.flux == Approx(2.0 * M_PI * 100.0 * kStarSigma * kStarSigma).epsilon(0.02));
  // CLEAN removed it (its pixels cleared in the mask): not blanked, as SExtractor pastes them back.
  std::vector<uint8_t> cleaned = field.detected;
  for (int64_t x = kSpikeFirst; x <= kSpikeLast; ++x) cleaned[kSpikeRow * kBlankSide + x] = 0;
  check_same_auto_flux(field.auto_flux(cleaned.data()), ignored);

  // VIGNET blanks it likewise.
  std::vector<float> stamp(11 * 11);
  k::copy_vignet<k::SerialTeam>(field.image(field.detected.data()), field.labels.data(), 1, kStarAt, kStarAt, 11, 11,
                                stamp.data());
  CHECK(stamp[5 * 11 + 5 + 3] == -1e30f);
  CHECK(stamp[5 * 11 + 5 + 4] == -1e30f);
  CHECK(stamp[5 * 11 + 5 + 2] == field.pixels[kSpikeRow * kBlankSide + 34]);
  k::copy_vignet<k::SerialTeam>(field.image(cleaned.data()), field.labels.data(), 1, kStarAt, kStarAt, 11, 11,
                                stamp.data());
  CHECK(stamp[5 * 11 + 5 + 3] == field.pixels[kSpikeRow * kBlankSide + kSpikeFirst]);
}

TEST_CASE("measure: a detection label drops for its minarea is blanked around a star", "[engine][photometry]") {
  test::TempDir dir("photometry_blanking");
  fs::create_directories(dir / "in");
  std::vector<double> image(96 * 80);
  for (int64_t y = 0; y < 80; ++y) {
    for (int64_t x = 0; x < 96; ++x) {
      const double r2 = (x - 40.3) * (x - 40.3) + (y - 38.6) * (y - 38.6);
      image[y * 96 + x] = 10.0 + 400.0 * std::exp(-r2 / (2 * 2.0 * 2.0)) + 0.5 * std::sin(x * 1.7 + y * 2.3);
    }
  }
  image[38 * 96 + 48] += 60.0;  // a 2-pixel detection 7.7-8.7 px right of the star
  image[38 * 96 + 49] += 60.0;
  test::write_fits(dir / "in" / "spike.fits", -32, {96, 80}, image);
  auto run = [&](const std::string& name, const std::string& label, const std::string& measure) {
    imflow::Pipeline pipeline = test::pipeline_from(
        "output: {formats: [csv]}\ndevice: cpu\nsteps: [{background: {method: global}}, {segment: {nsigma: 20, "
        "relative_to: background}}, {label: " + label + "}, {measure: " + measure + "}]\n");
    pipeline.input.dir = dir / "in";
    pipeline.output.dir = dir / name;
    REQUIRE(imflow::run_pipeline(pipeline, {}).failed() == 0);
    const auto rows = test::csv_rows(dir / name / "spike.cat.csv");
    std::map<std::string, double> star;  // the brightest row
    for (const auto& row : rows) {
      if (!star.empty() && std::stod(row.at("flux")) <= star.at("flux")) continue;
      for (const auto& [column, text] : row) star[column] = std::stod(text);
    }
    return std::pair{star, rows.size()};
  };
  const std::string photometry = "{auto: {kron_fact: 2.5, min_kron_radius: 3.5}, apertures: [20]";
  const auto [dropped, n_dropped] = run("dropped", "{connectivity: 8, minarea: 5}", photometry + "}");
  const auto [labelled, n_labelled] = run("labelled", "{connectivity: 8, minarea: 1}", photometry + "}");
  const auto [plain, n_plain] = run("plain", "{connectivity: 8, minarea: 5}", photometry + ", mask_neighbours: false}");
  REQUIRE(n_dropped == 1);
  REQUIRE(n_labelled == 2);
  for (const char* column : {"flux_auto", "flux_auto_err", "kron_radius", "flags_auto", "flux_aper_20"})
    CHECK(dropped.at(column) == labelled.at(column));
  CHECK(plain.at("flux_aper_20") - dropped.at("flux_aper_20") > 100.0);  // the spike's 120 counts, mirrored away
}

TEST_CASE("a neighbour's mirror is at SExtractor's (int)(2 x + 0.49999 - i), truncated as in C", "[photometry]") {
  // A source at x = 1.2 beside the left edge: its neighbour's pixel at column 3 mirrors to
  // 2.4 + 0.49999 - 3 = -0.1, which C's (int) makes column 0 (std::floor would leave the image).
  std::vector<float> pixels(8 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i);
  std::vector<int32_t> labels(pixels.size(), 0);
  labels[2 * 8 + 3] = 2;  // another object's pixel at (3, 2)
  k::ApertureImage image{{pixels.data(), 8, 4}};
  image.neighbours = labels.data();
  image.neighbour_id = 1;
  image.mirror_x = 1.2;
  image.mirror_y = 2.0;
  const k::aperture_detail::ReadPixel near = k::aperture_detail::read_pixel(image, 3, 2, 2 * 8 + 3);
  CHECK(near.value == pixels[2 * 8 + 0]);
  CHECK(near.noise_at == 2 * 8 + 0);
  image.mirror_x = 0.7;  // 1.4 + 0.49999 - 3 = -1.1: outside, the pixel counts 0
  const k::aperture_detail::ReadPixel outside = k::aperture_detail::read_pixel(image, 3, 2, 2 * 8 + 3);
  CHECK(outside.value == 0.0f);
  CHECK(outside.noise_at == -1);  // and no variance where the noise is a map (next case)
}

TEST_CASE("a pixel counted as 0 adds no variance with a noise map, the one value without (SExtractor's)",
          "[photometry]") {
  // The spike (x 35, 36) and its mirror about the star (x 29, 28): other objects' pixels whose
  // symmetric ones are other objects' too, so all four count as 0 inside the Kron ellipse.
  const SpikeField field;
  std::vector<uint8_t> detected = field.detected;
  for (int64_t x = kSpikeFirst; x <= kSpikeLast; ++x) detected[kSpikeRow * kBlankSide + (2 * 32 - x)] = 1;
  const std::vector<float> rms(field.pixels.size(), 2.0f);
  k::ApertureImage mapped = field.image(detected.data());
  mapped.noise_kind = k::NoiseKind::stddev;
  mapped.noise = rms.data();
  k::ApertureImage constant = field.image(detected.data());
  constant.noise_kind = k::NoiseKind::stddev;
  constant.noise_value = 2.0;
  k::AutoParams params;
  params.min_kron_radius = 3.5;
  const k::AutoFlux with_map = k::auto_flux(mapped, kStarAt, kStarAt, kStarSigma, kStarSigma, 0.0, params);
  const k::AutoFlux with_value = k::auto_flux(constant, kStarAt, kStarAt, kStarSigma, kStarSigma, 0.0, params);
  CHECK(with_map.flux == with_value.flux);
  CHECK(with_map.kron_radius == with_value.kron_radius);
  // SExtractor's photom.c: with a weight field `var = 0.0` for them, else its backnoise2 stays.
  CHECK(with_value.flux_err * with_value.flux_err - with_map.flux_err * with_map.flux_err == Approx(4 * 4.0).epsilon(1e-9));
}
