#pragma once
// A spec section's fields read with the bounds its schema gives them (core/spec/spec_fields.h),
// beside the reader (core/spec/spec_reader.h); apart from both so that neither includes the
// other's side.
#include <optional>
#include <string_view>

#include "core/common/check.h"
#include "core/spec/spec_fields.h"
#include "core/spec/spec_reader.h"

namespace dtlab::core::spec_detail {

// A section's fields read with the bounds its schema gives them (core/spec/spec_fields.h), so
// that the schema states what the parser checks (tests/core/test_spec_fields.cc proves it).
class SectionFields {
 public:
  SectionFields(ObjectReader& r, std::string_view section) : r_(r), s_(specSection(section)) {}
  const SpecField& field(std::string_view key) const { return s_.field(key); }
  std::optional<int64_t> integer(std::string_view key) {
    const IntegerBounds b = integerBounds(key);
    return r_.integer(key, b.min, b.max);
  }
  std::optional<double> real(std::string_view key) { return r_.real(key, interval(key)); }
  std::optional<float> real32(std::string_view key) { return r_.real32(key, interval(key)); }
  IntegerBounds integerBounds(std::string_view key) const {
    return bounded(key, field(key).integer);
  }
  IntegerBounds size(std::string_view key) const { return bounded(key, field(key).size); }
  Interval interval(std::string_view key) const {
    const RealBounds b = bounded(key, field(key).real);
    return {b.min, b.max, b.minClosed, b.maxClosed};
  }

 private:
  template <typename T>
  T bounded(std::string_view key, const std::optional<T>& bounds) const {
    DTLAB_ENFORCE(bounds.has_value(), "field '", key, "' of the spec schema's section '", s_.path,
                  "' has none of the bounds the parser reads");
    return *bounds;
  }

  ObjectReader& r_;
  const SpecSection& s_;
};

}  // namespace dtlab::core::spec_detail
