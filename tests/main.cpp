// main() for the imflow unit tests (Catch2 v2: tests/catch_session.cpp).
#include "catch_session.hpp"

int main(int argc, char* argv[]) { return test::run_catch_session(argc, argv); }
