#include "results/report_html.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/text_escape.h"
#include "results/report_assets.h"

namespace memreplay::results {
namespace {

// Inside <script> "</" would end the element; "<\/" means the same in JavaScript. One pass (a
// replace per match would copy the rest of the text each time: quadratic in the matches).
std::string script_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += '\\';
  }
  return out;
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
  fill(page, "{{REPORT_JS}}", script_safe(report_assets::kReportJs));
  // The data holds the trace's own text (frame names): no "<" of it may reach the HTML parser.
  fill(page, "{{DATA}}", json_for_script(data.dump()));
  fill(page, "{{FFLATE_JS}}", script_safe(report_assets::kFflateJs));
  fill(page, "{{UPLOT_JS}}", script_safe(report_assets::kUplotJs));
  fill(page, "{{REPORT_CSS}}", std::string(report_assets::kReportCss));
  fill(page, "{{UPLOT_CSS}}", std::string(report_assets::kUplotCss));
  fill(page, "{{TITLE}}", html_escape("memreplay report: " + data.value("trace", std::string())));
  return page;
}

}  // namespace memreplay::results
