#include "results/output_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "proto/input_error.h"

namespace memreplay::results {

void write_output_file(const std::string& path, std::string_view text) {
  // Unique per process: two checks writing beside each other do not share a temporary.
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  std::error_code ec;
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(temporary, ec);
      throw InputError(path + ": cannot write");
    }
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw InputError(path + ": cannot write (" + ec.message() + ")");
  }
}

}  // namespace memreplay::results
