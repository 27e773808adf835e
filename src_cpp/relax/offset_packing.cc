/*!
 * \file relax/offset_packing.cc
 * \brief Greedy offset packing: placement of one tensor among those already placed, and the
 *        orders in which tensors are placed.
 */
#include "relax/offset_packing.h"

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <chrono>
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

/*!
 * \brief The placed items of nonzero size in order of offset, each with its bytes and lifetime,
 *        so that the items live during a stretch of points come out in order of offset without a
 *        sort. The entries sit in chunks of a few hundred: an insertion moves one chunk's
 *        entries, and a scan reads memory in order. The 62,185 items of iopddl/Y_1 are packed in
 *        3.3 s, where sorting each item's neighbours took 36 s.
 */
class OffsetIndex {
 public:
  struct Entry {
    int64_t offset, end, first, last;
  };

  /*! \brief Add an entry after those at the same offset. */
  void Insert(const Entry& entry) {
    auto chunk = std::upper_bound(
        chunks_.begin(), chunks_.end(), entry.offset,
        [](int64_t offset, const Chunk& c) { return offset < c.entries.back().offset; });
    if (chunk == chunks_.end()) {
      if (chunks_.empty() || chunks_.back().entries.size() >= kChunk) chunks_.emplace_back();
      chunk = std::prev(chunks_.end());
    }
    auto at = std::upper_bound(chunk->entries.begin(), chunk->entries.end(), entry.offset,
                               [](int64_t offset, const Entry& e) { return offset < e.offset; });
    chunk->lives.insert(chunk->lives.begin() + (at - chunk->entries.begin()),
                        {entry.first, entry.last});
    chunk->entries.insert(at, entry);
    if (chunk->entries.size() >= 2 * kChunk) {
      Chunk upper{{chunk->entries.begin() + kChunk, chunk->entries.end()},
                  {chunk->lives.begin() + kChunk, chunk->lives.end()}};
      chunk->entries.resize(kChunk);
      chunk->lives.resize(kChunk);
      chunks_.insert(std::next(chunk), std::move(upper));
    }
  }

  /*! \brief Call `visit(entry)` for each entry live at some point of [first, last], in order of
   *         offset, until it returns false; the number of entries examined (the work). */
  template <typename Visit>
  int64_t ForEachLiveDuring(int64_t first, int64_t last, Visit visit) const {
    int64_t examined = 0;
    for (const Chunk& chunk : chunks_) {
      for (size_t k = 0; k < chunk.lives.size(); ++k) {
        const auto& [begin, end] = chunk.lives[k];
        if (begin <= last && first <= end && !visit(chunk.entries[k])) return examined + k + 1;
      }
      examined += chunk.lives.size();
    }
    return examined;
  }

 private:
  static constexpr size_t kChunk = 256;
  /*! \brief Entries in order of offset, and their lifetimes alone, which a scan reads. */
  struct Chunk {
    std::vector<Entry> entries;
    std::vector<std::pair<int64_t, int64_t>> lives;
  };
  std::vector<Chunk> chunks_;
};

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
    int64_t best = -1;
    int64_t best_gap = std::numeric_limits<int64_t>::max();
    int64_t end = 0;  // the highest byte used by the neighbours seen so far
    steps_ +=
        placed_.ForEachLiveDuring(item.first, item.last, [&](const OffsetIndex::Entry& neighbour) {
          int64_t start = AlignUp(end, alignment_);
          int64_t gap = neighbour.offset - start;
          if (gap >= item.bytes && gap < best_gap) {
            best = start;
            best_gap = gap;
            if (!best_fit) return false;
          }
          end = std::max(end, neighbour.end);
          return true;
        });
    SetOffset(i, best >= 0 ? best : AlignUp(end, alignment_));
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
      steps_ += placed_.ForEachLiveDuring(
          member.first, member.last, [&](const OffsetIndex::Entry& other) {
            int64_t end = other.end - member.delta;
            forbidden.emplace_back(other.offset - member.delta - member.bytes, end);
            if (end > 0) candidates.push_back(AlignUp(end, alignment_));
            return true;
          });
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
    for (size_t m : members) SetOffset(m, base + items_[m].delta);
  }

  void SetOffset(size_t i, int64_t offset) {
    const PackItem& item = items_[i];
    offsets_[i] = offset;
    if (item.bytes > 0) placed_.Insert({offset, offset + item.bytes, item.first, item.last});
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
    packing.greedy_steps = steps_ + static_cast<int64_t>(items_.size());
    return packing;
  }

 private:
  const std::vector<PackItem>& items_;
  int64_t alignment_;
  std::vector<int64_t> offsets_;
  OffsetIndex placed_;
  /*! \brief Entries of the index examined so far. */
  int64_t steps_ = 0;
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

