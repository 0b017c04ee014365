// Big-endian FITS pixels to float32, bit for bit as CFITSIO 4.x converts them (getcole.c). Each
// branch below names the CFITSIO expression it reproduces; the arithmetic is the same double
// arithmetic (this file is built with -ffp-contract=off: `raw * scale + zero` is never an FMA).
// Vectorized at -O2 as well as -O3: the byte swap is AVX2's byte shuffle where the CPU has it (one
// instruction per 32 bytes), else GCC/Clang vector types (a plain __builtin_bswap32 loop stays
// scalar on x86-64's baseline SSE2), and the conversion runs in blocks of a fixed length, which
// GCC's -O2 cost model vectorizes (checked with -fopt-info-vec).
#include "fits_pixel_convert.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define IMFLOW_SWAP_AVX2 1
#endif

namespace imflow::detail {

namespace {

#ifdef IMFLOW_SWAP_AVX2
#define IMFLOW_AVX2_TARGET __attribute__((target("avx2")))

// The bytes of each `word_bytes`-byte word (2, 4 or 8) of `raw` reversed into `out` (which may be
// `raw`), 32 bytes at a time; returns how many of `bytes` it did (the rest: under 32 bytes).
IMFLOW_AVX2_TARGET int64_t swap_avx2(const unsigned char* raw, int64_t bytes, int word_bytes, unsigned char* out) {
  const __m256i order =
      word_bytes == 2   ? _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14, 1, 0, 3, 2, 5, 4, 7, 6,
                                           9, 8, 11, 10, 13, 12, 15, 14)
      : word_bytes == 4 ? _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12, 3, 2, 1, 0, 7, 6, 5, 4,
                                           11, 10, 9, 8, 15, 14, 13, 12)
                        : _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
                                           15, 14, 13, 12, 11, 10, 9, 8);
  const auto* in = reinterpret_cast<const __m256i*>(raw);
  auto* to = reinterpret_cast<__m256i*>(out);
  const int64_t vectors = bytes / 32;
  int64_t v = 0;
  for (; v + 4 <= vectors; v += 4) {  // all four loaded before any store: `out` may be `raw`
    const __m256i a = _mm256_loadu_si256(in + v), b = _mm256_loadu_si256(in + v + 1);
    const __m256i c = _mm256_loadu_si256(in + v + 2), d = _mm256_loadu_si256(in + v + 3);
    _mm256_storeu_si256(to + v, _mm256_shuffle_epi8(a, order));
    _mm256_storeu_si256(to + v + 1, _mm256_shuffle_epi8(b, order));
    _mm256_storeu_si256(to + v + 2, _mm256_shuffle_epi8(c, order));
    _mm256_storeu_si256(to + v + 3, _mm256_shuffle_epi8(d, order));
  }
  for (; v < vectors; ++v) _mm256_storeu_si256(to + v, _mm256_shuffle_epi8(_mm256_loadu_si256(in + v), order));
  return vectors * 32;
}

bool have_avx2() {
  static const bool have = [] {
    __builtin_cpu_init();  // may run before libgcc's own constructor has
    return __builtin_cpu_supports("avx2");
  }();
  return have;
}
#endif

constexpr int64_t kBlock = 256;  // pixels converted per block (a few KiB, stays in L1)

template <size_t Bytes>
struct WordOf;
template <> struct WordOf<1> { using type = uint8_t; };
template <> struct WordOf<2> { using type = uint16_t; };
template <> struct WordOf<4> { using type = uint32_t; };
template <> struct WordOf<8> { using type = uint64_t; };

template <typename Word>
Word swap_word(Word w) {
  if constexpr (sizeof(Word) == 1) return w;
  if constexpr (sizeof(Word) == 2) return __builtin_bswap16(w);
  if constexpr (sizeof(Word) == 4) return __builtin_bswap32(w);
  if constexpr (sizeof(Word) == 8) return __builtin_bswap64(w);
}

