#pragma once
// A process-wide list of descriptors looked up by name: what the strategy registry
// (core/train/strategy_registry.cc), the dataset kinds (core/data/dataset_kinds.cc) and the
// model kinds (core/nn/model_kinds.cc) keep.
// Entries are only ever added, and references to them stay valid for the life of the process.
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/check.h"

namespace dtlab {

template <typename Descriptor>  // has a std::string `name`
class Registry {
 public:
  // Checks what a name's uniqueness cannot: throws Error for an incomplete descriptor.
  using Check = std::function<void(const Descriptor&)>;

  // `what` names an entry in messages ("strategy"); `builtIns` are checked and added in order,
  // the first being the default.
  Registry(std::string what, Check check, std::vector<Descriptor> builtIns)
      : what_(std::move(what)), check_(std::move(check)) {
    for (Descriptor& d : builtIns) add(std::move(d));
  }

  std::vector<const Descriptor*> all() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<const Descriptor*> out;
    for (const Descriptor& d : entries_) out.push_back(&d);
    return out;
  }

  // The entry named `name` (empty: the first), or nullptr.
  const Descriptor* find(std::string_view name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (name.empty()) return entries_.empty() ? nullptr : &entries_.front();
    for (const Descriptor& d : entries_)
      if (d.name == name) return &d;
    return nullptr;
  }

  // Throws Error when the name is empty or taken, or the check refuses the descriptor.
  void add(Descriptor descriptor) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (descriptor.name.empty()) throw Error("a " + what_ + " needs a name");
    for (const Descriptor& e : entries_)
      if (e.name == descriptor.name)
        throw Error(what_ + " '" + descriptor.name + "' is registered already");
    check_(descriptor);
    entries_.push_back(std::move(descriptor));
  }

 private:
  std::string what_;
  Check check_;
  mutable std::mutex mutex_;
  std::deque<Descriptor> entries_;  // a deque: references survive later additions
};

}  // namespace dtlab