/*! \brief The program points with the most live bytes first (the earlier first at a tie); at
 *         each, its unplaced items by decreasing size (TFLite's "greedy by breadth"). An item is
 *         thus placed at the first of its points in that order: a sweep gives the live bytes, a
 *         range minimum that first point, in O(n log n). */
Packing GreedyByBreadth(const std::vector<PackItem>& items, int64_t alignment) {
  // The live set only grows where an item starts, so the points where items start suffice.
  std::vector<int64_t> starts;
  for (const PackItem& item : items) starts.push_back(item.first);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  // Item i is live at the starts [lo[i], hi[i]).
  std::vector<size_t> lo(items.size()), hi(items.size());
  std::vector<int64_t> live_bytes(starts.size() + 1, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    lo[i] = std::lower_bound(starts.begin(), starts.end(), items[i].first) - starts.begin();
    hi[i] = std::upper_bound(starts.begin(), starts.end(), items[i].last) - starts.begin();
    if (lo[i] >= hi[i]) continue;
    live_bytes[lo[i]] += items[i].bytes;
    live_bytes[hi[i]] -= items[i].bytes;
  }
  for (size_t k = 1; k < starts.size(); ++k) live_bytes[k] += live_bytes[k - 1];
  std::vector<size_t> by_breadth(starts.size());
  std::iota(by_breadth.begin(), by_breadth.end(), 0);
  std::stable_sort(by_breadth.begin(), by_breadth.end(),
                   [&](size_t a, size_t b) { return live_bytes[a] > live_bytes[b]; });
  // rank[k]: the place of start k in that order; level j of `least` holds the least rank over
  // each 2^j starts from k (a sparse table).
  std::vector<std::vector<size_t>> least(1, std::vector<size_t>(starts.size()));
  for (size_t r = 0; r < by_breadth.size(); ++r) least[0][by_breadth[r]] = r;
  for (size_t width = 2; width <= starts.size(); width *= 2) {
    const std::vector<size_t>& half = least.back();
    std::vector<size_t> level(starts.size() - width + 1);
    for (size_t k = 0; k < level.size(); ++k) {
      level[k] = std::min(half[k], half[k + width / 2]);
    }
    least.push_back(std::move(level));
  }
  auto first_in_order = [&](size_t i) {
    if (lo[i] >= hi[i]) return std::numeric_limits<size_t>::max();
    size_t j = 0;
    while ((size_t{2} << j) <= hi[i] - lo[i]) ++j;
    return std::min(least[j][lo[i]], least[j][hi[i] - (size_t{1} << j)]);
  };
  std::vector<size_t> order = BySize(items);
  std::vector<size_t> at(items.size());
  for (size_t i : order) at[i] = first_in_order(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
  Placer placer(items, alignment);
  for (size_t i : order) placer.Place(i, /*best_fit=*/true);
  return placer.Result("greedy by breadth");
}

}  // namespace

