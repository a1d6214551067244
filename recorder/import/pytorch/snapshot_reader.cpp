#include "recorder/import/pytorch/snapshot_reader.h"

#include "recorder/import/pytorch/snapshot_tree_reader.h"

namespace memreplay {

class SnapshotReader::Impl : public SnapshotTreeReader<pickle::Value> {
 public:
  using SnapshotTreeReader<pickle::Value>::SnapshotTreeReader;
};

SnapshotReader::SnapshotReader(const std::string& file, uint64_t input_bytes, const GrowingInput* growing,
                               TraceEntryListener* listener)
    : impl_(std::make_unique<Impl>(file, input_bytes, growing, listener)) {}
SnapshotReader::~SnapshotReader() = default;

void SnapshotReader::take(uint32_t list_index, const pickle::Tree& tree, std::span<const pickle::Ref> items) {
  impl_->take(list_index, tree, items);
}

SnapshotContent& SnapshotReader::read(const pickle::Tree& tree) { return impl_->read(tree); }

}  // namespace memreplay
