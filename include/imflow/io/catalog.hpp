// Catalogs as CSV text (the FITS table writer is in io/fits.hpp).
#pragma once
#include <filesystem>
#include <string>

#include "imflow/source.hpp"

namespace imflow {

std::string catalog_csv(const Catalog& catalog);
void write_catalog_csv(const std::filesystem::path& path, const Catalog& catalog);

}  // namespace imflow
