/*!
 * \file relax/concat_placement.cc
 * \brief Which concatenations are copy-free, and where their tensors go.
 */
#include "relax/concat_placement.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "ir/expr.h"
#include "relax/memory_plan_records.h"

namespace tvm_memplan {
namespace relax {

using ir::Quoted;

namespace {

/*! \brief Union-find where each tensor knows its byte offset from its set's representative. */
class OffsetSets {
 public:
  explicit OffsetSets(size_t n) : parent_(n), offset_(n, 0) {
    for (size_t i = 0; i < n; ++i) parent_[i] = static_cast<int64_t>(i);
  }

  /*! \brief (representative, offset of `t` from it). */
  std::pair<int64_t, int64_t> Find(int64_t t) const {
    int64_t offset = 0;
    while (parent_[t] != t) {
      offset += offset_[t];
      t = parent_[t];
    }
    return {t, offset};
  }

  /*! \brief Require offset(a) - offset(b) == delta; false (and no change) when that
   *         contradicts what is known. */
  bool Relate(int64_t a, int64_t b, int64_t delta) {
    auto [ra, oa] = Find(a);
    auto [rb, ob] = Find(b);
    if (ra == rb) return oa - ob == delta;
    parent_[ra] = rb;
    offset_[ra] = ob + delta - oa;
    return true;
  }

