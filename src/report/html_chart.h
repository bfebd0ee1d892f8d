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

}  // namespace ptq::report
