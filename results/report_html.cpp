#include "results/report_html.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "results/report_assets.h"

namespace memreplay::results {
namespace {

// Inside <script> "</" would end the element; "<\/" means the same in JSON and JavaScript.
std::string script_safe(std::string text) {
  for (size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3)) text.replace(at, 2, "<\\/");
  return text;
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

void fill(std::string& page, const std::string& slot, const std::string& text) {
  const auto at = page.find(slot);
  if (at == std::string::npos) throw std::logic_error("report template has no " + slot);
  page.replace(at, slot.size(), text);
}

}  // namespace

std::string render_report_html(const nlohmann::json& data) {
  std::string page(report_assets::kReportHtml);
  // Last slot first: the text put in never holds a slot that is still to be filled.
  fill(page, "{{LICENSES}}",
       html_escape("uPlot " + std::string(report_assets::kUplotVersion) + "\n" +
                   std::string(report_assets::kUplotLicense) + "\n\nfflate " +
                   std::string(report_assets::kFflateVersion) + "\n" + std::string(report_assets::kFflateLicense)));
  fill(page, "{{REPORT_JS}}", script_safe(std::string(report_assets::kReportJs)));
  fill(page, "{{DATA}}", script_safe(data.dump()));
  fill(page, "{{FFLATE_JS}}", script_safe(std::string(report_assets::kFflateJs)));
  fill(page, "{{UPLOT_JS}}", script_safe(std::string(report_assets::kUplotJs)));
  fill(page, "{{REPORT_CSS}}", std::string(report_assets::kReportCss));
  fill(page, "{{UPLOT_CSS}}", std::string(report_assets::kUplotCss));
  fill(page, "{{TITLE}}", html_escape("memreplay report: " + data.value("trace", std::string())));
  return page;
}

}  // namespace memreplay::results
