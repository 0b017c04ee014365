// Flag-map values per source (image_flags.hpp): one pass over the label map; MOST sorts the
// flagged pixels' (label, value) pairs.
#include "imflow/kernels/image_flags.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace imflow::kernels {

namespace {
struct FlagSummary {
  int32_t value = 0;
  int64_t count = 0;
  bool any = false;
};

// MOST: per label, the value of most pixels; among equal counts, the one whose first pixel comes
// first in raster order (SExtractor keeps the first value of its list to reach the count).
void most_frequent(const int32_t* labels, const int32_t* flags, int64_t pixels, std::vector<FlagSummary>& out) {
  struct Pixel {
    int32_t label, value;
    int64_t index;
  };
  std::vector<Pixel> flagged;
  const auto count = static_cast<int32_t>(out.size()) - 1;
  for (int64_t i = 0; i < pixels; ++i) {
    if (labels[i] > 0 && labels[i] <= count && flags[i] != 0) flagged.push_back({labels[i], flags[i], i});
  }
  std::stable_sort(flagged.begin(), flagged.end(), [](const Pixel& a, const Pixel& b) {
    return a.label != b.label ? a.label < b.label : a.value < b.value;
  });
  std::vector<int64_t> first(out.size(), 0);
  for (size_t run = 0; run < flagged.size();) {
    size_t end = run;
    while (end < flagged.size() && flagged[end].label == flagged[run].label && flagged[end].value == flagged[run].value) ++end;
    FlagSummary& s = out[static_cast<size_t>(flagged[run].label)];
    const auto n = static_cast<int64_t>(end - run);
    const int64_t at = flagged[run].index;  // the run's first pixel in raster order (stable sort)
    if (!s.any || n > s.count || (n == s.count && at < first[static_cast<size_t>(flagged[run].label)])) {
      s = {flagged[run].value, n, true};
      first[static_cast<size_t>(flagged[run].label)] = at;
    }
    run = end;
  }
}
}  // namespace

void image_flags(const int32_t* labels, const int32_t* flags, int64_t pixels, FlagType type, Catalog& catalog) {
  const auto count = static_cast<int64_t>(catalog.size());
  std::vector<FlagSummary> summary(static_cast<size_t>(count) + 1);
  if (type == FlagType::most) {
    most_frequent(labels, flags, pixels, summary);
  } else {
    for (int64_t i = 0; i < pixels; ++i) {
      const int32_t label = labels[i], value = flags[i];
      if (label <= 0 || label > count || value == 0) continue;
      FlagSummary& s = summary[static_cast<size_t>(label)];
      switch (type) {
        case FlagType::bit_or:
          s.value |= value;
          ++s.count;
          break;
        case FlagType::bit_and:
          s.value = s.any ? (s.value & value) : value;
          ++s.count;
          break;
        case FlagType::minimum:
        case FlagType::maximum: {
          // Flags are unsigned, as SExtractor's FLAGTYPE: bit 31 is the largest value, not a sign.
          const auto flag = static_cast<uint32_t>(value), held = static_cast<uint32_t>(s.value);
          if (!s.any || (type == FlagType::minimum ? flag < held : flag > held)) {
            s.value = value;
            s.count = 0;
          }
          if (value == s.value) ++s.count;
          break;
        }
        case FlagType::most:
          break;
      }
      s.any = true;
    }
  }
  for (Source& s : catalog) {
    if (s.id <= 0 || s.id > count) continue;
    s.imaflags_iso = summary[static_cast<size_t>(s.id)].value;
    s.nimaflags_iso = static_cast<int32_t>(summary[static_cast<size_t>(s.id)].count);
  }
}

}  // namespace imflow::kernels
