// CPU against GPU catalogs as CSV lines: the same rows, each value within float64 summation
// order's reach (require_same_catalog_lines), for the GPU tests of whole pipelines.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace gpu_test {

inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields;
  for (size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1) {
    comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string::npos ? comma : comma - start));
  }
  return fields;
}

// Whether a column is one of the windowed block's (xwin, XWIN_IMAGE, flux_win, ...).
inline bool windowed_column(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name.find("win") != std::string::npos;
}

// Same rows and header; integer columns equal; every other value within 1e-5 relative (or 1e-9
// absolute): the GPU's float64 sums run in another order and its background map may differ
// from the CPU's in a last bit. A cross term (xy, cxy, errxy), a difference that cancels to near
// zero for a round source, is relative to its row's diagonal terms; an angle to a radian times
// (x2 + y2) / (a^2 - b^2), which close moments turn a near-round ellipse by. The windowed position
// iterates up to 16 steps over SEP's pixel box, whose bounds (and the 1e-4 px stopping test) jump
// with the position: a source that does not settle (e.g. inside a band of bad pixels) can take
// another path after a last-bit difference. Such rows may differ in their windowed columns, but
// they must be rare (one row, or one in 200 of a larger catalog) and their windowed position stay
// within 0.01 px.
inline void require_same_catalog_lines(const std::vector<std::vector<std::string>>& catalogs) {
  REQUIRE(catalogs[0].size() > 10);
  REQUIRE(catalogs[1].size() == catalogs[0].size());
  CHECK(catalogs[1][0] == catalogs[0][0]);
  const std::vector<std::string> header = split_csv(catalogs[0][0]);
  auto close = [](double va, double vb, double scale = 0.0) {
    if (std::isnan(va)) return std::isnan(vb);
    if (std::isinf(va)) return vb == va;
    return std::abs(va - vb) <= 1e-5 * std::max(std::abs(va), scale) + 1e-9;
  };
  auto column = [&header](const char* name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const std::vector<std::pair<size_t, std::pair<size_t, size_t>>> cross = {
      {column("xy"), {column("x2"), column("y2")}},
      {column("cxy"), {column("cxx"), column("cyy")}},
      {column("errxy"), {column("errx2"), column("erry2")}}};
  size_t diverged = 0;
  for (size_t r = 1; r < catalogs[0].size(); ++r) {
    const auto a = split_csv(catalogs[0][r]), b = split_csv(catalogs[1][r]);
    REQUIRE(a.size() == header.size());
    REQUIRE(b.size() == header.size());
    bool windowed_apart = false;
    for (size_t c = 0; c < header.size(); ++c) {
      if (windowed_column(header[c]) && !close(std::stod(a[c]), std::stod(b[c]))) windowed_apart = true;
    }
    diverged += windowed_apart ? 1 : 0;
    for (size_t c = 0; c < header.size(); ++c) {
      INFO("row " << r << " column " << header[c] << ": " << a[c] << " vs " << b[c]);
      const double va = std::stod(a[c]), vb = std::stod(b[c]);
      double scale = 0.0;
      if (header[c] == "theta" || header[c] == "errtheta") {  // errtheta: of errx2, erry2, erra, errb
        const std::string e = header[c] == "theta" ? "" : "err";
        auto at = [&](const char* n) { return std::stod(a[column((e + n).c_str())]); };
        scale = std::max(1.0, (at("x2") + at("y2")) / (at("a") * at("a") - at("b") * at("b")));  // round: any angle
      }
      for (const auto& [term, diagonal] : cross) {
        if (term == c && diagonal.first < a.size() && diagonal.second < a.size())
          scale = std::abs(std::stod(a[diagonal.first])) + std::abs(std::stod(a[diagonal.second]));
      }
      if (!windowed_apart || !windowed_column(header[c])) {
        CHECK(close(va, vb, scale));
      } else if (header[c] == "xwin" || header[c] == "ywin") {
        CHECK(std::abs(va - vb) <= 0.01);
      }
    }
  }
  if (diverged > 0) std::printf("windowed: %zu of %zu rows took another path\n", diverged, catalogs[0].size() - 1);
  CHECK(diverged <= std::max<size_t>(1, (catalogs[0].size() - 1) / 200));
}

}  // namespace gpu_test
