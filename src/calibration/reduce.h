// The statistics of a calibration run split over ranks (CalibrationOptions::comm), reduced so
// that every rank holds what one process running every batch would: the ranges by min/max and
// summed counts, the histograms by summed counts. Both are exact in any order.
#pragma once

#include <string>
#include <vector>

#include "ptq/calib_cache.h"
#include "ptq/calibrators.h"
#include "ptq/dist.h"

namespace ptq::calibration {

// Every rank's range pass (`local`, over the tensors of `tensors` it saw) as one ranges table
// of the tensors any rank saw; the same on every rank.
calib::CalibrationTable reduce_ranges(const calib::Collector& local,
                                      const std::vector<std::string>& tensors,
                                      dist::Communicator& comm);

// A collector holding `ranges` (reduce_ranges()), its range pass finished as the run's
// (with `common`, the sharded flow's merged ranges).
Expected<calib::Collector> collector_of(const calib::CalibrationTable& ranges,
                                        const calib::CalibrationTable* common,
                                        calib::CollectorOptions options);

// `local`'s histograms (a collector_of() fed this rank's histogram pass) summed over the
// ranks, added into `total` (another collector_of() the same ranges). Every rank calls it;
// the counts are summed on every rank.
Status reduce_histograms(const calib::Collector& local, calib::Collector& total,
                         dist::Communicator& comm);

}  // namespace ptq::calibration
