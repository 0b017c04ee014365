// The imflow command line: subcommands run, validate, steps; documented exit codes.
#pragma once

namespace imflow {

// Exit codes of the imflow command (also in docs/cli.md and `imflow --help`).
enum ExitCode : int {
  kExitOk = 0,             // every item succeeded
  kExitUsage = 1,          // bad command line or invalid pipeline file
  kExitSomeFailed = 2,     // the run finished but some items failed
  kExitFatal = 3,          // the run could not start or stopped (no input, unwritable output, device error)
  kExitInterrupted = 130,  // stopped by SIGINT/SIGTERM: in-flight items finish, summary written (stopped_early);
                           // a second signal aborts at once, also 130 (outputs are atomic; --resume continues)
};

int run_cli(int argc, char** argv);

}  // namespace imflow
