// Running a pipeline as an MPI job (`mpirun -n N imflow run ...`): files are handed out
// dynamically by rank 0, each rank uses the GPU of its local rank (or the CPU), and rank 0
// writes the merged summary and catalog.
#pragma once
#include "imflow/engine.hpp"

namespace imflow::mpi {

// True when this process was started by mpirun/srun as part of a job of several ranks.
bool launched_under_mpi();

struct MpiOutcome {
  int64_t failed = 0;     // failed items over all ranks
  bool stopped = false;   // some rank stopped early (fatal error or signal)
  int rank = 0, size = 1;
};

// Collective: every rank calls it with the same pipeline (its devices are set to this rank's
// GPU). Initialises and finalises MPI.
MpiOutcome run_pipeline_mpi(Pipeline& pipeline, RunOptions options);

}  // namespace imflow::mpi
