/*!
 * \file relax/offset_search.cc
 * \brief The exact offset search: blocks (an item, or a group's items), sections, the search
 *        state with its undo trail, and the depth-first search with its restarts.
 */
#include "relax/offset_search.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <utility>

namespace tvm_memplan {
namespace relax {

namespace {

int64_t AlignUp(int64_t value, int64_t alignment) {
  if (value <= 0) return 0;
  return (value + alignment - 1) / alignment * alignment;
}

/*! \brief One item of a block: its bytes at `delta` from the block's offset, live over program
 *         points [first, last] and sections [s0, s1). */
struct Member {
  int32_t item;
  int64_t bytes, delta, first, last;
  int32_t s0 = 0, s1 = 0;
};

/*! \brief Sections [s0, s1) over which a block's live members do not change: they cover `cover`
 *         bytes, the lowest at `low` and the highest ending at `top` from the block's offset. */
struct Run {
  int32_t s0, s1;
  int64_t cover, low, top;
};

/*! \brief A placed block `from` at offset o puts block `to` at o + push or above. */
struct Push {
  int32_t to;
  int64_t push;
};

/*! \brief What is placed as one: a plain item, or every item of a group. */
struct Block {
  std::vector<Member> members;
  std::vector<Run> runs;
  std::vector<Push> pushes;
  int32_t s0 = 0, s1 = 0;
  /*! \brief Bytes from its offset to the top of its highest member; the delta (in its group)
   *         its offset stands for. */
  int64_t extent = 0;
  int64_t origin = 0;
  /*! \brief Keys of the orders of preference (kOrders): its points, its sections, bytes x
   *         sections, the bytes of the blocks it meets, the most bytes live in one of its
   *         sections. Time is canonical (PackOffsets ranks the points), so none of them depends
   *         on how the points were numbered. */
  int64_t lifetime = 0, sections = 0, area = 0, neighbours = 0, load = 0;
};

/*! \brief The blocks still to place in a range of sections that no other block still to place
 *         enters. */
struct Partition {
  std::vector<int32_t> blocks;
  int32_t s0, s1;
};

enum class Result { kFound, kNotFound, kStepLimit, kSpent };

/*! \brief Orders of preference (most important key first, each descending): L a block's lifetime
 *         in points, S the sections it lives in, A its bytes x sections, N the bytes of the
 *         blocks it meets, T the load of the busiest section it lives in. Two families of four,
 *         each key first once: on MiniMalloc's 11 instances ranked, the first family alone
 *         places 6 within their capacity, the second 4, both 8. */
constexpr const char* kOrders[] = {"LAT", "TAL", "TLA", "ALT", "SNT", "TNS", "TSN", "NST"};

/*! \brief A block's key `key` of kOrders; `load` is T as the search stands. */
int64_t KeyOf(char key, const Block& block, int64_t load) {
  switch (key) {
    case 'L':
      return block.lifetime;
    case 'S':
      return block.sections;
    case 'A':
      return block.area;
    case 'N':
      return block.neighbours;
    default:
      return load;
  }
}

}  // namespace

class OffsetSearch::Impl {
 public:
  Impl(const std::vector<PackItem>& items, int64_t alignment)
      : items_(items), alignment_(std::max<int64_t>(alignment, 1)) {
    BuildBlocks();
    BuildSections();
    BuildPushes();
  }

  bool proves_infeasibility() const { return !grouped_; }

