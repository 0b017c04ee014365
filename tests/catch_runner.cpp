// Catch2 v2's implementation, compiled once for both test programs (imflow_tests and, with CUDA,
// imflow_gpu_tests), and the runner that their main() calls.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_runner.hpp"

int test::run_catch(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
