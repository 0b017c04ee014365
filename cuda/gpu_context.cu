// GpuContext set-up and the item entry points: upload, download (never synchronizing) and the
// host-side collection of results, including the host fallback for an overflowing catalog.
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "cuda/background_mesh.hpp"
#include "cuda/byte_order.hpp"
#include "cuda/catalog_text.hpp"
#include "cuda/deblend_objects.hpp"
#include "cuda/gpu_context.hpp"
#include "cuda/measure.hpp"
#include "cuda/measured_image.hpp"
#include "cuda/photometry.hpp"
#include "cuda/svd.hpp"
#include "imflow/huge_pages.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/parallel_memory.hpp"

namespace imflow {

GpuContext::GpuContext(int device_, cudaStream_t stream_) : device(device_), stream(stream_) {
  cuda::DeviceGuard guard(device);
  IMFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  int optin = 0;
  IMFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  max_shared_optin = static_cast<size_t>(optin);
  int cooperative = 0;
  IMFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  if (!cooperative) throw std::runtime_error("imflow: the CUDA device does not support cooperative launches");
  results.reserve(1);
  results_host.reserve(1);
  cuda::set_catalog_capacity(*this, catalog_capacity);
}

namespace cuda {

void CatalogAccumulators::reserve(size_t rows) {
  npix.reserve(rows);
  flux.reserve(rows);
  sum_x.reserve(rows);
  sum_y.reserve(rows);
  peak.reserve(rows);
  peak_index.reserve(rows);
  xmin.reserve(rows);
  xmax.reserve(rows);
  ymin.reserve(rows);
  ymax.reserve(rows);
  flux_iso.reserve(rows);
  sum_wx.reserve(rows);
  sum_wy.reserve(rows);
  sum_wxx.reserve(rows);
  sum_wyy.reserve(rows);
  sum_wxy.reserve(rows);
  for (DeviceBuffer<double>* sums : {&sum_v, &sum_vx, &sum_vy, &sum_vxx, &sum_vyy, &sum_vxy}) sums->reserve(rows);
  flags.reserve(rows);
  first.reserve(rows);
}

void set_catalog_capacity(GpuContext& gpu, int64_t capacity) {
  if (capacity < 1) capacity = 1;
  DeviceGuard guard(gpu.device);
  gpu.accumulators.reserve(static_cast<size_t>(capacity));
  gpu.catalog_host.reserve(static_cast<size_t>(capacity));
  gpu.catalog_capacity = capacity;
}

void enqueue_upload(GpuContext& gpu, const WorkItem& item) {
  prepare_item(gpu, item.pixels.width(), item.pixels.height());
  const auto bytes = static_cast<size_t>(gpu.size()) * sizeof(float);
  if (bytes > 0)
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.image.data(), item.pixels.data(), bytes, cudaMemcpyHostToDevice, gpu.stream));
  if (item.pixels_big_endian) swap_float32_words(gpu.image.data(), gpu.size(), gpu.stream);
  gpu.host_pixels_big_endian = item.pixels_big_endian;
  if (!item.dual_image) return;
  if (item.detection.width() != gpu.width || item.detection.height() != gpu.height)
    throw std::runtime_error("the detection image's size differs from the image's");
  if (!gpu.measured) gpu.measured = std::make_shared<MeasuredImageState>();
  gpu.measured->results.reserve(1);
  gpu.measured->results_host.reserve(1);
  gpu.detection.reserve(static_cast<size_t>(gpu.size()) + 4);
  if (bytes > 0)
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.detection.data(), item.detection.data(), bytes, cudaMemcpyHostToDevice,
                                      gpu.stream));
  gpu.dual_image = true;
  gpu.has_detection = true;
}

void prepare_item(GpuContext& gpu, int64_t width, int64_t height) {
  DeviceGuard guard(gpu.device);
  gpu.width = width;
  gpu.height = height;
  gpu.image.reserve(static_cast<size_t>(gpu.size()) + 4);
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(gpu.results.data(), 0, sizeof(DeviceResults), gpu.stream));
  gpu.has_detection = gpu.has_background = gpu.has_threshold = gpu.has_mask = false;
  gpu.has_labels = gpu.has_catalog = gpu.image_modified = false;
  gpu.has_normalization = gpu.has_svd_metrics = false;
  gpu.has_background_maps = gpu.has_deblend = gpu.has_photometry = false;
  gpu.has_weight_noise = false;
  gpu.has_catalog_text = false;
  gpu.host_pixels_big_endian = false;
  gpu.weight_gain = false;
  gpu.dual_image = false;
  gpu.filtered_shapes = false;
  if (gpu.measured) {
    MeasuredImageState& m = *gpu.measured;
    m.has_background = m.has_maps = m.detection_filtered = m.has_weight_noise = m.merged_shapes = false;
  }
  gpu.downloaded = DownloadWants{};
}

