// The voxel bytes of a gzip-compressed NIfTI data file (.nii.gz, .img.gz), inflated with zlib,
// and its stream checked to the end: a corrupt stream whose damage inflates to plausible bytes
// shows only in its CRC-32 at the end, after the voxels a read needs.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

namespace imflow::detail {

// Up to `bytes` of `data_file` from byte `offset` of its inflated stream on (fewer when it ends
// early). With `to_stream_end` the rest of the stream is inflated too (its output discarded), so
// that its check value is verified. Throws InputError naming `item` ("ITEM: corrupt gzip stream
// (incorrect data check)") when zlib rejects the stream; a stream cut short is not an error here
// (the bytes it held are returned).
std::vector<unsigned char> read_gzip_data(const std::filesystem::path& data_file, int64_t offset, int64_t bytes,
                                          bool to_stream_end, const std::filesystem::path& item);

// Inflates the whole stream of `data_file` (output discarded): throws as read_gzip_data does.
void check_gzip_stream(const std::filesystem::path& data_file, const std::filesystem::path& item);

}  // namespace imflow::detail
