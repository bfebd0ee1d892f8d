// Matching user-given names (exclusions, unit names) against a model, with close-match hints.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "marking.h"

namespace ptq::planner {

// Levenshtein distance.
size_t edit_distance(std::string_view a, std::string_view b);
// "did you mean 'a', 'b'?" (up to five names by edit distance) or "no close match".
std::string close_matches(std::string_view wanted, const std::vector<std::string>& names);
// Marks excluded nodes (reason set); an exclude_nodes entry matching nothing is a usage error.
Status apply_exclusions(Marking& m);
// only_units / skip_units must name units of the model.
Status check_unit_names(const std::vector<Unit>& units, const PlanOptions& options);

}  // namespace ptq::planner
