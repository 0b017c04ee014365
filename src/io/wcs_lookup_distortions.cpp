// Paper IV lookup-table distortions left out of a FITS header before WCSLIB parses it
// (wcs_lookup_distortions.hpp).
#include "wcs_lookup_distortions.hpp"
#include "fits_records.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

namespace imflow::detail {

namespace {
constexpr size_t kRecord = detail::kRecordLength;

std::string trimmed(std::string_view text) {
  const size_t first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  return std::string(text.substr(first, text.find_last_not_of(' ') - first + 1));
}
}  // namespace

std::string without_lookup_distortions(const std::string& header, std::string& note) {
  struct Family {
    const char *dis, *record, *error;  // e.g. CPDIS1 = 'Lookup', DP1 = 'EXTVER: 1', CPERR1 = 0.06
  };
  static constexpr Family kFamilies[] = {{"CPDIS", "DP", "CPERR"}, {"CQDIS", "DQ", "CQERR"}, {"D2IMDIS", "D2IM", "D2IMERR"}};
  auto key_of = [&](size_t at) { return trimmed(std::string_view(header).substr(at, 8)); };
  auto value_of = [&](size_t at) { return std::string_view(header).substr(at + 10, kRecord - 10); };
  std::set<std::string> dropped;  // keywords of the lookup distortions' records
  for (size_t at = 0; at + kRecord <= header.size(); at += kRecord) {
    const std::string key = key_of(at);
    for (const Family& family : kFamilies) {
      const std::string_view prefix = family.dis;
      if (!key.starts_with(prefix) || key.size() == prefix.size()) continue;
      const std::string axis = key.substr(prefix.size());
      if (value_of(at).find("'Lookup") == std::string_view::npos && value_of(at).find("'LOOKUP") == std::string_view::npos) continue;
      dropped.insert({key, family.record + axis, family.error + axis});
      if (family.record == std::string_view("D2IM")) dropped.insert("D2IMEXT");
    }
  }
  if (dropped.empty()) return header;
  std::string kept;
  std::map<std::string, double> error_of_axis;  // "1" -> summed CPERR1 + D2IMERR1 ...
  for (size_t at = 0; at + kRecord <= header.size(); at += kRecord) {
    const std::string key = key_of(at);
    if (!dropped.contains(key)) {
      kept.append(header, at, kRecord);
      continue;
    }
    for (const Family& family : kFamilies) {
      const std::string_view prefix = family.error;
      if (key.starts_with(prefix) && key.size() > prefix.size() && std::isdigit(static_cast<unsigned char>(key[prefix.size()]))) {
        error_of_axis[key.substr(prefix.size())] += std::strtod(std::string(value_of(at)).c_str(), nullptr);
      }
    }
  }
  double largest = 0.0;
  for (const auto& [axis, error] : error_of_axis) largest = std::max(largest, error);
  char text[160];
  if (largest > 0.0) {
    std::snprintf(text, sizeof text, "distortion lookup tables ('Lookup', in other HDUs) ignored: positions off by up to %.3g pixels (CPERR/D2IMERR)", largest);
  } else {
    std::snprintf(text, sizeof text, "distortion lookup tables ('Lookup', in other HDUs) ignored: the header gives no bound on their size");
  }
  note = text;
  return kept;
}

}  // namespace imflow::detail
