// SEP's backguess, the clipped mode and sigma of one mesh's histogram, CPU kernel: a plain loop
// (SEP's, the reference) and a fast one on prefix sums that returns the same bits.
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/kernels/background_mesh.hpp"

namespace imflow::kernels {

// The histogram of one mesh (nlevels bins, bin i holds the pixels quantised to qzero + i qscale),
// clipped at median +- 3 sigma until sigma converges (at most 100 rounds); mode 2.5 median -
// 1.5 mean where |mean - median| / sigma < 0.3, else the median. mean_f: the mesh's clipped mean
// (float, as SEP stores it), the answer when the loop never runs. MeshEstimate::valid is left 0.
// This is SEP's loop over the bins every round, its float64 sums in bin order.
MeshEstimate histogram_mode_reference(const int32_t* histogram, int64_t nlevels, float mean_f, float qzero,
                                      float qscale);

// The same bits in O(nlevels) once, then about O(log nlevels) a round: SEP's float64 sums of
// count x bin and count x bin^2 are integers below 2^53 when the histogram holds fewer than 2^29
// pixels, so they are exact in any order (int64 here, moved with the cuts), and its median walk
// from both ends stops where a binary search over the prefix counts says
// (src/kernels/mesh_mode.cpp). Falls back to histogram_mode_reference for histograms of 2^29
// pixels or more. `prefix` is scratch.
MeshEstimate histogram_mode(const int32_t* histogram, int64_t nlevels, float mean_f, float qzero, float qscale,
                            std::vector<int32_t>& prefix);

}  // namespace imflow::kernels