namespace {

/*! \brief A stretch of program points over which the live members of a group do not change,
 *         and the byte ranges they cover together there (from the group's place; disjoint, in
 *         order). */
struct GroupStretch {
  int64_t first, last;
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

std::vector<GroupStretch> StretchesOf(const std::vector<const PackItem*>& members) {
  std::vector<int64_t> cuts;  // points where the live members change
  for (const PackItem* m : members) {
    cuts.push_back(m->first);
    cuts.push_back(m->last + 1);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<GroupStretch> stretches;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const PackItem* m : members) {
      if (m->first <= cuts[k] && cuts[k] <= m->last && m->bytes > 0) {
        ranges.emplace_back(m->delta, m->delta + m->bytes);
      }
    }
    std::sort(ranges.begin(), ranges.end());
    GroupStretch stretch{cuts[k], cuts[k + 1] - 1, {}};
    for (const auto& [begin, stop] : ranges) {
      if (!stretch.ranges.empty() && begin <= stretch.ranges.back().second) {
        stretch.ranges.back().second = std::max(stretch.ranges.back().second, stop);
      } else {
        stretch.ranges.emplace_back(begin, stop);
      }
    }
    if (!stretch.ranges.empty()) stretches.push_back(std::move(stretch));
  }
  return stretches;
}

/*! \brief Items grouped by their group (>= 0), in order of group. */
std::map<int64_t, std::vector<const PackItem*>> GroupsOf(const std::vector<PackItem>& items) {
  std::map<int64_t, std::vector<const PackItem*>> groups;
  for (const PackItem& item : items) {
    if (item.group >= 0) groups[item.group].push_back(&item);
  }
  return groups;
}

/*! \brief The items of each group replaced by the bytes their live members cover together, one
 *         item per stretch of program points over which the live members do not change. */
std::vector<PackItem> MergeGroups(const std::vector<PackItem>& items) {
  std::vector<PackItem> merged;
  for (const PackItem& item : items) {
    if (item.group < 0) merged.push_back(item);
  }
  for (const auto& [group, members] : GroupsOf(items)) {
    for (const GroupStretch& stretch : StretchesOf(members)) {
      int64_t covered = 0;
      for (const auto& [begin, stop] : stretch.ranges) covered += stop - begin;
      merged.push_back(PackItem{covered, stretch.first, stretch.last});
    }
  }
  return merged;
}

/*! \brief Byte ranges [offset, end) over program points [first, last]. */
struct Span {
  int64_t offset, end, first, last;
};

/*! \brief Whether no two spans live at one point share a byte: a sweep over time that keeps the
 *         ranges live at the point reached in order of offset, so that a new range need only be
 *         checked against its two neighbours there. */
bool NoneOverlap(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.first < b.first; });
  std::vector<const Span*> by_last;
  for (const Span& span : spans) by_last.push_back(&span);
  std::sort(by_last.begin(), by_last.end(),
            [](const Span* a, const Span* b) { return a->last < b->last; });
  std::map<int64_t, int64_t> live;  // offset -> end, disjoint
  size_t ended = 0;
  for (const Span& span : spans) {
    for (; ended < by_last.size() && by_last[ended]->last < span.first; ++ended) {
      live.erase(by_last[ended]->offset);
    }
    auto above = live.lower_bound(span.offset);
    if (above != live.end() && above->first < span.end) return false;
    if (above != live.begin() && std::prev(above)->second > span.offset) return false;
    live.emplace(span.offset, span.end);
  }
  return true;
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

/*!
 * \brief The smallest of the greedy orders, stopping at the first within `enough` bytes or, with
 *        a budget, once the budget is spent: each order is charged to it, and an order after the
 *        first runs only while some is left.
 */
Packing GreedyPack(const std::vector<PackItem>& items, int64_t enough, int64_t bound,
                   const PackOptions& options) {
  int64_t alignment = options.alignment;
  Packing best;
  int64_t steps = 0;
  int orders = 0;
  // Run one order unless the budget is spent; true when the search may stop.
  auto consider = [&](auto order) {
    if (orders > 0 && options.budget != nullptr && options.budget->spent()) return true;
    Packing candidate = order();
    steps += candidate.greedy_steps;
    if (options.budget != nullptr) {
      options.budget->SpendAtOnce(candidate.greedy_steps / kIndexEntriesPerStep);
    }
    if (orders++ == 0 || candidate.bytes < best.bytes) best = std::move(candidate);
    if (options.progress) options.progress("greedy orders", best.bytes, bound);
    return best.bytes <= enough;
  };
  auto by_size = [&](bool best_fit, bool longest_first) {
    return [&, best_fit, longest_first] {
      return GreedyBySize(items, alignment, best_fit, longest_first);
    };
  };
  bool done = consider(by_size(/*best_fit=*/true, /*longest_first=*/false)) ||
              consider([&] { return GreedyByBreadth(items, alignment); }) ||
              consider(by_size(/*best_fit=*/true, /*longest_first=*/true)) ||
              consider(by_size(/*best_fit=*/false, /*longest_first=*/false)) ||
              consider([&] { return GreedyInProgramOrder(items, alignment); });
  // Still above the bound: greedy by size again over slightly shuffled orders (sizes scaled by
  // a factor in [1, 1.5), a fixed sequence, so the result does not vary between runs).
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
  };
  for (int attempt = 0; !done && attempt < kShuffledAttempts; ++attempt) {
    done = consider([&] {
      std::vector<double> keys(items.size());
      for (size_t i = 0; i < items.size(); ++i) keys[i] = items[i].bytes * (1.0 + 0.5 * next());
      std::vector<size_t> order(items.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return keys[a] > keys[b]; });
      Placer placer(items, alignment);
      for (size_t i : order) placer.Place(i, /*best_fit=*/true);
      return placer.Result("greedy by shuffled size, best fit");
    });
  }
  best.greedy_steps = steps;
  best.greedy_orders = orders;
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

