#include "cli/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "memory/ledger.h"

namespace zero::cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"};

// Fixed colours for the names the demo uses, so that a category keeps its colour in every panel.
std::string color_of(const std::string& name) {
  static const std::map<std::string, std::string> fixed = {
      {"parameters", "#4e79a7"},        {"gradients", "#f28e2b"},           {"optimizer state", "#e15759"},
      {"activations (peak)", "#edc948"}, {"gathered units (peak)", "#76b7b2"}, {"comm buffers (peak)", "#59a14f"},
      {"all-reduce", "#b07aa1"},        {"reduce-scatter", "#9c755f"},      {"all-gather", "#ff9da7"}};
  const auto it = fixed.find(name);
  if (it != fixed.end()) return it->second;
  return kPalette[std::hash<std::string>{}(name) % 8];
}

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

std::string num(double v) { return fmt("%.1f", v); }

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else if (c == '\'') out += "&apos;";
    else out += c;
  }
  return out;
}

std::string bytes_text(double b) { return format_bytes(static_cast<std::uint64_t>(std::llround(std::max(b, 0.0)))); }

std::string text(double x, double y, const std::string& s, const std::string& extra = "") {
  return "<text x='" + num(x) + "' y='" + num(y) + "'" + (extra.empty() ? "" : " " + extra) + ">" + escape(s) + "</text>\n";
}

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& tip,
                 const std::string& extra = "") {
  return "<rect x='" + num(x) + "' y='" + num(y) + "' width='" + num(w) + "' height='" + num(std::max(h, 0.0)) + "' fill='" +
         fill + "'" + (extra.empty() ? "" : " " + extra) + "><title>" + escape(tip) + "</title></rect>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& style) {
  return "<line x1='" + num(x1) + "' y1='" + num(y1) + "' x2='" + num(x2) + "' y2='" + num(y2) + "' " + style + "/>\n";
}

// A "nice" axis maximum at least v: 1, 1.5, 2, 3, 4, 5, 6 or 8 times a power of ten.
double nice_ceiling(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (m * p >= v * (1 + 1e-9)) return m * p;
  return 10 * p;
}

double sum(const Parts& parts) {
  double s = 0;
  for (const auto& part : parts) s += part.second;
  return s;
}

// A plot area with a linear y axis from 0 to ymax (in the axis's unit; `unit` bytes each).
struct Panel {
  double x, y, w, h;
  double ymax, unit;
  double y_of(double bytes) const { return y + h - h * (bytes / unit) / ymax; }
  double height_of(double bytes) const { return h * (bytes / unit) / ymax; }
};

// Grid lines every `step` (axis units), their labels, and the axis title.
std::string axes(const Panel& p, double step, const std::string& ylabel) {
  std::string s;
  for (int i = 0; step * i <= p.ymax * (1 + 1e-9); ++i) {
    const double v = step * i, y = p.y + p.h - p.h * v / p.ymax;
    s += line(p.x, y, p.x + p.w, y, "stroke='#e4e4e4'");
    s += text(p.x - 6, y + 4, fmt(step >= 1 ? "%.0f" : step >= 0.1 ? "%.1f" : "%.2f", v), "text-anchor='end' font-size='11'");
  }
  s += line(p.x, p.y + p.h, p.x + p.w, p.y + p.h, "stroke='#444'");
  s += "<text transform='translate(" + num(p.x - 46) + "," + num(p.y + p.h / 2) + ") rotate(-90)' text-anchor='middle'>" +
       escape(ylabel) + "</text>\n";
  return s;
}

// A stack of parts from the axis up; returns its SVG.
std::string stack(const Panel& p, double x, double w, const Parts& parts, const std::string& who, const std::string& extra = "") {
  std::string s;
  double base = 0;
  for (const auto& [name, bytes] : parts) {
    if (bytes <= 0) continue;
    s += rect(x, p.y_of(base + bytes), w, p.height_of(bytes), color_of(name), who + ": " + name + " " + bytes_text(bytes),
              "data-category='" + escape(name) + "' data-bytes='" + fmt("%.0f", bytes) + "'" + (extra.empty() ? "" : " " + extra));
    base += bytes;
  }
  return s;
}