  SearchOutcome Fit(int64_t capacity, SearchBudget* budget, std::vector<int64_t>* offsets) {
    capacity_ = capacity;
    budget_ = budget;
    size_t n = blocks_.size();
    for (const Block& b : blocks_) {
      if (b.extent > capacity) return SearchOutcome::kInfeasible;
    }
    for (int64_t load : section_load_) {
      if (load > capacity) return SearchOutcome::kInfeasible;
    }
    base_.assign(n, -1);
    rank_.assign(n, 0);
    lowest_.assign(n, 0);
    solution_.assign(n, -1);
    floor_.assign(num_sections_, 0);
    stamp_of_.assign(num_sections_, 0);
    total_ = section_load_;
    cuts_ = initial_cuts_;
    trail_.clear();
    work_ = 0;
    // One pool of candidates per depth, sized once: a depth takes one placement.
    candidates_.resize(n + 2);
    for (const Partition& partition : RootPartitions()) {
      // Partitions share no section: each is searched on its own, from its own first order.
      Result result = SolveWithRestarts(partition);
      if (result == Result::kNotFound) return SearchOutcome::kInfeasible;
      if (result != Result::kFound) return SearchOutcome::kOutOfBudget;
    }
    offsets->assign(items_.size(), 0);
    for (size_t b = 0; b < n; ++b) {
      for (const Member& m : blocks_[b].members) (*offsets)[m.item] = solution_[b] + m.delta;
    }
    for (int32_t i : empty_members_) {
      auto block = block_of_group_.find(items_[i].group);
      int64_t origin =
          block == block_of_group_.end() ? items_[i].delta : blocks_[block->second].origin;
      int64_t base = block == block_of_group_.end() ? 0 : solution_[block->second];
      (*offsets)[i] = base + items_[i].delta - origin;
    }
    return SearchOutcome::kFound;
  }

 private:
  /*! \brief One value of the search state before a change, to undo it. */
  struct Change {
    enum Kind : int32_t { kLowest, kFloor } kind;
    int32_t index;
    int64_t value;
  };

  // ---- the problem --------------------------------------------------------------------------

  void BuildBlocks() {
    std::map<int64_t, size_t> group_block;
    // A group's lowest delta, over all its items: offsets are taken from there.
    std::map<int64_t, int64_t> origin;
    for (const PackItem& item : items_) {
      if (item.group < 0) continue;
      auto [it, inserted] = origin.emplace(item.group, item.delta);
      if (!inserted) it->second = std::min(it->second, item.delta);
    }
    for (size_t i = 0; i < items_.size(); ++i) {
      const PackItem& item = items_[i];
      if (item.bytes <= 0) {
        // Empty: at 0, or at its delta in its group (placed with the group's other items).
        if (item.group >= 0) empty_members_.push_back(static_cast<int32_t>(i));
        continue;
      }
      Member member{static_cast<int32_t>(i), item.bytes, item.delta, item.first, item.last};
      if (item.group < 0) {
        member.delta = 0;
        blocks_.emplace_back();
        blocks_.back().members.push_back(member);
        continue;
      }
      auto [it, inserted] = group_block.emplace(item.group, blocks_.size());
      if (inserted) blocks_.emplace_back();
      blocks_[it->second].members.push_back(member);
    }
    for (auto& [group, b] : group_block) group_of_block_[b] = group;
    for (size_t b = 0; b < blocks_.size(); ++b) {
      Block& block = blocks_[b];
      if (block.members.size() > 1) grouped_ = true;
      // Deltas from the group's lowest, so that a block's offset is its lowest byte.
      auto group = group_of_block_.find(b);
      block.origin = group == group_of_block_.end() ? 0 : origin.at(group->second);
      for (Member& m : block.members) {
        m.delta -= block.origin;
        block.extent = std::max(block.extent, m.delta + m.bytes);
      }
    }
    for (auto& [group, b] : group_block) block_of_group_[group] = b;
  }

