// The data-source options shared by `ptq run`, `calibrate`, `quantize`, `eval`, `compare` and
// `sensitivity`: --data, --shape, image preprocessing, --batch, --batch-axis, --cast,
// --samples, --shuffle/--seed.
// A subcommand calls add_data_options() when it registers, then make_dataset_spec() (or
// open_dataset()) when it runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ptq/data.h"
#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::apps {

struct DataOptions {
  std::vector<std::string> data;   // --data [NAME=]SRC, repeatable
  std::vector<std::string> shape;  // --shape [NAME=]D,D,... for raw .bin sources
  std::string resize;              // S or H,W
  std::string crop;                // H,W
  std::string mean;                // a[,b,c]
  std::string stddev;              // a[,b,c]
  std::string layout;              // nchw | nhwc ("" = from the model)
  double scale = 1.0;              // 1 or 255
  bool bgr = false;
  int64_t batch = 0;               // 0: not given
  std::vector<std::string> batch_axis;  // --batch-axis NAME=K|none, repeatable
  bool cast = false;                    // --cast
  int64_t default_batch = 1;       // set by add_data_options from its config
  int64_t samples = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  CLI::Option* seed_option = nullptr;  // set by add_data_options; --seed implies --shuffle
  bool finite_only = false;            // set by add_data_options from its config
  bool allow_nonfinite = false;        // --allow-nonfinite
};

struct DataOptionsConfig {
  std::string flag = "--data";  // the source option's name
  bool required = true;
  int64_t default_batch = 1;    // when --batch is not given and the model does not fix it
  // A NaN or Inf in the data stops the command with an error naming the sample
  // (DatasetSpec::finite_only) unless --allow-nonfinite, which this adds.
  bool finite_only = false;
};

// Adds the options to `app`, bound to `options` (which must outlive parsing).
void add_data_options(CLI::App& app, DataOptions& options, const DataOptionsConfig& config = {});
// Adds a further source option (e.g. sensitivity's --eval) sharing the preprocessing options.
void add_source_option(CLI::App& app, const std::string& flag, std::vector<std::string>& sources,
                       const std::string& help, bool required);

// Builds the dataset spec from parsed options; malformed values are usage errors naming the
// option. `sources` overrides options.data (for a second source option).
Expected<data::DatasetSpec> make_dataset_spec(const DataOptions& options);
Expected<data::DatasetSpec> make_dataset_spec(const DataOptions& options,
                                              const std::vector<std::string>& sources);
// make_dataset_spec + Dataset::open + bind(graph).
Expected<data::Dataset> open_dataset(const DataOptions& options, const ir::Graph& graph);

}  // namespace ptq::apps
