/*!
 * \file relax/offset_packing.cc
 * \brief Greedy offset packing: placement of one tensor among those already placed, and the
 *        orders in which tensors are placed.
 */
#include "relax/offset_packing.h"

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <string>

#include "relax/offset_search.h"

namespace tvm_memplan {
namespace relax {

namespace {

// Orders tried after the deterministic ones when those stay above the bound.
constexpr int kShuffledAttempts = 16;

int64_t AlignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool LiveTogether(const PackItem& a, const PackItem& b) {
  return a.first <= b.last && b.first <= a.last;
}

/*! \brief Places items one at a time among those placed before. */
class Placer {
 public:
  Placer(const std::vector<PackItem>& items, int64_t alignment)
      : items_(items), alignment_(alignment), offsets_(items.size(), -1) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].group >= 0) groups_[items[i].group].push_back(i);
    }
  }

  /*! \brief Place item `i` (with its group, if it has one and that is not placed yet). */
  void Place(size_t i, bool best_fit) {
    if (placed(i)) return;
    if (items_[i].group >= 0) return PlaceGroup(groups_.at(items_[i].group));
    PlaceOne(i, best_fit);
  }

 private:
  /*! \brief Place item `i`: in the smallest gap that holds it (best fit) or the lowest one
   *         (first fit), else above every overlapping item. */
  void PlaceOne(size_t i, bool best_fit) {
    const PackItem& item = items_[i];
    if (item.bytes == 0) {
      offsets_[i] = 0;
      return;
    }
    neighbours_.clear();
    for (size_t j : placed_) {
      if (items_[j].bytes > 0 && LiveTogether(item, items_[j])) neighbours_.push_back(j);
    }
    std::sort(neighbours_.begin(), neighbours_.end(),
              [&](size_t a, size_t b) { return offsets_[a] < offsets_[b]; });
    int64_t best = -1;
    int64_t best_gap = std::numeric_limits<int64_t>::max();
    int64_t end = 0;  // the highest byte used by the neighbours seen so far
    for (size_t j : neighbours_) {
      int64_t start = AlignUp(end, alignment_);
      int64_t gap = offsets_[j] - start;
      if (gap >= item.bytes && gap < best_gap) {
        best = start;
        best_gap = gap;
        if (!best_fit) break;
      }
      end = std::max(end, offsets_[j] + items_[j].bytes);
    }
    offsets_[i] = best >= 0 ? best : AlignUp(end, alignment_);
    placed_.push_back(i);
  }

  /*! \brief Place a group at the lowest aligned offset where none of its items overlaps an
   *         item placed before (first fit: a group is rarely worth a gap search). */
  void PlaceGroup(const std::vector<size_t>& members) {
    // Offsets the group may not start in: (begin, end), open at both ends.
    std::vector<std::pair<int64_t, int64_t>> forbidden;
    std::vector<int64_t> candidates{0};
    for (size_t m : members) {
      const PackItem& member = items_[m];
      if (member.bytes == 0) continue;
      for (size_t j : placed_) {
        if (items_[j].bytes == 0 || !LiveTogether(member, items_[j])) continue;
        int64_t end = offsets_[j] + items_[j].bytes - member.delta;
        forbidden.emplace_back(offsets_[j] - member.delta - member.bytes, end);
        if (end > 0) candidates.push_back(AlignUp(end, alignment_));
      }
    }
    std::sort(candidates.begin(), candidates.end());
    int64_t base = candidates.back();
    for (int64_t candidate : candidates) {
      bool free = std::none_of(forbidden.begin(), forbidden.end(), [&](const auto& f) {
        return f.first < candidate && candidate < f.second;
      });
      if (free) {
        base = candidate;
        break;
      }
    }
    for (size_t m : members) {
      offsets_[m] = base + items_[m].delta;
      placed_.push_back(m);
    }
  }

 public:
  bool placed(size_t i) const { return offsets_[i] >= 0; }

  Packing Result(std::string algorithm) const {
    Packing packing;
    packing.offsets = offsets_;
    for (size_t i = 0; i < items_.size(); ++i) {
      packing.bytes = std::max(packing.bytes, offsets_[i] + items_[i].bytes);
    }
    packing.algorithm = std::move(algorithm);
    return packing;
  }

 private:
  const std::vector<PackItem>& items_;
  int64_t alignment_;
  std::vector<int64_t> offsets_;
  std::vector<size_t> placed_;
  std::vector<size_t> neighbours_;
  /*! \brief Group -> its items. */
  std::map<int64_t, std::vector<size_t>> groups_;
};