// The formula's value as a dashed black tick across a bar.
std::string formula_tick(const Panel& p, double x, double w, const Mark& mark) {
  const double y = p.y_of(mark.bytes);
  return line(x - 4, y, x + w + 4, y, "stroke='#000' stroke-width='1.6' stroke-dasharray='4,2'");
}

std::string mark_attributes(const std::string& prefix, const Mark& m) {
  return "data-" + prefix + "-mark='" + escape(m.text) + "' data-" + prefix + "-formula-bytes='" + fmt("%.0f", m.bytes) + "'";
}

// One run's model-state bar (device tier) and, with offload, its host-tier bar, with the marks.
std::string state_group(const Panel& p, double slot_x, double slot, const FigureRun& run) {
  const double dw = slot * 0.42, dx = slot_x + slot * (run.host.empty() ? 0.29 : 0.1);
  const double measured = sum(run.state);
  std::string s = "<g class='state-group' data-label='" + escape(run.label) + "' " + mark_attributes("state", run.state_mark) +
                  " data-state-measured-bytes='" + fmt("%.0f", measured) + "'";
  if (!run.host.empty()) s += " " + mark_attributes("host", run.host_mark) + " data-host-measured-bytes='" + fmt("%.0f", sum(run.host)) + "'";
  s += ">\n" + stack(p, dx, dw, run.state, run.label + " device");
  s += formula_tick(p, dx, dw, run.state_mark);
  const double top = std::min(p.y_of(measured), p.y_of(run.state_mark.bytes));
  s += text(dx + dw / 2, top - 5, bytes_text(measured), "text-anchor='middle' font-size='10'");
  if (!run.host.empty()) {
    const double hx = dx + dw + slot * 0.06, hw = slot * 0.3;
    s += stack(p, hx, hw, run.host, run.label + " host tier", "stroke='#333' stroke-width='0.6'");
    s += rect(hx, p.y_of(sum(run.host)), hw, p.height_of(sum(run.host)), "url(#hatch)", run.label + " host tier");
    s += formula_tick(p, hx, hw, run.host_mark);
    const double htop = std::min(p.y_of(sum(run.host)), p.y_of(run.host_mark.bytes));
    s += text(hx + hw / 2, htop - 17, "host", "text-anchor='middle' font-size='9'");
    s += text(hx + hw / 2, htop - 6, run.host_mark.text, "text-anchor='middle' font-size='9' class='mark'");
  }
  const double cx = slot_x + slot / 2, base = p.y + p.h;
  s += text(cx, base + 16, run.label, "text-anchor='middle' font-weight='bold'");
  s += text(cx, base + 31, run.state_mark.text, "text-anchor='middle' font-size='10' class='mark'");
  s += text(cx, base + 45, "= " + bytes_text(run.state_mark.bytes), "text-anchor='middle' font-size='10' fill='#555'");
  if (!run.host.empty())
    s += text(cx, base + 58, "host " + bytes_text(sum(run.host)), "text-anchor='middle' font-size='10' fill='#555'");
  return s + "</g>\n";
}

double max_bytes(const std::vector<FigureRun>& runs, bool working) {
  double m = 0;
  for (const FigureRun& r : runs) {
    if (working) m = std::max(m, sum(r.working));
    else m = std::max({m, sum(r.state), r.state_mark.bytes, sum(r.host), r.host_mark.bytes});
  }
  return m;
}

std::string state_panel(const Panel& p, double step, const std::vector<FigureRun>& runs) {
  std::string s = "<g class='state-panel'>\n" + axes(p, step, "MiB per rank");
  s += text(p.x, p.y - 12, "Model states per rank: bars measured by the memory ledger, dashed lines the paper's formula",
            "font-weight='bold'");
  const double slot = p.w / runs.size();
  for (std::size_t i = 0; i < runs.size(); ++i) s += state_group(p, p.x + slot * i, slot, runs[i]);
  return s + "</g>\n";
}

const FigureRun* find_run(const std::vector<FigureRun>& runs, const std::string& label) {
  for (const FigureRun& r : runs)
    if (r.label == label) return &r;
  return nullptr;
}

