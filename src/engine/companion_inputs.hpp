// The reader's companions of an item: its weight map read beside it and turned into variances,
// its mask (bad and masked pixels made invalid, NaN, in the image), its flag map and its
// detection image; and the flag map's catalog columns.
#pragma once
#include "imflow/io/fits.hpp"
#include "imflow/pipeline.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// Read the weight map of `image` (item `ref`'s measured image, or in dual-image mode its detection
// image) into `variances` as SExtractor's weight_to_var makes them before rescaling: rms^2
// (map_rms), var (map_var) or 1/w (map_weight; 1e30 for w <= 0). Bad pixels, whose variance
// reaches the threshold in variance units (weight <= thresh, rms or var >= thresh; none by
// default but w <= 0) or whose value is not finite or negative, get +inf and make the image's
// pixel NaN. Returns how many are bad. Throws InputError naming both files (io/companion.hpp).
int64_t read_weight_map(const ItemRef& ref, const WeightConfig& weight, ImageBuffer& image, std::vector<float>& variances,
                        const ReadLimits& limits);

// Read the mask of `item` (input.mask) and make NaN every image pixel whose mask value is above
// `threshold` or not finite (SEP's mask > maskthresh); their count goes to the item's metrics
// (masked_pixels). Throws InputError naming both files.
void apply_mask(const CompanionSpec& mask, double threshold, WorkItem& item, const ReadLimits& limits);

// Read the flag map of `item` (input.flags) into item.flag_map (float32 values as int32, 0 where
// not finite), to be combined as `type` says. Throws InputError naming both files.
void read_flag_map(const CompanionSpec& flags, kernels::FlagType type, WorkItem& item, const ReadLimits& limits);

// The flag map's columns of item.catalog (IMAFLAGS_ISO, NIMAFLAGS_ISO: kernels::image_flags over
// item.labels, combined as item.flag_type says), and item.photometry's note that the catalogs
// carry them. Nothing without a flag map. On the CPU and, with the label map downloaded, after
// the GPU.
void catalog_flag_map(WorkItem& item);

// The companions the pipeline names (input.detect into item.detection, input.mask, input.flags,
// input.weight into item.weight_variance, input.detect.weight into item.detection_weight_variance),
// read for `item` after its pixels; the weight maps' bad pixels go to the item's metrics
// (weight_bad_pixels, detect_weight_bad_pixels).
void read_companions(const InputConfig& input, WorkItem& item, const ReadLimits& limits);

}  // namespace imflow
