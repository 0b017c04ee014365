// main() for the GPU tests: exits 77 (ctest's SKIP_RETURN_CODE) without a CUDA device (Catch2 v2:
// tests/catch_runner.cpp).
#include <cstdio>

#include "catch_runner.hpp"
#include "cuda/resources.hpp"

int main(int argc, char* argv[]) {
  if (imflow::cuda::device_count() == 0) {
    std::printf("SKIPPED: no CUDA device (GPU tests need one)\n");
    return 77;
  }
  const int failed = test::run_catch(argc, argv);
  imflow::cuda::pinned_allocator().release_cached();  // what the cache kept, before exit
  return failed;
}
