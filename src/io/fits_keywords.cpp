// Header keywords of an image HDU read on demand: a number (e.g. a detector's GAIN) or the whole
// header (the FITS_LDAC catalog's copy of the image header).
#include <fitsio.h>
extern "C" {
#include <fitsio2.h>  // ffc2d: CFITSIO's own conversion of a value to a double, as fits_read_key's
}

#include <algorithm>
#include <cctype>
#include <string_view>

#include "fits_records.hpp"
#include "fits_status.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
std::string not_a_number(const fs::path& path, int hdu, const std::string& keyword) {
  return path.string() + ": HDU " + std::to_string(hdu) + ": keyword " + keyword + " is not a number";
}

// `keyword` read from `records` as fits_read_key(TDOUBLE) reads it from the header they are:
// CFITSIO's status (0 with `value` set, KEY_NO_EXIST, or why the value is not a number).
int number_in_records(const std::vector<std::string>& records, const std::string& keyword, double& value) {
  std::string wanted = keyword;
  for (char& c : wanted) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const std::string& record : records) {
    if (detail::record_keyword(record) != wanted) continue;
    char card[FLEN_CARD] = {};
    record.copy(card, std::min(record.size(), detail::kRecordLength));
    char text[FLEN_VALUE] = {}, comment[FLEN_COMMENT] = {};
    int status = 0;
    if (ffpsvc(card, text, comment, &status) == 0) ffc2d(text, &value, &status);
    return status;
  }
  return KEY_NO_EXIST;
}
}  // namespace

std::optional<double> read_fits_number_keyword(const fs::path& path, int hdu, const std::string& keyword) {
  detail::FitsFile file;
  int status = 0, type = 0;
  const detail::FitsMessages messages;
  if (detail::open_fits_readonly(file, path, &status) != 0) {
    throw InputError(detail::fits_not_opened_text(path, status));
  }
  // The HDU's own card first, then the primary header's (multi-extension files often keep
  // detector keywords there, and astropy users expect them to apply to every extension).
  for (const int at : {hdu, 0}) {
    if (fits_movabs_hdu(file.get(), at + 1, &type, &status) != 0) {
      throw InputError(detail::fits_error_text(path, "cannot move to HDU " + std::to_string(at), status));
    }
    double value = 0.0;
    int key_status = 0;
    if (fits_read_key(file.get(), TDOUBLE, keyword.c_str(), &value, nullptr, &key_status) == 0) return value;
    // KEY_NO_EXIST: not in this header; VALUE_UNDEFINED or BAD_C2D: present but not a number.
    if (key_status != KEY_NO_EXIST) throw InputError(not_a_number(path, at, keyword));
    if (at == 0) break;
  }
  return std::nullopt;
}

std::optional<double> read_fits_number_keyword(const fs::path& path, int hdu, const std::string& keyword,
                                               const std::vector<std::string>& hdu_header) {
  if (hdu_header.empty()) return read_fits_number_keyword(path, hdu, keyword);
  double value = 0.0;
  const int status = number_in_records(hdu_header, keyword, value);
  if (status == 0) return value;
  if (status != KEY_NO_EXIST) throw InputError(not_a_number(path, hdu, keyword));
  if (hdu == 0) return std::nullopt;
  return read_fits_number_keyword(path, 0, keyword);  // the primary header's
}

namespace {
std::vector<std::string> split_records(const char* text, int keys) {
  std::vector<std::string> records;
  records.reserve(static_cast<size_t>(keys));
  for (int k = 0; k < keys; ++k) records.emplace_back(text + static_cast<size_t>(k) * detail::kRecordLength, detail::kRecordLength);
  if (!records.empty() && records.back().starts_with("END ")) records.pop_back();
  return records;
}

bool indexed(const std::string& key, std::string_view prefix) {
  return key.size() > prefix.size() && key.starts_with(prefix) &&
         std::all_of(key.begin() + static_cast<std::ptrdiff_t>(prefix.size()), key.end(), [](char c) { return c >= '0' && c <= '9'; });
}
}  // namespace

