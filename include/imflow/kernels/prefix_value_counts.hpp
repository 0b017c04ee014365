// Exact counts of the distinct 16-bit low parts of keys inside a few 16-bit key prefixes (slots),
// kept sparse and ascending: what a refinement pass of StreamingKappaSigma counts. Keys arrive
// packed (slot << 16 | low part) in batches and are folded in by a counting sort, so a pass
// touches a few small tallies instead of 512 KiB per prefix.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace imflow::kernels {

class PrefixValueCounts {
 public:
  static constexpr uint32_t kValues = 1u << 16;  // distinct low parts per prefix

  // Forget every count and keep `slots` empty slots.
  void reset(size_t slots);
  size_t slots() const { return slots_.size(); }
  // Count `n` packed keys (slot << 16 | low part); every slot must be below slots().
  void fold(const uint32_t* keys, size_t n);
  // Add the counts of `other`, which has the same slots.
  void add(const PrefixValueCounts& other);
  // The low parts counted in `slot`, ascending, and their counts (same length, counts > 0).
  const std::vector<uint16_t>& values(size_t slot) const { return slots_[slot].values; }
  const std::vector<uint64_t>& counts(size_t slot) const { return slots_[slot].counts; }

 private:
  struct Slot {
    std::vector<uint16_t> values;
    std::vector<uint64_t> counts;
  };
  // Merge `fresh` (ascending) into `into` (ascending), summing the counts of equal values.
  static void merge_into(Slot& into, Slot&& fresh);
  std::vector<Slot> slots_;
};

}  // namespace imflow::kernels
