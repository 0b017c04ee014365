// FITS_LDAC catalogs (SExtractor's CATALOG_TYPE FITS_LDAC, read by SCAMP and PSFEx): the image
// header as LDAC_IMHEAD's one text cell, then LDAC_OBJECTS.
#include <fitsio.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fits_output.hpp"
#include "fits_records.hpp"
#include "fits_status.hpp"
#include "fits_table.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/ldac.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
using detail::kRecordLength;
using detail::record_keyword;

// The value text of a numeric "KEY     = value / comment" record, trimmed ("" when it has none).
std::string value_of(const std::string& record) {
  if (record.size() < 10 || record.compare(8, 2, "= ") != 0) return "";
  const size_t slash = record.find('/', 10);
  const std::string value = record.substr(10, slash == std::string::npos ? std::string::npos : slash - 10);
  const size_t first = value.find_first_not_of(' '), last = value.find_last_not_of(' ');
  return first == std::string::npos ? "" : value.substr(first, last - first + 1);
}

std::string record(const std::string& key, const std::string& value, const std::string& comment = "") {
  char text[kRecordLength + 1];
  std::snprintf(text, sizeof text, "%-8.8s= %20s%s%s", key.c_str(), value.c_str(), comment.empty() ? "" : " / ",
                comment.c_str());
  std::string out(text);
  out.resize(kRecordLength, ' ');
  return out;
}

bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The keywords that describe the data unit's layout, which LDAC_IMHEAD's own lead records replace.
bool structural(const std::string& key) {
  if (key == "SIMPLE" || key == "XTENSION" || key == "BITPIX" || key == "EXTEND" || key == "PCOUNT" ||
      key == "GCOUNT" || key == "END" || key == "NAXIS") {
    return true;
  }
  return key.starts_with("NAXIS") && key.size() > 5 && digit(key[5]);
}

// WCS keywords (every axis and alternate description): a cube's, which its plane's replace.
bool wcs_keyword(const std::string& key) {
  for (std::string_view name : {"WCSAXES", "WCSNAME", "LONPOLE", "LATPOLE"}) {
    if (key.starts_with(name) && key.size() <= name.size() + 1) return true;
  }
  for (std::string_view prefix : {"CTYPE", "CRVAL", "CRPIX", "CDELT", "CUNIT", "CROTA", "CRDER", "CSYER", "CNAME"}) {
    if (key.starts_with(prefix) && key.size() > prefix.size() && digit(key[prefix.size()])) return true;
  }
  // PCi_j, CDi_j, PVi_m, PSi_m
  return key.size() > 3 && (key.starts_with("PC") || key.starts_with("CD") || key.starts_with("PV") ||
                            key.starts_with("PS")) && digit(key[2]) && key.find('_') != std::string::npos;
}

bool commentary(const std::string& key) { return key.empty() || key == "COMMENT" || key == "HISTORY"; }

}  // namespace

std::vector<std::string> ldac_image_header(const std::vector<std::string>& image_records, int64_t width, int64_t height,
                                           bool cube_plane, const std::vector<std::string>& plane_wcs_records) {
  std::string bitpix = "-32", naxis1 = std::to_string(width), naxis2 = std::to_string(height);
  std::vector<std::string> kept;
  std::set<std::string> keys;
  for (std::string text : image_records) {
    text.resize(kRecordLength, ' ');
    const std::string key = record_keyword(text);
    if (key == "BITPIX" && !value_of(text).empty()) bitpix = value_of(text);
    if (key == "NAXIS1" && width <= 0) naxis1 = value_of(text);
    if (key == "NAXIS2" && height <= 0) naxis2 = value_of(text);
    if (structural(key) || (cube_plane && wcs_keyword(key))) continue;
    if (!commentary(key)) keys.insert(key);
    kept.push_back(std::move(text));
  }
  std::vector<std::string> header = {record("SIMPLE", "T"), record("BITPIX", bitpix), record("NAXIS", "2"),
                                     record("NAXIS1", naxis1), record("NAXIS2", naxis2)};
  header.insert(header.end(), kept.begin(), kept.end());
  if (cube_plane) {
    for (std::string text : plane_wcs_records) {
      text.resize(kRecordLength, ' ');
      const std::string key = record_keyword(text);
      if (commentary(key) || keys.count(key) != 0) continue;  // wcshdo's comments; RADESYS etc. kept as given
      header.push_back(std::move(text));
    }
  }
  header.push_back(std::string("END").append(kRecordLength - 3, ' '));
  return header;
}

