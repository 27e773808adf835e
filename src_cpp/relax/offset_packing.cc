/*!
 * \file relax/offset_packing.cc
 * \brief Greedy offset packing: placement of one tensor among those already placed, and the
 *        orders in which tensors are placed.
 */
#include "relax/offset_packing.h"

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

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
      : items_(items), alignment_(alignment), offsets_(items.size(), -1) {}

  /*! \brief Place item `i`: in the smallest gap that holds it (best fit) or the lowest one
   *         (first fit), else above every overlapping item. */
  void Place(size_t i, bool best_fit) {
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

int64_t PeakLiveBytes(const std::vector<PackItem>& items) {
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

Packing PackOffsets(const std::vector<PackItem>& items, int64_t alignment) {
  int64_t bound = PeakLiveBytes(items);
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

bool IsValidPacking(const std::vector<PackItem>& items, const Packing& packing, int64_t alignment) {
  if (packing.offsets.size() != items.size()) return false;
  for (size_t i = 0; i < items.size(); ++i) {
    int64_t offset = packing.offsets[i];
    if (offset < 0 || offset % alignment != 0 || offset + items[i].bytes > packing.bytes) {
      return false;
    }
    for (size_t j = 0; j < i; ++j) {
      if (items[i].bytes == 0 || items[j].bytes == 0 || !LiveTogether(items[i], items[j])) {
        continue;
      }
      int64_t other = packing.offsets[j];
      if (offset < other + items[j].bytes && other < offset + items[i].bytes) return false;
    }
  }
  return true;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  // The packing alone, for property tests: items as (bytes, first, last) triples.
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.testing.pack_offsets",
           [](tvm::ffi::Array<tvm::ffi::Array<int64_t>> triples, int64_t alignment) {
             std::vector<PackItem> items;
             for (const auto& t : triples) items.push_back(PackItem{t[0], t[1], t[2]});
             Packing packing = PackOffsets(items, alignment);
             return tvm::ffi::Array<tvm::ffi::Any>{
                 tvm::ffi::Array<int64_t>(packing.offsets.begin(), packing.offsets.end()),
                 packing.bytes, tvm::ffi::String(packing.algorithm)};
           })
      .def("tvm_memplan.testing.peak_live_bytes",
           [](tvm::ffi::Array<tvm::ffi::Array<int64_t>> triples) {
             std::vector<PackItem> items;
             for (const auto& t : triples) items.push_back(PackItem{t[0], t[1], t[2]});
             return PeakLiveBytes(items);
           });
}

}  // namespace relax
}  // namespace tvm_memplan
