// synthetic_fleet: a fleet of synthetic jobs from real traces, for sweep benchmarks. Job i is
// base trace i mod B with sizes times a factor in 1..--max-factor and times shifted by up to 30
// days, both drawn from a hash of (seed, i): the same fleet on every machine. Writes
// OUT/job-NNNNNN.mrt and OUT/manifest.tsv (NAME<TAB>PATH, the input of `memreplay sweep
// --manifest`); a job whose file exists is kept, so a second run only fills in.
//   synthetic_fleet --out fleet --count 10000 --max-factor 8 tests-imported/*.mrt
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "proto/input_error.h"
#include "results/sweep_task.h"
#include "tools/bench/scaled_trace.h"

namespace {

struct Job {
  std::string name;
  size_t base = 0;
  memreplay::bench::TraceVariant variant;
};

Job job(uint64_t i, uint64_t seed, size_t bases, uint64_t max_factor) {
  const uint64_t draw = memreplay::results::stable_hash(std::to_string(i), seed);
  char name[32];
  std::snprintf(name, sizeof name, "job-%06llu", static_cast<unsigned long long>(i));
  constexpr uint64_t kThirtyDaysNs = 30ull * 24 * 3600 * 1000000000ull;
  return {name, static_cast<size_t>(i % bases), {1 + draw % max_factor, (draw >> 16) % kThirtyDaysNs}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Writes a synthetic fleet: real traces with scaled sizes and shifted times, and its manifest."};
  std::vector<std::string> bases;
  std::string out;
  uint64_t count = 100, max_factor = 4, seed = 1;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  app.add_option("BASE", bases, "real traces (.mrt) the jobs are made from")->required()->check(CLI::ExistingFile);
  app.add_option("--out", out, "folder for the jobs and manifest.tsv")->required();
  app.add_option("--count", count, "jobs (default 100)");
  app.add_option("--max-factor", max_factor, "sizes times 1..this (default 4)")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "draws the factors and shifts (default 1)");
  app.add_option("-j,--jobs", jobs, "files written at once (default every core)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    std::filesystem::create_directories(out);
    std::ofstream manifest(std::filesystem::path(out) / "manifest.tsv");
    for (uint64_t i = 0; i < count; ++i) {
      const std::string name = job(i, seed, bases.size(), max_factor).name;
      manifest << name << "\t" << name << ".mrt\n";
    }
    if (!manifest.flush()) throw memreplay::InputError(out + "/manifest.tsv: cannot be written");
    std::atomic<uint64_t> next{0};
    std::atomic<bool> failed{false};
    const auto work = [&] {
      for (uint64_t i; !failed && (i = next++) < count;) try {
          const Job j = job(i, seed, bases.size(), max_factor);
          const auto path = std::filesystem::path(out) / (j.name + ".mrt");
          if (!std::filesystem::exists(path))
            memreplay::bench::write_scaled_copy(bases[j.base], path.string(), j.variant);
        } catch (const std::exception& e) {
          std::cerr << "synthetic_fleet: " << e.what() << "\n";
          failed = true;
        }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    if (failed) return 2;
  } catch (const std::exception& e) {
    std::cerr << "synthetic_fleet: " << e.what() << "\n";
    return 2;
  }
  std::cout << count << " jobs in " << out << " (manifest.tsv)\n";
  return 0;
}
