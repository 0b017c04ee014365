// Flag-map values per source (image_flags.hpp): one pass over the label map.
#include "imflow/kernels/image_flags.hpp"

#include <cstddef>
#include <vector>

namespace imflow::kernels {

void or_image_flags(const int32_t* labels, const int32_t* flags, int64_t pixels, Catalog& catalog) {
  const auto count = static_cast<int64_t>(catalog.size());
  std::vector<int32_t> ored(static_cast<size_t>(count) + 1, 0), flagged(static_cast<size_t>(count) + 1, 0);
  for (int64_t i = 0; i < pixels; ++i) {
    const int32_t label = labels[i];
    if (label <= 0 || label > count || flags[i] == 0) continue;
    ored[static_cast<size_t>(label)] |= flags[i];
    ++flagged[static_cast<size_t>(label)];
  }
  for (Source& s : catalog) {
    if (s.id <= 0 || s.id > count) continue;
    s.imaflags_iso = ored[static_cast<size_t>(s.id)];
    s.nimaflags_iso = flagged[static_cast<size_t>(s.id)];
  }
}

}  // namespace imflow::kernels
