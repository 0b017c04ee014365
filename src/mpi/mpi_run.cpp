// run_pipeline_mpi: MPI set-up, per-rank device choice, dynamic file dispatch, and the gather
// and merge of the ranks' summaries on rank 0.
#include "mpi_run.hpp"

#include <mpi.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "../engine/ldac_merge.hpp"
#include "../engine/summary_merge.hpp"
#include "file_dispatch.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/companion.hpp"

namespace imflow::mpi {

namespace {
// Files per request: small enough to balance, large enough that rank 0 is not a bottleneck.
constexpr int kBatch = 4;

int local_rank(MPI_Comm comm) {
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int rank = 0;
  MPI_Comm_rank(local, &rank);
  MPI_Comm_free(&local);
  return rank;
}

std::vector<nlohmann::json> gather_summaries(const nlohmann::json& mine, int rank, int size) {
  const std::string text = mine.dump();
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(size), offsets(size);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    all.resize(total);
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<nlohmann::json> parts;
  if (rank == 0) {
    for (int r = 0; r < size; ++r) parts.push_back(nlohmann::json::parse(all.substr(offsets[r], lengths[r])));
  }
  return parts;
}
}  // namespace

bool launched_under_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::atoi(value) > 1) return true;
  }
  return false;
}

MpiOutcome run_pipeline_mpi(Pipeline& pipeline, RunOptions options) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  MpiOutcome outcome;
  MPI_Comm_rank(MPI_COMM_WORLD, &outcome.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &outcome.size);
  if (provided < MPI_THREAD_SERIALIZED) {
    if (outcome.rank == 0) spdlog::error("the MPI library does not support MPI_THREAD_SERIALIZED");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  // One GPU per local rank (or the listed devices in turn); the CPU when there is none.
  const int local = local_rank(MPI_COMM_WORLD);
  if (pipeline.engine.device != "cpu" && resolve_device(pipeline.engine.device) == "cuda") {
    const auto& listed = pipeline.engine.devices;
    const int count = listed.empty() ? cuda_device_count() : static_cast<int>(listed.size());
    pipeline.engine.devices = {listed.empty() ? local % count : listed[local % count]};
  }
  const std::string rank_suffix = ".rank" + std::to_string(outcome.rank);
  if (!options.trace_path.empty()) options.trace_path += rank_suffix + ".json";
  options.manifest_name = "manifest" + rank_suffix + ".jsonl";
  RunSummary summary;
  {
    const auto files = without_companion_files(list_input_files(pipeline.input), pipeline.input.companions());
    FileDispatch dispatch(MPI_COMM_WORLD, static_cast<int64_t>(files.size()), kBatch);
    options.file_feed = [&dispatch]() { return dispatch.next(); };
    options.write_summary = false;
    summary = run_pipeline(pipeline, options);
  }  // the dispatcher is done (rank 0's server joined) before the collectives below
  nlohmann::json mine = summary.to_json();
  mine["rank"] = outcome.rank;
  const auto parts = gather_summaries(mine, outcome.rank, outcome.size);
  long long counts[2] = {0, 0};
  if (outcome.rank == 0) {
    const nlohmann::json merged = merge_summaries(parts);
    const auto path = options.summary_path.empty() ? pipeline.output.dir / "summary.json" : options.summary_path;
    write_text_atomic(path, merged.dump(2) + "\n");
    if (pipeline.output.wants_merged_catalog()) write_merged_catalog(merged, pipeline.output.dir / "catalog.csv");
    if (pipeline.output.wants("ldac")) write_mef_ldacs(merged);
    counts[0] = merged["totals"]["failed"].get<long long>();
    counts[1] = merged["totals"].contains("stopped_early") ? 1 : 0;
    spdlog::info("MPI job of {} ranks: {} items, {} failed, {:.3f} s; merged summary in {}", outcome.size,
                 merged["totals"]["items"].get<long long>(), counts[0], merged["totals"]["wall_seconds"].get<double>(),
                 path.string());
  }
  MPI_Bcast(counts, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  outcome.failed = counts[0];
  outcome.stopped = counts[1] != 0;
  MPI_Finalize();
  return outcome;
}

}  // namespace imflow::mpi
