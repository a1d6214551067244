// memreplay import INPUT -o TRACE: a PyTorch memory snapshot or an RMM log into a .mrt trace.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/output_file.h"
#include "base/units.h"
#include "policies/torch_version.h"
#include "proto/input_error.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "replayer/retry_reading_sink.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Convert a recorded run into a memreplay trace. Reads PyTorch memory snapshots "
    "(torch.cuda.memory._dump_snapshot pickles, plain or .gz/.xz/.zst) and RMM "
    "logging_resource_adaptor CSV logs; the format is detected from the content. The pickle is "
    "decoded without ever importing or calling Python code. With --capacity, the run's per-process cap, a "
    "burst of segment frees the snapshot leaves open between a release-and-retry and an empty_cache() call is "
    "settled by replaying the trace up to it under that cap, and the trace records the cap for its replays.\n"
    "  memreplay import snapshot.pickle.xz -o run.mrt --torch-version 2.11.0 --capacity 867416960";

struct ImportOptions {
  std::string input;
  std::string output;
  std::string torch_version;
  std::optional<uint64_t> capacity;
  std::string json;
};

// Everything goes on to `inner`, the header with the torch release the user named: a snapshot
// pickle does not hold one (docs/pytorch-versions.md).
class WithTorchVersion final : public TraceSink {
 public:
  WithTorchVersion(TraceSink& inner, std::string version) : inner_(inner), version_(std::move(version)) {}
  void begin(const proto::TraceHeader& header) override { inner_.begin(stamped(header)); }
  uint32_t intern_stack(std::span<const FrameText> frames) override { return inner_.intern_stack(frames); }
  void append(const Event& event) override { inner_.append(event); }
  void append_annotation(const Event& event, const KeyValues& metadata) override {
    inner_.append_annotation(event, metadata);
  }
  void finish() override { inner_.finish(); }
  std::optional<bool> burst_is_retry(const Event& next_alloc) override { return inner_.burst_is_retry(next_alloc); }
  std::optional<ChunkFormat> encoded_chunk_format() const override { return inner_.encoded_chunk_format(); }
  void write_encoded(const proto::TraceHeader& header, format::ChunkEncoder&& encoder,
                     const std::vector<format::ChunkRows>& rows) override {
    inner_.write_encoded(stamped(header), std::move(encoder), rows);
  }

 private:
  proto::TraceHeader stamped(const proto::TraceHeader& header) const {
    proto::TraceHeader out = header;
    (*out.mutable_allocator_settings())[std::string(kTorchVersionSetting)] = version_;
    return out;
  }
  TraceSink& inner_;
  std::string version_;
};

void import(const ImportOptions& options) {
  if (!options.torch_version.empty() && !parse_torch_version(options.torch_version))
    throw InputError("--torch-version " + options.torch_version + ": not a torch release (e.g. 2.11.0 or 2.13)");
  const auto start = std::chrono::steady_clock::now();
  if (stderr_is_terminal()) std::cerr << "importing " << options.input << "...\n";
  TraceWriter writer(options.output, import_writer_options());
  TraceSink* sink = &writer;
  std::optional<RetryReadingSink> capped;
  if (options.capacity) sink = &capped.emplace(*sink, *options.capacity);
  std::optional<WithTorchVersion> stamped;
  if (!options.torch_version.empty()) sink = &stamped.emplace(*sink, options.torch_version);
  import_file(options.input, *sink);
  if (const auto oom = capped ? capped->out_of_memory_at() : std::nullopt)
    warn("--capacity " + format_bytes(*options.capacity) +
         ": the trace does not fit under it (replayed, it runs out "
         "of memory at trace event " +
         std::to_string(*oom) +
         "); bursts of segment frees after that are read "
         "without it");
  const uint64_t events = writer.events_appended();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.json != "-")
    std::printf("%s: %llu events written to %s in %.2f s\n", options.input.c_str(),
                static_cast<unsigned long long>(events), options.output.c_str(), seconds);
  if (!options.json.empty())
    write_json({{"input", options.input}, {"output", options.output}, {"events", events}, {"seconds", seconds}},
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
  command.add_option("--torch-version", options.torch_version,
                     "the torch release that recorded the snapshot (torch.__version__; a snapshot does not "
                     "say): trace commands warn when the policy models another");
  command.add_option_function<std::string>(
      "--capacity",
      [capacity = &options.capacity](const std::string& text) { *capacity = parse_bytes(text, "--capacity"); },
      "the recorded run's per-process cap, as set_per_process_memory_fraction set it (e.g. 867416960, 40GiB): "
      "settles release-and-retry against empty_cache() where the snapshot cannot, and is recorded in the trace");
  add_json_option(command, options.json, "what was written");
}

}  // namespace memreplay::cli