namespace {

/*!
 * \brief `items` on canonical time: each item's first point and its end (last + 1) replaced by
 *        their ranks among the firsts and ends of all items.
 *
 * Two items are live together exactly when each starts before the other ends, which a renaming
 * of points that keeps their order never changes: the problem stays the same, and any two
 * numberings of it that differ by such a renaming have the same canonical items. Everything the
 * packer then does (orders, ties, budget charges) depends on that order only, so the placement
 * does not depend on how the points were numbered.
 */
std::vector<PackItem> CanonicalTime(const std::vector<PackItem>& items) {
  std::vector<int64_t> points;
  points.reserve(items.size() * 2);
  for (const PackItem& item : items) {
    points.push_back(item.first);
    points.push_back(item.last + 1);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  auto rank = [&](int64_t point) {
    return std::lower_bound(points.begin(), points.end(), point) - points.begin();
  };
  std::vector<PackItem> canonical = items;
  for (PackItem& item : canonical) {
    int64_t end = rank(item.last + 1);
    item.first = rank(item.first);
    item.last = end - 1;
  }
  return canonical;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/*! \brief The first phase: the greedy orders (charged to `options.budget`), labelled at_bound
 *         or best_found, with the bound and, with a capacity, whether it fits. */
Packing PackGreedily(const std::vector<PackItem>& numbered_items, const PackOptions& options) {
  const std::vector<PackItem> items = CanonicalTime(numbered_items);
  int64_t bound = PeakLiveBytes(items);
  int64_t capacity = options.capacity;
  auto start = std::chrono::steady_clock::now();
  Packing best =
      GreedyPack(items, capacity >= 0 ? std::max(capacity, bound) : bound, bound, options);
  best.greedy_seconds = SecondsSince(start);
  best.bound = bound;
  best.optimality = best.bytes <= bound ? optimality::kAtBound : optimality::kBestFound;
  if (capacity >= 0) {
    best.fits = best.bytes <= capacity;
    if (bound > capacity) {
      best.why_not = "the peak-live bound, " + std::to_string(bound) +
                     " bytes live at one program point, exceeds the capacity";
    } else if (!best.fits) {
      best.why_not = "no placement within the capacity found by the greedy orders";
    }
  }
  return best;
}

/*! \brief The second phase: where `best` (PackGreedily's result for the same items and
 *         options) stays above the bound, or outside the capacity, the exact search on what is
 *         left of `options.budget`; `best` itself otherwise. */
Packing SearchBelow(const std::vector<PackItem>& numbered_items, Packing best,
                    const PackOptions& options) {
  int64_t bound = best.bound;
  int64_t capacity = options.capacity;
  if (best.bytes <= bound || (capacity >= 0 && (bound > capacity || best.fits))) return best;
  if (options.budget == nullptr) {
    best.why_not = "no placement within the capacity found by the greedy orders (no exact search)";
    return best;
  }
  size_t blocks = std::count_if(numbered_items.begin(), numbered_items.end(),
                                [](const PackItem& item) { return item.bytes > 0; });
  if (blocks > kMaxSearchItems) {
    best.why_not = "too many items for the exact search (" + std::to_string(blocks) + " > " +
                   std::to_string(kMaxSearchItems) + ")";
    return best;
  }
  const std::vector<PackItem> items = CanonicalTime(numbered_items);
  auto start = std::chrono::steady_clock::now();
  OffsetSearch search(items, options.alignment);
  SearchBudget& budget = *options.budget;
  int64_t steps_before = budget.steps_taken();
  std::vector<int64_t> offsets;
  auto found = [&](int64_t size) {
    best.offsets = offsets;
    best.bytes = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      best.bytes = std::max(best.bytes, offsets[i] + items[i].bytes);
    }
    TVM_FFI_ICHECK_LE(best.bytes, size) << "internal error: the exact search overran its size";
    best.algorithm = "exact search";
  };
  if (capacity >= 0) {
    // Any placement within the capacity will do.
    SearchOutcome outcome = search.Fit(capacity, &budget, &offsets);
    if (outcome == SearchOutcome::kFound) {
      found(capacity);
      best.fits = true;
      best.why_not.clear();
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
        found(size);
      } else {
        // No placement within `size`: proven (no size below it has one either), or given up.
        lowest = size + 1;
        bool proof = outcome == SearchOutcome::kInfeasible && search.proves_infeasibility();
        if (proof) proven = std::max(proven, lowest);
      }
      size = lowest + (best.bytes - 1 - lowest) / 2;
      if (options.progress) options.progress("exact search", best.bytes, bound);
    }
    if (proven >= best.bytes) best.optimality = optimality::kProvenMinimum;
  }
  if (best.bytes <= bound) best.optimality = optimality::kAtBound;
  best.search_steps = budget.steps_taken() - steps_before;
  best.timed_out = budget.timed_out();
  best.search_seconds = SecondsSince(start);
  return best;
}

}  // namespace

