// Helpers for the tests: temporary directories, FITS files made with CFITSIO, running steps.
#pragma once
#include <fitsio.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "imflow/io/written_text.hpp"
#include "imflow/pipeline.hpp"
#include "imflow/work_item.hpp"

namespace test {

// A fresh, empty directory under the build tree, removed at the end of the scope.
class TempDir {
 public:
  explicit TempDir(const std::string& name) : path_(std::filesystem::path(IMFLOW_TEST_OUTPUT_DIR) / "tmp" / name) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::filesystem::path source_dir() { return IMFLOW_SOURCE_DIR; }

// Write an image HDU (appended; the file is created if needed) with BITPIX `bitpix` from
// `values` (converted by CFITSIO), optional BSCALE/BZERO/BLANK. naxes = {w, h[, d]}.
inline void write_fits(const std::filesystem::path& path, int bitpix, const std::vector<long>& naxes,
                       const std::vector<double>& values, double bscale = 1.0, double bzero = 0.0,
                       const long long* blank = nullptr, bool create = true) {
  fitsfile* file = nullptr;
  int status = 0;
  if (create) {
    fits_create_file(&file, ("!" + path.string()).c_str(), &status);
  } else {
    fits_open_file(&file, path.c_str(), READWRITE, &status);
  }
  fits_create_img(file, bitpix, static_cast<int>(naxes.size()), const_cast<long*>(naxes.data()), &status);
  if (bscale != 1.0 || bzero != 0.0) {
    fits_write_key(file, TDOUBLE, "BSCALE", &bscale, nullptr, &status);
    fits_write_key(file, TDOUBLE, "BZERO", &bzero, nullptr, &status);
    fits_set_bscale(file, bscale, bzero, &status);
  }
  if (blank != nullptr) {
    long long b = *blank;
    fits_write_key(file, TLONGLONG, "BLANK", &b, nullptr, &status);
    fits_set_imgnull(file, b, &status);
  }
  if (!values.empty()) {
    fits_write_img(file, TDOUBLE, 1, static_cast<LONGLONG>(values.size()), const_cast<double*>(values.data()), &status);
  }
  fits_close_file(file, &status);
  if (status != 0) throw std::runtime_error("test write_fits failed: " + std::to_string(status));
}

// Set EXTNAME of the file's last HDU.
inline void name_last_hdu(const std::filesystem::path& path, const char* extname) {
  fitsfile* file = nullptr;
  int status = 0, hdus = 0;
  fits_open_file(&file, path.c_str(), READWRITE, &status);
  fits_get_num_hdus(file, &hdus, &status);
  fits_movabs_hdu(file, hdus, nullptr, &status);
  fits_write_key(file, TSTRING, "EXTNAME", const_cast<char*>(extname), nullptr, &status);
  fits_close_file(file, &status);
  if (status != 0) throw std::runtime_error("test name_last_hdu failed: " + std::to_string(status));
}

// `plain` tile-compressed into `packed` (an empty primary, the image in HDU 1), as fpack makes
// it: RICE_1, or `type` (GZIP_1, ...); floats quantised at CFITSIO's level unless one is given
// (0: not quantised).
inline void write_tile_compressed(const std::filesystem::path& plain, const std::filesystem::path& packed,
                                  int type = RICE_1, std::optional<float> quantize_level = std::nullopt) {
  fitsfile *in = nullptr, *out = nullptr;
  int status = 0;
  fits_open_file(&in, plain.c_str(), READONLY, &status);
  fits_create_file(&out, ("!" + packed.string()).c_str(), &status);
  fits_set_compression_type(out, type, &status);
  if (quantize_level) fits_set_quantize_level(out, *quantize_level, &status);
  fits_img_compress(in, out, &status);
  fits_close_file(in, &status);
  fits_close_file(out, &status);
  if (status != 0) throw std::runtime_error("test write_tile_compressed failed: " + std::to_string(status));
}

// An empty primary HDU (NAXIS = 0), to start a multi-extension file.
inline void write_empty_primary(const std::filesystem::path& path) {
  fitsfile* file = nullptr;
  int status = 0;
  fits_create_file(&file, ("!" + path.string()).c_str(), &status);
  fits_create_img(file, 8, 0, nullptr, &status);
  fits_close_file(file, &status);
  if (status != 0) throw std::runtime_error("test write_empty_primary failed");
}

// A noisy sky with a few Gaussian stars, deterministic for a seed.
inline std::vector<double> star_field(int width, int height, unsigned seed, int stars = 8) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(100.0, 5.0);
  std::uniform_real_distribution<double> flux(500.0, 5000.0);
  std::vector<double> image(static_cast<size_t>(width) * height);
  for (auto& v : image) v = noise(rng);
  std::uniform_real_distribution<double> px(4.0, width - 5.0), py(4.0, height - 5.0);
  for (int s = 0; s < stars; ++s) {
    const double cx = px(rng), cy = py(rng), f = flux(rng);
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        const double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
        if (r2 < 36) image[y * width + x] += f * std::exp(-r2 / 2.0) / 6.28;
      }
  }
  return image;
}

// The rows of a catalog CSV as column name -> text.
inline std::vector<std::map<std::string, std::string>> csv_rows(const std::filesystem::path& path) {
  std::ifstream csv(path);
  std::string line;
  std::getline(csv, line);
  std::vector<std::string> names;
  std::stringstream header(line);
  for (std::string cell; std::getline(header, cell, ',');) names.push_back(cell);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(csv, line)) {
    std::stringstream row(line);
    std::map<std::string, std::string>& values = rows.emplace_back();
    for (size_t k = 0; k < names.size() && std::getline(row, values[names[k]], ','); ++k) {
    }
  }
  return rows;
}

// A pipeline from YAML text (steps and settings), for tests.
inline imflow::Pipeline pipeline_from(const std::string& yaml) { return imflow::parse_pipeline(yaml, "test.yaml"); }

// A file's bytes (empty when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The text this thread noted as `path`'s bytes (imflow/io/written_text.hpp), or "(nothing noted)".
inline std::string noted_text(const std::filesystem::path& path) {
  const std::string_view* text = imflow::written_text(path);
  return text != nullptr ? std::string(*text) : std::string("(nothing noted)");
}

// `n` native values of type T from a raw file; throws, naming `type`, when it holds fewer.
template <typename T>
std::vector<T> read_raw(const std::filesystem::path& path, size_t n, const char* type) {
  std::vector<T> values(n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(n * sizeof(T)));
  if (in.gcount() != static_cast<std::streamsize>(n * sizeof(T))) {
    throw std::runtime_error(path.string() + ": fewer than " + std::to_string(n) + " " + type + " values");
  }
  return values;
}

// `n` native float32 values from a raw file (the reference scripts' .f32 outputs); throws when short.
inline std::vector<float> read_f32(const std::filesystem::path& path, size_t n) {
  return read_raw<float>(path, n, "float32");
}

// `n` native int32 values from a raw file (the scripts' .i32 segmentation maps); throws when short.
inline std::vector<int32_t> read_i32(const std::filesystem::path& path, size_t n) {
  return read_raw<int32_t>(path, n, "int32");
}

}  // namespace test