void add_ldac_extraction_keywords(std::vector<std::string>& header, const LdacExtraction& extraction) {
  std::vector<std::string> records;
  auto add = [&](const char* key, const std::optional<double>& value, const char* comment) {
    if (!value || !std::isfinite(*value)) return;
    char text[32];
    std::snprintf(text, sizeof text, "%.10G", *value);
    records.push_back(record(key, text, comment));
  };
  add("SEXBKGND", extraction.background, "Median background level (ADU)");
  add("SEXBKDEV", extraction.rms, "Median background RMS (ADU)");
  add("SEXTHLD", extraction.threshold, "Extraction threshold (ADU)");
  add("SEXGAIN", extraction.gain, "Gain used (e-/ADU)");
  const auto end = header.empty() || record_keyword(header.back()) != "END" ? header.end() : header.end() - 1;
  header.insert(end, records.begin(), records.end());
}

void write_catalog_ldac(const fs::path& path, const Catalog& catalog, const std::vector<std::string>& image_header,
                        const std::vector<FitsCard>& cards, const PhotometryTable* photometry) {
  const std::vector<detail::OutputColumn> columns = detail::ldac_output_columns(photometry);
  thread_local detail::MemoryFitsBuffer buffer;
  detail::MemoryFitsBuffer* in_memory = detail::table_fits_in_memory(catalog.size(), columns) ? &buffer : nullptr;
  detail::write_fits_file(path, in_memory, [&](fitsfile* file, detail::LastTableRows* rows) {
    int status = 0;
    if (fits_create_img(file, BYTE_IMG, 0, nullptr, &status) != 0) detail::fail_fits_output(path, "cannot create the primary HDU", status);
    std::string text;
    for (const std::string& line : image_header) text += line;
    std::string form = std::to_string(text.size()) + "A";
    char* name = const_cast<char*>("Field Header Card");
    char* form_text = form.data();
    long dims[2] = {static_cast<long>(kRecordLength), static_cast<long>(image_header.size())};
    if (fits_create_tbl(file, BINARY_TBL, 1, 1, &name, &form_text, nullptr, "LDAC_IMHEAD", &status) != 0 ||
        fits_write_tdim(file, 1, 2, dims, &status) != 0 ||
        fits_write_tblbytes(file, 1, 1, static_cast<LONGLONG>(text.size()), reinterpret_cast<unsigned char*>(text.data()),
                            &status) != 0) {
      detail::fail_fits_output(path, "cannot write LDAC_IMHEAD", status);
    }
    detail::write_catalog_table(file, path, "LDAC_OBJECTS", catalog, photometry, columns, cards, rows);
  });
}

void merge_ldac_files(const std::vector<fs::path>& parts, const fs::path& path) {
  AtomicOutput output(path);
  detail::FitsFile file = detail::create_output_fits(output);
  int status = 0;
  if (fits_create_img(file.get(), BYTE_IMG, 0, nullptr, &status) != 0) detail::fail_fits_output(path, "cannot create the primary HDU", status);
  for (const fs::path& part : parts) {
    detail::FitsFile in;
    int type = 0;
    if (detail::open_fits_readonly(in, part, &status) != 0) detail::fail_fits_output(part, "cannot open the HDU's catalog to merge", status);
    for (const int hdu : {2, 3}) {  // LDAC_IMHEAD, LDAC_OBJECTS
      if (fits_movabs_hdu(in.get(), hdu, &type, &status) != 0 || fits_copy_hdu(in.get(), file.get(), 0, &status) != 0) {
        detail::fail_fits_output(path, "cannot copy " + part.filename().string() + " into the merged catalog", status);
      }
    }
  }
  detail::finish_output_fits(file, output);
}

}  // namespace imflow
