// ImageBuffer's storage: growth, reuse, and the pageable allocator's huge-page alignment.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>

#include "imflow/image.hpp"

using namespace imflow;

namespace {
bool on_2mib_boundary(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % (uintptr_t{2} << 20) == 0; }
}  // namespace

TEST_CASE("pageable buffers of 2 MiB or more start on a 2 MiB boundary; smaller ones are plain", "[image]") {
  ImageBuffer large;
  large.resize(2048, 2048);  // 16 MiB: whole huge pages only where it is aligned
  REQUIRE(large.data() != nullptr);
  CHECK(on_2mib_boundary(large.data()));
  std::iota(large.begin(), large.end(), 0.0f);
  CHECK(large.data()[0] == 0.0f);
  CHECK(large.data()[2048 * 2048 - 1] == static_cast<float>(2048 * 2048 - 1));

  ImageBuffer exact;
  exact.resize(512, 1024);  // exactly 2 MiB
  CHECK(on_2mib_boundary(exact.data()));

  ImageBuffer small;
  small.resize(181, 217);  // an MRI slice: 157 KB, from malloc
  REQUIRE(small.data() != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(small.data()) % alignof(float) == 0);
  std::iota(small.begin(), small.end(), 1.0f);
  CHECK(small.data()[181 * 217 - 1] == static_cast<float>(181 * 217));
}

TEST_CASE("a buffer keeps its storage when it shrinks and reallocates only to grow", "[image]") {
  ImageBuffer buffer;
  buffer.resize(100, 100);
  const float* first = buffer.data();
  buffer.resize(50, 20);
  CHECK(buffer.data() == first);
  CHECK(buffer.size() == 1000);
  CHECK(buffer.capacity_bytes() == 100 * 100 * sizeof(float));
  buffer.resize(1024, 1024);  // 4 MiB: grown, now huge-page aligned
  CHECK(buffer.capacity_bytes() == 1024 * 1024 * sizeof(float));
  CHECK(on_2mib_boundary(buffer.data()));
  buffer.resize(0, 0);
  CHECK(buffer.empty());
  CHECK(buffer.capacity_bytes() == 1024 * 1024 * sizeof(float));

  ImageBuffer moved(std::move(buffer));
  CHECK(moved.capacity_bytes() == 1024 * 1024 * sizeof(float));
  CHECK(buffer.data() == nullptr);  // NOLINT(bugprone-use-after-move): a moved-from buffer is empty
}