void enqueue_download(GpuContext& gpu, const DownloadWants& wants) {
  DeviceGuard guard(gpu.device);
  const size_t n = static_cast<size_t>(gpu.size());
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.results_host.data(), gpu.results.data(), sizeof(DeviceResults),
                                    cudaMemcpyDeviceToHost, gpu.stream));
  if (gpu.dual_image) {
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.measured->results_host.data(), gpu.measured->results.data(),
                                      sizeof(DeviceResults), cudaMemcpyDeviceToHost, gpu.stream));
  }
  DownloadWants done;
  done.csv_text = wants.csv_text && want_catalog_text(gpu);
  detail::enqueue_catalog_rows(gpu);
  if (done.csv_text) enqueue_catalog_text(gpu);
  if (gpu.has_photometry && gpu.has_catalog) enqueue_catalog_photometry(gpu);
  if (wants.labels && gpu.has_labels && n > 0) {
    gpu.labels_host.reserve(n);
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.labels_host.data(), gpu.labels.data(), n * sizeof(int32_t),
                                      cudaMemcpyDeviceToHost, gpu.stream));
  }
  done.labels = wants.labels && gpu.has_labels;
  if (wants.mask && gpu.has_mask && n > 0) {
    gpu.mask_host.reserve(n);
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.mask_host.data(), gpu.mask.data(), n, cudaMemcpyDeviceToHost, gpu.stream));
  }
  done.mask = wants.mask && gpu.has_mask;
  if (wants.detection && gpu.has_detection && n > 0) {
    gpu.detection_host.reserve(n);
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.detection_host.data(), gpu.detection.data(), n * sizeof(float),
                                      cudaMemcpyDeviceToHost, gpu.stream));
  }
  done.detection = wants.detection && gpu.has_detection;
  if (wants.pixels && n > 0) {
    gpu.pixels_host.reserve(n);
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.pixels_host.data(), gpu.image.data(), n * sizeof(float),
                                      cudaMemcpyDeviceToHost, gpu.stream));
  }
  done.pixels = wants.pixels;
  if (wants.background_map && gpu.has_background_maps && n > 0) {
    gpu.background_map_host.reserve(n);
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.background_map_host.data(), gpu.mesh_background->back_map.data(),
                                      n * sizeof(float), cudaMemcpyDeviceToHost, gpu.stream));
  }
  done.background_map = wants.background_map && gpu.has_background_maps;
  gpu.downloaded = done;
}

void release_image_buffers(GpuContext& gpu) {
  DeviceGuard guard(gpu.device);
  gpu.image = DeviceBuffer<float>();
  gpu.image_spare = DeviceBuffer<float>();
  gpu.detection = DeviceBuffer<float>();
  gpu.mask = DeviceBuffer<uint8_t>();
  gpu.labels = DeviceBuffer<int32_t>();
  gpu.label_roots = DeviceBuffer<int32_t>();
  gpu.scratch = DeviceBuffer<unsigned char>();
  gpu.background_work = DeviceBuffer<unsigned char>();
  gpu.mesh_background.reset();
  gpu.deblend.reset();
  gpu.photometry.reset();
  gpu.width = gpu.height = 0;
}