  void BuildSections() {
    // Sections: the points where a member is read for the last time. The most bytes live at once
    // are live at one of them (the live set only shrinks after one), every member is live at its
    // own, and two members are live together exactly when one of these points lies in both.
    std::vector<int64_t> lasts;
    for (const Block& b : blocks_) {
      for (const Member& m : b.members) lasts.push_back(m.last);
    }
    std::sort(lasts.begin(), lasts.end());
    lasts.erase(std::unique(lasts.begin(), lasts.end()), lasts.end());
    num_sections_ = static_cast<int32_t>(lasts.size());
    auto section = [&](int64_t point) {
      return static_cast<int32_t>(std::lower_bound(lasts.begin(), lasts.end(), point) -
                                  lasts.begin());
    };
    section_load_.assign(num_sections_, 0);
    section_blocks_.assign(num_sections_, {});
    std::vector<int32_t> spans(num_sections_ + 1, 0);
    for (size_t bi = 0; bi < blocks_.size(); ++bi) {
      Block& b = blocks_[bi];
      b.s0 = std::numeric_limits<int32_t>::max();
      b.s1 = 0;
      int64_t first = std::numeric_limits<int64_t>::max(), end = 0;
      for (Member& m : b.members) {
        m.s0 = section(m.first);
        m.s1 = section(m.last) + 1;
        b.s0 = std::min(b.s0, m.s0);
        b.s1 = std::max(b.s1, m.s1);
        first = std::min(first, m.first);
        end = std::max(end, m.last + 1);
      }
      b.lifetime = end - first;
      b.sections = b.s1 - b.s0;
      // Runs: per section, the bytes the live members cover, merged where they repeat.
      for (int32_t s = b.s0; s < b.s1; ++s) {
        std::vector<std::pair<int64_t, int64_t>> ranges;
        for (const Member& m : b.members) {
          if (m.s0 <= s && s < m.s1) ranges.emplace_back(m.delta, m.delta + m.bytes);
        }
        Run run{s, s + 1, 0, 0, 0};
        if (!ranges.empty()) {
          std::sort(ranges.begin(), ranges.end());
          run.low = ranges.front().first;
          int64_t covered_to = run.low;
          for (const auto& [lo, hi] : ranges) {
            run.cover += std::max<int64_t>(0, hi - std::max(lo, covered_to));
            covered_to = std::max(covered_to, hi);
            run.top = std::max(run.top, hi);
          }
        }
        if (!b.runs.empty() && b.runs.back().s1 == s && b.runs.back().cover == run.cover &&
            b.runs.back().low == run.low && b.runs.back().top == run.top) {
          b.runs.back().s1 = s + 1;
        } else {
          b.runs.push_back(run);
        }
      }
      for (const Run& run : b.runs) {
        if (run.cover == 0) continue;
        for (int32_t s = run.s0; s < run.s1; ++s) {
          section_load_[s] += run.cover;
          section_blocks_[s].push_back({static_cast<int32_t>(bi), run.low});
        }
      }
      for (const Member& m : b.members) b.area += m.bytes * (m.s1 - m.s0);
      ++spans[b.s0];
      --spans[b.s1 - 1];  // a block spans the boundaries s0 | s0+1, ..., s1-2 | s1-1
    }
    initial_cuts_.assign(std::max(num_sections_ - 1, 0), 0);
    int32_t running = 0;
    for (int32_t k = 0; k + 1 < num_sections_; ++k) {
      running += spans[k];
      initial_cuts_[k] = running;
    }
    for (Block& b : blocks_) {
      for (const Run& run : b.runs) {
        for (int32_t s = run.s0; s < run.s1 && run.cover > 0; ++s) {
          b.load = std::max(b.load, section_load_[s]);
        }
      }
    }
  }

  void BuildPushes() {
    // Blocks by first section; a pair can only meet if one starts before the other ends.
    size_t n = blocks_.size();
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return blocks_[a].s0 < blocks_[b].s0; });
    for (size_t x = 0; x < n; ++x) {
      Block& a = blocks_[order[x]];
      for (size_t y = x + 1; y < n && blocks_[order[y]].s0 < a.s1; ++y) {
        Block& b = blocks_[order[y]];
        int64_t a_to_b = std::numeric_limits<int64_t>::min();
        int64_t b_to_a = std::numeric_limits<int64_t>::min();
        for (const Member& ma : a.members) {
          for (const Member& mb : b.members) {
            if (ma.s0 >= mb.s1 || mb.s0 >= ma.s1) continue;
            a_to_b = std::max(a_to_b, ma.delta + ma.bytes - mb.delta);
            b_to_a = std::max(b_to_a, mb.delta + mb.bytes - ma.delta);
          }
        }
        if (a_to_b == std::numeric_limits<int64_t>::min()) continue;
        a.pushes.push_back({order[y], a_to_b});
        b.pushes.push_back({order[x], b_to_a});
      }
    }
    for (Block& b : blocks_) {
      for (const Push& push : b.pushes) b.neighbours += blocks_[push.to].extent;
    }
  }

