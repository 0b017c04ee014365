// Float32 FITS read without its byte swap (ReadLimits::float32_swap_deferred) and swapped on the
// device after the upload: the device image equals the host's read bit for bit (NaN payloads,
// signed zeros, subnormals, a size that is no multiple of four words), and the CUDA engine, which
// reads that way when no host stage needs the pixels, gives the CPU engine's results.
#include <fitsio.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "gpu_test_helpers.hpp"
#include "imflow/engine.hpp"
#include "imflow/io/fits.hpp"
#include "test_helpers.hpp"

using namespace gpu_test;
namespace fs = std::filesystem;

TEST_CASE("the device swaps deferred float32 FITS words bit for bit", "[gpu][fits]") {
  test::TempDir dir("gpu_fits_swap");
  const fs::path path = dir / "f.fits";
  const long width = 1001, height = 37;
  std::mt19937 rng(fresh_seed("deferred float32 swap"));
  std::vector<float> values(static_cast<size_t>(width * height));
  for (float& v : values) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));  // every kind of bit pattern
  const float specials[] = {-0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::signaling_NaN(),
                            std::bit_cast<float>(uint32_t{0xFFC12345u}), -std::numeric_limits<float>::infinity()};
  std::copy(std::begin(specials), std::end(specials), values.end() - 5);  // the words past the last 16 bytes
  {
    fitsfile* file = nullptr;
    int status = 0;
    long naxes[2] = {width, height};
    fits_create_file(&file, ("!" + path.string()).c_str(), &status);
    fits_create_img(file, FLOAT_IMG, 2, naxes, &status);
    fits_write_img(file, TFLOAT, 1, static_cast<LONGLONG>(values.size()), values.data(), &status);
    fits_close_file(file, &status);
    REQUIRE(status == 0);
  }
  imflow::ImageBuffer host;
  imflow::read_fits_plane(path, 0, 0, host);
  REQUIRE(std::memcmp(host.data(), values.data(), values.size() * sizeof(float)) == 0);

  Slot slot;
  WorkItem item;
  make_pinned(item, width, height);
  imflow::ReadLimits limits;
  limits.float32_swap_deferred = &item.pixels_big_endian;
  imflow::read_fits_plane(path, 0, 0, item.pixels, limits);
  REQUIRE(item.pixels_big_endian);
  CHECK(std::memcmp(item.pixels.data(), values.data(), values.size() * sizeof(float)) != 0);
  imflow::cuda::enqueue_upload(slot.gpu, item);
  std::vector<float> device(values.size());
  REQUIRE(cudaMemcpyAsync(device.data(), slot.gpu.image.data(), device.size() * sizeof(float), cudaMemcpyDeviceToHost,
                          slot.stream.get()) == cudaSuccess);
  slot.stream.synchronize();
  CHECK(std::memcmp(device.data(), values.data(), values.size() * sizeof(float)) == 0);
}

TEST_CASE("the CUDA engine swapping float32 FITS on the device gives the CPU engine's results", "[gpu][fits][pipeline]") {
  test::TempDir dir("gpu_fits_engine");
  const fs::path samples = fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples";
  fs::create_directories(dir / "in");
  fs::copy(samples / "isaac_crop.fits", dir / "in" / "isaac_crop.fits");  // BITPIX -32, unscaled
  auto pipeline = test::pipeline_from("output: {formats: [csv, fits]}\nsteps: [background, segment, label, measure]\n");
  pipeline.input.dir = dir / "in";
  nlohmann::json items[2];
  int k = 0;
  for (const std::string device : {"cpu", "cuda"}) {
    pipeline.engine.device = device;
    pipeline.output.dir = dir / device;
    REQUIRE(imflow::run_pipeline(pipeline, {}).failed() == 0);
    items[k++] = nlohmann::json::parse(std::ifstream(dir / device / "summary.json"))["items"][0];
  }
  CHECK(items[1]["background"]["median"] == items[0]["background"]["median"]);  // exact on both
  CHECK(items[1]["background"]["iterations"] == items[0]["background"]["iterations"]);
  CHECK(items[1]["background"]["std"].get<double>() == Approx(items[0]["background"]["std"].get<double>()).epsilon(1e-12));
  CHECK(items[1]["nsources"] == items[0]["nsources"]);
  CHECK(items[1]["nsources"].get<int>() > 10);
}