Packing PackOffsets(const std::vector<PackItem>& items, const PackOptions& options) {
  return SearchBelow(items, PackGreedily(items, options), options);
}

std::vector<Packing> PackAll(const std::vector<std::vector<PackItem>>& problems,
                             const PackOptions& options) {
  std::vector<Packing> packings;
  for (const std::vector<PackItem>& items : problems) {
    packings.push_back(PackGreedily(items, options));
  }
  std::vector<size_t> order(problems.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> gaps;
  long double gaps_left = 0;
  for (const Packing& packing : packings) {
    gaps.push_back(std::max<int64_t>(packing.bytes - packing.bound, 0));
    gaps_left += gaps.back();
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return gaps[a] > gaps[b]; });
  for (size_t k : order) {
    if (options.budget == nullptr || gaps[k] == 0) {
      packings[k] = SearchBelow(problems[k], std::move(packings[k]), options);
      continue;
    }
    // Its share of what is left, as its gap is of the gaps left: what it does not spend goes to
    // the smaller gaps after it, and the last takes all that remains.
    SearchBudget part = options.budget->Part(
        static_cast<int64_t>(options.budget->steps_left() * (gaps[k] / gaps_left)));
    PackOptions searched = options;
    searched.budget = &part;
    packings[k] = SearchBelow(problems[k], std::move(packings[k]), searched);
    options.budget->Charge(part);
    gaps_left -= gaps[k];
  }
  return packings;
}