  std::vector<Partition> RootPartitions() const {
    std::vector<Partition> partitions;
    int32_t start = 0;
    for (int32_t k = 0; k + 1 <= num_sections_; ++k) {
      bool boundary = k + 1 == num_sections_ || initial_cuts_[k] == 0;
      if (!boundary) continue;
      partitions.push_back(Partition{{}, start, k + 1});
      start = k + 1;
    }
    for (size_t b = 0; b < blocks_.size(); ++b) {
      for (Partition& p : partitions) {
        if (blocks_[b].s0 >= p.s0 && blocks_[b].s0 < p.s1) {
          p.blocks.push_back(static_cast<int32_t>(b));
          break;
        }
      }
    }
    partitions.erase(std::remove_if(partitions.begin(), partitions.end(),
                                    [](const Partition& p) { return p.blocks.empty(); }),
                     partitions.end());
    return partitions;
  }

  // ---- restarts -----------------------------------------------------------------------------

  /*! \brief Each order of preference in turn, each with a step limit that doubles every round,
   *         until one places the partition, one proves it cannot be placed, or the budget ends. */
  Result SolveWithRestarts(const Partition& partition) {
    int64_t limit = 2 * static_cast<int64_t>(partition.blocks.size()) + 16;
    while (true) {
      for (const char* order : kOrders) {
        order_ = order;
        steps_left_ = limit;
        Result result = Solve(partition, /*depth=*/0);
        if (result != Result::kStepLimit) return result;
      }
      limit *= 2;
    }
  }

