// The shortest text that reads back to the same double, with the same characters as C++17's
// std::to_chars(first, last, value) (plain format: %f or %e as printf writes them, whichever is
// shorter, %f on a tie), about twice as fast: the catalogs' CSV writer formats ~100,000 of them
// per image.
#pragma once

namespace imflow::detail {

// Room `write_shortest` may write into: its text is at most 24 characters (a sign, 17 digits, a
// point and "e-308"), but its fixed-size copies write up to 34 bytes (a sign, then 16 digits, the
// point and 16 more bytes of scratch past the text's end).
inline constexpr int kShortestDoubleChars = 40;

// Writes `value` (finite, NaN or infinite as std::to_chars spells them) at `out`, returns the end.
char* write_shortest(char* out, double value);

}  // namespace imflow::detail
