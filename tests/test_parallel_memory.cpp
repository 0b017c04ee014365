// copy_on_all_threads copies exactly, small and large; fault_in_on_all_threads keeps the bytes
// already there and, where it says it faulted the range in, makes it resident.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "imflow/huge_pages.hpp"
#include "imflow/parallel_memory.hpp"

namespace {
// This process's resident anonymous memory (RssAnon in /proc/self/status), in bytes.
size_t resident_anonymous_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(9)) * 1024;
  }
  return 0;
}
}  // namespace

TEST_CASE("copy_on_all_threads copies every byte, whatever the size", "[unit][parallel_memory]") {
  for (size_t bytes : {size_t{0}, size_t{1}, (size_t{4} << 20) - 1, size_t{4} << 20, (size_t{37} << 20) + 3}) {
    INFO(bytes << " bytes");
    std::vector<unsigned char> from(bytes + 2), to(bytes + 2, 0xEE);
    for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    imflow::copy_on_all_threads(to.data() + 1, from.data() + 1, bytes);
    CHECK(to.front() == 0xEE);
    CHECK(to.back() == 0xEE);
    CHECK(std::memcmp(to.data() + 1, from.data() + 1, bytes) == 0);
  }
}

TEST_CASE("fault_in_on_all_threads keeps the bytes and makes the range resident", "[unit][parallel_memory]") {
  constexpr size_t kBytes = size_t{64} << 20;
  std::unique_ptr<unsigned char[]> buffer(new unsigned char[kBytes]);  // not filled: untouched pages
  imflow::advise_huge_pages(buffer.get(), kBytes);
  for (size_t i = 0; i < kBytes / 2; i += 4096) buffer[i] = static_cast<unsigned char>(i >> 12);
  const size_t before = resident_anonymous_bytes();
  const bool faulted = imflow::fault_in_on_all_threads(buffer.get(), kBytes);
  const size_t after = resident_anonymous_bytes();
  for (size_t i = 0; i < kBytes / 2; i += 4096) REQUIRE(buffer[i] == static_cast<unsigned char>(i >> 12));
  // The untouched half (32 MiB, less a huge page at the range's end) is now resident.
  if (faulted) CHECK(after >= before + (size_t{28} << 20));
  CHECK_FALSE(imflow::fault_in_on_all_threads(buffer.get(), 4096));  // too small to be worth it
}
