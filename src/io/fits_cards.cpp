// Writing header cards into a FITS file (fits_cards.hpp).
#include "fits_cards.hpp"

#include <string>

namespace imflow::detail {

namespace {
constexpr size_t kShortStringChars = 68;  // the most a string value holds in one card (quotes aside)
}  // namespace

int write_fits_cards(fitsfile* file, const std::vector<FitsCard>& cards) {
  int status = 0;
  for (const FitsCard& card : cards) {
    if (card.record) {
      fits_write_record(file, card.value.c_str(), &status);
    } else if (card.numeric && card.integer) {
      LONGLONG value = std::stoll(card.value);
      fits_update_key(file, TLONGLONG, card.key.c_str(), &value, card.comment.c_str(), &status);
    } else if (card.numeric) {
      double value = std::stod(card.value);
      fits_update_key(file, TDOUBLE, card.key.c_str(), &value, card.comment.c_str(), &status);
    } else if (card.value.size() > kShortStringChars) {
      // A long path: continued on CONTINUE cards (the long-string convention; LONGSTRN is written).
      fits_update_key_longstr(file, card.key.c_str(), card.value.c_str(), card.comment.c_str(), &status);
    } else {
      fits_update_key(file, TSTRING, card.key.c_str(), const_cast<char*>(card.value.c_str()), card.comment.c_str(),
                      &status);
    }
  }
  return status;
}

}  // namespace imflow::detail
