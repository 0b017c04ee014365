// Catch2 v2 main for the imflow unit tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
