// Working memory of the PNG reader and writer kept per thread between files: a block cache behind
// libpng's and zlib's allocations, and the trimming of per-thread buffers that grew large.
#pragma once
#include <png.h>

#include <cstddef>
#include <tuple>
#include <vector>

namespace imflow::detail {

// libpng's malloc_fn and free_fn (png_create_read_struct_2 / png_create_write_struct_2): a block
// freed on a thread is kept, up to a few blocks and 2 MiB, and handed out again for a request of
// about its size. Without them every file allocates and frees ~300 KB (for deflate), which glibc
// gives back to the kernel and faults in again: ~10% of a slice's encode time.
png_voidp png_cached_malloc(png_structp png, png_alloc_size_t size);
void png_cached_free(png_structp png, png_voidp block);

// Whether a per-thread buffer keeps its memory for the next file: not when it grew past what is
// worth keeping (a large image's bytes are not held by an idle thread).
template <typename T>
bool keeps_thread_buffer(const std::vector<T>& buffer) {
  constexpr size_t kKeptBytes = size_t{16} << 20;
  return buffer.capacity() * sizeof(T) <= kKeptBytes;
}

// Gives a per-thread buffer's memory back when keeps_thread_buffer says it is not kept.
template <typename T>
void trim_thread_buffer(std::vector<T>& buffer) {
  if (!keeps_thread_buffer(buffer)) std::vector<T>().swap(buffer);
}

// Trims the given per-thread buffers when it goes out of scope, however the scope is left.
template <typename... Buffers>
class TrimOnExit {
 public:
  explicit TrimOnExit(Buffers&... buffers) : buffers_(buffers...) {}
  ~TrimOnExit() {
    std::apply([](auto&... buffer) { (trim_thread_buffer(buffer), ...); }, buffers_);
  }
  TrimOnExit(const TrimOnExit&) = delete;
  TrimOnExit& operator=(const TrimOnExit&) = delete;

 private:
  std::tuple<Buffers&...> buffers_;
};

}  // namespace imflow::detail