namespace detail {
std::vector<std::string> image_header_of_compressed(const std::vector<std::string>& table) {
  std::vector<std::string> image;
  for (const std::string& record : table) {
    const std::string key = detail::record_keyword(record);
    std::string renamed;  // the image keyword a Z keyword stands for
    if (key == "ZSIMPLE" || key == "ZTENSION" || key == "ZBITPIX" || key == "ZNAXIS" || indexed(key, "ZNAXIS") ||
        key == "ZPCOUNT" || key == "ZGCOUNT" || key == "ZEXTEND" || key == "ZBLOCKED" || key == "ZHECKSUM" ||
        key == "ZDATASUM") {
      renamed = key == "ZHECKSUM" ? "CHECKSUM" : key == "ZTENSION" ? "XTENSION" : key.substr(1);
    }
    if (!renamed.empty()) {
      std::string out = renamed;
      out.resize(8, ' ');
      image.push_back(out + record.substr(8));
      continue;
    }
    const bool table_keyword = key == "XTENSION" || key == "BITPIX" || key == "NAXIS" || indexed(key, "NAXIS") ||
                               key == "PCOUNT" || key == "GCOUNT" || key == "TFIELDS" || key == "THEAP" ||
                               key == "CHECKSUM" || key == "DATASUM";
    bool column_keyword = false;
    for (std::string_view prefix : {"TTYPE", "TFORM", "TUNIT", "TDIM", "TNULL", "TSCAL", "TZERO", "TDISP"}) {
      column_keyword = column_keyword || indexed(key, prefix);
    }
    bool compression_keyword = key == "ZIMAGE" || key == "ZCMPTYPE" || key == "ZMASKCMP" || key == "ZQUANTIZ" ||
                               key == "ZDITHER0";
    for (std::string_view prefix : {"ZTILE", "ZNAME", "ZVAL"}) compression_keyword = compression_keyword || indexed(key, prefix);
    if (!table_keyword && !column_keyword && !compression_keyword) image.push_back(record);
  }
  return image;
}
}  // namespace detail

namespace detail {
std::vector<std::string> header_records_of(fitsfile* file, const fs::path& path, int hdu) {
  int status = 0, type = 0, keys = 0;
  char* header = nullptr;
  const FitsMessages messages;
  const bool compressed = fits_is_compressed_image(file, &status) != 0;
  // A tile-compressed image's header as the image's (ZNAXISn as NAXISn, ...).
  if (compressed) fits_convert_hdr2str(file, 0, nullptr, 0, &header, &keys, &status);
  else fits_hdr2str(file, 0, nullptr, 0, &header, &keys, &status);
  if (compressed && status != 0) {
    // CFITSIO 4.2's conversion fails on some valid files (one without ZTENSION: it then reads its
    // own result as an extension that does not start with XTENSION, status 252): the table's
    // header translated as the tile-compression convention defines instead.
    int ignored = 0;
    if (header != nullptr) fits_free_memory(header, &ignored);
    header = nullptr;
    status = 0;
    messages.discard();
    if (fits_movabs_hdu(file, hdu + 1, &type, &status) == 0 &&
        fits_hdr2str(file, 0, nullptr, 0, &header, &keys, &status) == 0 && header != nullptr) {
      std::vector<std::string> records = image_header_of_compressed(split_records(header, keys));
      fits_free_memory(header, &status);
      return records;
    }
  }
  if (status != 0 || header == nullptr) {
    int ignored = 0;
    if (header != nullptr) fits_free_memory(header, &ignored);
    throw InputError(fits_error_text(path, "cannot read the header of HDU " + std::to_string(hdu), status));
  }
  std::vector<std::string> records = split_records(header, keys);
  fits_free_memory(header, &status);
  return records;
}
}  // namespace detail

std::vector<std::string> read_fits_header_records(const fs::path& path, int hdu) {
  detail::FitsFile file;
  int status = 0, type = 0;
  const detail::FitsMessages messages;
  if (detail::open_fits_readonly(file, path, &status) != 0 || fits_movabs_hdu(file.get(), hdu + 1, &type, &status) != 0) {
    throw InputError(detail::fits_error_text(path, "cannot read the header of HDU " + std::to_string(hdu), status));
  }
  return detail::header_records_of(file.get(), path, hdu);
}

}  // namespace imflow
