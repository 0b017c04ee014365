// The measure step's photometry rows of one catalog (kernels::measure_photometry's layout) and
// the magnitude zeropoint they are written with; the catalog writers add their columns.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

#include "imflow/kernels/photometry_spec.hpp"

namespace imflow {

struct PhotometryTable {
  kernels::PhotometrySpec spec;
  std::optional<double> zeropoint;  // set: the mag_* columns (zeropoint - 2.5 log10 flux)
  std::vector<double> rows;         // catalog.size() x spec.stride(), row-major
  std::vector<float> vignets;       // catalog.size() x spec.vignet_size() (SExtractor's VIGNET), or empty
  bool flag_map = false;            // set: the imaflags_iso, nimaflags_iso columns (input.flags)

  const double* row(size_t source) const { return rows.data() + source * static_cast<size_t>(spec.stride()); }
  const float* vignet(size_t source) const {
    return vignets.empty() ? nullptr : vignets.data() + source * static_cast<size_t>(spec.vignet_size());
  }
};

}  // namespace imflow
