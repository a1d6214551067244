// The address space of SimAsyncPool as pieces: every live allocation and every free range is one
// Piece, linked to the pieces before and after it in address order, live and free alike. A freed
// piece finds the free ranges it merges with through its two links, with no search; a released
// chunk leaves a gap, so two linked pieces are neighbours only when one ends where the next starts.
//
//   first()                                                               last()
//   [live a1] <-> [free f1] <-> [live a2] <-> [free f2]   gap   [live a3] <-> [free f3 (top)]
//                                                      ^ released chunk
//
// Nodes have stable addresses (a deque, recycled through a spare list): the size index links the
// free ones intrusively, and the pool's live map points at the live ones.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "policies/device.h"

namespace memreplay {

struct SimAsyncPoolPiece {
  uint64_t address = 0;
  uint64_t size = 0;  // bytes taken: a live allocation's aligned span, or a free range's length
  StreamId stream = 0;  // live: the stream it was allocated on; free: its owner (kAnyStream or
                        // the only stream that may reuse it yet)
  uint64_t requested = 0;  // live: bytes asked for (UsedMem)
  uint64_t free_seq = 0;  // free: when it was freed (for event dependencies)
  bool is_free = false;
  SimAsyncPoolPiece* prev = nullptr;  // address order
  SimAsyncPoolPiece* next = nullptr;
  SimAsyncPoolPiece* free_prev = nullptr;  // the size index's links (FreeBlockSet), while free
  SimAsyncPoolPiece* free_next = nullptr;
  uint64_t end() const { return address + size; }
  // Whether `other` starts where this piece ends (a released chunk may lie between linked pieces).
  bool touches(const SimAsyncPoolPiece& other) const { return end() == other.address; }
};

class SimAsyncPoolPieces {
 public:
  using Piece = SimAsyncPoolPiece;

  Piece* first() const { return first_; }
  Piece* last() const { return last_; }

  // A new piece linked just before `position` (nullptr: at the end), its fields value-initialised
  // but for the links.
  Piece* insert_before(Piece* position) {
    Piece* piece = make();
    piece->next = position;
    piece->prev = position != nullptr ? position->prev : last_;
    (piece->prev != nullptr ? piece->prev->next : first_) = piece;
    (position != nullptr ? position->prev : last_) = piece;
    return piece;
  }
  Piece* insert_after(Piece* position) { return insert_before(position->next); }

  // Unlinks `piece` and keeps its node for the next insert.
  void remove(Piece* piece) {
    (piece->prev != nullptr ? piece->prev->next : first_) = piece->next;
    (piece->next != nullptr ? piece->next->prev : last_) = piece->prev;
    spare_.push_back(piece);
  }

 private:
  Piece* make() {
    if (spare_.empty()) return &storage_.emplace_back();
    Piece* piece = spare_.back();
    spare_.pop_back();
    *piece = Piece{};
    return piece;
  }

  std::deque<Piece> storage_;  // every node ever made
  std::vector<Piece*> spare_;  // nodes not linked
  Piece* first_ = nullptr;
  Piece* last_ = nullptr;
};

}  // namespace memreplay
