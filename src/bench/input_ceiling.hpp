// `imflow bench --ceiling`: the inputs read as the engine reads them, on its threads (and on a GPU
// copied to the device), with no steps and no outputs: the most any pipeline could process of
// these inputs on this machine, against which the bench's points are compared.
#pragma once
#include <nlohmann/json.hpp>

#include "imflow/pipeline.hpp"

namespace imflow::bench {

// Every whole-plane item of `pipeline`'s inputs read `repeats` times (after one untimed pass) on
// `threads` threads, each into a buffer of its own: pinned and copied to one of the engine's GPUs
// (the threads' buffers take them in turn) when its device is cuda (float32 FITS left big-endian,
// as the CUDA engine reads them), else converted as the CPU engine reads them. Returns {what,
// device, threads, items, failed, megabytes, images_per_second and seconds {median, min, max},
// megabytes_per_second (median)}; {skipped: why} when an item is tiled or larger than 1 GiB (read
// in tiles or strips by the engine). Throws InputError when no input file matches.
nlohmann::json measure_input_ceiling(const Pipeline& pipeline, int threads, int repeats);

}  // namespace imflow::bench
