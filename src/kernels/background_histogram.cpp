// StreamingKappaSigma: kappa-sigma clipping from radix histograms of the float keys, replaying
// kernels::kappa_sigma_clip's loop on counts instead of on the pixels (docs/tiling.md).
#include "imflow/kernels/background_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

namespace imflow::kernels {

namespace {
// All ones for a negative float's bits, else 0.
inline uint32_t sign_mask(uint32_t bits) { return static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31); }

// Storage each thread keeps from one pass (and image) to the next: a 2048x2048 frame's coarse bins
// are 2 MiB and its refinement keys 4 MiB, whose fresh pages cost ~1,200 page faults an image.
// One vector of each type per thread, the largest seen.
template <typename T>
std::vector<T>& spare() {
  thread_local std::vector<T> vector;
  return vector;
}
template <typename T>
std::vector<T> take_spare() {
  return std::exchange(spare<T>(), {});
}
template <typename T>
void keep_spare(std::vector<T>& used) {
  if (used.capacity() > spare<T>().capacity()) spare<T>() = std::move(used);
}
}  // namespace

StreamingKappaSigma::Pass::~Pass() {
  keep_spare(bins_);
  keep_spare(keys_);
}

StreamingKappaSigma::~StreamingKappaSigma() { keep_spare(bins_); }

uint32_t StreamingKappaSigma::key_of(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  return bits ^ (sign_mask(bits) | 0x80000000u);  // negative: all bits flipped; positive: the sign bit set
}

