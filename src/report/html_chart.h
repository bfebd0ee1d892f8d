// Inline SVG charts and HTML escaping for the report page (no script, no external resources).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptq::report {

// Text safe inside HTML elements and attribute values.
std::string html_escape(std::string_view s);

struct Segment {
  double value = 0.0;
  std::string colour;  // CSS colour
  std::string name;    // shown in the tooltip
};

struct StackedBar {
  std::string label;
  std::vector<Segment> segments;
};

// Horizontal stacked bars, one row per bar, scaled to the largest total; the total is written
// at the end of each bar; a legend of (name, colour) on top.
std::string stacked_bar_chart(const std::vector<StackedBar>& bars,
                              const std::vector<std::pair<std::string, std::string>>& legend,
                              std::string_view aria_label);

// Horizontal bars of one value per label (negative values grow left from a zero line).
std::string value_bar_chart(const std::vector<std::pair<std::string, double>>& values,
                            std::string_view colour, std::string_view aria_label);

// One point of a line chart along the graph.
struct LinePoint {
  std::string label;    // a tensor's name
  double value = 0.0;   // +inf is drawn at the top, hollow; NaN is left out
  bool marked = false;  // drawn red, with its label under the axis
  std::string tooltip;
};

// Points evenly spaced left to right in the given order, joined by a line, on a y axis in
// `unit` with grid lines every 10 units from min(0, lowest) to the highest value or `top`,
// whichever is higher. Every label is written under the axis when there are at most 40 points,
// else only the marked ones.
std::string line_chart(const std::vector<LinePoint>& points, double top, std::string_view unit,
                       std::string_view aria_label);

}  // namespace ptq::report
