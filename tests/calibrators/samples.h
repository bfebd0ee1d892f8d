// Synthetic calibration data with fixed seeds (the distributions of specs/calibrators.md's
// tests) and a minimal .npy writer for the NumPy reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace ptq::calib::testing {

enum class Dist {
  kGaussian,
  kLaplace,
  kUniform,
  kRelu,
  kHeavyTail,
  kZeros,
  kConstant,
  kGaussianOutliers
};

inline const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kGaussian: return "gaussian";
    case Dist::kLaplace: return "laplace";
    case Dist::kUniform: return "uniform";
    case Dist::kRelu: return "relu";
    case Dist::kHeavyTail: return "heavy_tail";
    case Dist::kZeros: return "zeros";
    case Dist::kConstant: return "constant";
    case Dist::kGaussianOutliers: return "gaussian_outliers";
  }
  return "?";
}

// n values of the distribution; the seed fixes them.
inline std::vector<float> make_samples(Dist d, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    double x = 0.0;
    switch (d) {
      case Dist::kGaussian: x = normal(rng) * 0.7 + 0.1; break;
      case Dist::kLaplace: {
        const double u = unit(rng) - 0.5;
        x = -0.5 * (u < 0 ? -1.0 : 1.0) * std::log(1.0 - 2.0 * std::fabs(u));
        break;
      }
      case Dist::kUniform: x = unit(rng) * 6.0 - 3.0; break;
      case Dist::kRelu: x = std::max(0.0, normal(rng)); break;
      case Dist::kHeavyTail: {
        // Student-t with 3 degrees of freedom, plus rare far outliers.
        std::student_t_distribution<double> t(3.0);
        x = t(rng);
        if (unit(rng) < 2e-4) x = (unit(rng) < 0.5 ? -1 : 1) * (40.0 + 160.0 * unit(rng));
        break;
      }
      case Dist::kZeros: x = 0.0; break;
      case Dist::kConstant: x = -2.375; break;
      case Dist::kGaussianOutliers: {
        x = normal(rng);
        if (i % 20000 == 7) x = 20.0 + 80.0 * unit(rng);  // a few extreme outliers
        break;
      }
    }
    v[i] = static_cast<float>(x);
  }
  return v;
}

// Writes a 1-D float32 .npy file (format 1.0).
inline void write_npy(const std::filesystem::path& path, const std::vector<float>& v) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(v.size()) + ",), }";
  const size_t unpadded = 10 + header.size() + 1;
  header += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
}

// A fresh folder for one test's files.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("ptq_calib_" + name + "_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace ptq::calib::testing
