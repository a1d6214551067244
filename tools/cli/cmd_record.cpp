// memreplay record -o TRACE -- CMD ARGS: runs a program with the CUDA interposer preloaded
// (recorder/interposer/hooks.h) and summarizes the trace it leaves, or the traces: each process
// of the run that makes CUDA calls writes one (TRACE, then TRACE-without-.mrt.<pid>.mrt).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/text_escape.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/interposer/child_command.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/text_format.h"

extern char** environ;

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Run a program and record its CUDA memory calls (runtime and driver: malloc/free, async and pool "
    "allocations, virtual memory, streams, events, synchronization) into a trace, through an LD_PRELOAD "
    "interposer. Any CUDA program: PyTorch, JAX, cuBLAS, your own. Each process that calls CUDA writes one "
    "trace; the trace survives the program being killed (all but the last ~flush-ms of calls). The exit "
    "status is the program's.\n"
    "  memreplay record -o run.mrt -- python train.py --steps 10";

namespace fs = std::filesystem;

struct RecordOptions {
  std::string output;
  std::string interposer;
  std::string summary_json;
  std::string malloc_as = "segment";
  uint32_t flush_ms = 500;
  uint32_t chunk_events = 16384;
  bool quiet = false;
  std::vector<std::string> command;
};

// The interposer: --interposer, $MEMREPLAY_INTERPOSER, or beside this binary (build tree, or an
// installed/bundled lib/ next to bin/).
std::string find_interposer(const std::string& given) {
  if (!given.empty()) {
    if (!fs::exists(given)) throw InputError(given + ": no such interposer library");
    return fs::absolute(given).string();
  }
  if (const char* env = std::getenv("MEMREPLAY_INTERPOSER"); env && *env) return find_interposer(env);
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe").parent_path();
  for (const fs::path& candidate :
       {exe_dir / "../recorder/interposer/libmemreplay_interposer.so", exe_dir / "../lib/libmemreplay_interposer.so",
        exe_dir / "libmemreplay_interposer.so"})
    if (fs::exists(candidate)) return fs::canonical(candidate).string();
  throw InputError(
      "cannot find libmemreplay_interposer.so (built only with the CUDA toolkit): pass --interposer PATH or set "
      "MEMREPLAY_INTERPOSER");
}

// Files a process of this run may write besides the output: STEM.<pid>.mrt.
std::vector<fs::path> per_process_traces(const fs::path& output) {
  std::vector<fs::path> found;
  const std::string name = output.filename().string();
  const std::string stem = name.ends_with(".mrt") ? name.substr(0, name.size() - 4) : name;
  const std::regex pattern(std::regex_replace(stem, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                           R"(\.[0-9]+\.mrt)");
  const fs::path dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (std::regex_match(entry.path().filename().string(), pattern)) found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

std::string basename_of(const std::string& path) { return fs::path(path).filename().string(); }

// What a trace holds, with the device allocations grouped by the API called and its caller.
nlohmann::json summarize(const fs::path& path) {
  TraceReader reader(path.string());
  nlohmann::json kinds = nlohmann::json::object();
  std::map<uint32_t, std::pair<std::string, std::string>> stack_names;  // stack -> (api, caller module)
  struct Group {
    uint64_t calls = 0, failed = 0, bytes = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Group> groups;  // (kind, api, caller)
  uint64_t events = 0, failed = 0, dropped = 0;
  std::vector<Event> batch;
  while (reader.next_batch(batch)) {
    for (const Event& e : batch) {
      ++events;
      kinds[std::string(event_kind_name(e.kind))] = kinds.value(std::string(event_kind_name(e.kind)), 0) + 1;
      if (e.has_flag(kFailed)) ++failed;
      if (e.kind == EventKind::annotation) {
        for (const auto& [key, value] : reader.annotation(e))
          if (key == "memreplay.dropped_events") dropped = std::stoull(value);
        continue;
      }
      if (e.kind != EventKind::segment_alloc && e.kind != EventKind::alloc && e.kind != EventKind::physical_alloc)
        continue;
      auto it = stack_names.find(e.stack);
      if (it == stack_names.end()) {
        const auto frames = reader.stack_frames(e.stack);
        it = stack_names
                 .emplace(e.stack, std::pair{frames.size() > 0 ? frames[0].name : std::string("?"),
                                             frames.size() > 1 ? basename_of(frames[1].filename) : std::string("?")})
                 .first;
      }
      Group& g = groups[{std::string(event_kind_name(e.kind)), it->second.first, it->second.second}];
      ++g.calls;
      if (e.has_flag(kFailed))
        ++g.failed;
      else
        g.bytes += e.size;
    }
  }
  nlohmann::json allocations = nlohmann::json::array();
  for (const auto& [key, g] : groups)
    allocations.push_back({{"kind", std::get<0>(key)},
                           {"api", std::get<1>(key)},
                           {"caller", std::get<2>(key)},
                           {"calls", g.calls},
                           {"failed", g.failed},
                           {"bytes", g.bytes}});
  const auto note = reader.truncation_note();
  return {{"path", path.string()},
          {"pid", reader.header().pid()},
          {"command_line", reader.header().command_line()},
          {"complete", reader.complete()},
          {"note", note ? nlohmann::json(*note) : nlohmann::json(nullptr)},
          {"events", events},
          {"failed_calls", failed},
          {"dropped_events", dropped},
          {"kinds", kinds},
          {"device_allocations", allocations}};
}

void print_summary(const nlohmann::json& trace) {
  std::printf("%s: %llu events%s, process %llu\n", trace["path"].get<std::string>().c_str(),
              static_cast<unsigned long long>(trace["events"].get<uint64_t>()),
              trace["complete"].get<bool>() ? "" : " (incomplete: the process did not exit normally)",
              static_cast<unsigned long long>(trace["pid"].get<uint64_t>()));
  if (!trace["note"].is_null()) std::printf("  %s\n", trace["note"].get<std::string>().c_str());
  if (trace["dropped_events"].get<uint64_t>() > 0)
    std::printf("  %llu events were dropped: the trace is incomplete\n",
                static_cast<unsigned long long>(trace["dropped_events"].get<uint64_t>()));
  std::printf("  %-16s %-28s %-28s %8s %7s %16s\n", "kind", "api", "caller", "calls", "failed", "bytes");
  for (const auto& g : trace["device_allocations"])
    std::printf("  %-16s %-28s %-28s %8llu %7llu %16llu\n", g["kind"].get<std::string>().c_str(),
                terminal_safe(g["api"].get<std::string>()).c_str(),
                terminal_safe(g["caller"].get<std::string>()).c_str(),
                static_cast<unsigned long long>(g["calls"].get<uint64_t>()),
                static_cast<unsigned long long>(g["failed"].get<uint64_t>()),
                static_cast<unsigned long long>(g["bytes"].get<uint64_t>()));
}

// Runs the command with `env` added; returns its wait status. Terminal signals reach the child
// directly; we wait through them and pass on SIGTERM/SIGHUP sent to us alone.
pid_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// `exec_error`: set to the errno of a program that could not be started (0 when it ran).
int run_command(const std::vector<std::string>& command, const std::map<std::string, std::string>& env,
                int& exec_error) {
  const ChildCommand child(command, env);
  // The child reports a failed exec through this pipe; a successful one closes it (O_CLOEXEC).
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0)
    throw InputError(std::string("cannot start the command: ") + std::strerror(errno));
  struct sigaction ignore {
  }, forward{}, old_int{}, old_quit{}, old_term{}, old_hup{};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forward_signal;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);
  const pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    ::close(report[0]);
    execvpe(child.program(), child.argv(), child.envp());
    const int error = errno;
    [[maybe_unused]] const ssize_t n = ::write(report[1], &error, sizeof error);
    _exit(127);
  }
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    throw InputError(std::string("cannot start the command: ") + std::strerror(errno));
  }
  exec_error = 0;
  while (::read(report[0], &exec_error, sizeof exec_error) < 0 && errno == EINTR) {}
  ::close(report[0]);
  g_child = pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  g_child = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  return status;
}

