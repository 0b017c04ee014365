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
#include "imflow/kernels/prefix_value_counts.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

class StreamingKappaSigma {
 public:
  static constexpr int kBins = 1 << 16;  // prefixes (top 16 bits of the key) and values per prefix

  // The parameters of kernels::kappa_sigma_clip. `max_refined_per_pass` bounds the prefixes a
  // refinement pass counts exactly (each holds at most 65,536 distinct values).
  StreamingKappaSigma(double kappa, int max_iters, int max_refined_per_pass = 32);
  StreamingKappaSigma(StreamingKappaSigma&&) noexcept = default;
  StreamingKappaSigma& operator=(StreamingKappaSigma&&) noexcept = default;
  ~StreamingKappaSigma();  // its thread keeps the coarse bins' storage for the next image

  // A coarse bin: the values of one prefix, their sum and sum of squares about the prefix's low
  // value (one cache line per pixel).
  struct alignas(32) Bin {
    uint64_t count = 0;
    double sum = 0.0, squares = 0.0;
  };

  // One pass's counts over some of the chunks (one per thread); merge() them when the pass is over.
  class Pass {
   public:
    Pass() = default;
    Pass(Pass&&) noexcept = default;
    Pass& operator=(Pass&&) noexcept = default;
    ~Pass();  // its thread keeps the bins' and keys' storage for the next pass
    // Add a height x width block whose rows are `stride` floats apart. NaN/Inf are ignored.
    void add(const float* data, int64_t width, int64_t height, int64_t stride);
    void add(ConstImageView image) { add(image.data, image.width, image.height, image.width); }

   private:
    friend class StreamingKappaSigma;
    void add_coarse(const float* row, int64_t width);
    void add_refine(const float* row, int64_t width);
    const StreamingKappaSigma* owner_ = nullptr;
    bool coarse_ = true;
    std::vector<Bin> bins_;          // coarse: per prefix, then one for the non-finite pixels
    std::vector<uint32_t> keys_;     // refine: slot << 16 | low part of the pixels in counted prefixes,
    size_t key_count_ = 0;           //   the first key_count_ of keys_ not folded into exact_ yet
    PrefixValueCounts exact_;        // refine: per counted prefix
  };

  // An empty accumulator for the current pass.
  Pass start_pass() const;
  // Fold a finished accumulator of the current pass in (call serially); the second form may take
  // the accumulator's storage.
  void merge(const Pass& pass);
  void merge(Pass&& pass);
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
  // The value of a prefix's smallest key (the coarse sums' shift), 0 for a non-finite prefix.
  static double prefix_low(int prefix);

  double kappa_;
  int max_iters_;
  int max_refined_;
  bool done_ = false;
  bool coarse_pass_ = true;
  int passes_ = 0;
  int64_t valid_ = 0;
  std::vector<Bin> bins_;  // the coarse pass's, per prefix (empty until merged)
  std::map<int, std::vector<std::pair<double, uint64_t>>> exact_;  // prefix -> its values (ascending), counts
  PrefixValueCounts pending_exact_;         // the current refinement pass's, per slot
  std::vector<int> pass_prefixes_;          // prefixes the current refinement pass counts
  std::vector<int16_t> slot_of_;            // prefix -> slot in the current pass, -1 none
  BackgroundStats result_;
};

// Convenience: the statistics of a whole image fed in blocks of `block` rows (tests, tools).
BackgroundStats streaming_kappa_sigma(ConstImageView image, double kappa, int max_iters, int64_t block_rows);

}  // namespace imflow::kernels
