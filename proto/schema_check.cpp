// Holds the protobuf-free definitions of the format against trace.proto's generated classes, at
// build time: field_numbers.h (what the hand-written encoders write). A field added to trace.proto
// is caught at run time instead, by tests/writer_contract_test.cpp (it counts each message's fields).
#include "proto/field_numbers.h"
#include "proto/trace.pb.h"

namespace memreplay::format {
namespace {

// A generated kXFieldNumber (an int enumerator) against ours.
constexpr bool same(int generated, uint32_t ours) { return generated > 0 && static_cast<uint32_t>(generated) == ours; }

namespace h = header_field;
using Header = proto::TraceHeader;
static_assert(same(Header::kFormatMajorFieldNumber, h::format_major) &&
              same(Header::kFormatMinorFieldNumber, h::format_minor) && same(Header::kSourceFieldNumber, h::source) &&
              same(Header::kSourceFileFieldNumber, h::source_file) &&
              same(Header::kCaptureTimeNsFieldNumber, h::capture_time_ns) &&
              same(Header::kCommandLineFieldNumber, h::command_line) && same(Header::kPidFieldNumber, h::pid) &&
              same(Header::kDevicesFieldNumber, h::devices) &&
              same(Header::kAllocatorSettingsFieldNumber, h::allocator_settings) &&
              same(Header::kProducerFieldNumber, h::producer) &&
              same(Header::kStartsMidRunFieldNumber, h::starts_mid_run) && same(Header::kPoolsFieldNumber, h::pools) &&
              same(Header::kCapturesFlaggedFieldNumber, h::captures_flagged));
static_assert(same(proto::PoolInfo::kIdFieldNumber, pool_field::id) &&
              same(proto::PoolInfo::kKindFieldNumber, pool_field::kind) &&
              same(proto::PoolInfo::kTorchIdFirstFieldNumber, pool_field::torch_id_first) &&
              same(proto::PoolInfo::kTorchIdSecondFieldNumber, pool_field::torch_id_second) &&
              same(proto::PoolInfo::kNameFieldNumber, pool_field::name));
static_assert(same(proto::DeviceInfo::kIndexFieldNumber, device_field::index) &&
              same(proto::DeviceInfo::kNameFieldNumber, device_field::name) &&
              same(proto::DeviceInfo::kTotalMemoryFieldNumber, device_field::total_memory) &&
              same(proto::DeviceInfo::kCapBytesFieldNumber, device_field::cap_bytes) &&
              same(proto::DeviceInfo::kSegmentsOfUnknownPoolFieldNumber, device_field::segments_of_unknown_pool) &&
              same(proto::DeviceInfo::kAllocationsOfUnknownPoolFieldNumber, device_field::allocations_of_unknown_pool));

namespace c = chunk_field;
using Chunk = proto::Chunk;
static_assert(same(Chunk::kFirstEventFieldNumber, c::first_event) &&
              same(Chunk::kBaseTimeNsFieldNumber, c::base_time_ns) && same(Chunk::kKindFieldNumber, c::kind) &&
              same(Chunk::kTimeDeltaFieldNumber, c::time_delta) && same(Chunk::kDeviceFieldNumber, c::device) &&
              same(Chunk::kStreamFieldNumber, c::stream) && same(Chunk::kAddressDeltaFieldNumber, c::address_delta) &&
              same(Chunk::kSizeFieldNumber, c::size) && same(Chunk::kStackFieldNumber, c::stack) &&
              same(Chunk::kFlagsFieldNumber, c::flags) && same(Chunk::kAuxFieldNumber, c::aux));
static_assert(same(Chunk::kFirstStringIdFieldNumber, c::first_string_id) &&
              same(Chunk::kStringsFieldNumber, c::strings) &&
              same(Chunk::kFirstFrameIdFieldNumber, c::first_frame_id) && same(Chunk::kFramesFieldNumber, c::frames) &&
              same(Chunk::kFirstStackIdFieldNumber, c::first_stack_id) && same(Chunk::kStacksFieldNumber, c::stacks) &&
              same(Chunk::kAnnotationsFieldNumber, c::annotations) && same(Chunk::kPoolFieldNumber, c::pool));
static_assert(same(proto::Frame::kFilenameFieldNumber, frame_field::filename) &&
              same(proto::Frame::kLineFieldNumber, frame_field::line) &&
              same(proto::Frame::kNameFieldNumber, frame_field::name));
static_assert(same(proto::Stack::kFramesFieldNumber, stack_field::frames));
static_assert(same(proto::Annotation::kKeysFieldNumber, annotation_field::keys) &&
              same(proto::Annotation::kValuesFieldNumber, annotation_field::values));

namespace e = index_entry_field;
using Entry = proto::ChunkIndexEntry;
static_assert(same(Entry::kOffsetFieldNumber, e::offset) && same(Entry::kFirstEventFieldNumber, e::first_event) &&
              same(Entry::kEventCountFieldNumber, e::event_count) &&
              same(Entry::kMinTimeNsFieldNumber, e::min_time_ns) && same(Entry::kMaxTimeNsFieldNumber, e::max_time_ns));

namespace f = footer_field;
using Footer = proto::Footer;
static_assert(same(Footer::kChunksFieldNumber, f::chunks) && same(Footer::kTotalEventsFieldNumber, f::total_events) &&
              same(Footer::kEventsPerKindFieldNumber, f::events_per_kind) &&
              same(Footer::kMinTimeNsFieldNumber, f::min_time_ns) &&
              same(Footer::kMaxTimeNsFieldNumber, f::max_time_ns) &&
              same(Footer::kStringCountFieldNumber, f::string_count) &&
              same(Footer::kFrameCountFieldNumber, f::frame_count) &&
              same(Footer::kStackCountFieldNumber, f::stack_count));

}  // namespace
}  // namespace memreplay::format