double activations_of(const FigureRun& r) {
  for (const auto& [name, bytes] : r.working)
    if (name.rfind("activations", 0) == 0) return bytes;
  return 0;
}

// "3+ckpt against 3: ...", "activations 9.76 MiB → 4.22 MiB per rank (−57%); step time 315 → 385 ms (×1.22)"
std::vector<std::string> checkpointing_sentences(const FigureRun& run, const FigureRun& base) {
  const double a = activations_of(base), b = activations_of(run);
  std::string s = "activations " + bytes_text(a) + " \u2192 " + bytes_text(b) + " per rank";
  if (a > 0) s += fmt(" (%+.0f%%)", 100.0 * (b - a) / a);
  if (base.step_ms > 0 && run.step_ms > 0)
    s += "; step time " + fmt("%.0f", base.step_ms) + " \u2192 " + fmt("%.0f ms", run.step_ms) +
         fmt(" (\u00d7%.2f, on a shared machine)", run.step_ms / base.step_ms);
  return {run.label + " against " + base.label + ": activation checkpointing, each block keeping only its input and running again in backward:",
          s};
}

std::string working_panel(const Panel& p, double step, const std::vector<FigureRun>& runs, double& bottom) {
  std::string s = "<g class='working-panel'>\n" + axes(p, step, "MiB per rank");
  s += text(p.x, p.y - 12, "Not model state: the device's other peaks, on the same scale", "font-weight='bold'");
  const double slot = p.w / runs.size();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const FigureRun& run = runs[i];
    const double w = slot * 0.42, x = p.x + slot * i + slot * 0.29;
    s += "<g class='working-group' data-label='" + escape(run.label) + "' data-activation-bytes='" + fmt("%.0f", activations_of(run)) + "'>\n";
    s += stack(p, x, w, run.working, run.label);
    s += text(x + w / 2, p.y_of(sum(run.working)) - 5, bytes_text(sum(run.working)), "text-anchor='middle' font-size='10'");
    s += text(x + w / 2, p.y + p.h + 16, run.label, "text-anchor='middle' font-weight='bold'") + "</g>\n";
  }
  bottom = p.y + p.h + 36;
  for (const FigureRun& run : runs) {
    const FigureRun* base = run.baseline.empty() ? nullptr : find_run(runs, run.baseline);
    if (!base) continue;
    for (const std::string& sentence : checkpointing_sentences(run, *base)) {
      s += text(p.x, bottom, sentence, "class='checkpointing-note' font-size='12'");
      bottom += 16;
    }
  }
  return s + "</g>\n";
}

// Bytes sent per step per run, stacked by collective, beside each run's formula and the two
// reference levels 2Ψ(N-1)/N and 3Ψ(N-1)/N drawn across the panel.
std::string traffic_panel(const Panel& p, double step, const std::vector<FigureRun>& runs) {
  std::string s = "<g class='traffic-panel'>\n" + axes(p, step, "MiB sent per rank per step");
  s += text(p.x, p.y - 12, "Traffic: bytes a rank sends in one step", "font-weight='bold'");
  std::vector<const Mark*> levels;
  for (const FigureRun& r : runs)
    if (std::none_of(levels.begin(), levels.end(), [&](const Mark* m) { return m->text == r.traffic_mark.text; }))
      levels.push_back(&r.traffic_mark);
  for (const Mark* m : levels) {
    const double y = p.y_of(m->bytes);
    s += line(p.x, y, p.x + p.w, y, "stroke='#888' stroke-dasharray='2,3'");
    s += text(p.x + 4, y - 4, m->text + " = " + bytes_text(m->bytes), "font-size='10' fill='#333' class='mark'");
  }
  const double slot = p.w / runs.size();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const FigureRun& run = runs[i];
    const double w = slot * 0.55, x = p.x + slot * i + slot * 0.22;
    s += "<g class='traffic-group' data-label='" + escape(run.label) + "' " + mark_attributes("traffic", run.traffic_mark) +
         " data-traffic-measured-bytes='" + fmt("%.0f", sum(run.sent)) + "'>\n";
    s += stack(p, x, w, run.sent, run.label + " sent");
    s += formula_tick(p, x, w, run.traffic_mark);
    const double lx = x + w / 2, ly = p.y + p.h + 12;
    s += "<text transform='translate(" + num(lx) + "," + num(ly) + ") rotate(-35)' text-anchor='end' font-size='11'>" +
         escape(run.label) + "</text>\n</g>\n";
  }
  return s + "</g>\n";
}

