// Replays files through the libFuzzer targets' entry points without libFuzzer (any compiler):
// kept crashers and seed inputs run as a ctest (fuzz_regressions), under ASan+UBSan in
// tools/sanitize.sh. Usage: imflow_fuzz_replay fits|png|nifti|yaml FILE_OR_DIR...
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

// Each fuzz_<target>.cpp is compiled with LLVMFuzzerTestOneInput renamed to replay_<target>.
extern "C" int replay_fits(const uint8_t* data, size_t size);
extern "C" int replay_png(const uint8_t* data, size_t size);
extern "C" int replay_nifti(const uint8_t* data, size_t size);
extern "C" int replay_yaml(const uint8_t* data, size_t size);

namespace {

using EntryPoint = int (*)(const uint8_t*, size_t);

EntryPoint entry_point(const std::string& target) {
  if (target == "fits") return replay_fits;
  if (target == "png") return replay_png;
  if (target == "nifti") return replay_nifti;
  if (target == "yaml") return replay_yaml;
  return nullptr;
}

}  // namespace

int main(int argc, char* argv[]) {
  const EntryPoint run = argc >= 2 ? entry_point(argv[1]) : nullptr;
  if (run == nullptr) {
    std::fprintf(stderr, "usage: %s fits|png|nifti|yaml FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> files;
  for (int i = 2; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      std::error_code error;  // a dangling or looping symlink is no input: skipped, not thrown
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg))
        if (entry.is_regular_file(error)) files.push_back(entry.path());
    } else if (std::filesystem::is_regular_file(arg)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: not a file or directory\n", argv[i]);
      return 2;
    }
  }
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot open\n", file.c_str());
      return 2;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("%s %s (%zu bytes)\n", argv[1], file.c_str(), bytes.size());  // names the input a crash came from
    std::fflush(stdout);
    run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("%s: %zu inputs replayed\n", argv[1], files.size());
  return 0;
}
