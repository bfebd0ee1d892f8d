#include "smoothquant_options.h"

#include <memory>

#include <fmt/format.h>

#include "progress.h"
#include "ptq/runtime.h"

namespace ptq::apps {

void add_smoothquant_option(CLI::App& app, SmoothQuantOption& o) {
  o.option = app.add_option("--smoothquant", o.alpha,
                            "SmoothQuant before calibration: move the range of MatMul/Gemm inputs "
                            "with outlier channels into the weights, alpha in [0, 1] (default "
                            "0.5; a cache records it and --cache smooths the same way)")
                 ->expected(0, 1)
                 ->type_name("[ALPHA]")
                 ->default_str("0.5");
}

Expected<std::optional<calib::SmoothQuantRecord>> smooth_from_data(
    ir::Model& model, const SmoothQuantOption& o, const DataOptions& data, int threads,
    bool quiet) {
  if (!o.given()) return std::optional<calib::SmoothQuantRecord>();
  calibration::SmoothQuantRunOptions so;
  so.smoothing.alpha = o.alpha;
  so.threads = threads;
  PTQ_RETURN_IF_ERROR(so.smoothing.validate());
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, open_dataset(data, model.graph));
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  ProgressLine line("smoothquant", "samples", dataset.size(), quiet);
  so.progress = [&](const calibration::Progress& p) -> Status {
    line.update(p.samples_done);
    return Status::ok();
  };
  PTQ_ASSIGN_OR_RETURN(calib::SmoothQuantRecord record,
                       calibration::smoothquant(model, *cpu, dataset, so));
  line.finish();
  if (!quiet) {
    fmt::print("SmoothQuant (alpha {}): {} activation(s) with outlier channels smoothed\n",
               record.alpha, record.factors.size());
  }
  return std::optional<calib::SmoothQuantRecord>(std::move(record));
}

Status smooth_as_cached(ir::Model& model, const SmoothQuantOption& o, const std::string& cache,
                        calibration::ModelForms& forms) {
  PTQ_ASSIGN_OR_RETURN(std::optional<calib::SmoothQuantRecord> record,
                       calibration::smooth_as_cached(model, forms, cache));
  return calibration::check_smoothquant_agrees(
      record, o.given() ? std::optional<double>(o.alpha) : std::nullopt, cache);
}

}  // namespace ptq::apps