// Runs whose losses are the same bits at every step share a curve.
std::vector<std::vector<const FigureRun*>> loss_groups(const std::vector<FigureRun>& runs) {
  std::vector<std::vector<const FigureRun*>> groups;
  for (const FigureRun& r : runs) {
    auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g[0]->losses == r.losses; });
    if (same == groups.end()) groups.push_back({&r});
    else same->push_back(&r);
  }
  return groups;
}

std::string labels_of(const std::vector<const FigureRun*>& group) {
  std::string s;
  for (const FigureRun* r : group) s += (s.empty() ? "" : ", ") + r->label;
  return s;
}

std::string polyline(const Panel& p, const std::vector<float>& v, std::size_t steps, const std::string& color,
                     const char* dash, const std::string& tip) {
  std::string points;
  for (std::size_t k = 0; k < v.size(); ++k) {
    const double x = p.x + p.w * (steps > 1 ? static_cast<double>(k) / (steps - 1) : 0.0);
    points += num(x) + "," + num(p.y + p.h - p.h * v[k] / p.ymax) + " ";
  }
  return "<polyline class='loss' fill='none' stroke='" + color + "' stroke-width='1.6' stroke-dasharray='" + dash +
         "' points='" + points + "'><title>" + escape(tip) + "</title></polyline>\n";
}

// What the curves say, in words, from the values: one line, or how many distinct ones.
std::vector<std::string> loss_sentences(const std::vector<FigureRun>& runs, std::size_t groups) {
  bool weights_same = true;
  for (const FigureRun& r : runs) weights_same = weights_same && r.weights_sha256 == runs[0].weights_sha256;
  std::vector<std::string> out;
  if (groups == 1) {
    out.push_back("All " + std::to_string(runs.size()) + " runs' losses are the same bits at every step: one line.");
  } else {
    out.push_back("The losses DIFFER: " + std::to_string(groups) + " distinct curves among " + std::to_string(runs.size()) +
                  " runs (ZeRO should not change them).");
  }
  if (weights_same) out.push_back("Final weights identical (sha256 " + runs[0].weights_sha256.substr(0, 16) + "...).");
  else out.push_back("The final weights DIFFER between runs.");
  return out;
}

std::string loss_panel(Panel p, const std::vector<FigureRun>& runs) {
  float hi = 0;
  std::size_t steps = 1;
  for (const FigureRun& r : runs) {
    for (float v : r.losses) hi = std::max(hi, v);
    steps = std::max(steps, r.losses.size());
  }
  p.ymax = nice_ceiling(hi);
  p.unit = 1;
  std::string s = "<g class='loss-panel'>\n" + axes(p, p.ymax / 4, "training loss");
  s += text(p.x, p.y - 12, "Training loss per step", "font-weight='bold'");
  for (std::size_t k : {std::size_t{1}, steps}) {
    const double x = p.x + p.w * (steps > 1 ? static_cast<double>(k - 1) / (steps - 1) : 0.0);
    s += text(x, p.y + p.h + 17, std::to_string(k), "text-anchor='middle' font-size='11'");
  }
  s += text(p.x + p.w / 2, p.y + p.h + 17, "step", "text-anchor='middle' font-size='11'");
  const auto groups = loss_groups(runs);
  const char* dashes[] = {"", "6,3", "2,3", "8,3,2,3"};
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string who = groups.size() == 1 ? "all runs" : "runs " + labels_of(groups[i]);
    const std::string color = groups.size() == 1 ? "#333" : kPalette[i % 8];
    s += polyline(p, groups[i][0]->losses, steps, color, dashes[i % 4], who);
    s += text(p.x + p.w - 4, p.y + 14 + 14 * i, who, "text-anchor='end' font-size='11' fill='" + color + "'");
  }
  double y = p.y + p.h + 34;
  for (const std::string& line_text : loss_sentences(runs, groups.size())) {
    const bool bad = line_text.find("DIFFER") != std::string::npos;
    s += text(p.x - 40, y, line_text, std::string("class='loss-note' font-size='12'") + (bad ? " fill='#c00'" : ""));
    y += 16;
  }
  return s + "</g>\n";
}

