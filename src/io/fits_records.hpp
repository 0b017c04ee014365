// FITS header records (80-character cards as fits_hdr2str gives them): their length and keyword.
#pragma once
#include <cstddef>
#include <string>

namespace imflow::detail {

inline constexpr size_t kRecordLength = 80;

// The record's keyword: its first 8 characters, trailing blanks removed.
inline std::string record_keyword(const std::string& record) {
  std::string key = record.substr(0, 8);
  while (!key.empty() && key.back() == ' ') key.pop_back();
  return key;
}

}  // namespace imflow::detail
