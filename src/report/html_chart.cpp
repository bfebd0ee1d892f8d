#include "html_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ptq::report {

namespace {

constexpr double kLabelWidth = 190.0;
constexpr double kBarArea = 560.0;
constexpr double kValueWidth = 80.0;
constexpr double kRow = 20.0;
constexpr double kBarHeight = 14.0;

std::string number(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e12) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{:.4g}", v);
}

// Long layer names are cut in the middle so both ends stay readable.
std::string shorten(std::string_view s, size_t max = 30) {
  if (s.size() <= max) return std::string(s);
  const size_t half = (max - 1) / 2;
  return std::string(s.substr(0, half)) + "\u2026" + std::string(s.substr(s.size() - half));
}

std::string svg_open(double height, std::string_view aria_label) {
  const double width = kLabelWidth + kBarArea + kValueWidth;
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n",
      width, height, html_escape(aria_label));
}

std::string row_label(double y, std::string_view label) {
  return fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
      kLabelWidth - 6, y + kBarHeight / 2, html_escape(shorten(label)));
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
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
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string stacked_bar_chart(const std::vector<StackedBar>& bars,
                              const std::vector<std::pair<std::string, std::string>>& legend,
                              std::string_view aria_label) {
  double max_total = 0.0;
  for (const StackedBar& b : bars) {
    double t = 0.0;
    for (const Segment& s : b.segments) t += s.value;
    max_total = std::max(max_total, t);
  }
  const double top = 24.0;
  std::string svg = svg_open(top + kRow * static_cast<double>(bars.size()) + 4, aria_label);
  double x = kLabelWidth;
  for (const auto& [name, colour] : legend) {
    svg += fmt::format(
        "<rect x=\"{}\" y=\"4\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"14\">{}</text>\n",
        x, colour, x + 16, html_escape(name));
    x += 24 + 7.0 * static_cast<double>(name.size());
  }
  double y = top;
  for (const StackedBar& b : bars) {
    svg += row_label(y, b.label);
    double bx = kLabelWidth;
    double total = 0.0;
    for (const Segment& s : b.segments) {
      if (s.value <= 0.0) continue;
      const double w = max_total > 0.0 ? s.value / max_total * kBarArea : 0.0;
      svg += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\">"
          "<title>{}: {} {}</title></rect>\n",
          bx, y, w, kBarHeight, s.colour, html_escape(b.label), number(s.value),
          html_escape(s.name));
      bx += w;
      total += s.value;
    }
    svg += fmt::format("<text x=\"{:.2f}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>\n",
                       bx + 4, y + kBarHeight / 2, number(total));
    y += kRow;
  }
  return svg + "</svg>\n";
}

std::string value_bar_chart(const std::vector<std::pair<std::string, double>>& values,
                            std::string_view colour, std::string_view aria_label) {
  double lo = 0.0, hi = 0.0;
  for (const auto& [label, v] : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const double span = hi - lo > 0.0 ? hi - lo : 1.0;
  const double zero_x = kLabelWidth + (-lo) / span * kBarArea;
  const double top = 6.0;
  std::string svg = svg_open(top + kRow * static_cast<double>(values.size()) + 4, aria_label);
  svg +=
      fmt::format("<line x1=\"{0:.2f}\" x2=\"{0:.2f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#555\"/>\n",
                  zero_x, top - 2, top + kRow * static_cast<double>(values.size()));
  double y = top;
  for (const auto& [label, v] : values) {
    svg += row_label(y, label);
    const double w = std::isfinite(v) ? std::abs(v) / span * kBarArea : 0.0;
    const double x = v < 0 ? zero_x - w : zero_x;
    svg += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\">"
        "<title>{}: {}</title></rect>\n",
        x, y, w, kBarHeight, colour, html_escape(label), number(v));
    svg += fmt::format("<text x=\"{:.2f}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>\n",
                       std::max(zero_x, x + w) + 4, y + kBarHeight / 2, number(v));
    y += kRow;
  }
  return svg + "</svg>\n";
}

