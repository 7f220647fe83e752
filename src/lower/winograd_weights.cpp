#include "lower/winograd_weights.h"

namespace texplan::lower {
namespace {
// G of F(2x2, 3x3) and F(4x4, 3x3) (Lavin and Gray's points 0, +-1, +-2).
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};
}  // namespace

void winograd_filter_transform(const float* g, int m, double* u) {
  const int a = m + 2;
  auto G = [&](int i, int k) { return m == 2 ? kG2[i][k] : kG4[i][k]; };
  double gt[3][6];  // g G^T
  for (int p = 0; p < 3; ++p)
    for (int j = 0; j < a; ++j) gt[p][j] = G(j, 0) * g[p * 3] + G(j, 1) * g[p * 3 + 1] + G(j, 2) * g[p * 3 + 2];
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < a; ++j) u[i * a + j] = G(i, 0) * gt[0][j] + G(i, 1) * gt[1][j] + G(i, 2) * gt[2][j];
}

}  // namespace texplan::lower
