// FitsTileWriter: a full-size FITS image written row segment by row segment (CFITSIO).
#include "imflow/io/fits_tile_writer.hpp"

#include <fitsio.h>

#include <string>

#include "fits_cards.hpp"
#include "fits_status.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"

namespace imflow {

namespace fs = std::filesystem;

struct FitsTileWriter::Impl {
  explicit Impl(const fs::path& path) : output(path) {}
  AtomicOutput output;
  detail::FitsFile file;
  Pixels pixels = Pixels::float32;
  int64_t width = 0, height = 0;

  [[noreturn]] void fail(const std::string& what, int status) const {
    throw OutputError(detail::fits_error_text(output.final_path(), what, status));
  }
  void check(const TileRect& rect) const {
    if (rect.x < 0 || rect.y < 0 || rect.x_end() > width || rect.y_end() > height) {
      throw OutputError(output.final_path().string() + ": tile outside the image");
    }
  }
  template <typename T>
  void write_rows(const TileRect& rect, const T* data, int64_t stride, int datatype) {
    check(rect);
    int status = 0;
    for (int64_t y = 0; y < rect.height; ++y) {
      long long first[2] = {rect.x + 1, rect.y + y + 1};
      if (fits_write_pixll(file.get(), datatype, first, rect.width, const_cast<T*>(data + y * stride), &status) != 0) {
        fail("cannot write the tile at x " + std::to_string(rect.x) + ", y " + std::to_string(rect.y), status);
      }
    }
  }
};

FitsTileWriter::FitsTileWriter(const fs::path& final_path, int64_t width, int64_t height, Pixels pixels,
                               const std::vector<FitsCard>& cards)
    : impl_(std::make_unique<Impl>(final_path)) {
  impl_->pixels = pixels;
  impl_->width = width;
  impl_->height = height;
  int status = 0;
  // A plain name (no CFITSIO extended syntax), as in fits_writer.cpp; the temporary name is new.
  if (fits_create_diskfile(impl_->file.out(), impl_->output.temp_path().c_str(), &status) != 0) impl_->fail("cannot create", status);
  long long naxes[2] = {width, height};
  if (fits_create_imgll(impl_->file.get(), pixels == Pixels::int32 ? LONG_IMG : FLOAT_IMG, 2, naxes, &status) != 0) {
    impl_->fail("cannot create the image", status);
  }
  status = detail::write_fits_cards(impl_->file.get(), cards);
  if (status != 0) impl_->fail("cannot write header keywords", status);
}

FitsTileWriter::~FitsTileWriter() = default;

const fs::path& FitsTileWriter::final_path() const { return impl_->output.final_path(); }

void FitsTileWriter::write(const TileRect& rect, const float* data, int64_t stride) {
  std::lock_guard lock(mutex_);
  impl_->write_rows(rect, data, stride, TFLOAT);
}

void FitsTileWriter::write(const TileRect& rect, const int32_t* data, int64_t stride) {
  std::lock_guard lock(mutex_);
  impl_->write_rows(rect, data, stride, TINT);
}

void FitsTileWriter::read(const TileRect& rect, int32_t* data) {
  std::lock_guard lock(mutex_);
  impl_->check(rect);
  int status = 0, any_null = 0;
  for (int64_t y = 0; y < rect.height; ++y) {
    long long first[2] = {rect.x + 1, rect.y + y + 1};
    if (fits_read_pixll(impl_->file.get(), TINT, first, rect.width, nullptr, data + y * rect.width, &any_null, &status) != 0) {
      impl_->fail("cannot read back the tile at x " + std::to_string(rect.x) + ", y " + std::to_string(rect.y), status);
    }
  }
}

void FitsTileWriter::commit() {
  std::lock_guard lock(mutex_);
  const int status = impl_->file.close_checked();
  if (status != 0) impl_->fail("cannot complete the file", status);
  impl_->output.commit();
}

}  // namespace imflow
