// The per-run catalog columns (catalog_output.hpp): the fixed ones, then the photometry columns
// under imflow's names (CSV, FITS) or SExtractor's (FITS_LDAC, vectors for several apertures).
#include "catalog_output.hpp"

#include <charconv>

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
}  // namespace

std::string shortest_number(double value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

std::vector<OutputColumn> catalog_output_columns(const PhotometryTable* photometry) {
  std::vector<OutputColumn> out = fixed_columns(catalog_columns());
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
    out.push_back(row_column("flags_win", "", "SEP aperture flags of xwin, ywin", {o + 2}, 'K'));
  }
  if (mags) {
    out.push_back(iso_magnitude_column("mag_iso", "magnitude of flux_iso (MAG_ISO)", false));
    out.push_back(iso_magnitude_column("magerr_iso", "error of mag_iso (MAGERR_ISO)", true));
  }
  return out;
}

std::vector<OutputColumn> ldac_output_columns(const PhotometryTable* photometry) {
  std::vector<OutputColumn> out = fixed_columns(ldac_columns());
  if (photometry == nullptr) return out;
  const kernels::PhotometrySpec& spec = photometry->spec;
  const bool mags = photometry->zeropoint.has_value();
  if (spec.auto_flux) {
    const int o = spec.auto_offset();
    OutputColumn kron = row_column("KRON_RADIUS", "", "Kron apertures in units of A or B", {o});
    kron.scale = spec.kron_fact;
    out.push_back(std::move(kron));
    out.push_back(row_column("FLUX_AUTO", "count", "Flux within a Kron-like elliptical aperture", {o + 1}));
    out.push_back(row_column("FLUXERR_AUTO", "count", "RMS error for AUTO flux", {o + 2}));
    if (mags) {
      out.push_back(magnitude_column("MAG_AUTO", "Kron-like elliptical aperture magnitude", {o + 1}, {o + 2}, false));
      out.push_back(magnitude_column("MAGERR_AUTO", "RMS error for AUTO magnitude", {o + 1}, {o + 2}, true));
    }
  }
  if (spec.apertures > 0) {
    std::vector<int> fluxes, errors;
    for (int k = 0; k < spec.apertures; ++k) {
      fluxes.push_back(spec.aperture_offset() + 2 * k);
      errors.push_back(spec.aperture_offset() + 2 * k + 1);
    }
    out.push_back(row_column("FLUX_APER", "count", "Flux vector within fixed circular aperture(s)", fluxes));
    out.push_back(row_column("FLUXERR_APER", "count", "RMS error vector for aperture flux(es)", errors));
    if (mags) {
      out.push_back(magnitude_column("MAG_APER", "Fixed aperture magnitude vector", fluxes, errors, false));
      out.push_back(magnitude_column("MAGERR_APER", "RMS error vector for fixed aperture mag.", fluxes, errors, true));
    }
  }
  if (spec.fractions > 0) {
    std::vector<int> radii;
    for (int k = 0; k < spec.fractions; ++k) radii.push_back(spec.radius_offset() + k);
    out.push_back(row_column("FLUX_RADIUS", "pixel", "Fraction-of-light radii", radii));
  }
  if (spec.windowed) {
    OutputColumn x = row_column("XWIN_IMAGE", "pixel", "Windowed position estimate along x", {spec.window_offset()});
    OutputColumn y = row_column("YWIN_IMAGE", "pixel", "Windowed position estimate along y", {spec.window_offset() + 1});
    x.shift = y.shift = 1.0;
    out.push_back(std::move(x));
    out.push_back(std::move(y));
  }
  if (mags) {
    out.push_back(iso_magnitude_column("MAG_ISO", "Isophotal magnitude", false));
    out.push_back(iso_magnitude_column("MAGERR_ISO", "RMS error for isophotal magnitude", true));
  }
  return out;
}

}  // namespace imflow::detail
