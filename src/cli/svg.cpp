#include "cli/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace zero::cli {
namespace {

const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"};

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// A "nice" axis maximum: 1, 2 or 5 times a power of ten, at least v.
double nice_ceiling(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

struct Panel {
  double x, y, w, h;  // plot area
};

std::string axes(const Panel& p, double ymax, const std::string& ylabel, int ticks) {
  std::string s;
  for (int i = 0; i <= ticks; ++i) {
    const double v = ymax * i / ticks;
    const double y = p.y + p.h - p.h * i / ticks;
    s += "<line x1='" + fmt("%.1f", p.x) + "' x2='" + fmt("%.1f", p.x + p.w) + "' y1='" + fmt("%.1f", y) + "' y2='" +
         fmt("%.1f", y) + "' stroke='#ddd'/>\n";
    s += "<text x='" + fmt("%.1f", p.x - 6) + "' y='" + fmt("%.1f", y + 4) + "' text-anchor='end'>" +
         fmt(ymax >= 10 ? "%.0f" : "%.2g", v) + "</text>\n";
  }
  s += "<text transform='translate(" + fmt("%.1f", p.x - 44) + "," + fmt("%.1f", p.y + p.h / 2) +
       ") rotate(-90)' text-anchor='middle'>" + escape(ylabel) + "</text>\n";
  return s;
}

std::string memory_panel(const Panel& p, const std::vector<MemoryBar>& bars, std::map<std::string, std::string>& colors) {
  double top = 0;
  for (const auto& b : bars) {
    double sum = 0;
    for (const auto& part : b.parts) sum += part.second;
    top = std::max({top, sum, b.host_bytes});
  }
  const double mib = 1024.0 * 1024.0;
  const double ymax = nice_ceiling(top / mib);
  std::string s = axes(p, ymax, "MiB per rank", 5);
  s += "<text x='" + fmt("%.1f", p.x + p.w / 2) + "' y='" + fmt("%.1f", p.y + p.h + 34) +
       "' text-anchor='middle'>ZeRO stage (+opt: optimizer offload, +param: parameter offload; grey: host tier)</text>\n";
  const double slot = p.w / std::max<std::size_t>(bars.size(), 1);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double x = p.x + slot * i + slot * 0.2;
    double base = 0;
    s += "<g class='bar-group' data-label='" + escape(bars[i].label) + "'>\n";
    for (const auto& [category, bytes] : bars[i].parts) {
      if (!colors.count(category)) colors[category] = kPalette[colors.size() % 8];
      const double h = p.h * (bytes / mib) / ymax;
      const double y = p.y + p.h - p.h * base / ymax - h;
      s += "<rect x='" + fmt("%.1f", x) + "' y='" + fmt("%.1f", y) + "' width='" + fmt("%.1f", slot * 0.6) + "' height='" +
           fmt("%.1f", h) + "' fill='" + colors[category] + "'><title>" + escape(bars[i].label + ": " + category + " " +
           fmt("%.2f", bytes / mib) + " MiB") + "</title></rect>\n";
      base += bytes / mib;
    }
    if (bars[i].host_bytes > 0) {  // the host tier, hatched grey, beside the device bar
      const double h = p.h * (bars[i].host_bytes / mib) / ymax;
      s += "<rect x='" + fmt("%.1f", x + slot * 0.62) + "' y='" + fmt("%.1f", p.y + p.h - h) + "' width='" + fmt("%.1f", slot * 0.16) +
           "' height='" + fmt("%.1f", h) + "' fill='#bbb' stroke='#666'><title>" +
           escape(bars[i].label + ": host tier " + fmt("%.2f", bars[i].host_bytes / mib) + " MiB") + "</title></rect>\n";
    }
    s += "<text x='" + fmt("%.1f", x + slot * 0.3) + "' y='" + fmt("%.1f", p.y + p.h + 16) + "' text-anchor='middle'>" +
         escape(bars[i].label) + "</text>\n</g>\n";
  }
  return s;
}

std::string loss_panel(const Panel& p, const std::vector<LossCurve>& curves) {
  float lo = 1e30f, hi = -1e30f;
  std::size_t steps = 1;
  for (const auto& c : curves) {
    for (float v : c.values) lo = std::min(lo, v), hi = std::max(hi, v);
    steps = std::max(steps, c.values.size());
  }
  if (lo > hi) lo = 0, hi = 1;
  const double ymax = nice_ceiling(hi);
  std::string s = axes(p, ymax, "training loss", 5);
  s += "<text x='" + fmt("%.1f", p.x + p.w / 2) + "' y='" + fmt("%.1f", p.y + p.h + 34) + "' text-anchor='middle'>step</text>\n";
  for (std::size_t k : {std::size_t{1}, steps}) {
    const double x = p.x + p.w * (steps > 1 ? static_cast<double>(k - 1) / (steps - 1) : 0.0);
    s += "<text x='" + fmt("%.1f", x) + "' y='" + fmt("%.1f", p.y + p.h + 16) + "' text-anchor='middle'>" + std::to_string(k) + "</text>\n";
  }
  const char* dashes[] = {"", "6,3", "2,3", "8,3,2,3"};
  for (std::size_t i = 0; i < curves.size(); ++i) {
    std::string points;
    for (std::size_t k = 0; k < curves[i].values.size(); ++k) {
      const double x = p.x + p.w * (steps > 1 ? static_cast<double>(k) / (steps - 1) : 0.0);
      const double y = p.y + p.h - p.h * curves[i].values[k] / ymax;
      points += fmt("%.1f", x) + "," + fmt("%.1f", y) + " ";
    }
    s += "<polyline class='loss' fill='none' stroke='" + std::string(kPalette[i % 8]) + "' stroke-width='1.5' stroke-dasharray='" +
         dashes[i % 4] + "' points='" + points + "'><title>" + escape(curves[i].label) + "</title></polyline>\n";
    s += "<text x='" + fmt("%.1f", p.x + p.w - 4) + "' y='" + fmt("%.1f", p.y + 14 + 14 * i) + "' text-anchor='end' fill='" +
         kPalette[i % 8] + "'>" + escape(curves[i].label) + "</text>\n";
  }
  return s;
}

}  // namespace

std::string render_memory_and_loss_svg(const std::string& title, const std::vector<MemoryBar>& bars,
                                       const std::vector<LossCurve>& curves) {
  const double W = 980, H = 460;
  std::map<std::string, std::string> colors;
  std::string body = memory_panel({80, 60, 460, 300}, bars, colors);
  body += loss_panel({640, 60, 320, 300}, curves);
  std::string legend;
  double lx = 80;
  for (const auto& bar : bars) {
    for (const auto& part : bar.parts) {
      const std::string& c = part.first;
      if (legend.find("data-category='" + escape(c) + "'") != std::string::npos) continue;
      legend += "<g data-category='" + escape(c) + "'><rect x='" + fmt("%.1f", lx) + "' y='420' width='12' height='12' fill='" +
                colors[c] + "'/><text x='" + fmt("%.1f", lx + 16) + "' y='430'>" + escape(c) + "</text></g>\n";
      lx += 22 + 7.0 * c.size();
    }
  }
  return "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='" + fmt("%.0f", W) +
         "' height='" + fmt("%.0f", H) + "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n" +
         "<text x='20' y='28' font-size='16'>" + escape(title) + "</text>\n" + body + legend + "</svg>\n";
}

}  // namespace zero::cli