  /*! \brief Rank the unplaced blocks of `partition` by the order of preference `order_`, the
   *         load of a block's busiest section counted in unplaced bytes as they are now. */
  void RankBlocks(const Partition& partition) {
    std::vector<std::pair<int64_t, int32_t>>& keyed = rank_scratch_;
    keyed.clear();
    for (int32_t b : partition.blocks) {
      if (base_[b] >= 0) continue;
      int64_t load = 0;
      for (const Run& run : blocks_[b].runs) {
        for (int32_t s = run.s0; s < run.s1 && run.cover > 0; ++s) {
          load = std::max(load, total_[s]);
        }
      }
      keyed.push_back({load, b});
    }
    std::sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
      const Block& a = blocks_[x.second];
      const Block& b = blocks_[y.second];
      for (const char* k = order_; *k; ++k) {
        int64_t u = KeyOf(*k, a, x.first);
        int64_t v = KeyOf(*k, b, y.first);
        if (u != v) return u > v;
      }
      return x.second < y.second;
    });
    for (size_t r = 0; r < keyed.size(); ++r) rank_[keyed[r].second] = static_cast<int32_t>(r);
  }

  /*! \brief Search `partition` from its start, its blocks ranked afresh (their ranks restored
   *         after, for the search that split it off). */
  Result Solve(const Partition& partition, size_t depth) {
    std::vector<int32_t> saved;
    saved.reserve(partition.blocks.size());
    for (int32_t b : partition.blocks) saved.push_back(rank_[b]);
    RankBlocks(partition);
    Result result = Search(partition, /*last_offset=*/0, /*last_rank=*/-1, depth);
    for (size_t k = 0; k < saved.size(); ++k) rank_[partition.blocks[k]] = saved[k];
    return result;
  }

  struct Candidate {
    int64_t offset;
    int32_t rank, block;
    bool operator<(const Candidate& other) const {
      return offset != other.offset ? offset < other.offset : rank < other.rank;
    }
  };

  /*! \brief Place the unplaced blocks of `partition`, in canonical order after (last_offset,
   *         last_rank). */
  Result Search(const Partition& partition, int64_t last_offset, int32_t last_rank, size_t depth) {
    if (!budget_->Spend(work_ + partition.blocks.size())) return Result::kSpent;
    work_ = 0;
    if (--steps_left_ < 0) return Result::kStepLimit;
    std::vector<Candidate>& candidates = candidates_[depth];
    candidates.clear();
    // A block placed at or above the top another could take below it leaves a gap for that one.
    int64_t lowest_top = std::numeric_limits<int64_t>::max();
    bool unplaced = false;
    for (int32_t b : partition.blocks) {
      if (base_[b] >= 0) continue;
      unplaced = true;
      lowest_top = std::min(lowest_top, lowest_[b] + blocks_[b].extent);
    }
    if (!unplaced) {
      for (int32_t b : partition.blocks) solution_[b] = base_[b];
      return Result::kFound;
    }
    // Canonical order: offsets never decrease, and at one offset ranks increase.
    for (int32_t b : partition.blocks) {
      if (base_[b] >= 0) continue;
      int64_t offset = lowest_[b];
      if (offset < last_offset || (offset == last_offset && rank_[b] < last_rank)) continue;
      if (offset >= lowest_top || offset + blocks_[b].extent > capacity_) continue;
      candidates.push_back({offset, rank_[b], b});
    }
    std::sort(candidates.begin(), candidates.end());
    for (size_t k = 0; k < candidates.size(); ++k) {
      const Candidate c = candidates[k];
      size_t mark = trail_.size();
      bool covered = Place(c.block, c.offset);
      Result result = Result::kNotFound;
      if (Consistent(partition, c.offset)) {
        result = Descend(partition, c.block, c.offset, c.rank, depth);
      }
      Unplace(c.block, mark);
      if (result != Result::kNotFound) return result;
      if (!budget_->Spend(work_)) return Result::kSpent;
      work_ = 0;
      // Nothing still to place lies above it: any other choice only places it later, the same.
      if (!covered) break;
    }
    return Result::kNotFound;
  }

  /*! \brief After placing `block`: the rest of the partition, split where no block still to place
   *         crosses a section boundary any more. */
  Result Descend(const Partition& partition, int32_t block, int64_t offset, int32_t rank,
                 size_t depth) {
    const Block& b = blocks_[block];
    std::vector<int32_t> splits;
    for (int32_t k = b.s0; k + 1 < b.s1; ++k) {
      if (--cuts_[k] == 0 && k >= partition.s0 && k + 1 < partition.s1) splits.push_back(k + 1);
    }
    Result result = Result::kFound;
    if (splits.empty()) {
      result = Search(partition, offset, rank, depth + 1);
    } else {
      splits.push_back(partition.s1);
      int32_t start = partition.s0;
      for (int32_t end : splits) {
        Partition part{{}, start, end};
        for (int32_t other : partition.blocks) {
          if (base_[other] < 0 && blocks_[other].s0 < end && blocks_[other].s1 > start) {
            part.blocks.push_back(other);
          }
        }
        start = end;
        if (part.blocks.empty()) continue;
        result = Solve(part, depth + 1);
        if (result != Result::kFound) break;
      }
      if (result == Result::kFound) {
        for (int32_t other : partition.blocks) {
          if (base_[other] >= 0) solution_[other] = base_[other];
        }
      }
    }
    for (int32_t k = b.s0; k + 1 < b.s1; ++k) ++cuts_[k];
    return result;
  }

  /*! \brief Place `block` at `offset`: raise the lowest offsets the blocks live with it can
   *         take (noting those raised in `raised_`) and the floors of its sections. Returns
   *         whether an unplaced block is live with it. */
  bool Place(int32_t block, int64_t offset) {
    const Block& b = blocks_[block];
    raised_.clear();
    base_[block] = offset;
    work_ += b.pushes.size() + b.s1 - b.s0;
    bool covered = false;
    for (const Push& p : b.pushes) {
      if (base_[p.to] >= 0) continue;
      covered = true;
      int64_t lowest = AlignUp(offset + p.push, alignment_);
      if (lowest <= lowest_[p.to]) continue;
      trail_.push_back({Change::kLowest, p.to, lowest_[p.to]});
      lowest_[p.to] = lowest;
      raised_.push_back(p.to);
    }
    for (const Run& run : b.runs) {
      if (run.cover == 0) continue;
      for (int32_t s = run.s0; s < run.s1; ++s) {
        total_[s] -= run.cover;
        if (offset + run.top > floor_[s]) {
          trail_.push_back({Change::kFloor, s, floor_[s]});
          floor_[s] = offset + run.top;
        }
      }
    }
    return covered;
  }

  void Unplace(int32_t block, size_t mark) {
    const Block& b = blocks_[block];
    for (const Run& run : b.runs) {
      for (int32_t s = run.s0; s < run.s1; ++s) total_[s] += run.cover;
    }
    while (trail_.size() > mark) {
      const Change& c = trail_.back();
      (c.kind == Change::kLowest ? lowest_ : floor_)[c.index] = c.value;
      trail_.pop_back();
    }
    base_[block] = -1;
  }

  /*! \brief Whether every section of the partition can still hold its unplaced bytes within
   *         the capacity: above the top of the placed blocks live there, above `offset` (later
   *         blocks go no lower) and above the lowest offset any of them can take. */
  bool Consistent(const Partition& partition, int64_t offset) {
    work_ += partition.s1 - partition.s0;
    for (int32_t s = partition.s0; s < partition.s1; ++s) {
      int64_t floor = total_[s] > 0 ? std::max(floor_[s], offset) : floor_[s];
      if (floor + total_[s] > capacity_) return false;
    }
    // The lowest offset of a section's unplaced blocks only rose where a raised block lives; a
    // section whose unplaced bytes no longer fit above the raised block's is read whole.
    ++stamp_;
    for (int32_t raised : raised_) {
      work_ += blocks_[raised].s1 - blocks_[raised].s0;
      for (const Run& run : blocks_[raised].runs) {
        if (run.cover == 0) continue;
        for (int32_t s = run.s0; s < run.s1; ++s) {
          int64_t highest = capacity_ - total_[s];  // the highest floor under which they fit
          if (lowest_[raised] + run.low <= highest || stamp_of_[s] == stamp_) continue;
          stamp_of_[s] = stamp_;
          work_ += section_blocks_[s].size();
          bool fits = false;
          for (const auto& [other, low] : section_blocks_[s]) {
            if (base_[other] < 0 && lowest_[other] + low <= highest) {
              fits = true;
              break;
            }
          }
          if (!fits) return false;
        }
      }
    }
    return true;
  }

  std::vector<PackItem> items_;
  int64_t alignment_;
  bool grouped_ = false;
  std::vector<Block> blocks_;
  /*! \brief Empty items of groups, placed at their delta; a group's block and back. */
  std::vector<int32_t> empty_members_;
  std::map<int64_t, size_t> block_of_group_;
  std::map<size_t, int64_t> group_of_block_;
  int32_t num_sections_ = 0;
  std::vector<int64_t> section_load_;
  /*! \brief Per section: the blocks live there, with the delta of their lowest member there. */
  std::vector<std::vector<std::pair<int32_t, int64_t>>> section_blocks_;
  std::vector<int32_t> initial_cuts_;

  // The state of one Fit.
  int64_t capacity_ = 0;
  SearchBudget* budget_ = nullptr;
  /*! \brief Steps of the current restart (nodes), and work not yet charged to the budget. */
  int64_t steps_left_ = 0;
  int64_t work_ = 0;
  const char* order_ = kOrders[0];
  std::vector<int32_t> rank_;
  std::vector<std::pair<int64_t, int32_t>> rank_scratch_;
  /*! \brief Per block: its offset (-1 unplaced), the lowest it can take, its offset found. */
  std::vector<int64_t> base_, lowest_, solution_;
  /*! \brief Per section: the top of the placed blocks live there (every unplaced block live
   *         there goes above it), and the bytes of the unplaced ones. */
  std::vector<int64_t> floor_, total_;
  /*! \brief Per boundary between sections k and k + 1: unplaced blocks live on both sides. */
  std::vector<int32_t> cuts_;
  std::vector<Change> trail_;
  std::vector<std::vector<Candidate>> candidates_;
  /*! \brief The blocks whose lowest offset the last placement raised. */
  std::vector<int32_t> raised_;
  std::vector<uint64_t> stamp_of_;
  uint64_t stamp_ = 0;
};

OffsetSearch::OffsetSearch(const std::vector<PackItem>& items, int64_t alignment)
    : impl_(std::make_unique<Impl>(items, alignment)) {}

OffsetSearch::~OffsetSearch() = default;

SearchOutcome OffsetSearch::Fit(int64_t capacity, SearchBudget* budget,
                                std::vector<int64_t>* offsets) {
  return impl_->Fit(capacity, budget, offsets);
}

bool OffsetSearch::proves_infeasibility() const { return impl_->proves_infeasibility(); }

}  // namespace relax
}  // namespace tvm_memplan
