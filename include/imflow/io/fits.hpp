// FITS input and output through CFITSIO: listing the image planes of a file, reading one plane
// as float32 (BSCALE/BZERO applied, BLANK and NaN as NaN), writing images, label maps and
// catalog tables. Every writer is atomic (temporary name, then rename).
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/photometry.hpp"
#include "imflow/source.hpp"
#include "imflow/tile_rect.hpp"

namespace imflow {

// One image HDU of a file.
struct FitsImageInfo {
  int hdu = 0;                  // 0-based HDU index
  int bitpix = 0;               // as stored (for tile-compressed images, the image's BITPIX)
  std::vector<int64_t> naxes;   // NAXIS1, NAXIS2, ...
  std::string extname;          // EXTNAME, empty when absent
  // Set by scan_fits for an HDU that cannot be read (its header, or data the file does not hold):
  // the reason, naming the file; its item fails with it while the file's other HDUs go on.
  std::string error;
  int64_t width() const { return naxes.size() > 0 ? naxes[0] : 0; }
  int64_t height() const { return naxes.size() > 1 ? naxes[1] : 0; }
  // Planes: product of NAXIS3 and beyond (1 for a 2-D image).
  int64_t planes() const;
};

// Limits checked before any pixel is allocated.
struct ReadLimits {
  int64_t max_pixels = int64_t{1} << 32;  // per plane
  // Not null: the caller swaps float32 pixels from big-endian itself (the CUDA engine does it on
  // the device after the upload), so a plain BITPIX -32 image (no BSCALE/BZERO) read directly is
  // left in the file's byte order, and *float32_swap_deferred is set to true; any other FITS
  // image is converted as usual and it is set to false (the other formats leave it alone).
  bool* float32_swap_deferred = nullptr;
  // Not null: a FITS image read (read_fits_plane) also gives its HDU's header records there, as
  // read_fits_header_records does, so that its outputs' WCS need not open the file again.
  std::vector<std::string>* header_records = nullptr;
  // Not null: pixels read as +-Infinity from values beyond float32's range (BITPIX -64 data, or
  // stored values scaled beyond it) are added here,
  // only those inside out_of_range_core (plane coordinates; empty: every pixel read), instead of
  // a warning per read: a caller reading one plane in many regions (tiles with their halos,
  // strips) warns once for the plane (warn_beyond_float32).
  std::atomic<int64_t>* out_of_range_pixels = nullptr;
  TileRect out_of_range_core{};
};

// The warning for `count` pixels of a plane that read as +-Infinity from values beyond float32's range.
void warn_beyond_float32(const std::filesystem::path& path, int hdu, int64_t plane, int64_t count);

// Every image HDU of the file with at least two axes, all non-zero (empty primaries and tables
// are skipped), and each HDU that cannot be read with its `error`: an image header CFITSIO rejects,
// a header that claims more data than the file holds, an extension after the last readable HDU
// whose header cannot be parsed (a plain file's bytes there start with XTENSION; other bytes
// there are logged as ignored). Throws InputError naming the file when it is not a readable FITS
// file or has no image HDU at all.
std::vector<FitsImageInfo> scan_fits(const std::filesystem::path& path);

// Read plane `plane` of HDU `hdu` into `out` (resized). Returns the bytes of data as stored.
int64_t read_fits_plane(const std::filesystem::path& path, int hdu, int64_t plane, ImageBuffer& out,
                        const ReadLimits& limits = {});

// Read the pixels of `region` (whole-plane coordinates, inside the plane) of plane `plane` of HDU
// `hdu` into `out` (resized to the region), with the same BSCALE/BZERO/BLANK semantics as
// read_fits_plane; only the region is read (uncompressed data: pread of its rows, converted as
// CFITSIO would, bit for bit; otherwise fits_read_subset, and tile-compressed images decompress
// only the compression tiles it touches). limits.max_pixels bounds the region. Returns the
// region's bytes as stored.
int64_t read_fits_region(const std::filesystem::path& path, int hdu, int64_t plane, const TileRect& region,
                         ImageBuffer& out, const ReadLimits& limits = {});

// The numeric value of header keyword `keyword` in HDU `hdu`, else in the primary header; nullopt
// when neither has it. Throws InputError naming the file when it cannot be read or the keyword's
// value is not a number.
std::optional<double> read_fits_number_keyword(const std::filesystem::path& path, int hdu, const std::string& keyword);
// The same looked up first in `hdu_header`, HDU `hdu`'s records as its read gave them
// (WorkItem::fits_header), as CFITSIO reads a card; the file is opened only for an extension's
// primary header when they lack the keyword. Empty records: the file's, as above.
std::optional<double> read_fits_number_keyword(const std::filesystem::path& path, int hdu, const std::string& keyword,
                                               const std::vector<std::string>& hdu_header);

// Plane `plane` (of `pixels` pixels) of image HDU `hdu` as exact integers (BZERO applied, BLANK
// as 0). Throws InputError naming the file for an image of floating-point values or a failed read.
std::vector<int64_t> read_fits_integer_plane(const std::filesystem::path& path, int hdu, int64_t plane, int64_t pixels);

// The header of image HDU `hdu` as 80-character records, COMMENT, HISTORY and blank ones
// included, END left out (a tile-compressed image's as the image's). Throws InputError naming the
// file when it cannot be read.
std::vector<std::string> read_fits_header_records(const std::filesystem::path& path, int hdu);

namespace detail {
// A tile-compressed image's header records (the BINTABLE's) as the image's, by the convention's
// rules: ZBITPIX, ZNAXIS, ZNAXISn, ZTENSION, ... as BITPIX, NAXIS, ...; the table's structure,
// column and compression keywords left out (read_fits_header_records' fallback for headers
// CFITSIO cannot convert).
std::vector<std::string> image_header_of_compressed(const std::vector<std::string>& table);
}  // namespace detail

// A header card to copy into an output file.
struct FitsCard {
  std::string key;
  std::string value;  // written as a string, or as a number when `numeric`; a whole record when `record`
  std::string comment;
  bool numeric = false;
  bool record = false;   // `value` is an 80-character header record written as it is (e.g. WCS keywords)
  bool integer = false;  // with `numeric`: written as an integer (an HDU number), not a real
};

void write_fits_image(const std::filesystem::path& path, ConstImageView image, const std::vector<FitsCard>& cards = {});
void write_fits_labels(const std::filesystem::path& path, View2D<const int32_t> labels,
                       const std::vector<FitsCard>& cards = {});

// A catalog as a FITS binary table (EXTNAME CATALOG) with TUNIT and image metadata as keywords.
void write_catalog_fits(const std::filesystem::path& path, const Catalog& catalog, const std::vector<FitsCard>& cards,
                        const PhotometryTable* photometry = nullptr);

}  // namespace imflow
