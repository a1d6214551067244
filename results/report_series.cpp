#include "results/report_series.h"

#include <zlib.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace memreplay::results {
namespace {

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t b0 = static_cast<unsigned char>(bytes[i]);
    const uint32_t b1 = i + 1 < bytes.size() ? static_cast<unsigned char>(bytes[i + 1]) : 0;
    const uint32_t b2 = i + 2 < bytes.size() ? static_cast<unsigned char>(bytes[i + 2]) : 0;
    const uint32_t triple = (b0 << 16) | (b1 << 8) | b2;
    out.push_back(kAlphabet[(triple >> 18) & 63]);
    out.push_back(kAlphabet[(triple >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(triple >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[triple & 63] : '=');
  }
  return out;
}

std::vector<uint64_t> slice(const std::vector<uint64_t>& values, size_t from) {
  const size_t to = std::min(values.size(), from + kSeriesChunk);
  return {values.begin() + static_cast<std::ptrdiff_t>(from), values.begin() + static_cast<std::ptrdiff_t>(to)};
}

}  // namespace

std::string encode_series(const std::vector<uint64_t>& values) {
  std::string varints;
  varints.reserve(values.size() * 2);
  const auto put = [&](uint64_t v) {
    while (v >= 0x80) {
      varints.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    varints.push_back(static_cast<char>(v));
  };
  uint64_t previous = 0;
  for (size_t i = 0; i < values.size();) {
    const int64_t delta = static_cast<int64_t>(values[i] - previous);
    // The same delta again and again (a flat reserved line): one entry and a count.
    size_t run = 1;
    while (i + run < values.size() && static_cast<int64_t>(values[i + run] - values[i + run - 1]) == delta) ++run;
    const uint64_t zigzag = (static_cast<uint64_t>(delta) << 1) ^ static_cast<uint64_t>(delta >> 63);
    put(zigzag * 2 + (run > 1 ? 1 : 0));
    if (run > 1) put(run - 1);
    previous = values[i + run - 1];
    i += run;
  }
  uLongf size = compressBound(varints.size());
  std::string packed(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &size, reinterpret_cast<const Bytef*>(varints.data()),
                varints.size(), 6) != Z_OK)
    throw std::runtime_error("zlib could not compress a report series");
  packed.resize(size);
  return base64(packed);
}

nlohmann::json encode_chunks(const std::vector<uint64_t>& values) {
  nlohmann::json chunks = nlohmann::json::array();
  for (size_t from = 0; from < values.size(); from += kSeriesChunk)
    chunks.push_back(encode_series(slice(values, from)));
  return chunks;
}

nlohmann::json encode_levels(const std::vector<uint64_t>& values, const std::vector<uint64_t>& exact) {
  nlohmann::json levels = nlohmann::json::array({encode_chunks(exact)});
  std::vector<uint64_t> min = values, max = values;
  while (min.size() > kTopLevelBuckets) {
    // One level up: each bucket of kLevelFactor buckets below becomes one.
    const size_t n = (min.size() + kLevelFactor - 1) / kLevelFactor;
    std::vector<uint64_t> up_min(n), up_max(n);
    for (size_t j = 0; j < n; ++j) {
      const size_t from = j * kLevelFactor, to = std::min(min.size(), from + kLevelFactor);
      up_min[j] = *std::min_element(min.begin() + static_cast<std::ptrdiff_t>(from),
                                    min.begin() + static_cast<std::ptrdiff_t>(to));
      up_max[j] = *std::max_element(max.begin() + static_cast<std::ptrdiff_t>(from),
                                    max.begin() + static_cast<std::ptrdiff_t>(to));
    }
    min = std::move(up_min);
    max = std::move(up_max);
    nlohmann::json chunks = nlohmann::json::array();
    for (size_t from = 0; from < min.size(); from += kSeriesChunk)
      chunks.push_back({{"min", encode_series(slice(min, from))}, {"max", encode_series(slice(max, from))}});
    levels.push_back(std::move(chunks));
  }
  return {{"n", values.size()}, {"levels", std::move(levels)}};
}

}  // namespace memreplay::results