/*! \brief Items by decreasing size; equal sizes in program order (so that tensors of one size
 *         that follow each other alternate between few places), or longest-lived first. */
std::vector<size_t> BySize(const std::vector<PackItem>& items, bool longest_first = false) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const PackItem& x = items[a];
    const PackItem& y = items[b];
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    if (longest_first && x.last - x.first != y.last - y.first) {
      return x.last - x.first > y.last - y.first;
    }
    return x.first < y.first;
  });
  return order;
}

Packing GreedyBySize(const std::vector<PackItem>& items, int64_t alignment, bool best_fit,
                     bool longest_first) {
  Placer placer(items, alignment);
  for (size_t i : BySize(items, longest_first)) placer.Place(i, best_fit);
  return placer.Result(std::string("greedy by size") + (longest_first ? ", longest first" : "") +
                       (best_fit ? ", best fit" : ", first fit"));
}

/*! \brief In program order (by first point, larger first at a tie), each at the lowest offset
 *         free over its lifetime: a linear scan. It keeps long-lived tensors made one after
 *         another (DenseNet's features) stacked below the temporaries that come and go between
 *         them, which placing the largest first scatters. */
Packing GreedyInProgramOrder(const std::vector<PackItem>& items, int64_t alignment) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (items[a].first != items[b].first) return items[a].first < items[b].first;
    return items[a].bytes > items[b].bytes;
  });
  Placer placer(items, alignment);
  for (size_t i : order) placer.Place(i, /*best_fit=*/false);
  return placer.Result("greedy in program order, first fit");
}

/*! \brief The program points with the most live bytes first; at each, its unplaced items by
 *         decreasing size (TFLite's "greedy by breadth"). */
Packing GreedyByBreadth(const std::vector<PackItem>& items, int64_t alignment) {
  // The live set only grows where an item starts, so the points where items start suffice.
  std::vector<int64_t> starts;
  for (const PackItem& item : items) starts.push_back(item.first);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::map<int64_t, std::vector<size_t>> live;  // point -> items live there
  std::map<int64_t, int64_t> live_bytes;
  for (size_t i : BySize(items)) {
    auto p = std::lower_bound(starts.begin(), starts.end(), items[i].first);
    for (; p != starts.end() && *p <= items[i].last; ++p) {
      live[*p].push_back(i);
      live_bytes[*p] += items[i].bytes;
    }
  }
  std::vector<std::pair<int64_t, int64_t>> points(live_bytes.begin(), live_bytes.end());
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  Placer placer(items, alignment);
  for (const auto& [point, bytes] : points) {
    for (size_t i : live[point]) {
      if (!placer.placed(i)) placer.Place(i, /*best_fit=*/true);
    }
  }
  return placer.Result("greedy by breadth");
}

}  // namespace