float StreamingKappaSigma::value_of(uint32_t key) {
  return std::bit_cast<float>((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

StreamingKappaSigma::StreamingKappaSigma(double kappa, int max_iters, int max_refined_per_pass)
    : kappa_(kappa), max_iters_(max_iters), max_refined_(std::max(1, max_refined_per_pass)) {}

double StreamingKappaSigma::prefix_low(int prefix) {
  const float low = value_of(static_cast<uint32_t>(prefix) << 16);
  return std::isfinite(low) ? low : 0.0;
}

StreamingKappaSigma::Pass StreamingKappaSigma::start_pass() const {
  Pass pass;
  pass.owner_ = this;
  pass.coarse_ = coarse_pass_;
  if (coarse_pass_) {
    pass.bins_ = take_spare<Bin>();
    pass.bins_.assign(kBins + 1, Bin{});
  } else {
    pass.keys_ = take_spare<uint32_t>();  // its size is the room add_refine fills
    pass.exact_.reset(pass_prefixes_.size());
  }
  return pass;
}

namespace {
constexpr int64_t kChunk = 1024;                 // pixels whose keys are computed before they are counted
constexpr size_t kFoldKeys = size_t{1} << 20;   // refine: keys buffered before they are folded in
}  // namespace

void StreamingKappaSigma::Pass::add(const float* data, int64_t width, int64_t height, int64_t stride) {
  for (int64_t y = 0; y < height; ++y) {
    const float* row = data + y * stride;
    for (int64_t x = 0; x < width; x += kChunk) {
      if (coarse_) add_coarse(row + x, std::min(kChunk, width - x));
      else add_refine(row + x, std::min(kChunk, width - x));
    }
  }
}

// Each pixel's prefix (the non-finite ones: the extra bin kBins) and its offset from the prefix's
// low value (the most negative value of a negative prefix), exact in float (both share the
// exponent), then the sums in pixel order.
void StreamingKappaSigma::Pass::add_coarse(const float* row, int64_t width) {
  uint32_t prefix[kChunk];
  float offset[kChunk];
  for (int64_t x = 0; x < width; ++x) {
    const uint32_t bits = std::bit_cast<uint32_t>(row[x]);
    const uint32_t key = key_of(row[x]);
    const float low = std::bit_cast<float>((bits & 0xFFFF0000u) | (sign_mask(bits) & 0xFFFFu));
    prefix[x] = (bits & 0x7F800000u) != 0x7F800000u ? key >> 16 : static_cast<uint32_t>(kBins);
    offset[x] = row[x] - low;
  }
  Bin* bins = bins_.data();
  for (int64_t x = 0; x < width; ++x) {
    Bin& bin = bins[prefix[x]];
    const double d = offset[x];  // the same as double(v) - double(low)
    ++bin.count;
    bin.sum += d;
    bin.squares += d * d;
  }
}

// The packed keys of the pixels inside the counted prefixes (non-finite ones never are: their
// prefixes hold no counts), appended without branches and folded in by the batch.
void StreamingKappaSigma::Pass::add_refine(const float* row, int64_t width) {
  if (key_count_ + static_cast<size_t>(width) > keys_.size()) {
    if (keys_.size() >= kFoldKeys) {
      exact_.fold(keys_.data(), key_count_);
      key_count_ = 0;
    } else {
      keys_.resize(std::max(std::min(kFoldKeys, keys_.size() * 2), key_count_ + static_cast<size_t>(width)));
    }
  }
  uint32_t keys[kChunk];
  for (int64_t x = 0; x < width; ++x) keys[x] = key_of(row[x]);
  const int16_t* slot_of = owner_->slot_of_.data();
  uint32_t* out = keys_.data();
  size_t n = key_count_;
  for (int64_t x = 0; x < width; ++x) {
    const uint32_t key = keys[x];
    const int slot = slot_of[key >> 16];
    out[n] = (static_cast<uint32_t>(slot) << 16) | (key & 0xFFFFu);
    n += slot >= 0 ? 1 : 0;
  }
  key_count_ = n;
}

void StreamingKappaSigma::merge(const Pass& pass) {
  if (pass.coarse_) {
    if (bins_.empty()) {
      bins_ = take_spare<Bin>();
      bins_.assign(kBins, Bin{});
    }
    for (int b = 0; b < kBins; ++b) {
      const Bin& add = pass.bins_[b];
      valid_ += static_cast<int64_t>(add.count);
      bins_[b].count += add.count;
      bins_[b].sum += add.sum;
      bins_[b].squares += add.squares;
    }
    return;
  }
  if (pending_exact_.slots() == 0) pending_exact_.reset(pass_prefixes_.size());
  pending_exact_.add(pass.exact_);
  pending_exact_.fold(pass.keys_.data(), pass.key_count_);
}

void StreamingKappaSigma::merge(Pass&& pass) {
  if (pass.coarse_ && bins_.empty()) {  // the first accumulator: its sums are the totals so far
    for (int b = 0; b < kBins; ++b) valid_ += static_cast<int64_t>(pass.bins_[b].count);
    bins_ = std::move(pass.bins_);
    return;
  }
  if (!pass.coarse_ && pending_exact_.slots() == 0) {  // the first accumulator of a refinement pass
    pass.exact_.fold(pass.keys_.data(), pass.key_count_);
    pending_exact_ = std::move(pass.exact_);
    return;
  }
  merge(static_cast<const Pass&>(pass));
}

namespace {
// The kept part of one prefix for an open interval (L, H) of values.
struct KeptPart {
  double count = 0.0;  // exact when the prefix is fully kept or counted exactly
  bool exact = true;   // false: a linear estimate (the prefix straddles a bound, not counted exactly)
  double fraction = 1.0;
};
}  // namespace

StreamingKappaSigma::Outcome StreamingKappaSigma::simulate() const {
  Outcome out;
  BackgroundStats& stats = out.stats;
  stats.valid = valid_;
  if (valid_ == 0) {
    stats.median = stats.std = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  std::vector<int> prefixes;  // non-empty, ascending (= ascending values)
  for (int b = 0; b < kBins; ++b) {
    if (bins_[b].count > 0) prefixes.push_back(b);
  }
  std::set<int> noted;
  auto need = [&](int prefix) {
    if (!exact_.count(prefix) && noted.insert(prefix).second) out.missing.push_back(prefix);
  };
  auto high_of = [](int prefix) { return static_cast<double>(value_of((static_cast<uint32_t>(prefix) << 16) | 0xFFFFu)); };
  auto low_of = [](int prefix) { return static_cast<double>(value_of(static_cast<uint32_t>(prefix) << 16)); };
  // Exact values of a counted prefix, ascending, with their counts.
  auto for_exact = [&](int prefix, auto&& visit) {
    for (const auto& [value, count] : exact_.at(prefix)) visit(value, count);
  };
  auto kept_part = [&](int prefix, double L, double H) {
    KeptPart part;
    const double lo = low_of(prefix), hi = high_of(prefix);
    const double count = static_cast<double>(bins_[prefix].count);
    if (lo > L && hi < H) {
      part.count = count;
    } else if (hi <= L || lo >= H) {
      part.count = 0.0;
      part.fraction = 0.0;
    } else if (exact_.count(prefix)) {
      double kept = 0.0;
      for_exact(prefix, [&](double v, uint64_t c) {
        if (v > L && v < H) kept += static_cast<double>(c);
      });
      part.count = kept;
      part.fraction = count > 0 ? kept / count : 0.0;
    } else {
      need(prefix);
      const double a = std::max(lo, L), b = std::min(hi, H);
      part.fraction = hi > lo ? std::clamp((b - a) / (hi - lo), 0.0, 1.0) : 1.0;
      part.count = std::round(count * part.fraction);
      part.exact = false;
    }
    return part;
  };
  // Value of rank `rank` (0-based) among the kept values.
  auto value_at_rank = [&](int64_t rank, double L, double H) {
    double before = 0.0;
    for (int prefix : prefixes) {
      const KeptPart part = kept_part(prefix, L, H);
      if (static_cast<double>(rank) >= before + part.count) {
        before += part.count;
        continue;
      }
      double within = static_cast<double>(rank) - before;
      if (exact_.count(prefix)) {
        double found = std::numeric_limits<double>::quiet_NaN();
        for_exact(prefix, [&](double v, uint64_t c) {
          if (!std::isnan(found) || !(v > L && v < H)) return;
          if (within < static_cast<double>(c)) found = v;
          else within -= static_cast<double>(c);
        });
        return found;
      }
      need(prefix);
      const double a = std::max(low_of(prefix), L), b = std::min(high_of(prefix), H);
      return a + (b - a) * (within + 0.5) / std::max(part.count, 1.0);
    }
    return high_of(prefixes.back());
  };
  auto median_of = [&](int64_t n, double L, double H) {
    const double upper = value_at_rank(n / 2, L, H);
    if (n % 2 == 1) return upper;
    const double lower = value_at_rank(n / 2 - 1, L, H);
    return (lower + upper) / 2.0;
  };
  // Population std of the kept values: mean, then the sum of squared deviations, both from the
  // per-prefix sums shifted by the prefix's low value, or from exact values where counted.
  auto std_of = [&](int64_t n, double L, double H) {
    double total = 0.0;
    std::vector<std::pair<int, KeptPart>> parts;
    for (int prefix : prefixes) {
      const KeptPart part = kept_part(prefix, L, H);
      if (part.count <= 0.0) continue;
      parts.emplace_back(prefix, part);
      if (exact_.count(prefix)) {
        for_exact(prefix, [&](double v, uint64_t c) {
          if (v > L && v < H) total += static_cast<double>(c) * v;
        });
      } else {
        const Bin& bin = bins_[prefix];
        total += part.fraction * (static_cast<double>(bin.count) * prefix_low(prefix) + bin.sum);
      }
    }
    const double mean = total / static_cast<double>(n);
    double squares = 0.0;
    for (const auto& [prefix, part] : parts) {
      if (exact_.count(prefix)) {
        for_exact(prefix, [&](double v, uint64_t c) {
          if (v > L && v < H) squares += static_cast<double>(c) * (v - mean) * (v - mean);
        });
      } else {
        const Bin& bin = bins_[prefix];
        const double d = prefix_low(prefix) - mean;
        const double c = static_cast<double>(bin.count);
        squares += part.fraction * (bin.squares + 2.0 * d * bin.sum + c * d * d);
      }
    }
    return std::sqrt(std::max(squares, 0.0) / static_cast<double>(n));
  };
  auto count_in = [&](double L, double H) {
    double kept = 0.0;
    for (int prefix : prefixes) kept += kept_part(prefix, L, H).count;
    return static_cast<int64_t>(kept);
  };

  double L = -std::numeric_limits<double>::infinity(), H = std::numeric_limits<double>::infinity();
  int64_t n = valid_;
  while (true) {
    ++stats.iterations;
    stats.kept = n;
    stats.median = median_of(n, L, H);
    stats.std = std_of(n, L, H);
    if (stats.std == 0.0 || stats.iterations >= max_iters_) break;
    const double low = std::max(L, stats.median - kappa_ * stats.std);
    const double high = std::min(H, stats.median + kappa_ * stats.std);
    const int64_t kept = count_in(low, high);
    if (kept == n || kept == 0) break;
    n = kept;
    L = low;
    H = high;
  }
  return out;
}

bool StreamingKappaSigma::finish_pass() {
  ++passes_;
  if (!coarse_pass_) {
    // Keep the exact values of the prefixes just counted: (value, count), ascending.
    for (size_t slot = 0; slot < pass_prefixes_.size() && slot < pending_exact_.slots(); ++slot) {
      std::vector<std::pair<double, uint64_t>>& values = exact_[pass_prefixes_[slot]];
      const uint32_t high = static_cast<uint32_t>(pass_prefixes_[slot]) << 16;
      const std::vector<uint16_t>& lows = pending_exact_.values(slot);
      const std::vector<uint64_t>& counts = pending_exact_.counts(slot);
      values.reserve(values.size() + lows.size());
      for (size_t i = 0; i < lows.size(); ++i) values.emplace_back(value_of(high | lows[i]), counts[i]);
    }
    pending_exact_.reset(0);
  }
  coarse_pass_ = false;
  Outcome outcome = simulate();
  result_ = outcome.stats;
  if (outcome.missing.empty()) {
    done_ = true;
    return true;
  }
  // Count exactly the prefixes needed, earliest first, with their non-empty neighbours (a
  // prediction made from estimates is often one prefix off).
  pass_prefixes_.clear();
  auto take = [&](int prefix) {
    if (prefix < 0 || prefix >= kBins || bins_[prefix].count == 0 || exact_.count(prefix)) return;
    if (static_cast<int>(pass_prefixes_.size()) >= max_refined_) return;
    if (std::find(pass_prefixes_.begin(), pass_prefixes_.end(), prefix) == pass_prefixes_.end()) {
      pass_prefixes_.push_back(prefix);
    }
  };
  for (int prefix : outcome.missing) take(prefix);
  for (int prefix : outcome.missing) {
    take(prefix - 1);
    take(prefix + 1);
  }
  slot_of_.assign(kBins, int16_t{-1});
  for (size_t slot = 0; slot < pass_prefixes_.size(); ++slot) slot_of_[pass_prefixes_[slot]] = static_cast<int16_t>(slot);
  return false;
}

BackgroundStats streaming_kappa_sigma(ConstImageView image, double kappa, int max_iters, int64_t block_rows) {
  StreamingKappaSigma stats(kappa, max_iters);
  block_rows = std::max<int64_t>(1, block_rows);
  do {
    StreamingKappaSigma::Pass pass = stats.start_pass();
    for (int64_t y = 0; y < image.height; y += block_rows) {
      pass.add(image.row(y), image.width, std::min(block_rows, image.height - y), image.width);
    }
    stats.merge(std::move(pass));
  } while (!stats.finish_pass());
  return stats.result();
}

}  // namespace imflow::kernels
