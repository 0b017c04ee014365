// TileRun: which planes become tiles, their item references, the pre-pass hook, unfinished images.
#include "tiled_image.hpp"

#include <spdlog/spdlog.h>

#include <new>

#include "stages.hpp"
#include "steps/measure_gain.hpp"

namespace imflow {

namespace fs = std::filesystem;

void TiledImage::fail(const std::string& message) {
  std::lock_guard lock(mutex);
  if (error.empty()) error = message;
  failed = true;
}

double TiledImage::measure_gain(const Step& measure) {
  std::call_once(gain_once_, [&] { gain_ = GainSetting::from_resolved(measure.params()).for_item(image); });
  return gain_;
}

int64_t tile_image_index(const ItemRef& tile) { return tile.tiled ? tile.tiled->image.index : tile.index; }


std::vector<ItemRef> TileRun::tiles_of(const ItemRef& plane, const PlaneInfo& info) {
  const bool larger = tiles_image(plan_, info.width, info.height) ||
                      (plan_.whole_above > 0 && (info.width > plan_.whole_above || info.height > plan_.whole_above));
  if (!larger) return {};
  if (!file_reads_by_tiles(plane.path)) {
    if (tiles_image(plan_, info.width, info.height)) {
      spdlog::info("{}: {} x {} pixels processed whole, not as tiles of {}: a file compressed whole is inflated whole "
                   "(tile-compress it, .fits.fz, to read it by tiles)", item_name(plane), info.width, info.height, plan_.size);
    }
    return {};
  }
  const bool tiled = tiles_image(plan_, info.width, info.height);
  if (info.width * info.height <= resident_pixels_) {  // fits in GPU memory: one item, read in strips
    ItemRef whole = plane;
    whole.core = TileRect{0, 0, info.width, info.height};
    whole.resident_rows = resident_strip_rows(tiled ? plan_.size : plan_.whole_above, info.width, info.height);
    return {whole};
  }
  if (!tiled) {  // tiling is off for this pipeline: say why
    spdlog::info("{}: {} x {} pixels processed whole, not as tiles of {}: {}", item_name(plane), info.width,
                 info.height, plan_.whole_above, plan_.off_reason);
    return {};
  }
  auto image = std::make_shared<TiledImage>();
  image->image = plane;
  image->grid = TileGrid{info.width, info.height, plan_.size, plan_.halo};
  image->expected = image->grid.count();
  image->tiles.resize(static_cast<size_t>(image->expected));
  std::vector<ItemRef> refs;
  refs.reserve(static_cast<size_t>(image->expected));
  for (int64_t t = 0; t < image->expected; ++t) {
    ItemRef ref = plane;
    ref.tile = t;
    ref.tiles = image->expected;
    ref.core = image->grid.core(t);
    ref.halo = image->grid.halo_rect(t);
    ref.tiled = image;
    refs.push_back(std::move(ref));
  }
  std::lock_guard lock(mutex_);
  std::erase_if(images_, [](const std::shared_ptr<TiledImage>& done) { return done->finished.load(); });
  images_.push_back(std::move(image));
  return refs;
}

void TileRun::prepare(ItemRef& first_tile) {
  TiledImage& image = *first_tile.tiled;
  image.image.index = first_tile.index;
  try {
    run_background_prepass(run_, image, plan_);
  } catch (const std::bad_alloc&) {
    first_tile.error = item_name(image.image) + ": out of memory in the background pre-pass over its tiles";
  } catch (const std::exception& error) {
    first_tile.error = error.what();
  }
  if (!first_tile.error.empty()) image.expected = 1;  // this tile stands for the image; the others are dropped
}

void TileRun::record_unfinished() {
  std::vector<std::shared_ptr<TiledImage>> images;
  {
    std::lock_guard lock(mutex_);
    images.swap(images_);
  }
  for (const auto& image : images) {
    if (image->finished || image->done == 0) continue;
    image->fail(item_name(image->image) + ": the run stopped after " + std::to_string(image->done) + " of its " +
                std::to_string(image->expected) + " tiles; no catalog was written");
    finalize_tiled_image(run_, *image);
  }
}

}  // namespace imflow
