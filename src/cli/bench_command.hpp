// `imflow bench`: registered on the CLI11 app before parsing, run after logging is set up.
#pragma once
#include <CLI/CLI.hpp>

#include <memory>

namespace imflow {

class BenchCommand {
 public:
  BenchCommand(CLI::App& app, int argc, char** argv);
  ~BenchCommand();
  bool parsed() const;
  // Run the sweep, write bench.json and bench.csv, print the table; returns the exit code.
  int run(bool verbose);

 private:
  struct Args;
  std::unique_ptr<Args> args_;
  CLI::App* command_ = nullptr;
};

}  // namespace imflow