void record(const RecordOptions& options) {
  const std::string interposer = find_interposer(options.interposer);
  const fs::path output = fs::absolute(options.output);
  if (!fs::exists(output.parent_path())) throw InputError(output.parent_path().string() + ": no such directory");
  // This run's traces replace an earlier run's: a leftover would pass for one of ours. Only a
  // file is removed (never a device such as /dev/null: the recorded process creates the trace).
  std::error_code ec;
  const fs::file_status existing = fs::symlink_status(output, ec);
  if (fs::exists(existing) && !fs::is_regular_file(existing) && !fs::is_symlink(existing))
    throw InputError(options.output + ": not a regular file: the recorded program creates the trace there");
  fs::remove(output, ec);
  for (const fs::path& old : per_process_traces(output)) fs::remove(old, ec);

  std::map<std::string, std::string> env = {
      {"MEMREPLAY_OUTPUT", output.string()},
      {"MEMREPLAY_FLUSH_MS", std::to_string(options.flush_ms)},
      {"MEMREPLAY_CHUNK_EVENTS", std::to_string(options.chunk_events)},
      {"MEMREPLAY_MALLOC_EVENTS", options.malloc_as},
  };
  const char* preload = std::getenv("LD_PRELOAD");
  env["LD_PRELOAD"] = interposer + (preload && *preload ? std::string(":") + preload : "");
  if (options.quiet) env["MEMREPLAY_QUIET"] = "1";

  int exec_error = 0;
  const int status = run_command(options.command, env, exec_error);
  int exit_status = 0;
  nlohmann::json result = {{"command", options.command}, {"interposer", interposer}};
  if (exec_error != 0) {
    // Nothing ran, so nothing was recorded: no trace (an empty one would pass for a run), and the
    // exit status a shell gives, 127 for a program not found, 126 for one that cannot run.
    const std::string why = "cannot run " + options.command[0] + ": " + std::strerror(exec_error);
    std::fprintf(stderr, "memreplay record: %s; no trace written\n", terminal_safe(why).c_str());
    result["error"] = why;
    result["traces"] = nlohmann::json::array();
    if (!options.summary_json.empty()) write_json(result, options.summary_json);
    command_exit_status = exec_error == ENOENT ? 127 : 126;
    return;
  }
  if (WIFEXITED(status)) {
    exit_status = WEXITSTATUS(status);
    result["exit_status"] = exit_status;
  } else if (WIFSIGNALED(status)) {
    exit_status = 128 + WTERMSIG(status);
    result["signal"] = WTERMSIG(status);
    std::fprintf(stderr, "memreplay record: %s was killed by signal %d (%s)\n", options.command[0].c_str(),
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
  }

  std::vector<fs::path> traces;
  if (fs::exists(output)) traces.push_back(output);
  for (const fs::path& p : per_process_traces(output)) traces.push_back(p);
  result["traces"] = nlohmann::json::array();
  for (const fs::path& p : traces) {
    try {
      nlohmann::json trace = summarize(p);
      if (!options.quiet && options.summary_json != "-") print_summary(trace);
      result["traces"].push_back(std::move(trace));
    } catch (const InputError& e) {
      std::fprintf(stderr, "memreplay record: %s\n", terminal_safe(e.what()).c_str());
      result["traces"].push_back({{"path", p.string()}, {"error", e.what()}});
    }
  }
  if (traces.empty()) {
    // A valid, empty trace, so the next step of a pipeline (info, replay, check) finds a file.
    proto::TraceHeader header;
    header.set_source("cuda-interposer");
    std::string command_line;
    for (const auto& a : options.command) command_line += (command_line.empty() ? "" : " ") + a;
    header.set_command_line(command_line);
    TraceWriter writer(output.string());
    writer.begin(header);
    writer.finish();
    std::fprintf(stderr, "memreplay record: %s made no CUDA call that was recorded; wrote an empty trace %s\n",
                 options.command[0].c_str(), output.c_str());
    result["traces"].push_back(summarize(output));
  }
  if (!options.summary_json.empty()) write_json(result, options.summary_json);
  command_exit_status = exit_status;
}

}  // namespace

