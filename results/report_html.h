// The one self-contained HTML file of `memreplay report`: the page (results/report_assets/
// report.html, .css, .js), the vendored libraries (uPlot for the charts, fflate to inflate the
// series; from npm at build time, their licences kept in the page) and the report's data, all
// inline. No network: it opens from disk.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace memreplay::results {

std::string render_report_html(const nlohmann::json& data);

}  // namespace memreplay::results