 private:
  std::vector<int64_t> parent_;
  std::vector<int64_t> offset_;
};

bool Overlap(int64_t a, int64_t a_bytes, int64_t b, int64_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

class Placer {
 public:
  Placer(const std::vector<ConcatTensor>& tensors, const std::vector<ConcatCall>& calls,
         int64_t alignment)
      : tensors_(tensors), calls_(calls), alignment_(alignment) {}

  ConcatPlacement Run() {
    ConcatPlacement result;
    for (const ConcatCall& call : calls_) result.decisions.push_back(CheckAlone(call));
    // Rules 4 and 5 look at the copy-free concatenations together: refuse one at a time.
    while (true) {
      Groups(&result);
      std::optional<std::pair<size_t, ConcatDecision>> refused = CheckGroups(result);
      if (!refused) break;
      result.decisions[refused->first] = refused->second;
    }
    return result;
  }

 private:
  ConcatDecision Refuse(const char* code, std::string reason) const {
    return ConcatDecision{false, code, std::move(reason)};
  }

  /*! \brief Rules 1 to 3, for one concatenation on its own. */
  ConcatDecision CheckAlone(const ConcatCall& call) const {
    const ConcatLayout& layout = call.layout;
    if (!layout.contiguous) return Refuse(concat::kNotContiguous, layout.not_contiguous);
    size_t n = call.args.size() - 1;
    for (size_t j = 0; j < n; ++j) {
      if (layout.Sliced(j) && layout.byte_offsets[j] % alignment_ != 0) {
        return Refuse(concat::kUnaligned,
                      "the slice of " + Quoted(call.arg_names[j]) + " starts at byte " +
                          std::to_string(layout.byte_offsets[j]) + ", not a multiple of the " +
                          std::to_string(alignment_) + "-byte alignment");
      }
    }
    std::set<int64_t> seen;
    for (size_t j = 0; j <= n; ++j) {
      int64_t t = call.args[j];
      if (j < n && !layout.Sliced(j)) {
        // Only read, by a kernel that also writes the output: not the output itself.
        if (t >= 0 && t == call.args[n]) {
          return Refuse(concat::kSameTensor,
                        Quoted(call.arg_names[j]) + " is passed as an input and as the output");
        }
        continue;
      }
      if (t < 0 || !tensors_[t].placed) {
        return Refuse(concat::kNotPlaced,
                      Quoted(call.arg_names[j]) +
                          " is not a tensor the planner places here (a parameter, a constant, "
                          "a view, returned, escaping, or of symbolic size)");
      }
      if (!seen.insert(t).second) {
        return Refuse(concat::kSameTensor, Quoted(call.arg_names[j]) + " is passed more than once");
      }
      const ConcatTensor& tensor = tensors_[t];
      const ConcatTensor& output = tensors_[call.args[n]];
      if (tensor.device != output.device || tensor.scope != output.scope) {
        return Refuse(concat::kDeviceOrScope, Quoted(call.arg_names[j]) +
                                                  " is on another device or storage scope than the "
                                                  "output");
      }
    }
    const ConcatTensor& output = tensors_[call.args[n]];
    for (int64_t use : output.uses) {
      if (use < call.step) {
        return Refuse(concat::kOutputUsedBefore,
                      "the output " + Quoted(output.name) + " is used before the concatenation");
      }
    }
    for (size_t j = 0; j < n; ++j) {
      if (!layout.Sliced(j)) continue;
      const ConcatTensor& input = tensors_[call.args[j]];
      for (int64_t write : input.writes) {
        if (write > call.step) {
          return Refuse(concat::kInputWrittenAfter,
                        Quoted(input.name) + " is written after the concatenation (point " +
                            std::to_string(write) + "), which would change the output");
        }
      }
    }
    return ConcatDecision{true, concat::kCopyFree, ""};
  }

  /*! \brief Rule 4: tensors grouped by the copy-free concatenations, in program order. */
  void Groups(ConcatPlacement* result) {
    OffsetSets sets(tensors_.size());
    for (size_t c = 0; c < calls_.size(); ++c) {
      ConcatDecision& decision = result->decisions[c];
      if (!decision.copy_free) continue;
      const ConcatCall& call = calls_[c];
      size_t n = call.args.size() - 1;
      OffsetSets trial = sets;
      bool agrees = true;
      for (size_t j = 0; j < n && agrees; ++j) {
        if (!call.layout.Sliced(j)) continue;
        agrees = trial.Relate(call.args[j], call.args[n], call.layout.byte_offsets[j]);
      }
      if (!agrees) {
        decision = Refuse(concat::kPlacementConflict,
                          "an input already has another place in the memory of an earlier "
                          "copy-free concatenation");
        continue;
      }
      sets = trial;
    }
    // Groups of two or more, offsets made non-negative.
    std::map<int64_t, std::vector<int64_t>> members;
    for (size_t t = 0; t < tensors_.size(); ++t) {
      members[sets.Find(static_cast<int64_t>(t)).first].push_back(static_cast<int64_t>(t));
    }
    result->group.assign(tensors_.size(), -1);
    result->delta.assign(tensors_.size(), 0);
    int64_t next = 0;
    for (const auto& [root, ts] : members) {
      if (ts.size() < 2) continue;
      int64_t low = 0;
      for (int64_t t : ts) low = std::min(low, sets.Find(t).second);
      for (int64_t t : ts) {
        result->group[t] = next;
        result->delta[t] = sets.Find(t).second - low;
      }
      ++next;
    }
  }

  /*! \brief Rule 5; on a violation, the concatenation to refuse and its refusal. */
  std::optional<std::pair<size_t, ConcatDecision>> CheckGroups(
      const ConcatPlacement& result) const {
    // Tensor -> the copy-free call making it: a dropped one makes no write, a kernel that runs
    // writes all but its sliced inputs' bytes.
    std::vector<int64_t> made_by(tensors_.size(), -1);
    for (size_t c = 0; c < calls_.size(); ++c) {
      if (result.decisions[c].copy_free) made_by[calls_[c].args.back()] = static_cast<int64_t>(c);
    }
    auto dropped = [&](int64_t t) {
      return made_by[t] >= 0 && !calls_[made_by[t]].layout.computes;
    };
    // The bytes kernels write into `t`, in its group's coordinates.
    auto written_ranges = [&](int64_t t) {
      std::vector<std::pair<int64_t, int64_t>> ranges;
      int64_t begin = result.delta[t], end = begin + tensors_[t].bytes;
      if (made_by[t] < 0) return decltype(ranges){{begin, end}};
      if (dropped(t)) return ranges;
      const ConcatCall& call = calls_[made_by[t]];
      std::vector<std::pair<int64_t, int64_t>> holes;  // the sliced inputs' bytes
      for (size_t j = 0; j + 1 < call.args.size(); ++j) {
        if (!call.layout.Sliced(j)) continue;
        int64_t start = begin + call.layout.byte_offsets[j];
        holes.emplace_back(start, start + tensors_[call.args[j]].bytes);
      }
      std::sort(holes.begin(), holes.end());
      for (const auto& [hole, hole_end] : holes) {
        if (begin < hole) ranges.emplace_back(begin, hole);
        begin = std::max(begin, hole_end);
      }
      if (begin < end) ranges.emplace_back(begin, end);
      return ranges;
    };
    auto shares_bytes = [&](int64_t a, int64_t b) {
      return result.group[a] >= 0 && result.group[a] == result.group[b] &&
             Overlap(result.delta[a], tensors_[a].bytes, result.delta[b], tensors_[b].bytes);
    };
    auto both_written = [&](int64_t a, int64_t b) {
      for (const auto& [a0, a1] : written_ranges(a)) {
        for (const auto& [b0, b1] : written_ranges(b)) {
          if (Overlap(a0, a1 - a0, b0, b1 - b0)) return true;
        }
      }
      return false;
    };
    // The latest copy-free concatenation holding `t` at a slice, the one that put it in its
    // group.
    auto placing_call = [&](int64_t t) {
      int64_t found = -1;
      for (size_t c = 0; c < calls_.size(); ++c) {
        const ConcatCall& call = calls_[c];
        if (!result.decisions[c].copy_free) continue;
        for (size_t j = 0; j + 1 < call.args.size(); ++j) {
          if (call.args[j] == t && call.layout.Sliced(j)) found = static_cast<int64_t>(c);
        }
      }
      return found;
    };
    // Only tensors of one group share bytes: pairs within each group, in the order of a scan
    // over all pairs (so the first violation found is the same), without the scan.
    std::vector<std::vector<size_t>> members;
    for (size_t t = 0; t < tensors_.size(); ++t) {
      if (result.group[t] < 0) continue;
      if (static_cast<size_t>(result.group[t]) >= members.size()) {
        members.resize(result.group[t] + 1);
      }
      members[result.group[t]].push_back(t);
    }
    for (size_t a = 0; a < tensors_.size(); ++a) {
      if (result.group[a] < 0) continue;
      for (size_t b : members[result.group[a]]) {
        if (a == b || !shares_bytes(a, b)) continue;
        if (a < b && both_written(a, b)) {
          int64_t c = std::max(placing_call(a), placing_call(b));
          if (c < 0) c = std::max(made_by[a], made_by[b]);
          return std::make_pair(
              static_cast<size_t>(c),
              ConcatDecision{false, concat::kPlacementConflict,
                             Quoted(tensors_[a].name) + " and " + Quoted(tensors_[b].name) +
                                 " would share bytes although kernels write "
                                 "both"});
        }
        // A write into `a` (not the one producing it) while `b`, defined before, is still read.
        const ConcatTensor& written = tensors_[a];
        const ConcatTensor& reader = tensors_[b];
        if (reader.writes.empty()) continue;
        int64_t defined = reader.writes.front();
        for (size_t k = 1; k < written.writes.size(); ++k) {
          int64_t w = written.writes[k];
          if (defined < w && reader.last >= w) {
            int64_t c = made_by[b] >= 0 ? made_by[b] : made_by[a];
            if (c < 0) c = std::max(placing_call(a), placing_call(b));
            return std::make_pair(
                static_cast<size_t>(c),
                ConcatDecision{false, concat::kOverwrittenWhileRead,
                               Quoted(written.name) + " is written at point " + std::to_string(w) +
                                   " while " + Quoted(reader.name) +
                                   ", which shares its bytes, is still read"});
          }
        }
      }
    }
    return std::nullopt;
  }

  const std::vector<ConcatTensor>& tensors_;
  const std::vector<ConcatCall>& calls_;
  int64_t alignment_;
};

}  // namespace

ObjectRef ConcatenationRecord(const std::vector<ConcatTensor>& tensors, const ConcatCall& call,
                              const ConcatDecision& decision) {
  ffi::ObjectPtr<ConcatenationObj> record = ffi::make_object<ConcatenationObj>();
  auto name = [&](size_t j) {
    return call.args[j] >= 0 ? tensors[call.args[j]].name : call.arg_names[j];
  };
  record->output = name(call.args.size() - 1);
  record->callee = call.callee;
  for (size_t j = 0; j + 1 < call.args.size(); ++j) {
    (call.layout.Sliced(j) ? record->inputs : record->computed_from).push_back(name(j));
  }
  record->axis = call.layout.axis;
  record->kernel_runs = call.layout.computes;
  record->copy_free = decision.copy_free;
  record->decision = decision.code;
  record->reason = decision.reason;
  return ObjectRef(record);
}

ConcatPlacement PlaceConcatenations(const std::vector<ConcatTensor>& tensors,
                                    const std::vector<ConcatCall>& calls, int64_t alignment) {
  return Placer(tensors, calls, alignment).Run();
}

}  // namespace relax
}  // namespace tvm_memplan