namespace {

int64_t next_power_of_two(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// A background step's statistics as the CPU reports them (`maps`: its mesh, or null).
BackgroundStats background_stats(const DeviceResults& r, const MeshBackgroundState* maps) {
  BackgroundStats b;
  b.median = r.median;
  b.std = r.std;
  b.iterations = r.iterations;
  b.kept = r.kept;
  b.valid = r.valid;
  if (maps != nullptr) {
    b.meshes = maps->nx * maps->ny;
    b.meshes_dropped = r.meshes_dropped;
  }
  return b;
}

// Synchronous copy of a device array (collect_results runs after the stream completed).
template <typename T>
void copy_now(GpuContext& gpu, std::vector<T>& out, const T* device, size_t n) {
  out.resize(n);
  if (n == 0) return;
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(out.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost, gpu.stream));
  IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
}

// The catalog measured on the host from the device's labels and image, for more labels than
// the device catalog holds; grows the capacity so the next such item stays on the device.
Catalog host_catalog(GpuContext& gpu, const WorkItem& item, int32_t nlabels, const DeviceResults& results) {
  const size_t n = static_cast<size_t>(gpu.size());
  std::vector<int32_t> labels_copy;
  const int32_t* labels = gpu.labels_host.data();
  if (!gpu.downloaded.labels) {
    copy_now(gpu, labels_copy, gpu.labels.data(), n);
    labels = labels_copy.data();
  }
  std::vector<float> image_copy;
  const float* image = item.pixels.data();
  if ((gpu.image_modified || gpu.host_pixels_big_endian) && !gpu.downloaded.pixels) {
    copy_now(gpu, image_copy, gpu.image.data(), n);
    image = image_copy.data();
  } else if (gpu.downloaded.pixels) {
    image = gpu.pixels_host.data();
  }
  kernels::MeasureBackground background;  // what cuda::measure subtracted, and its noise
  background.gain = gpu.measure_gain;
  std::vector<float> map_copy, rms_copy;
  if (gpu.has_background_maps) {
    copy_now(gpu, map_copy, gpu.mesh_background->back_map.data(), n);
    copy_now(gpu, rms_copy, gpu.mesh_background->rms_map.data(), n);
    background.map = map_copy.data();
    background.rms_map = gpu.global_noise ? nullptr : rms_copy.data();
    background.rms = results.std;  // measure's noise: global
    if (gpu.weight_gain && gpu.has_weight_noise) background.weight_gain_rms = results.std;
  } else if (gpu.has_background) {
    background.level = results.median;
    background.rms = results.std;
  }
  const ConstImageView view{image, gpu.width, gpu.height};
  Catalog catalog = item.deblend ? kernels::measure_deblended(view, labels, nlabels, *item.deblend, background)
                                 : kernels::measure_sources(view, labels, nlabels, background);
  set_catalog_capacity(gpu, next_power_of_two(static_cast<int64_t>(nlabels)));
  return catalog;
}

}  // namespace

bool remeasure_if_overflowed(GpuContext& gpu) {
  DeviceGuard guard(gpu.device);
  const DeviceResults& r = *gpu.results_host.data();
  if (!gpu.has_catalog || (r.catalog_overflow == 0 && r.nlabels <= gpu.catalog_capacity)) return false;
  set_catalog_capacity(gpu, next_power_of_two(static_cast<int64_t>(r.nlabels)));
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(reinterpret_cast<char*>(gpu.results.data()) + offsetof(DeviceResults, catalog_overflow),
                                    0, sizeof(int), gpu.stream));
  measure(gpu, gpu.measure_gain);
  enqueue_download(gpu, gpu.downloaded);
  IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
  return true;
}

namespace {
// A weight map's rescaling factor into the item's metrics as `metric`, with weight_rms_map's
// warning (steps/weight_noise.hpp) when no mesh could give one.
void report_weight_scale(const DeviceResults& r, bool rescale, const char* metric, const std::string& role, WorkItem& item) {
  item.metrics[metric] = static_cast<float>(r.weight_scale);
  if (rescale && r.weight_meshes == 0)
    item.warnings.push_back(role + ": no background mesh has a positive noise and weight; not rescaled (factor 1)");
}
}  // namespace

void collect_normalization(const DeviceResults& r, WorkItem& item) {
  if (item.normalization) {  // a normalize the host ran before (the device composes its own)
    const Normalization first = *item.normalization;
    item.normalization = Normalization{r.norm_offset * first.scale + first.offset, r.norm_scale * first.scale};
  } else {
    item.normalization = Normalization{r.norm_offset, r.norm_scale};
  }
  if (r.zeroed_pixels > 0) item.metrics["zeroed_pixels"] += static_cast<double>(r.zeroed_pixels);
}