std::string legend(double& x, double y, const std::vector<std::string>& names) {
  std::string s = "<g class='legend'>\n";
  for (const std::string& n : names) {
    s += "<rect x='" + num(x) + "' y='" + num(y - 10) + "' width='12' height='12' fill='" + color_of(n) + "'/>\n";
    s += text(x + 16, y, n, "font-size='12'");
    x += 30 + 6.6 * n.size();
  }
  return s + "</g>\n";
}

std::vector<std::string> names_in(const std::vector<FigureRun>& runs, Parts FigureRun::*field) {
  std::vector<std::string> names;
  for (const FigureRun& r : runs)
    for (const auto& part : r.*field)
      if (part.second > 0 && std::find(names.begin(), names.end(), part.first) == names.end()) names.push_back(part.first);
  return names;
}

}  // namespace

std::string render_demo_svg(const Figure& f) {
  const double W = 1300, top = 84 + 16.0 * f.notes.size();
  // The two memory panels share one scale (MiB per pixel), so a reader can compare model
  // states with what else the device holds; the lower one is only as tall as its content.
  const double state_max = max_bytes(f.runs, false), working_max = max_bytes(f.runs, true);
  const double ymax = nice_ceiling(std::max(state_max, working_max) / kMiB * 1.04), step = ymax / 5, h1 = 250;
  const double h2 = std::max(100.0, h1 * std::ceil(working_max / kMiB * 1.15 / step) * step / ymax);
  const Panel state{90, top, 700, h1, ymax, kMiB};
  const double y2 = top + h1 + 100;
  const Panel working{90, y2, 700, h2, ymax * h2 / h1, kMiB};
  double sent_max = 0;
  for (const FigureRun& r : f.runs) sent_max = std::max({sent_max, sum(r.sent), r.traffic_mark.bytes});
  const double tmax = nice_ceiling(sent_max / kMiB * 1.2);
  const Panel traffic{920, top, 350, h1, tmax, kMiB};
  const Panel loss{920, y2, 350, 190, 1, 1};
  double notes_bottom = 0;
  std::string body = state_panel(state, step, f.runs) + working_panel(working, step, f.runs, notes_bottom);
  body += traffic_panel(traffic, tmax / 5, f.runs) + loss_panel(loss, f.runs);
  const double ly = std::max(notes_bottom + 10, y2 + 190 + 80);
  double lx = 90;
  body += legend(lx, ly, names_in(f.runs, &FigureRun::state));
  body += text(lx, ly, "(hatched: the same categories in the host tier)", "font-size='12'");
  lx = 90;
  body += legend(lx, ly + 20, names_in(f.runs, &FigureRun::working));
  lx = 90;
  body += legend(lx, ly + 40, names_in(f.runs, &FigureRun::sent));
  const double H = ly + 60;
  std::string head = "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='" + fmt("%.0f", W) +
                     "' height='" + fmt("%.0f", H) + "' font-family='sans-serif' font-size='12'>\n"
                     "<defs><pattern id='hatch' width='6' height='6' patternUnits='userSpaceOnUse' patternTransform='rotate(45)'>"
                     "<line x1='0' y1='0' x2='0' y2='6' stroke='#fff' stroke-width='2'/></pattern></defs>\n"
                     "<rect width='100%' height='100%' fill='white'/>\n" +
                     text(20, 28, f.title, "font-size='17' font-weight='bold'");
  for (std::size_t i = 0; i < f.notes.size(); ++i) head += text(20, 50 + 16.0 * i, f.notes[i], "font-size='12' fill='#333'");
  return head + body + "</svg>\n";
}

}  // namespace zero::cli