namespace {

// The line chart's frame: plot area and value -> y.
struct LineFrame {
  static constexpr double kLeft = 56.0, kTop = 12.0, kPlotHeight = 260.0, kLabels = 150.0;
  static constexpr double kWidth = kLabelWidth + kBarArea + kValueWidth;
  double lo = 0.0, hi = 10.0;
  size_t n = 1;
  double plot_width() const { return kWidth - kLeft - 10.0; }
  double x(size_t i) const { return kLeft + (static_cast<double>(i) + 0.5) * plot_width() / n; }
  double y(double v) const {
    if (v == std::numeric_limits<double>::infinity()) v = hi;
    return kTop + (hi - std::clamp(v, lo, hi)) / (hi - lo) * kPlotHeight;
  }
  double bottom() const { return kTop + kPlotHeight; }
};

LineFrame line_frame(const std::vector<LinePoint>& points, double top) {
  LineFrame f;
  f.n = std::max<size_t>(points.size(), 1);
  double lo = 0.0, hi = top;
  for (const LinePoint& p : points) {
    if (!std::isfinite(p.value)) continue;
    lo = std::min(lo, p.value);
    hi = std::max(hi, p.value);
  }
  f.lo = std::floor(lo / 10.0) * 10.0;
  f.hi = std::max(std::ceil(hi / 10.0) * 10.0, f.lo + 10.0);
  return f;
}

std::string line_axes(const LineFrame& f, std::string_view unit) {
  std::string svg;
  for (double v = f.lo; v <= f.hi + 1e-9; v += 10.0) {
    svg += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.2f}\" y2=\"{2:.2f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{3}\" y=\"{2:.2f}\" text-anchor=\"end\" dominant-baseline=\"middle\">{4}"
        "</text>\n",
        f.kLeft, f.kWidth - 10.0, f.y(v), f.kLeft - 4, number(v));
  }
  svg += fmt::format(
      "<text x=\"12\" y=\"{:.2f}\" transform=\"rotate(-90 12 {:.2f})\" "
      "text-anchor=\"middle\">{}</text>\n",
      f.kTop + f.kPlotHeight / 2, f.kTop + f.kPlotHeight / 2, html_escape(unit));
  return svg;
}

std::string x_label(const LineFrame& f, size_t i, const LinePoint& p) {
  return fmt::format(
      "<text x=\"{0:.2f}\" y=\"{1:.2f}\" transform=\"rotate(-60 {0:.2f} {1:.2f})\" "
      "text-anchor=\"end\" fill=\"{2}\">{3}</text>\n",
      f.x(i), f.bottom() + 8, p.marked ? "#c0392b" : "#444", html_escape(shorten(p.label, 24)));
}

// A point's circle with its tooltip (hollow at +inf), and a dashed line through a marked one.
std::string point_marks(const LineFrame& f, size_t i, const LinePoint& p) {
  std::string svg;
  if (p.marked) {
    svg += fmt::format(
        "<line class=\"jump\" x1=\"{0:.2f}\" x2=\"{0:.2f}\" y1=\"{1}\" y2=\"{2}\" "
        "stroke=\"#c0392b\" stroke-dasharray=\"2 2\"/>\n",
        f.x(i), f.kTop, f.bottom());
  }
  if (std::isnan(p.value)) return svg;
  const bool hollow = std::isinf(p.value) && p.value > 0;
  const char* colour = p.marked ? "#c0392b" : "#2e86c1";
  return svg + fmt::format(
                   "<circle cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"{}\" fill=\"{}\" stroke=\"{}\">"
                   "<title>{}</title></circle>\n",
                   f.x(i), f.y(p.value), p.marked ? 5 : 3, hollow ? "#fff" : colour, colour,
                   html_escape(p.tooltip));
}

}  // namespace

std::string line_chart(const std::vector<LinePoint>& points, double top, std::string_view unit,
                       std::string_view aria_label) {
  const LineFrame f = line_frame(points, top);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\" "
      "font-family=\"sans-serif\" font-size=\"10\">\n",
      f.kWidth, f.bottom() + f.kLabels, html_escape(aria_label));
  svg += line_axes(f, unit);
  std::string line;
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::isnan(points[i].value)) continue;
    line += fmt::format("{}{:.2f},{:.2f}", line.empty() ? "" : " ", f.x(i), f.y(points[i].value));
  }
  svg +=
      "<polyline fill=\"none\" stroke=\"#2e86c1\" stroke-width=\"1.5\" points=\"" + line + "\"/>\n";
  const bool all_labels = points.size() <= 40;
  for (size_t i = 0; i < points.size(); ++i) {
    svg += point_marks(f, i, points[i]);
    if (all_labels || points[i].marked) svg += x_label(f, i, points[i]);
  }
  return svg + "</svg>\n";
}

}  // namespace ptq::report
