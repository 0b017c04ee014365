// The MRI pipeline against the float64 NumPy reference (tools/make_mri_reference.py, made at
// test time): k, relative Frobenius error, PSNR, energy, singular values, reconstructed pixels.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "imflow/io/fits.hpp"
#include "imflow/io/nifti.hpp"
#include "imflow/io/png.hpp"
#include "imflow/kernels/svd.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
nlohmann::json load(const std::string& name) {
  std::ifstream in(std::filesystem::path(IMFLOW_TEST_OUTPUT_DIR) / name);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

void read_input(const nlohmann::json& ref, int axis, ImageBuffer& out) {
  const std::string path = ref["path"];
  if (path.size() > 4 && path.substr(path.size() - 4) == ".png") {
    read_png(path, out);
  } else {
    read_nifti_slice(path, axis, ref["slice"].get<int64_t>(), out);
  }
}

double rel_diff(const ImageBuffer& ours, const ImageBuffer& ref) {
  double d = 0, n = 0;
  for (int64_t i = 0; i < ref.size(); ++i) {
    d += (double(ours.data()[i]) - ref.data()[i]) * (double(ours.data()[i]) - ref.data()[i]);
    n += double(ref.data()[i]) * ref.data()[i];
  }
  return std::sqrt(d / n);
}

void compare_all(const nlohmann::json& reference) {
  const auto& params = reference["params"];
  const std::string svd = params["rank"].is_null() ? "energy: " + std::to_string(params["energy"].get<double>())
                                                   : "rank: " + std::to_string(params["rank"].get<int>());
  const std::string nonfinite = params.value("nonfinite", std::string("keep"));
  const auto pipeline = test::pipeline_from("steps: [{normalize: {method: " + params["normalize"].get<std::string>() +
                                            ", nonfinite: " + nonfinite + "}}, {svd_reconstruct: {" + svd +
                                            ", clip_rank: true}}]");
  const int axis = params["axis"];
  REQUIRE(reference["items"].size() > 0);
  for (const auto& ref : reference["items"]) {
    INFO(ref["file"].get<std::string>() << " slice " << ref["slice"]);
    WorkItem item;
    read_input(ref, axis, item.pixels);
    REQUIRE(item.pixels.width() == ref["width"].get<int64_t>());
    REQUIRE(item.pixels.height() == ref["height"].get<int64_t>());
    pipeline.steps[0]->run_cpu(item);  // normalize
    const int64_t zeroed = ref["zeroed_pixels"];
    CHECK(item.metrics.count("zeroed_pixels") == (zeroed > 0 ? 1u : 0u));
    if (zeroed > 0) CHECK(item.metrics.at("zeroed_pixels") == static_cast<double>(zeroed));
    // Singular values of the normalized slice: first 10 and sigma_k within 1e-4 relative.
    std::vector<float> work;
    const auto f = kernels::svd_thin(item.pixels.view(), work);
    const auto& first10 = ref["singular_values_first10"];
    for (size_t l = 0; l < first10.size(); ++l) {
      CHECK(f.s[l] == Approx(first10[l].get<double>()).epsilon(1e-4).margin(1e-6 * f.s[0]));
    }
    pipeline.steps[1]->run_cpu(item);  // svd_reconstruct
    CHECK(item.metrics.at("rank") == ref["k"].get<int64_t>());  // the energy rule picks the same k
    CHECK(item.metrics.at("singular_values") == ref["singular_values_count"].get<int64_t>());
    CHECK(item.metrics.at("sigma_k") == Approx(ref["sigma_k"].get<double>()).epsilon(1e-4).margin(1e-6 * f.s[0]));
    CHECK(std::abs(item.metrics.at("rel_frobenius_error") - ref["rel_frobenius_error"].get<double>()) < 1e-4);
    CHECK(std::abs(item.metrics.at("energy_kept") - ref["energy_kept"].get<double>()) < 1e-4);
    CHECK(item.metrics.at("compression_ratio") == Approx(ref["compression_ratio"].get<double>()).epsilon(1e-12));
    if (!ref["psnr_db"].is_null()) CHECK(item.metrics.at("psnr_db") == Approx(ref["psnr_db"].get<double>()).margin(0.01));
    if (ref.contains("recon_fits")) {
      ImageBuffer expected;
      read_fits_plane(ref["recon_fits"].get<std::string>(), 0, 0, expected);
      REQUIRE(expected.size() == item.pixels.size());
      CHECK(rel_diff(item.pixels, expected) < 1e-4);
    }
  }
}
}  // namespace

TEST_CASE("MRI rank-50 reconstruction matches the float64 NumPy reference", "[reference][mri_reference]") {
  compare_all(load("mri_reference_rank.json"));
}

TEST_CASE("MRI energy rule and metrics match the float64 NumPy reference", "[reference][mri_reference]") {
  compare_all(load("mri_reference_energy.json"));
}

TEST_CASE("an SPM volume with NaN voxels, nonfinite: zero, matches the float64 NumPy reference",
          "[reference][mri_reference]") {
  const nlohmann::json reference = load("mri_reference_masked.json");
  int64_t zeroed = 0;
  for (const auto& ref : reference["items"]) zeroed += ref["zeroed_pixels"].get<int64_t>();
  CHECK(zeroed == 74 + 40 + 39);  // the file's NaN voxels, slice by slice (nibabel counts the same)
  compare_all(reference);
}
