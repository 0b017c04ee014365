// The per-run catalog columns (catalog_output.hpp): the fixed ones, the flag map's, then the
// photometry columns under imflow's names (CSV, FITS) or SExtractor's (FITS_LDAC, vectors for
// several apertures).
#include "catalog_output.hpp"

#include <charconv>

#include "imflow/kernels/aperture_geometry.hpp"
#include "ldac_columns.hpp"

namespace imflow::detail {

namespace {
using Kind = OutputColumn::Kind;

template <size_t N>
std::vector<OutputColumn> fixed_columns(const std::array<CatalogColumn, N>& columns) {
  std::vector<OutputColumn> out;
  out.reserve(N + 32);
  for (const CatalogColumn& c : columns) {
    OutputColumn column;
    column.name = c.name;
    column.unit = c.unit;
    column.description = c.description;
    column.form = c.form;
    column.source_value = c.value;
    out.push_back(std::move(column));
  }
  return out;
}

OutputColumn row_column(std::string name, std::string unit, std::string description, std::vector<int> offsets,
                        char form = 'D') {
  OutputColumn column;
  column.name = std::move(name);
  column.unit = std::move(unit);
  column.description = std::move(description);
  column.form = form;
  column.kind = Kind::row;
  column.offsets = std::move(offsets);
  return column;
}

OutputColumn magnitude_column(std::string name, std::string description, std::vector<int> fluxes,
                              std::vector<int> errors, bool error) {
  OutputColumn column = row_column(std::move(name), "mag", std::move(description), std::move(fluxes));
  column.kind = error ? Kind::magnitude_error : Kind::magnitude;
  column.error_offsets = std::move(errors);
  return column;
}

// The flag map's columns (input.flags) after the fixed ones: imflow's names or SExtractor's.
void add_flag_map_columns(const PhotometryTable* photometry, bool ldac, std::vector<OutputColumn>& out) {
  if (photometry == nullptr || !photometry->flag_map) return;
  OutputColumn ored, flagged;
  ored.name = ldac ? "IMAFLAGS_ISO" : "imaflags_iso";
  ored.description = "FLAG-image flags OR'ed over the iso. profile";
  flagged.name = ldac ? "NIMAFLAGS_ISO" : "nimaflags_iso";
  flagged.description = "Number of flagged pixels entering IMAFLAGS_ISO";
  ored.form = flagged.form = 'J';
  ored.source_value = [](const Source& s) { return double(s.imaflags_iso); };
  flagged.source_value = [](const Source& s) { return double(s.nimaflags_iso); };
  out.push_back(std::move(ored));
  out.push_back(std::move(flagged));
}

OutputColumn iso_magnitude_column(std::string name, std::string description, bool error) {
  OutputColumn column;
  column.name = std::move(name);
  column.unit = "mag";
  column.description = std::move(description);
  column.kind = error ? Kind::magnitude_error : Kind::magnitude;
  column.source_value = [](const Source& s) { return s.flux_iso; };
  column.source_error = [](const Source& s) { return s.flux_iso_err; };
  return column;
}
// SExtractor writes most of its measurements as float32, and PSFEx reads FLUX_RADIUS, SNR_WIN,
// ELONGATION, VIGNET and its PHOTFLUX_KEY column through float pointers: FITS_LDAC's type for them.
OutputColumn float32(OutputColumn column) {
  column.form = 'E';
  return column;
}

// XWIN_IMAGE.. FLAGS_WIN as SExtractor writes them: with a FLAGS_WIN bit set the position is the
// isophotal one (the errors and moments in the row already are).
void append_ldac_windowed(std::vector<OutputColumn>& out, int o) {
  using namespace kernels;
  OutputColumn x = row_column("XWIN_IMAGE", "pixel", "Windowed position estimate along x", {o + kWinX});
  OutputColumn y = row_column("YWIN_IMAGE", "pixel", "Windowed position estimate along y", {o + kWinY});
  x.shift = y.shift = 1.0;
  x.fallback = [](const Source& s) { return s.x; };
  y.fallback = [](const Source& s) { return s.y; };
  x.fallback_flag = y.fallback_flag = o + kWinFlags;
  out.push_back(std::move(x));
  out.push_back(std::move(y));
  out.push_back(row_column("ERRAWIN_IMAGE", "pixel", "RMS windowed pos error along major axis", {o + kWinErrA}, 'E'));
  out.push_back(row_column("ERRBWIN_IMAGE", "pixel", "RMS windowed pos error along minor axis", {o + kWinErrB}, 'E'));
  OutputColumn theta = row_column("ERRTHETAWIN_IMAGE", "deg", "Windowed error ellipse pos angle (CCW/x)",
                                  {o + kWinErrTheta}, 'E');
  theta.scale = kDegreesPerRadian;
  out.push_back(std::move(theta));
  out.push_back(row_column("ERRX2WIN_IMAGE", "pixel**2", "Variance of windowed pos along x", {o + kWinErrX2}));
  out.push_back(row_column("ERRY2WIN_IMAGE", "pixel**2", "Variance of windowed pos along y", {o + kWinErrY2}));
  out.push_back(row_column("ERRXYWIN_IMAGE", "pixel**2", "Covariance of windowed pos between x and y", {o + kWinErrXY}));
  out.push_back(row_column("X2WIN_IMAGE", "pixel**2", "Windowed variance along x", {o + kWinX2}));
  out.push_back(row_column("Y2WIN_IMAGE", "pixel**2", "Windowed variance along y", {o + kWinY2}));
  out.push_back(row_column("XYWIN_IMAGE", "pixel**2", "Windowed covariance between x and y", {o + kWinXY}));
  out.push_back(row_column("FLUX_WIN", "count", "Gaussian-weighted flux", {o + kWinFlux}, 'E'));
  out.push_back(row_column("FLUXERR_WIN", "count", "RMS error for WIN flux", {o + kWinFluxErr}, 'E'));
  out.push_back(row_column("SNR_WIN", "", "Gaussian-weighted SNR", {o + kWinSnr}, 'E'));
  OutputColumn flags = row_column("FLAGS_WIN", "", "Flags for WINdowed parameters", {o + kWinFlags}, 'I');
  flags.bits = kWinSextractorFlags;
  out.push_back(std::move(flags));
}
}  // namespace

std::string shortest_number(double value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

size_t leading_fixed_columns(const std::vector<OutputColumn>& columns) {
  if (columns.size() < kCatalogColumns.size()) return 0;
  for (size_t c = 0; c < kCatalogColumns.size(); ++c) {
    const OutputColumn& column = columns[c];
    if (column.kind != Kind::source || column.source_value != kCatalogColumns[c].value || column.flag_row >= 0) return 0;
  }
  return kCatalogColumns.size();
}

std::vector<OutputColumn> catalog_output_columns(const PhotometryTable* photometry) {
  std::vector<OutputColumn> out = fixed_columns(kCatalogColumns);
  add_flag_map_columns(photometry, false, out);
  if (photometry == nullptr) return out;
  const kernels::PhotometrySpec& spec = photometry->spec;
  const bool mags = photometry->zeropoint.has_value();
  if (spec.auto_flux) {
    const int o = spec.auto_offset();
    out.push_back(row_column("kron_radius", "", "Kron radius in units of a, b (SEP kron_radius)", {o}));
    out.push_back(row_column("flux_auto", "adu", "flux in the Kron ellipse (FLUX_AUTO)", {o + 1}));
    out.push_back(row_column("flux_auto_err", "adu", "error of flux_auto (FLUXERR_AUTO)", {o + 2}));
    if (mags) {
      out.push_back(magnitude_column("mag_auto", "magnitude of flux_auto (MAG_AUTO)", {o + 1}, {o + 2}, false));
      out.push_back(magnitude_column("magerr_auto", "error of mag_auto (MAGERR_AUTO)", {o + 1}, {o + 2}, true));
    }
    out.push_back(row_column("flags_auto", "", "SEP aperture flags of flux_auto", {o + 3}, 'K'));
  }
  for (int k = 0; k < spec.apertures; ++k) {
    const std::string d = shortest_number(spec.aperture_diameters[k]);
    const int o = spec.aperture_offset() + 2 * k;
    out.push_back(row_column("flux_aper_" + d, "adu", "flux in the circle of diameter " + d + " pix (FLUX_APER)", {o}));
    out.push_back(row_column("flux_aper_err_" + d, "adu", "error of flux_aper_" + d + " (FLUXERR_APER)", {o + 1}));
    if (mags) {
      out.push_back(magnitude_column("mag_aper_" + d, "magnitude of flux_aper_" + d + " (MAG_APER)", {o}, {o + 1}, false));
      out.push_back(magnitude_column("magerr_aper_" + d, "error of mag_aper_" + d + " (MAGERR_APER)", {o}, {o + 1}, true));
    }
  }
  for (int k = 0; k < spec.fractions; ++k) {
    const std::string f = shortest_number(spec.flux_fractions[k]);
    out.push_back(row_column("flux_radius_" + f, "pix", "radius holding " + f + " of flux_auto (FLUX_RADIUS)",
                             {spec.radius_offset() + k}));
  }
  if (spec.windowed) {
    const int o = spec.window_offset();
    out.push_back(row_column("xwin", "pix", "windowed position x, 0-based (SEP winpos)", {o}));
    out.push_back(row_column("ywin", "pix", "windowed position y, 0-based (SEP winpos)", {o + 1}));
    OutputColumn x = row_column("XWIN_IMAGE", "pix", "windowed position x, 1-based (XWIN_IMAGE)", {o});
    OutputColumn y = row_column("YWIN_IMAGE", "pix", "windowed position y, 1-based (YWIN_IMAGE)", {o + 1});
    x.shift = y.shift = 1.0;
    out.push_back(std::move(x));
    out.push_back(std::move(y));
    out.push_back(row_column("flags_win", "", "SEP aperture flags of xwin, ywin | SExtractor's FLAGS_WIN",
                             {o + kernels::kWinFlags}, 'K'));
    out.push_back(row_column("flux_win", "adu", "Gaussian-weighted flux (FLUX_WIN)", {o + kernels::kWinFlux}));
    out.push_back(row_column("flux_win_err", "adu", "error of flux_win (FLUXERR_WIN)", {o + kernels::kWinFluxErr}));
    out.push_back(row_column("snr_win", "", "flux_win / flux_win_err (SNR_WIN)", {o + kernels::kWinSnr}));
    out.push_back(row_column("x2win", "pix**2", "windowed variance along x (X2WIN_IMAGE)", {o + kernels::kWinX2}));
    out.push_back(row_column("y2win", "pix**2", "windowed variance along y (Y2WIN_IMAGE)", {o + kernels::kWinY2}));
    out.push_back(row_column("xywin", "pix**2", "windowed covariance (XYWIN_IMAGE)", {o + kernels::kWinXY}));
    out.push_back(row_column("errx2win", "pix**2", "variance of xwin (ERRX2WIN_IMAGE)", {o + kernels::kWinErrX2}));
    out.push_back(row_column("erry2win", "pix**2", "variance of ywin (ERRY2WIN_IMAGE)", {o + kernels::kWinErrY2}));
    out.push_back(row_column("errxywin", "pix**2", "covariance of xwin, ywin (ERRXYWIN_IMAGE)", {o + kernels::kWinErrXY}));
    out.push_back(row_column("errawin", "pix", "major axis of the windowed position's error ellipse (ERRAWIN_IMAGE)",
                             {o + kernels::kWinErrA}));
    out.push_back(row_column("errbwin", "pix", "minor axis of the windowed position's error ellipse (ERRBWIN_IMAGE)",
                             {o + kernels::kWinErrB}));
    out.push_back(row_column("errthetawin", "rad", "angle of that error ellipse from +x to +y (ERRTHETAWIN_IMAGE)",
                             {o + kernels::kWinErrTheta}));
  }
  if (spec.measures()) {
    out.push_back(row_column("flags_phot", "", "SEP aperture flags of every photometry measurement, or-ed",
                             {spec.flags_offset()}, 'K'));
  }
  if (mags) {
    out.push_back(iso_magnitude_column("mag_iso", "magnitude of flux_iso (MAG_ISO)", false));
    out.push_back(iso_magnitude_column("magerr_iso", "error of mag_iso (MAGERR_ISO)", true));
  }
  return out;
}

std::vector<OutputColumn> ldac_output_columns(const PhotometryTable* photometry) {
  std::vector<OutputColumn> out = fixed_columns(ldac_columns());
  add_flag_map_columns(photometry, true, out);
  if (photometry == nullptr) return out;
  const kernels::PhotometrySpec& spec = photometry->spec;
  // SExtractor's FLAGS 16 marks a photometry box cut by the edge, its 1 crowded FLUX_AUTO pixels:
  // where FLUX_AUTO is measured that replaces the non-finite neighbour's stand-in for 1.
  for (OutputColumn& column : out) {
    if (column.name != "FLAGS" || !spec.measures()) continue;
    column.flag_row = spec.flags_offset();
    column.row_flags = {{kernels::kAperTrunc, kSextractorApertureCut}, {kernels::kAutoCrowded, kSextractorCrowded}};
    if (spec.needs_auto()) column.flag_clear = kSextractorCrowded;
  }
  const bool mags = photometry->zeropoint.has_value();
  if (spec.auto_flux) {
    const int o = spec.auto_offset();
    OutputColumn kron = row_column("KRON_RADIUS", "", "Kron apertures in units of A or B", {o}, 'E');
    kron.scale = spec.kron_fact;
    kron.zero_unless_positive = o + 1;  // FLUX_AUTO
    out.push_back(std::move(kron));
    out.push_back(row_column("FLUX_AUTO", "count", "Flux within a Kron-like elliptical aperture", {o + 1}, 'E'));
    out.push_back(row_column("FLUXERR_AUTO", "count", "RMS error for AUTO flux", {o + 2}, 'E'));
    if (mags) {
      out.push_back(float32(magnitude_column("MAG_AUTO", "Kron-like elliptical aperture magnitude", {o + 1}, {o + 2}, false)));
      out.push_back(float32(magnitude_column("MAGERR_AUTO", "RMS error for AUTO magnitude", {o + 1}, {o + 2}, true)));
    }
  }
  if (spec.apertures > 0) {
    std::vector<int> fluxes, errors;
    for (int k = 0; k < spec.apertures; ++k) {
      fluxes.push_back(spec.aperture_offset() + 2 * k);
      errors.push_back(spec.aperture_offset() + 2 * k + 1);
    }
    out.push_back(row_column("FLUX_APER", "count", "Flux vector within fixed circular aperture(s)", fluxes, 'E'));
    out.push_back(row_column("FLUXERR_APER", "count", "RMS error vector for aperture flux(es)", errors, 'E'));
    if (mags) {
      out.push_back(float32(magnitude_column("MAG_APER", "Fixed aperture magnitude vector", fluxes, errors, false)));
      out.push_back(float32(magnitude_column("MAGERR_APER", "RMS error vector for fixed aperture mag.", fluxes, errors, true)));
    }
  }
  if (spec.fractions > 0) {
    std::vector<int> radii;
    for (int k = 0; k < spec.fractions; ++k) radii.push_back(spec.radius_offset() + k);
    out.push_back(row_column("FLUX_RADIUS", "pixel", "Fraction-of-light radii", radii, 'E'));
  }
  if (spec.windowed) append_ldac_windowed(out, spec.window_offset());
  if (mags) {
    out.push_back(float32(iso_magnitude_column("MAG_ISO", "Isophotal magnitude", false)));
    out.push_back(float32(iso_magnitude_column("MAGERR_ISO", "RMS error for isophotal magnitude", true)));
  }
  if (spec.vignet_size() > 0) {
    OutputColumn vignet;
    vignet.name = "VIGNET";
    vignet.unit = "count";
    vignet.description = "Pixel data around detection";
    vignet.form = 'E';
    vignet.kind = Kind::vignet;
    vignet.dims = {spec.vignet_width, spec.vignet_height};
    out.push_back(std::move(vignet));
  }
  return out;
}

}  // namespace imflow::detail
