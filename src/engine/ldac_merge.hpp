// Multi-extension FITS inputs: the FITS_LDAC catalogs of a file's HDUs gathered into one file, one
// LDAC_IMHEAD/LDAC_OBJECTS pair per HDU in HDU order, as SExtractor writes a MEF's catalog (SCAMP
// reads the pairs as the chips of one exposure).
#pragma once
#include <nlohmann/json.hpp>

#include "imflow/summary.hpp"

namespace imflow {

// For every input file with two or more image HDUs among the summary's items (no cube planes),
// all of them successful with a `.ldac` output: OUT/<dir>/<name>.ldac (<name>.mef.ldac when HDU 0
// has its own <name>.ldac), written atomically; the per-HDU files stay. A file with a failed HDU
// gets no merged catalog (a warning says so). Returns the merged files written.
int64_t write_mef_ldacs(const nlohmann::json& summary);
int64_t write_mef_ldacs(const RunSummary& summary);

}  // namespace imflow