void collect_results(GpuContext& gpu, WorkItem& item) {
  DeviceGuard guard(gpu.device);
  Catalog rows_ahead = std::exchange(gpu.rows_ahead, Catalog{});  // used or freed here
  // Two passes: the host has their images, not their backgrounds.
  if (two_pass_measure(gpu)) remeasure_if_overflowed(gpu);
  const DeviceResults r = *gpu.results_host.data();
  const size_t n = static_cast<size_t>(gpu.size());
  if (gpu.downloaded.pixels) {
    item.pixels.resize(gpu.width, gpu.height);
    copy_on_all_threads(item.pixels.data(), gpu.pixels_host.data(), n * sizeof(float));
    item.pixels_big_endian = false;
  }
  if (gpu.has_detection && gpu.downloaded.detection) {
    item.detection.resize(gpu.width, gpu.height);
    copy_on_all_threads(item.detection.data(), gpu.detection_host.data(), n * sizeof(float));
  }
  if (gpu.downloaded.background_map) {
    item.background_map.assign(gpu.background_map_host.data(), gpu.background_map_host.data() + n);
  }
  if (gpu.has_background) item.background = background_stats(r, gpu.has_background_maps ? gpu.mesh_background.get() : nullptr);
  if (gpu.dual_image && gpu.measured->has_background) {
    const MeasuredImageState& m = *gpu.measured;
    item.measure_background = background_stats(*m.results_host.data(), m.has_maps ? &m.maps : nullptr);
  }
  if (gpu.has_weight_noise) {  // as weight_rms_map reports it; in dual-image mode input.detect.weight's
    report_weight_scale(r, gpu.weight_rescale, gpu.dual_image ? "detect_weight_scale" : "weight_scale",
                        gpu.dual_image ? "detection weight map" : "weight map", item);
  }
  if (gpu.dual_image && gpu.measured->has_weight_noise) {
    report_weight_scale(*gpu.measured->results_host.data(), gpu.measured->weight_rescale, "weight_scale", "weight map", item);
  }
  if (gpu.has_threshold) item.threshold = r.threshold;
  if (gpu.has_normalization) collect_normalization(r, item);
  if (gpu.has_svd_metrics) collect_svd_metrics(gpu, item);
  if (gpu.has_mask && gpu.downloaded.mask) item.mask.assign(gpu.mask_host.data(), gpu.mask_host.data() + n);
  if (gpu.has_deblend) {
    auto deblended = std::make_shared<kernels::DeblendResult>(gpu.deblend->workspace.result());
    item.metrics["deblend_segments"] = static_cast<double>(deblended->segments);
    item.metrics["deblend_split"] = static_cast<double>(deblended->segments_split);
    item.metrics["deblend_cleaned"] = static_cast<double>(deblended->objects_cleaned);
    item.deblend = std::move(deblended);
  }
  if (gpu.has_labels) {
    item.nlabels = r.nlabels;
    if (gpu.downloaded.labels) item.labels.assign(gpu.labels_host.data(), gpu.labels_host.data() + n);
  }
  if (gpu.has_catalog) {
    const bool overflowed = r.catalog_overflow != 0 || r.nlabels > gpu.catalog_capacity;
    if (overflowed) {
      item.catalog = host_catalog(gpu, item, r.nlabels, r);
      // The photometry reads the rows where the device wrote them (the capacity now holds them all).
      if (gpu.has_photometry && !item.catalog->empty()) {
        std::memcpy(gpu.catalog_host.data(), item.catalog->data(), item.catalog->size() * sizeof(DeviceSource));
      }
    } else {
      const DeviceSource* rows = gpu.catalog_host.data();
      const auto count = static_cast<size_t>(r.nlabels);
      Catalog catalog = std::move(rows_ahead);
      if (count <= catalog.size() && count >= catalog.size() / 4) {
        catalog.resize(count);
        copy_on_all_threads(catalog.data(), rows, count * sizeof(Source));
      } else {
        catalog = Catalog{};
        reserve_huge_pages(catalog, count);  // a mosaic's 1M rows fault in 2 MiB pages
        fault_in_on_all_threads(catalog.data(), catalog.capacity() * sizeof(Source));  // so the copy only copies
        catalog.assign(rows, rows + count);
      }
      item.catalog = std::move(catalog);
      if (gpu.downloaded.csv_text) item.catalog_csv = collect_catalog_text(gpu, r.nlabels);
    }
    if (gpu.has_photometry) {  // the item's table (spec, zeropoint) was made by the measure step
      if (!item.photometry) item.photometry.emplace();
      item.photometry->spec = gpu.photometry_spec;
      const auto count = static_cast<int64_t>(item.catalog->size());
      // Rows measured in the stream cover a catalog that fit the device; else measure them now.
      if (overflowed || !collect_catalog_photometry(gpu, count, item.photometry->rows, item.photometry->vignets))
        measure_catalog_photometry(gpu, count, item.photometry->rows, item.photometry->vignets);
    }
  }
}

}  // namespace cuda
}  // namespace imflow
