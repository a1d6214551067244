// memreplay import INPUT -o TRACE: a PyTorch memory snapshot or an RMM log into a .mrt trace.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/output_file.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Convert a recorded run into a memreplay trace. Reads PyTorch memory snapshots "
    "(torch.cuda.memory._dump_snapshot pickles, plain or .gz/.xz/.zst) and RMM "
    "logging_resource_adaptor CSV logs; the format is detected from the content. The pickle is "
    "decoded without ever importing or calling Python code.\n"
    "  memreplay import snapshot.pickle.xz -o run.mrt";

// Enough to keep up with the encoding thread at zstd level 3 (a chunk's compression takes about
// as long as encoding it); the threads exist only while a chunk is being compressed.
constexpr uint32_t kCompressionThreads = 3;

struct ImportOptions {
  std::string input;
  std::string output;
  std::string json;
};

void import(const ImportOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (stderr_is_terminal()) std::cerr << "importing " << options.input << "...\n";
  // A snapshot's chunks are encoded and compressed while it is read where the output stage adds
  // nothing to its entries (recorder/import/chunks_ahead.h); otherwise encoding overlaps the output
  // stage, and the chunks' zstd the encoding.
  TraceWriter writer(options.output, {.background_encoding = true, .compression_threads = kCompressionThreads});
  import_file(options.input, writer);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.json != "-")
    std::printf("%s: %llu events written to %s in %.2f s\n", options.input.c_str(),
                static_cast<unsigned long long>(writer.events_appended()), options.output.c_str(), seconds);
  if (!options.json.empty())
    write_json({{"input", options.input},
                {"output", options.output},
                {"events", writer.events_appended()},
                {"seconds", seconds}},
               options.json);
}

}  // namespace

void add_import_command(CLI::App& app) {
  auto [command, options] = add_command<ImportOptions>(app, "import", kHelp, import);
  command.add_option("INPUT", options.input, "snapshot pickle or RMM CSV log")
      ->required()
      ->check(CLI::ExistingFile)
      ->each(protect_input);  // -o naming the input would replace it
  command.add_option("-o,--output", options.output, "trace file to write (.mrt)")->required();
  add_json_option(command, options.json, "what was written");
}

}  // namespace memreplay::cli