namespace {

/*! \brief The items of each group replaced by the bytes their live members cover together, one
 *         item per stretch of program points over which the live members do not change. */
std::vector<PackItem> MergeGroups(const std::vector<PackItem>& items) {
  std::vector<PackItem> merged;
  std::map<int64_t, std::vector<const PackItem*>> groups;
  for (const PackItem& item : items) {
    if (item.group < 0) {
      merged.push_back(item);
    } else {
      groups[item.group].push_back(&item);
    }
  }
  for (const auto& [group, members] : groups) {
    std::vector<int64_t> cuts;  // points where the live members change
    for (const PackItem* m : members) {
      cuts.push_back(m->first);
      cuts.push_back(m->last + 1);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      std::vector<std::pair<int64_t, int64_t>> ranges;
      for (const PackItem* m : members) {
        if (m->first <= cuts[k] && cuts[k] <= m->last && m->bytes > 0) {
          ranges.emplace_back(m->delta, m->delta + m->bytes);
        }
      }
      std::sort(ranges.begin(), ranges.end());
      int64_t covered = 0, end = std::numeric_limits<int64_t>::min();
      for (const auto& [begin, stop] : ranges) {
        covered += std::max<int64_t>(0, stop - std::max(begin, end));
        end = std::max(end, stop);
      }
      if (covered > 0) merged.push_back(PackItem{covered, cuts[k], cuts[k + 1] - 1});
    }
  }
  return merged;
}

}  // namespace

std::vector<int64_t> LiveBytesAt(const std::vector<PackItem>& all_items, int64_t num_points) {
  std::vector<int64_t> live(num_points + 1, 0);  // a difference array, then its prefix sums
  for (const PackItem& item : MergeGroups(all_items)) {
    if (item.first >= num_points) continue;
    live[item.first] += item.bytes;
    live[std::min(item.last + 1, num_points)] -= item.bytes;
  }
  for (int64_t p = 1; p < num_points; ++p) live[p] += live[p - 1];
  live.pop_back();
  return live;
}

