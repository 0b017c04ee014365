// Exact kappa-sigma clipped statistics of an image seen in chunks (tiles), in bounded memory:
// the same median, iterations, kept and valid counts as kappa_sigma_clip over the whole image,
// and its std to float64 rounding. Radix histograms of the monotone 32-bit float keys: a first
// pass counts values per 16-bit key prefix (with float64 sums), later passes count the exact
// values inside the few prefixes that hold a median or a clip bound (docs/tiling.md).
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

class StreamingKappaSigma {
 public:
  static constexpr int kBins = 1 << 16;  // prefixes (top 16 bits of the key) and values per prefix

  // The parameters of kernels::kappa_sigma_clip. `max_refined_per_pass` bounds the prefixes a
  // refinement pass counts exactly (each costs 512 KiB per accumulator).
  StreamingKappaSigma(double kappa, int max_iters, int max_refined_per_pass = 32);

  // One pass's counts over some of the chunks (one per thread); merge() them when the pass is over.
  class Pass {
   public:
    // Add a height x width block whose rows are `stride` floats apart. NaN/Inf are ignored.
    void add(const float* data, int64_t width, int64_t height, int64_t stride);
    void add(ConstImageView image) { add(image.data, image.width, image.height, image.width); }

   private:
    friend class StreamingKappaSigma;
    const StreamingKappaSigma* owner_ = nullptr;
    bool coarse_ = true;
    int64_t valid_ = 0;
    std::vector<uint64_t> count_;       // coarse: per prefix
    std::vector<double> sum_, squares_;  // coarse: sums of (v - prefix_low) and its square
    std::vector<uint64_t> exact_;       // refine: slots x kBins counts
  };

  // An empty accumulator for the current pass.
  Pass start_pass() const;
  // Fold a finished accumulator of the current pass in (call serially).
  void merge(const Pass& pass);
  // Close the current pass. True when the statistics are final (result()); false when another
  // pass over every chunk is needed.
  bool finish_pass();
  bool done() const { return done_; }
  int passes() const { return passes_; }
  BackgroundStats result() const { return result_; }

  // The order-preserving key of a float (NaN excluded) and its inverse.
  static uint32_t key_of(float value);
  static float value_of(uint32_t key);

 private:
  struct Outcome {
    BackgroundStats stats;
    std::vector<int> missing;  // prefixes needed but not counted exactly, in the order needed
  };
  Outcome simulate() const;

  double kappa_;
  int max_iters_;
  int max_refined_;
  bool done_ = false;
  bool coarse_pass_ = true;
  int passes_ = 0;
  int64_t valid_ = 0;
  std::vector<double> prefix_low_;  // value of each prefix's smallest key (the sums' shift)
  std::vector<uint64_t> count_;
  std::vector<double> sum_, squares_;
  std::map<int, std::vector<std::pair<double, uint64_t>>> exact_;  // prefix -> its values (ascending), counts
  std::vector<uint64_t> pending_exact_;     // the current refinement pass: slots x kBins counts
  std::vector<int> pass_prefixes_;          // prefixes the current refinement pass counts
  std::vector<int16_t> slot_of_;            // prefix -> slot in the current pass, -1 none
  BackgroundStats result_;
};

// Convenience: the statistics of a whole image fed in blocks of `block` rows (tests, tools).
BackgroundStats streaming_kappa_sigma(ConstImageView image, double kappa, int max_iters, int64_t block_rows);

}  // namespace imflow::kernels
