// PrefixValueCounts: per-slot exact counts of 16-bit values, folded in from packed keys by a
// counting sort on the slot, then a tally per slot that stays in the L2 cache.
#include "imflow/kernels/prefix_value_counts.hpp"

#include <bit>
#include <utility>

namespace imflow::kernels {

void PrefixValueCounts::reset(size_t slots) {
  slots_.clear();
  slots_.resize(slots);
}

void PrefixValueCounts::fold(const uint32_t* keys, size_t n) {
  if (n == 0) return;
  const size_t slot_count = slots_.size();
  // Group the low parts by slot.
  std::vector<size_t> start(slot_count + 1, 0);
  for (size_t i = 0; i < n; ++i) ++start[(keys[i] >> 16) + 1];
  for (size_t s = 0; s < slot_count; ++s) start[s + 1] += start[s];
  std::vector<uint16_t> grouped(n);
  std::vector<size_t> next(start.begin(), start.end() - 1);
  for (size_t i = 0; i < n; ++i) grouped[next[keys[i] >> 16]++] = static_cast<uint16_t>(keys[i]);
  // Tally each slot's values, then read the tally back in ascending order through the bitmap of
  // the values seen, clearing both for the next slot.
  std::vector<uint32_t> tally(kValues, 0);
  std::vector<uint64_t> seen(kValues / 64, 0);
  for (size_t s = 0; s < slot_count; ++s) {
    if (start[s] == start[s + 1]) continue;
    for (size_t i = start[s]; i < start[s + 1]; ++i) {
      const uint16_t value = grouped[i];
      ++tally[value];
      seen[value >> 6] |= uint64_t{1} << (value & 63);
    }
    Slot fresh;
    for (size_t word = 0; word < seen.size(); ++word) {
      for (uint64_t bits = seen[word]; bits != 0; bits &= bits - 1) {
        const uint32_t value = static_cast<uint32_t>(word * 64 + static_cast<size_t>(std::countr_zero(bits)));
        fresh.values.push_back(static_cast<uint16_t>(value));
        fresh.counts.push_back(tally[value]);
        tally[value] = 0;
      }
      seen[word] = 0;
    }
    merge_into(slots_[s], std::move(fresh));
  }
}

void PrefixValueCounts::add(const PrefixValueCounts& other) {
  for (size_t s = 0; s < slots_.size() && s < other.slots_.size(); ++s) merge_into(slots_[s], Slot(other.slots_[s]));
}

void PrefixValueCounts::merge_into(Slot& into, Slot&& fresh) {
  if (into.values.empty()) {
    into = std::move(fresh);
    return;
  }
  if (fresh.values.empty()) return;
  Slot merged;
  merged.values.reserve(into.values.size() + fresh.values.size());
  merged.counts.reserve(into.values.size() + fresh.values.size());
  size_t a = 0, b = 0;
  while (a < into.values.size() || b < fresh.values.size()) {
    if (b == fresh.values.size() || (a < into.values.size() && into.values[a] < fresh.values[b])) {
      merged.values.push_back(into.values[a]);
      merged.counts.push_back(into.counts[a++]);
    } else if (a == into.values.size() || fresh.values[b] < into.values[a]) {
      merged.values.push_back(fresh.values[b]);
      merged.counts.push_back(fresh.counts[b++]);
    } else {
      merged.values.push_back(into.values[a]);
      merged.counts.push_back(into.counts[a++] + fresh.counts[b++]);
    }
  }
  into = std::move(merged);
}

}  // namespace imflow::kernels