void add_record_command(CLI::App& app) {
  auto [command, options] = add_command<RecordOptions>(app, "record", kHelp, record);
  command.add_option("-o,--output", options.output, "trace file to write (.mrt)")->required();
  command.add_option("--interposer", options.interposer,
                     "libmemreplay_interposer.so (default: beside this binary, or $MEMREPLAY_INTERPOSER)");
  command.add_option("--summary-json,--json", options.summary_json,
                     "also write the summary (traces, events per kind, device allocations by caller) as JSON to "
                     "FILE (- for stdout)");
  command
      .add_option("--malloc-as", options.malloc_as,
                  "record cudaMalloc/cuMemAlloc and cuMemMap as driver segments and mappings (default) or as "
                  "the program's own allocations (alloc/free_completed, replayable against allocator policies)")
      ->check(CLI::IsMember({"segment", "alloc"}));
  command.add_option("--flush-ms", options.flush_ms, "write to the file at least this often (default 500)")
      ->check(CLI::Range(1u, 3'600'000u));
  command.add_option("--chunk-events", options.chunk_events, "events per chunk (default 16384)")
      ->check(CLI::Range(1u, 1u << 21));
  command.add_flag("-q,--quiet", options.quiet, "no summary on stdout, no start-up line from the interposer");
  command.add_option("COMMAND", options.command, "the program and its arguments (after --)")->required();
}

}  // namespace memreplay::cli
