// bench_sharing's charts as self-contained SVG: plain shapes and text, no
// scripts or external fonts, so a browser, an image viewer or a README shows
// them as they are.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "sharing_charts.h"

namespace vkube::bench::sharing {

namespace {

// Okabe-Ito's colour-blind-safe colours, then two more distinct ones.
constexpr const char* kTeamColours[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                        "#56B4E9", "#D55E00", "#F0E442", "#7F3C8D"};
// The configurations in greys: they never compete with the teams' colours.
constexpr const char* kConfigColours[] = {"#B8B8B8", "#787878", "#2B2B2B"};
constexpr const char* kDemandColour = "#8B0000";

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string xy(double x, double y) {
  return fmt("%.1f", x) + "," + fmt("%.1f", y) + " ";
}

// A round step (1, 2 or 5 times a power of ten) giving about `ticks` ticks up to `max`.
double nice_step(double max, int ticks) {
  if (max <= 0) return 1;
  const double raw = max / ticks, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

struct Svg {
  std::string body;
  void text(double x, double y, const std::string& s, const char* anchor = "start", int size = 12,
            const char* fill = "#222", const char* extra = "") {
    body += "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y) + "\" font-size=\"" +
            std::to_string(size) + "\" text-anchor=\"" + anchor + "\" fill=\"" + fill + "\"" +
            extra + ">" + esc(s) + "</text>\n";
  }
  void line(double x1, double y1, double x2, double y2, const char* stroke, double width,
            const char* dash = "") {
    body += "<line x1=\"" + fmt("%.1f", x1) + "\" y1=\"" + fmt("%.1f", y1) + "\" x2=\"" +
            fmt("%.1f", x2) + "\" y2=\"" + fmt("%.1f", y2) + "\" stroke=\"" + stroke +
            "\" stroke-width=\"" + fmt("%.1f", width) + "\"" +
            (*dash ? std::string(" stroke-dasharray=\"") + dash + "\"" : "") + "/>\n";
  }
  void rect(double x, double y, double w, double h, const char* fill) {
    body += "<rect x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y) + "\" width=\"" +
            fmt("%.1f", std::max(0.0, w)) + "\" height=\"" + fmt("%.1f", std::max(0.0, h)) +
            "\" fill=\"" + fill + "\"/>\n";
  }
  std::string done(int w, int h) const {
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
           "width=\"" +
           std::to_string(w) + "\" height=\"" + std::to_string(h) + "\" viewBox=\"0 0 " +
           std::to_string(w) + " " + std::to_string(h) +
           "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" "
           "fill=\"white\"/>\n" +
           body + "</svg>\n";
  }
};

// A y axis from 0 to `top` over [y_bottom, y_top] at x, with grid lines to x_end.
void y_axis(Svg& svg, double x, double x_end, double y_bottom, double y_top, double top,
            double step, const char* format) {
  for (double v = 0; v <= top + step / 2; v += step) {
    const double y = y_bottom - (y_bottom - y_top) * v / top;
    svg.line(x, y, x_end, y, "#E4E4E4", 1);
    svg.text(x - 6, y + 4, fmt(format, v), "end", 11);
  }
  svg.line(x, y_bottom, x, y_top, "#444", 1);
}

// "d130 06:45": trace day and time of day.
std::string trace_clock(double seconds) {
  const long long s = std::llround(seconds);
  char buf[32];
  std::snprintf(buf, sizeof buf, "d%lld %02lld:%02lld", s / 86400, s % 86400 / 3600, s % 3600 / 60);
  return buf;
}

}  // namespace

const char* team_colour(size_t k) {
  return kTeamColours[k % std::size(kTeamColours)];
}

std::string allocation_svg(const Plan& plan, const RunResult& run, const Summary& summary) {
  constexpr int kW = 980, kH = 500;
  constexpr double x0 = 70, x1 = 760, top = 56, bottom = 410;
  const size_t teams = plan.teams.size();
  const std::vector<Sample>& samples = run.samples;
  double t_max = plan.options.seconds, g_max = plan.capacity_milli() / 1000.0;
  auto team_gpus = [&](const Sample& s, size_t k) {
    return k < s.team_allocated_milli.size() ? s.team_allocated_milli[k] / 1000.0 : 0.0;
  };
  auto demand_gpus = [&](const Sample& s) {
    double d = 0;
    for (size_t k = 0; k < teams && k < s.team_demand_milli.size(); ++k)
      d += s.team_demand_milli[k] / 1000.0;
    return d;
  };
  for (const Sample& s : samples) {
    double stacked = 0;
    for (size_t k = 0; k < teams; ++k) stacked += team_gpus(s, k);
    t_max = std::max(t_max, s.t);
    g_max = std::max({g_max, stacked, demand_gpus(s), sample_capacity(s, plan) / 1000.0});
  }
  const double y_step = nice_step(g_max, 6), y_top = std::ceil(g_max / y_step) * y_step;
  auto X = [&](double t) { return x0 + (x1 - x0) * t / t_max; };
  auto Y = [&](double g) { return bottom - (bottom - top) * g / y_top; };

  Svg svg;
  svg.text(x0, 24, run.config + ": GPUs allocated per team over the replay", "start", 16, "#111",
           " font-weight=\"bold\"");
  svg.text(x0, 42,
           "mean " + fmt("%.1f", summary.mean_alloc_pct) + " % allocated; " +
               fmt("%.1f", summary.mean_alloc_over_pct) + " % while demand > capacity (" +
               fmt("%.0f", summary.demand_over_pct) + " % of the time); " +
               std::to_string(summary.preemptions) + " preemptions",
           "start", 12, "#444");
  y_axis(svg, x0, x1, bottom, top, y_top, y_step, "%g");
  const std::string turn = " transform=\"rotate(-90 20 " + fmt("%.0f", (top + bottom) / 2) + ")\"";
  svg.text(20, (top + bottom) / 2, "GPUs", "middle", 12, "#222", turn.c_str());
  const double x_step = nice_step(t_max, 8);
  for (double t = 0; t <= t_max + 1e-9; t += x_step) {
    svg.line(X(t), bottom, X(t), bottom + 4, "#444", 1);
    svg.text(X(t), bottom + 17, fmt("%g", t), "middle", 11);
    svg.text(X(t), bottom + 31, trace_clock(plan.options.from_day * 86400 + t * plan.scale),
             "middle", 10, "#666");
  }
  svg.line(x0, bottom, x1, bottom, "#444", 1);
  svg.text((x0 + x1) / 2, bottom + 52,
           "replay time, s (below: trace day and time; 1 s = " + fmt("%.1f", plan.scale / 60) +
               " trace min; team k's arrivals are shifted by k/" + std::to_string(teams) +
               " of the window)",
           "middle", 11);

  if (samples.empty()) svg.text((x0 + x1) / 2, (top + bottom) / 2, "no samples", "middle", 14);
  // Stacked areas: team k between the sum of teams < k and the sum of teams <= k.
  std::vector<double> below(samples.size(), 0);
  for (size_t k = 0; k < teams && !samples.empty(); ++k) {
    std::string points;
    std::vector<double> above(samples.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      above[i] = below[i] + team_gpus(samples[i], k);
      points += xy(X(samples[i].t), Y(above[i]));
    }
    for (size_t i = samples.size(); i-- > 0;) points += xy(X(samples[i].t), Y(below[i]));
    svg.body += "<polygon class=\"team-area\" data-team=\"" + esc(plan.teams[k]) + "\" fill=\"" +
                team_colour(k) + "\" fill-opacity=\"0.85\" points=\"" + points + "\"/>\n";
    below = std::move(above);
  }
  double deserved = 0;
  for (size_t k = 0; k < teams; ++k) {
    deserved += (k < plan.deserved_milli.size() ? plan.deserved_milli[k] : 0) / 1000.0;
    // A white halo keeps the dashes visible over the team's own colour.
    svg.line(x0, Y(deserved), x1, Y(deserved), "#FFFFFF", 3, "6 4");
    svg.line(x0, Y(deserved), x1, Y(deserved), team_colour(k), 1.5, "6 4");
  }
  if (!samples.empty()) {
    std::string capacity, demand;
    for (const Sample& s : samples) {
      capacity += xy(X(s.t), Y(sample_capacity(s, plan) / 1000.0));
      demand += xy(X(s.t), Y(demand_gpus(s)));
    }
    svg.body +=
        "<polyline class=\"capacity\" fill=\"none\" stroke=\"#000\" stroke-width=\"2\" "
        "points=\"" +
        capacity + "\"/>\n";
    svg.body += std::string("<polyline class=\"demand\" fill=\"none\" stroke=\"") + kDemandColour +
                "\" stroke-width=\"1.5\" points=\"" + demand + "\"/>\n";
  }

  // Legend.
  double ly = top + 4;
  const double lx = x1 + 24;
  for (size_t k = 0; k < teams; ++k, ly += 20) {
    svg.rect(lx, ly - 10, 14, 12, team_colour(k));
    const double d = (k < plan.deserved_milli.size() ? plan.deserved_milli[k] : 0) / 1000.0;
    svg.text(lx + 20, ly, plan.teams[k] + " (deserved " + fmt("%g", d) + ")", "start", 12);
  }
  ly += 8;
  svg.line(lx, ly - 4, lx + 14, ly - 4, "#000", 2);
  svg.text(lx + 20, ly, "capacity", "start", 12);
  ly += 20;
  svg.line(lx, ly - 4, lx + 14, ly - 4, kDemandColour, 1.5);
  svg.text(lx + 20, ly, "demand (running + waiting)", "start", 12);
  ly += 20;
  svg.line(lx, ly - 4, lx + 14, ly - 4, "#555", 1.2, "6 4");
  svg.text(lx + 20, ly, "deserved shares, stacked", "start", 12);
  svg.text(lx + 20, ly + 15, "in the same order", "start", 12);
  return svg.done(kW, kH);
}

std::string comparison_svg(const Plan& plan, const std::vector<Summary>& summaries) {
  constexpr int kW = 980, kH = 440;
  constexpr double top = 70, bottom = 360;
  const size_t configs = summaries.size(), teams = plan.teams.size();
  Svg svg;
  svg.text(60, 24, "dedicated vs pooled: allocation and p95 wait per team", "start", 16, "#111",
           " font-weight=\"bold\"");
  for (size_t c = 0; c < configs; ++c) {
    const double x = 60 + 150 * static_cast<double>(c);
    svg.rect(x, 36, 14, 12, kConfigColours[c % std::size(kConfigColours)]);
    svg.text(x + 20, 47, summaries[c].config, "start", 12);
  }
  // Draws one group of bars (one per configuration) centred in [x, x + width).
  auto group = [&](double x, double width, double scale_top, const std::vector<double>& values,
                   const char* format) {
    const double bar = width * 0.75 / static_cast<double>(std::max<size_t>(configs, 1));
    double bx = x + width * 0.125;
    for (size_t c = 0; c < values.size(); ++c, bx += bar) {
      const double h = (bottom - top) * std::min(values[c], scale_top) / scale_top;
      svg.body += std::string("<rect class=\"bar\" x=\"") + fmt("%.1f", bx) + "\" y=\"" +
                  fmt("%.1f", bottom - h) + "\" width=\"" + fmt("%.1f", bar - 2) + "\" height=\"" +
                  fmt("%.1f", h) + "\" fill=\"" + kConfigColours[c % std::size(kConfigColours)] +
                  "\"/>\n";
      svg.text(bx + bar / 2 - 1, bottom - h - 4, fmt(format, values[c]), "middle", 9);
    }
  };

  // Left: allocation, in % of the pool.
  constexpr double ax0 = 60, ax1 = 380;
  y_axis(svg, ax0, ax1, bottom, top, 100, 20, "%g %%");
  svg.line(ax0, bottom, ax1, bottom, "#444", 1);
  const char* metrics[] = {"mean allocation", "while demand > supply"};
  for (int m = 0; m < 2; ++m) {
    std::vector<double> v;
    for (const Summary& s : summaries)
      v.push_back(m == 0 ? s.mean_alloc_pct : s.mean_alloc_over_pct);
    const double gx = ax0 + (ax1 - ax0) / 2 * m;
    group(gx, (ax1 - ax0) / 2, 100, v, "%.0f");
    svg.text(gx + (ax1 - ax0) / 4, bottom + 18, metrics[m], "middle", 12);
  }
  svg.text((ax0 + ax1) / 2, bottom + 44, "GPUs allocated, % of the pool", "middle", 12);

  // Right: each team's p95 wait.
  constexpr double bx0 = 470, bx1 = 960;
  double p95_max = 1;
  for (const Summary& s : summaries)
    for (double w : s.wait_p95_s) p95_max = std::max(p95_max, w);
  const double step = nice_step(p95_max, 5), p95_top = std::ceil(p95_max / step) * step;
  y_axis(svg, bx0, bx1, bottom, top, p95_top, step, "%g");
  svg.line(bx0, bottom, bx1, bottom, "#444", 1);
  const double gw = (bx1 - bx0) / static_cast<double>(std::max<size_t>(teams, 1));
  for (size_t k = 0; k < teams; ++k) {
    std::vector<double> v;
    for (const Summary& s : summaries) v.push_back(at_or_zero(s.wait_p95_s, k));
    const double gx = bx0 + gw * static_cast<double>(k);
    group(gx, gw, p95_top, v, "%.1f");
    svg.rect(gx + gw / 2 - 28, bottom + 8, 10, 10, team_colour(k));
    svg.text(gx + gw / 2 - 14, bottom + 18, plan.teams[k], "start", 12);
  }
  svg.text((bx0 + bx1) / 2, bottom + 44,
           "p95 wait per team, wall s (1 s = " + fmt("%.1f", plan.scale / 60) + " trace min)",
           "middle", 12);
  return svg.done(kW, kH);
}

}  // namespace vkube::bench::sharing