// The bytes of each word reversed, 16 bytes at a time, with shifts and masks only (SSE2, NEON).
template <typename Vector, typename Word>
Vector swap_vector(Vector v) {
  if constexpr (sizeof(Word) == 2) return (v << 8) | (v >> 8);
  if constexpr (sizeof(Word) == 4) {
    v = ((v << 8) & Word{0xFF00FF00u}) | ((v >> 8) & Word{0x00FF00FFu});
    return (v << 16) | (v >> 16);
  }
  if constexpr (sizeof(Word) == 8) {
    v = ((v << 8) & Word{0xFF00FF00FF00FF00u}) | ((v >> 8) & Word{0x00FF00FF00FF00FFu});
    v = ((v << 16) & Word{0xFFFF0000FFFF0000u}) | ((v >> 16) & Word{0x0000FFFF0000FFFFu});
    return (v << 32) | (v >> 32);
  }
}

// Copy `count` big-endian words of sizeof(Stored) bytes from `raw` into `native`, in host order.
template <typename Stored>
void load_native(const unsigned char* raw, int64_t count, Stored* native) {
  using Word = typename WordOf<sizeof(Stored)>::type;
  auto* out = reinterpret_cast<unsigned char*>(native);
  if constexpr (sizeof(Stored) == 1 || std::endian::native == std::endian::big) {
    std::memmove(out, raw, static_cast<size_t>(count) * sizeof(Stored));  // raw may be out
  } else {
    typedef Word Vector __attribute__((vector_size(16)));
    constexpr int64_t kPerVector = 16 / sizeof(Word);
    int64_t i = 0;
#ifdef IMFLOW_SWAP_AVX2
    if (have_avx2()) i = swap_avx2(raw, count * int64_t{sizeof(Word)}, sizeof(Word), out) / int64_t{sizeof(Word)};
#endif
    for (; i + kPerVector <= count; i += kPerVector) {
      Vector v;
      std::memcpy(&v, raw + i * sizeof(Word), sizeof v);
      v = swap_vector<Vector, Word>(v);
      std::memcpy(out + i * sizeof(Word), &v, sizeof v);
    }
    for (; i < count; ++i) {
      Word w;
      std::memcpy(&w, raw + i * sizeof(Word), sizeof w);
      w = swap_word(w);
      std::memcpy(out + i * sizeof(Word), &w, sizeof w);
    }
  }
}

// out[i] = to_float(stored pixel i), a block at a time: swap into host order, then convert.
template <typename Stored, typename ToFloat>
void convert_all(const unsigned char* raw, int64_t count, float* out, ToFloat to_float) {
  alignas(64) Stored native[kBlock];
  for (int64_t i = 0; i < count; i += kBlock) {
    const int64_t n = std::min(kBlock, count - i);
    load_native(raw + i * sizeof(Stored), n, native);
    float* block_out = out + i;
    if (n == kBlock) {
      for (int64_t k = 0; k < kBlock; ++k) block_out[k] = to_float(native[k]);
    } else {
      for (int64_t k = 0; k < n; ++k) block_out[k] = to_float(native[k]);
    }
  }
}

// CFITSIO's null value here: the caller's `std::numeric_limits<float>::quiet_NaN()`.
constexpr uint32_t kNanBits = std::bit_cast<uint32_t>(std::numeric_limits<float>::quiet_NaN());

// `converted`, or NaN where value == blank (CFITSIO's nullcheck 1: `if (input[ii] == tnull)
// output[ii] = nullval;`), selected with an integer mask so that the loop vectorizes.
template <typename Stored>
float blank_to_nan(Stored value, Stored blank, float converted) {
  const uint32_t mask = 0u - static_cast<uint32_t>(value == blank);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(converted) & ~mask) | (kNanBits & mask));
}

