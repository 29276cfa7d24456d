#pragma once

#include <QtCore/QString>

#include <optional>

namespace dtlab::ui {

// Whether an editor's content differs from what was loaded into it or last saved. The
// editor describes its content as text (its name and JSON); typing a value back as it was
// makes it unmodified again. After loadStarted(), the next content seen is the baseline
// (editors normalise what they load, so the baseline is what the form says, not the input).
class EditState {
 public:
  void loadStarted() { baseline_.reset(); }
  // Returns true when modified() changed.
  bool update(const QString& content) {
    if (!baseline_) baseline_ = content;
    const bool modified = content != *baseline_;
    if (modified == modified_) return false;
    modified_ = modified;
    return true;
  }
  bool modified() const { return modified_; }

 private:
  std::optional<QString> baseline_;
  bool modified_ = false;
};

}  // namespace dtlab::ui