int64_t PeakLiveBytes(const std::vector<PackItem>& all_items) {
  std::vector<PackItem> items = MergeGroups(all_items);
  std::vector<std::pair<int64_t, int64_t>> events;  // (point, +bytes at first / -bytes after last)
  events.reserve(items.size() * 2);
  for (const PackItem& item : items) {
    if (item.bytes == 0) continue;
    events.emplace_back(item.first, item.bytes);
    events.emplace_back(item.last + 1, -item.bytes);
  }
  // At one point, ends (negative) come before starts: a tensor ending at p - 1 is not live at p.
  std::sort(events.begin(), events.end());
  int64_t live = 0, peak = 0;
  for (const auto& [point, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

namespace {

/*! \brief The smallest of the greedy orders, stopping at the first within `enough` bytes. */
Packing GreedyPack(const std::vector<PackItem>& items, int64_t alignment, int64_t enough) {
  int64_t bound = enough;
  Packing best = GreedyBySize(items, alignment, /*best_fit=*/true, /*longest_first=*/false);
  if (best.bytes <= bound) return best;
  auto consider = [&](Packing candidate) {
    if (candidate.bytes < best.bytes) best = std::move(candidate);
    return best.bytes <= bound;
  };
  if (consider(GreedyByBreadth(items, alignment))) return best;
  if (consider(GreedyBySize(items, alignment, /*best_fit=*/true, /*longest_first=*/true))) {
    return best;
  }
  if (consider(GreedyBySize(items, alignment, /*best_fit=*/false, /*longest_first=*/false))) {
    return best;
  }
  if (consider(GreedyInProgramOrder(items, alignment))) return best;
  // Still above the bound: greedy by size again over slightly shuffled orders (sizes scaled by
  // a factor in [1, 1.5), a fixed sequence, so the result does not vary between runs).
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
  };
  for (int attempt = 0; attempt < kShuffledAttempts; ++attempt) {
    std::vector<double> keys(items.size());
    for (size_t i = 0; i < items.size(); ++i) keys[i] = items[i].bytes * (1.0 + 0.5 * next());
    std::vector<size_t> order(items.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return keys[a] > keys[b]; });
    Placer placer(items, alignment);
    for (size_t i : order) placer.Place(i, /*best_fit=*/true);
    if (consider(placer.Result("greedy by shuffled size, best fit"))) break;
  }
  return best;
}

}  // namespace

const char* optimality::Weakest(const char* a, const char* b) {
  auto strength = [](const char* code) {
    for (size_t i = 0; i < std::size(kCodes); ++i) {
      if (std::string(kCodes[i].value) == code) return i;
    }
    return std::size(kCodes);
  };
  return strength(a) >= strength(b) ? a : b;
}

Packing PackOffsets(const std::vector<PackItem>& items, const PackOptions& options) {
  int64_t alignment = options.alignment;
  int64_t bound = PeakLiveBytes(items);
  int64_t capacity = options.capacity;
  Packing best = GreedyPack(items, alignment, capacity >= 0 ? std::max(capacity, bound) : bound);
  best.bound = bound;
  auto finish = [&](Packing packing, const char* code) {
    packing.bound = bound;
    packing.optimality = packing.bytes <= bound ? optimality::kAtBound : code;
    if (capacity >= 0) {
      packing.fits = packing.bytes <= capacity;
      if (packing.fits) packing.why_not.clear();
    }
    return packing;
  };
  if (capacity >= 0 && bound > capacity) {
    best.why_not = "the peak-live bound, " + std::to_string(bound) +
                   " bytes live at one program point, exceeds the capacity";
    return finish(best, optimality::kBestFound);
  }
  if (best.bytes <= bound) return finish(best, optimality::kAtBound);
  if (capacity >= 0 && best.bytes <= capacity) return finish(best, optimality::kBestFound);
  if (options.budget == nullptr) {
    best.why_not = "no placement within the capacity found by the greedy orders (no exact search)";
    return finish(best, optimality::kBestFound);
  }
  size_t blocks = std::count_if(items.begin(), items.end(),
                                [](const PackItem& item) { return item.bytes > 0; });
  if (blocks > kMaxSearchItems) {
    best.why_not = "too many items for the exact search (" + std::to_string(blocks) + " > " +
                   std::to_string(kMaxSearchItems) + ")";
    return finish(best, optimality::kBestFound);
  }
  OffsetSearch search(items, alignment);
  SearchBudget& budget = *options.budget;
  int64_t steps_before = budget.steps_taken();
  std::vector<int64_t> offsets;
  auto found = [&](int64_t size) {
    Packing packing;
    packing.offsets = offsets;
    for (size_t i = 0; i < items.size(); ++i) {
      packing.bytes = std::max(packing.bytes, offsets[i] + items[i].bytes);
    }
    TVM_FFI_ICHECK_LE(packing.bytes, size) << "internal error: the exact search overran its size";
    packing.algorithm = "exact search";
    return packing;
  };
  const char* code = optimality::kBestFound;
  if (capacity >= 0) {
    // Any placement within the capacity will do.
    SearchOutcome outcome = search.Fit(capacity, &budget, &offsets);
    if (outcome == SearchOutcome::kFound) {
      best = found(capacity);
    } else if (outcome == SearchOutcome::kInfeasible && search.proves_infeasibility()) {
      best.why_not = "the exact search proved that no placement fits";
    } else {
      best.why_not = outcome == SearchOutcome::kInfeasible
                         ? "no placement found: the search is not exhaustive with groups"
                         : "no placement found within the search budget";
    }
  } else {
    // The least size lies in [proven, best.bytes]. Try the bound first, then bisect between the
    // lowest size not yet given up on and the best found. Each try may spend half of what is
    // left: a size whose search runs out of its part is given up on (not proven impossible), so
    // that an unreachable bound does not take the budget that a size above it would need.
    int64_t proven = bound;
    int64_t lowest = bound;
    int64_t size = bound;
    while (lowest < best.bytes && !budget.spent()) {
      SearchBudget part = budget.Part((budget.steps_left() + 1) / 2);
      SearchOutcome outcome = search.Fit(size, &part, &offsets);
      budget.Charge(part);
      if (outcome == SearchOutcome::kFound) {
        best = found(size);
      } else {
        // No placement within `size`: proven (no size below it has one either), or given up.
        lowest = size + 1;
        bool proof = outcome == SearchOutcome::kInfeasible && search.proves_infeasibility();
        if (proof) proven = std::max(proven, lowest);
      }
      size = lowest + (best.bytes - 1 - lowest) / 2;
    }
    if (proven >= best.bytes) code = optimality::kProvenMinimum;
  }
  best.search_steps = budget.steps_taken() - steps_before;
  best.timed_out = budget.timed_out();
  return finish(best, code);
}

bool IsValidPacking(const std::vector<PackItem>& items, const Packing& packing, int64_t alignment) {
  if (packing.offsets.size() != items.size()) return false;
  for (size_t i = 0; i < items.size(); ++i) {
    int64_t offset = packing.offsets[i];
    if (offset < 0 || offset % alignment != 0 || offset + items[i].bytes > packing.bytes) {
      return false;
    }
    for (size_t j = 0; j < i; ++j) {
      if (items[i].group >= 0 && items[i].group == items[j].group) {
        if (offset - packing.offsets[j] != items[i].delta - items[j].delta) return false;
        continue;
      }
      if (items[i].bytes == 0 || items[j].bytes == 0 || !LiveTogether(items[i], items[j])) {
        continue;
      }
      int64_t other = packing.offsets[j];
      if (offset < other + items[j].bytes && other < offset + items[i].bytes) return false;
    }
  }
  return true;
}

namespace {

/*! \brief Items from (bytes, first, last) or (bytes, first, last, group, delta) tuples. */
std::vector<PackItem> ItemsOf(const tvm::ffi::Array<tvm::ffi::Array<int64_t>>& tuples) {
  std::vector<PackItem> items;
  for (const auto& t : tuples) {
    PackItem item{t[0], t[1], t[2]};
    if (t.size() == 5) {
      item.group = t[3];
      item.delta = t[4];
    }
    items.push_back(item);
  }
  return items;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  // The packing alone, for property tests.
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.testing.pack_offsets",
           [](tvm::ffi::Array<tvm::ffi::Array<int64_t>> tuples, int64_t alignment) {
             std::vector<PackItem> items = ItemsOf(tuples);
             Packing packing = PackOffsets(items, alignment);
             return tvm::ffi::Array<tvm::ffi::Any>{
                 tvm::ffi::Array<int64_t>(packing.offsets.begin(), packing.offsets.end()),
                 packing.bytes, tvm::ffi::String(packing.algorithm),
                 IsValidPacking(items, packing, alignment)};
           })
      .def("tvm_memplan.testing.peak_live_bytes",
           [](tvm::ffi::Array<tvm::ffi::Array<int64_t>> tuples) {
             return PeakLiveBytes(ItemsOf(tuples));
           })
      // The packer on its own (python/tvm_memplan/analysis/packing.py), with its exact search.
      .def("tvm_memplan.analysis.pack_offsets",
           [](tvm::ffi::Array<tvm::ffi::Array<int64_t>> tuples, int64_t alignment, int64_t capacity,
              int64_t search_ms) {
             SearchBudget budget = SearchBudget::ForMs(search_ms);
             PackOptions options;
             options.alignment = alignment;
             options.capacity = capacity;
             options.budget = search_ms > 0 ? &budget : nullptr;
             std::vector<PackItem> items = ItemsOf(tuples);
             Packing packing = PackOffsets(items, options);
             TVM_FFI_ICHECK(IsValidPacking(items, packing, alignment))
                 << "internal error: the offset packing of " << items.size() << " items overlaps";
             tvm::ffi::Map<tvm::ffi::String, tvm::ffi::Any> result;
             result.Set("offsets",
                        tvm::ffi::Array<int64_t>(packing.offsets.begin(), packing.offsets.end()));
             result.Set("bytes", packing.bytes);
             result.Set("algorithm", tvm::ffi::String(packing.algorithm));
             result.Set("optimality", tvm::ffi::String(packing.optimality));
             result.Set("bound", packing.bound);
             result.Set("fits", packing.fits);
             result.Set("why_not", tvm::ffi::String(packing.why_not));
             result.Set("search_steps", packing.search_steps);
             result.Set("timed_out", packing.timed_out);
             return result;
           });
  ir::RegisterCodeFamily("optimality", optimality::kCodes);
}

}  // namespace relax
}  // namespace tvm_memplan
