#include "app/progress.h"

#include <unistd.h>

#include <cmath>

namespace dtlab::app {

ProgressPrinter::ProgressPrinter(std::string label, int64_t totalSteps, bool quiet)
    : label_(std::move(label)),
      totalSteps_(totalSteps),
      quiet_(quiet),
      tty_(isatty(STDERR_FILENO) != 0) {}

ProgressPrinter::~ProgressPrinter() {
  endBar();
}

void ProgressPrinter::endBar() {
  if (barShown_) std::fputc('\n', stderr);
  barShown_ = false;
}

void ProgressPrinter::onStep(const core::StepMetrics& m) {
  last_ = m;
  smoothedRate_ =
      smoothedRate_ == 0.0 ? m.samplesPerS : 0.98 * smoothedRate_ + 0.02 * m.samplesPerS;
  draw(false);
}

void ProgressPrinter::onEval(const core::EvalMetrics& m) {
  lastAccuracy_ = m.testAccuracy;
  if (quiet_) return;
  if (tty_) {
    draw(true);
    return;
  }
  if (std::isnan(m.testAccuracy)) {
    std::fprintf(stderr, "%s step %lld  %.1fs  test_loss %.4f\n", label_.c_str(),
                 static_cast<long long>(m.step), m.wallMs / 1000.0, m.testLoss);
  } else {
    std::fprintf(stderr, "%s step %lld  %.1fs  test_loss %.4f  test_accuracy %.4f\n",
                 label_.c_str(), static_cast<long long>(m.step), m.wallMs / 1000.0, m.testLoss,
                 m.testAccuracy);
  }
}

void ProgressPrinter::onEvent(const core::RunEvent& e) {
  if (quiet_) return;
  endBar();
  std::fprintf(stderr, "%s %s: %s\n", label_.c_str(), e.kind.c_str(), e.detail.c_str());
}

void ProgressPrinter::draw(bool force) {
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  const auto interval = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  if (!force && now - lastDraw_ < interval) return;
  lastDraw_ = now;
  char acc[32] = "";
  if (lastAccuracy_ >= 0.0) std::snprintf(acc, sizeof(acc), "  acc %.4f", lastAccuracy_);
  if (!tty_) {
    std::fprintf(stderr, "%s step %lld  loss %.4f  %.0f samples/s%s\n", label_.c_str(),
                 static_cast<long long>(last_.step), last_.loss, smoothedRate_, acc);
    return;
  }
  constexpr int kWidth = 30;
  std::string bar;
  if (totalSteps_ > 0) {
    const double frac =
        std::min(1.0, static_cast<double>(last_.step) / static_cast<double>(totalSteps_));
    const int filled = static_cast<int>(frac * kWidth);
    // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on chained string operator+.
    bar.append(1, '[').append(filled, '#').append(kWidth - filled, '.').append("] ");
  }
  std::fprintf(stderr, "\r%s %s%lld/%lld  loss %.4f  %.0f samples/s%s\033[K", label_.c_str(),
               bar.c_str(), static_cast<long long>(last_.step), static_cast<long long>(totalSteps_),
               last_.loss, smoothedRate_, acc);
  barShown_ = true;
}

}  // namespace dtlab::app