bool IsValidPacking(const std::vector<PackItem>& items, const Packing& packing, int64_t alignment) {
  if (packing.offsets.size() != items.size()) return false;
  std::vector<Span> spans;
  std::map<int64_t, int64_t> places;  // group -> its place: each member's offset less its delta
  for (size_t i = 0; i < items.size(); ++i) {
    const PackItem& item = items[i];
    int64_t offset = packing.offsets[i];
    if (offset < 0 || offset % alignment != 0 || offset + item.bytes > packing.bytes) {
      return false;
    }
    if (item.group >= 0) {
      auto [place, first] = places.emplace(item.group, offset - item.delta);
      if (!first && place->second != offset - item.delta) return false;
    } else if (item.bytes > 0) {
      spans.push_back({offset, offset + item.bytes, item.first, item.last});
    }
  }
  // The members of a group may share bytes with each other, not with anything else.
  for (const auto& [group, members] : GroupsOf(items)) {
    for (const GroupStretch& stretch : StretchesOf(members)) {
      for (const auto& [begin, stop] : stretch.ranges) {
        int64_t place = places.at(group);
        spans.push_back({place + begin, place + stop, stretch.first, stretch.last});
      }
    }
  }
  return NoneOverlap(std::move(spans));
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

/*! \brief A placement as the Python API returns it (python/tvm_memplan/analysis/packing.py). */
tvm::ffi::Map<tvm::ffi::String, tvm::ffi::Any> RecordOf(const Packing& packing) {
  tvm::ffi::Map<tvm::ffi::String, tvm::ffi::Any> result;
  result.Set("offsets", tvm::ffi::Array<int64_t>(packing.offsets.begin(), packing.offsets.end()));
  result.Set("bytes", packing.bytes);
  result.Set("algorithm", tvm::ffi::String(packing.algorithm));
  result.Set("optimality", tvm::ffi::String(packing.optimality));
  result.Set("bound", packing.bound);
  result.Set("fits", packing.fits);
  result.Set("why_not", tvm::ffi::String(packing.why_not));
  result.Set("search_steps", packing.search_steps);
  result.Set("timed_out", packing.timed_out);
  result.Set("greedy_steps", packing.greedy_steps);
  result.Set("greedy_orders", packing.greedy_orders);
  result.Set("greedy_seconds", packing.greedy_seconds);
  result.Set("search_seconds", packing.search_seconds);
  return result;
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
      .def("tvm_memplan.testing.is_valid_packing",
           [](tvm::ffi::Array<tvm::ffi::Array<int64_t>> tuples, tvm::ffi::Array<int64_t> offsets,
              int64_t bytes, int64_t alignment) {
             Packing packing;
             packing.offsets.assign(offsets.begin(), offsets.end());
             packing.bytes = bytes;
             return IsValidPacking(ItemsOf(tuples), packing, alignment);
           })
      .def("tvm_memplan.testing.peak_live_bytes",
           [](tvm::ffi::Array<tvm::ffi::Array<int64_t>> tuples) {
             return PeakLiveBytes(ItemsOf(tuples));
           })
      // The packer on its own (python/tvm_memplan/analysis/packing.py), with its exact search.
      .def("tvm_memplan.analysis.pack_offsets",
           [](tvm::ffi::Array<tvm::ffi::Array<int64_t>> tuples, int64_t alignment, int64_t capacity,
              int64_t search_ms, tvm::ffi::Optional<tvm::ffi::Function> progress) {
             SearchBudget budget = SearchBudget::ForMs(search_ms);
             PackOptions options;
             options.alignment = alignment;
             options.capacity = capacity;
             options.budget = search_ms > 0 ? &budget : nullptr;
             if (progress.has_value()) {
               options.progress = [report = *progress](const char* phase, int64_t best_bytes,
                                                       int64_t bound) {
                 report(tvm::ffi::String(phase), best_bytes, bound);
               };
             }
             std::vector<PackItem> items = ItemsOf(tuples);
             Packing packing = PackOffsets(items, options);
             TVM_FFI_ICHECK(IsValidPacking(items, packing, alignment))
                 << "internal error: the offset packing of " << items.size() << " items overlaps";
             return RecordOf(packing);
           })
      // Several problems on one budget, as the planner packs a function's storages.
      .def("tvm_memplan.testing.pack_all",
           [](tvm::ffi::Array<tvm::ffi::Array<tvm::ffi::Array<int64_t>>> problems,
              int64_t alignment, int64_t search_ms) {
             SearchBudget budget = SearchBudget::ForMs(search_ms);
             PackOptions options;
             options.alignment = alignment;
             options.budget = &budget;
             std::vector<std::vector<PackItem>> items;
             for (const auto& tuples : problems) items.push_back(ItemsOf(tuples));
             tvm::ffi::Array<tvm::ffi::Any> records;
             for (const Packing& packing : PackAll(items, options)) {
               records.push_back(RecordOf(packing));
             }
             return records;
           });
  ir::RegisterCodeFamily("optimality", optimality::kCodes);
}

}  // namespace relax
}  // namespace tvm_memplan
