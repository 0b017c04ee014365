// One whole-image FITS file (float32 image or int32 label map) written tile by tile, never held
// whole: created full size under a temporary name, tiles written as they come (any order, any
// thread), renamed into place by commit(). Dropped without commit, the temporary file is removed.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "imflow/io/fits.hpp"
#include "imflow/tile_rect.hpp"

namespace imflow {

class FitsTileWriter {
 public:
  enum class Pixels { float32, int32 };

  // Throws OutputError naming the file.
  FitsTileWriter(const std::filesystem::path& final_path, int64_t width, int64_t height, Pixels pixels,
                 const std::vector<FitsCard>& cards);
  ~FitsTileWriter();
  FitsTileWriter(const FitsTileWriter&) = delete;
  FitsTileWriter& operator=(const FitsTileWriter&) = delete;

  // Write `rect` (whole-image coordinates) from `data`, whose rows are `stride` values apart and
  // start at the rect's first pixel. Thread-safe. Throws OutputError.
  void write(const TileRect& rect, const float* data, int64_t stride);
  void write(const TileRect& rect, const int32_t* data, int64_t stride);
  // Read back `rect` of a label map into `data` (rect.width per row). Throws OutputError.
  void read(const TileRect& rect, int32_t* data);
  // Close the file and rename it into place. Throws OutputError.
  void commit();
  const std::filesystem::path& final_path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::mutex mutex_;
};

}  // namespace imflow
