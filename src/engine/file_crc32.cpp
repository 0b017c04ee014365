// crc32_of_file (file_crc32.hpp).
#include "file_crc32.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace imflow {

namespace {
constexpr size_t kPiece = size_t{1} << 17;            // 128 KiB reads stay in cache for the CRC
constexpr uint64_t kChunk = uint64_t{8} << 20;        // a parallel task's share of a large file
constexpr uint64_t kParallelFrom = uint64_t{64} << 20;  // smaller files: one thread

// CRC-32 of bytes [begin, end) of `fd`, read with pread (no shared file offset).
uint32_t crc32_of_range(int fd, uint64_t begin, uint64_t end, const std::filesystem::path& path) {
  const auto buffer = std::make_unique_for_overwrite<unsigned char[]>(kPiece);  // not zero-filled
  uint32_t crc = 0;
  for (uint64_t at = begin; at < end;) {
    const ssize_t got = ::pread(fd, buffer.get(), static_cast<size_t>(std::min<uint64_t>(kPiece, end - at)),
                                static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw std::runtime_error(path.string() + ": cannot read: " + std::strerror(errno));
    if (got == 0) throw std::runtime_error(path.string() + ": cannot read: the file shrank while read");
    crc = crc32_update(crc, buffer.get(), static_cast<size_t>(got));
    at += static_cast<uint64_t>(got);
  }
  return crc;
}
}  // namespace

FileCrc crc32_of_file(int fd, uint64_t size, const std::filesystem::path& path) {
  if (size < kParallelFrom) return {size, crc32_of_range(fd, 0, size, path)};
  const size_t chunks = static_cast<size_t>((size + kChunk - 1) / kChunk);
  std::vector<uint32_t> crcs(chunks);
  // Isolated: a thread waiting here must not pick up an unrelated graph task.
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(size_t{0}, chunks, [&](size_t c) {
      crcs[c] = crc32_of_range(fd, c * kChunk, std::min<uint64_t>(size, (c + 1) * kChunk), path);
    });
  });
  uint32_t crc = crcs[0];
  for (size_t c = 1; c < chunks; ++c) {
    const uint64_t length = std::min<uint64_t>(size, (c + 1) * kChunk) - c * kChunk;
    crc = crc32_join(crc, crcs[c], length);
  }
  return {size, crc};
}

}  // namespace imflow
