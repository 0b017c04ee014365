// Catch2 v2 main for the GPU tests: exits 77 (ctest's SKIP_RETURN_CODE) without a CUDA device.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "cuda/resources.hpp"

int main(int argc, char* argv[]) {
  if (imflow::cuda::device_count() == 0) {
    std::printf("SKIPPED: no CUDA device (GPU tests need one)\n");
    return 77;
  }
  const int failed = Catch::Session().run(argc, argv);
  imflow::cuda::pinned_allocator().release_cached();  // what the cache kept, before exit
  return failed;
}
