#pragma once
// Catch2's runner (parse the command line, run the selected tests; returns the number failed),
// in tests/catch_runner.cpp with Catch2's implementation, compiled once for both test programs.

namespace test {
int run_catch(int argc, char* argv[]);
}  // namespace test
