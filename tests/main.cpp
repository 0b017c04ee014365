// main() for the imflow unit tests (Catch2 v2: tests/catch_runner.cpp).
#include "catch_runner.hpp"

int main(int argc, char* argv[]) { return test::run_catch(argc, argv); }
