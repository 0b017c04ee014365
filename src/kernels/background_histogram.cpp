// StreamingKappaSigma: kappa-sigma clipping from radix histograms of the float keys, replaying
// kernels::kappa_sigma_clip's loop on counts instead of on the pixels (docs/tiling.md).
#include "imflow/kernels/background_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <set>

namespace imflow::kernels {

uint32_t StreamingKappaSigma::key_of(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

float StreamingKappaSigma::value_of(uint32_t key) {
  return std::bit_cast<float>((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

StreamingKappaSigma::StreamingKappaSigma(double kappa, int max_iters, int max_refined_per_pass)
    : kappa_(kappa), max_iters_(max_iters), max_refined_(std::max(1, max_refined_per_pass)),
      prefix_low_(kBins), count_(kBins, 0), sum_(kBins, 0.0), squares_(kBins, 0.0), slot_of_(kBins, -1) {
  for (int prefix = 0; prefix < kBins; ++prefix) {
    const float low = value_of(static_cast<uint32_t>(prefix) << 16);
    prefix_low_[prefix] = std::isfinite(low) ? low : 0.0;
  }
}

StreamingKappaSigma::Pass StreamingKappaSigma::start_pass() const {
  Pass pass;
  pass.owner_ = this;
  pass.coarse_ = coarse_pass_;
  if (coarse_pass_) {
    pass.count_.assign(kBins, 0);
    pass.sum_.assign(kBins, 0.0);
    pass.squares_.assign(kBins, 0.0);
  } else {
    pass.exact_.assign(pass_prefixes_.size() * kBins, 0);
  }
  return pass;
}

void StreamingKappaSigma::Pass::add(const float* data, int64_t width, int64_t height, int64_t stride) {
  const double* low = owner_->prefix_low_.data();
  const int16_t* slot_of = owner_->slot_of_.data();
  for (int64_t y = 0; y < height; ++y) {
    const float* row = data + y * stride;
    if (coarse_) {
      for (int64_t x = 0; x < width; ++x) {
        const float v = row[x];
        if (!std::isfinite(v)) continue;
        const uint32_t prefix = key_of(v) >> 16;
        const double d = static_cast<double>(v) - low[prefix];
        ++count_[prefix];
        sum_[prefix] += d;
        squares_[prefix] += d * d;
        ++valid_;
      }
    } else {
      for (int64_t x = 0; x < width; ++x) {
        const float v = row[x];
        if (!std::isfinite(v)) continue;
        const uint32_t key = key_of(v);
        const int slot = slot_of[key >> 16];
        if (slot >= 0) ++exact_[static_cast<size_t>(slot) * kBins + (key & 0xFFFFu)];
      }
    }
  }
}

void StreamingKappaSigma::merge(const Pass& pass) {
  if (pass.coarse_) {
    valid_ += pass.valid_;
    for (int b = 0; b < kBins; ++b) {
      count_[b] += pass.count_[b];
      sum_[b] += pass.sum_[b];
      squares_[b] += pass.squares_[b];
    }
    return;
  }
  pending_exact_.resize(pass_prefixes_.size() * kBins, 0);
  for (size_t i = 0; i < pending_exact_.size(); ++i) pending_exact_[i] += pass.exact_[i];
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
    if (count_[b] > 0) prefixes.push_back(b);
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
    const double count = static_cast<double>(count_[prefix]);
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
        total += part.fraction * (static_cast<double>(count_[prefix]) * prefix_low_[prefix] + sum_[prefix]);
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
        const double d = prefix_low_[prefix] - mean;
        const double c = static_cast<double>(count_[prefix]);
        squares += part.fraction * (squares_[prefix] + 2.0 * d * sum_[prefix] + c * d * d);
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
    pending_exact_.resize(pass_prefixes_.size() * kBins, 0);
    for (size_t slot = 0; slot < pass_prefixes_.size(); ++slot) {
      std::vector<std::pair<double, uint64_t>>& values = exact_[pass_prefixes_[slot]];
      for (uint32_t low = 0; low < static_cast<uint32_t>(kBins); ++low) {
        const uint64_t count = pending_exact_[slot * kBins + low];
        if (count != 0) values.emplace_back(value_of((static_cast<uint32_t>(pass_prefixes_[slot]) << 16) | low), count);
      }
    }
    pending_exact_.clear();
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
    if (prefix < 0 || prefix >= kBins || count_[prefix] == 0 || exact_.count(prefix)) return;
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
  std::fill(slot_of_.begin(), slot_of_.end(), int16_t{-1});
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
    stats.merge(pass);
  } while (!stats.finish_pass());
  return stats.result();
}

}  // namespace imflow::kernels
