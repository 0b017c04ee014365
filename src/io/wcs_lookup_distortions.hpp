// Paper IV lookup-table distortions (CPDISj, CQDISi, D2IMDISj = 'Lookup': HST ACS and WFC3 images)
// take their tables from other HDUs, which WCSLIB cannot read (it rejects the whole WCS). Their
// records are dropped so the rest of the WCS (SIP included) still gives sky positions.
#pragma once
#include <string>

namespace imflow::detail {

// `header` (80-character records) without the records of its lookup-table distortions; `note`
// says they were dropped, with the largest correction dropped (CPERRj + CQERRi + D2IMERRj,
// pixels) when the header gives it. The header unchanged (and `note` untouched) when it has none.
std::string without_lookup_distortions(const std::string& header, std::string& note);

}  // namespace imflow::detail
