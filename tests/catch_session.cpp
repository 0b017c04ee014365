// Catch2 v2's implementation, compiled once for both test programs (imflow_tests and, with CUDA,
// imflow_gpu_tests), and the session that their main() runs.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.hpp"

int test::run_catch_session(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
