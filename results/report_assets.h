// The report's page and vendored libraries, compiled in (generated at build time by
// cmake/embed_files.cmake from results/report_assets/ and the npm packages it installs).
#pragma once

#include <string_view>

namespace memreplay::results::report_assets {

extern const std::string_view kReportHtml, kReportCss, kReportJs;
extern const std::string_view kUplotJs, kUplotCss, kUplotLicense, kUplotVersion;
extern const std::string_view kFflateJs, kFflateLicense, kFflateVersion;

}  // namespace memreplay::results::report_assets
