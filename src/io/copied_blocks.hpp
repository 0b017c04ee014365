// A large output's blocks made on all threads, placed one after another from an offset in its file
// and copied there on all threads (ConcurrentFileWriter::copy_at), the file's CRC-32 joined from
// the blocks' as they are placed: the same CRC as zlib's over those bytes, without reading them
// again (the manifest's; written_text.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "imflow/crc32.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/concurrent_file_writer.hpp"
#include "ordered_blocks.hpp"

namespace imflow::detail {

// Where a file's bytes end and their CRC-32, from its start.
struct CopiedBytes {
  uint64_t end = 0;
  uint32_t crc32 = 0;
};

// make(b) -> T (a container of bytes: std::string, std::vector<unsigned char>) for b in [0,
// blocks) on any thread, copied into `file` one after another from `start.end`; `start` holds
// the file's bytes before it (their end and CRC). Throws OutputError naming `path`.
template <typename T, typename Make>
CopiedBytes copy_blocks_in_order(const ConcurrentFileWriter& file, const std::filesystem::path& path, size_t blocks,
                                 CopiedBytes start, Make make) {
  struct Placed {
    T bytes;
    uint32_t crc32 = 0;
    uint64_t offset = 0;
    std::string_view view() const { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }
  };
  CopiedBytes copied = start;
  for_blocks_placed_in_order<Placed>(
      blocks,
      [&](size_t b) {
        Placed block{make(b)};
        block.crc32 = crc32_update(0, block.view());
        return block;
      },
      [&](Placed& block) {
        block.offset = copied.end;
        copied.end += block.bytes.size();
        copied.crc32 = crc32_join(copied.crc32, block.crc32, block.bytes.size());
      },
      [&](Placed& block) {
        const std::string_view pieces[] = {block.view()};
        if (const int failure = file.copy_at(block.offset, pieces); failure != 0) throw write_failed(path, failure);
      });
  return copied;
}

}  // namespace imflow::detail
