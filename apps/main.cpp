// imflow command-line entry point.
#include "imflow/cli.hpp"

int main(int argc, char** argv) { return imflow::run_cli(argc, argv); }