// Integer images: fffi1r4 (uint8), fffi2r4 (int16), fffi4r4 (int32), fffi8r4 (int64).
template <typename Stored>
void convert_integer(const unsigned char* raw, int64_t count, const PixelConversion& c, float* out) {
  const double scale = c.scale, zero = c.zero;
  const bool check_blank = c.check_blank;
  const Stored blank = static_cast<Stored>(c.blank);  // int32: `(INT32BIT) tnull`, as ffgcle passes it
  const auto convert = [&](auto to_float) {
    if (check_blank) {
      convert_all<Stored>(raw, count, out, [=](Stored v) { return blank_to_nan(v, blank, to_float(v)); });
    } else {
      convert_all<Stored>(raw, count, out, to_float);
    }
  };
  if constexpr (sizeof(Stored) == 8) {
    if (scale == 1. && zero == 9223372036854775808.) {
      // fffi8r4, unsigned 64-bit: `(float) (ULONGLONG) (input[ii] ^ 0x8000000000000000)`.
      convert([](Stored v) { return static_cast<float>(static_cast<uint64_t>(v) ^ (uint64_t{1} << 63)); });
      return;
    }
  }
  if (scale == 1. && zero == 0.) {
    convert([](Stored v) { return static_cast<float>(v); });  // `(float) input[ii]`
  } else {
    // `(float) (input[ii] * scale + zero)` (fffi1r4 writes `((double) input[ii]) * scale + zero`).
    convert([scale, zero](Stored v) { return static_cast<float>(static_cast<double>(v) * scale + zero); });
  }
}

// BITPIX -32, fffr4r4 with nullcheck 0: unscaled, a plain copy (memmove: NaN payloads survive).
void convert_float(const unsigned char* raw, int64_t count, const PixelConversion& c, float* out) {
  const double scale = c.scale, zero = c.zero;
  if (scale == 1. && zero == 0.) {
    load_native(raw, count, out);
  } else {
    // `(float) (input[ii] * scale + zero)`, input promoted to double.
    convert_all<float>(raw, count, out,
                       [scale, zero](float v) { return static_cast<float>(static_cast<double>(v) * scale + zero); });
  }
}

// BITPIX -64, fffr8r4 with nullcheck 0.
void convert_double(const unsigned char* raw, int64_t count, const PixelConversion& c, float* out) {
  const double scale = c.scale, zero = c.zero;
  if (scale == 1. && zero == 0.) {
    convert_all<double>(raw, count, out, [](double v) { return static_cast<float>(v); });  // `(float) input[ii]`
  } else {
    convert_all<double>(raw, count, out, [scale, zero](double v) { return static_cast<float>(v * scale + zero); });
  }
}

}  // namespace

bool null_check_applies(int bitpix, int64_t blank, int64_t blank_undefined) {
  // ffgcle: no check when BLANK is undefined, nor when it cannot occur in 8- or 16-bit data.
  // (A 32-bit BLANK outside int32 is still checked, truncated to 32 bits as ffgcle does.)
  if (bitpix < 0 || blank == blank_undefined) return false;
  if (bitpix == 16 && (blank > SHRT_MAX || blank < SHRT_MIN)) return false;
  if (bitpix == 8 && (blank > 255 || blank < 0)) return false;
  return true;
}

void convert_big_endian_pixels(const unsigned char* raw, int64_t count, const PixelConversion& conversion, float* out) {
  switch (conversion.bitpix) {
    case 8: return convert_integer<uint8_t>(raw, count, conversion, out);
    case 16: return convert_integer<int16_t>(raw, count, conversion, out);
    case 32: return convert_integer<int32_t>(raw, count, conversion, out);
    case 64: return convert_integer<int64_t>(raw, count, conversion, out);
    case -32: return convert_float(raw, count, conversion, out);
    case -64: return convert_double(raw, count, conversion, out);
    default: throw std::logic_error("convert_big_endian_pixels: BITPIX " + std::to_string(conversion.bitpix));
  }
}

}  // namespace imflow::detail
