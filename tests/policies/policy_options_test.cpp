// The one policy option parser (policies/detail/policy_options.h): syntax, byte units, strict
// booleans in their two spellings, and one-line errors naming the key and the value. The pytorch
// policy's own rules are in pytorch_policy_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "base/units.h"
#include "policies/detail/policy_options.h"
#include "policies/registry.h"
#include "replayer/sim/sim_device.h"

namespace memreplay::detail {
namespace {

std::string error_of(std::string_view options, std::initializer_list<std::string_view> keys = {"size", "flag"}) {
  try {
    PolicyOptions("demo", options, keys);
  } catch (const PolicySpecError& e) {
    return e.what();
  }
  return "";
}

TEST(PolicyOptions, SplitsKeysValuesAndListsIgnoringWhitespace) {
  const PolicyOptions options("demo", " size : 4GiB ,list:[1:2, >:8],flag:True", {"size", "list", "flag"});
  ASSERT_EQ(options.entries().size(), 3u);
  EXPECT_EQ(options.entries()[0].key, "size");
  EXPECT_EQ(options.entries()[0].value, "4GiB");
  EXPECT_TRUE(options.entries()[1].is_list);
  EXPECT_EQ(options.entries()[1].list, (std::vector<std::string>{"1", ":", "2", ",", ">", ":", "8"}));
  EXPECT_EQ(options.to_bytes(options.entries()[0]), 4ull << 30);
  EXPECT_TRUE(PolicyOptions("demo", "", {}).entries().empty());
}

TEST(PolicyOptions, ByteValuesReadTheOneByteParser) {
  const PolicyOptions options("demo", "size:512m,flag:1.5GB", {"size", "flag"});
  EXPECT_EQ(options.to_bytes(options.entries()[0]), 512 * kMiB);
  EXPECT_EQ(options.to_bytes(options.entries()[1]), 1'500'000'000u);
  const PolicyOptions bad("demo", "size:lots", {"size"});
  try {
    bad.to_bytes(bad.entries()[0]);
    ADD_FAILURE() << "'lots' read as bytes";
  } catch (const PolicySpecError& e) {
    EXPECT_EQ(std::string(e.what()), "demo option 'size': expected bytes (e.g. 1GiB, 512MiB, 64MB or 4096; units " +
                                         std::string(kByteUnits) + "), got 'lots'");
  }
}

TEST(PolicyOptions, BooleansAreStrictInEitherSpelling) {
  const PolicyOptions options("demo", "a:True,b:false,c:true,d:False", {"a", "b", "c", "d"});
  const auto& e = options.entries();
  EXPECT_TRUE(options.to_bool(e[0], Booleans::python));
  EXPECT_FALSE(options.to_bool(e[1], Booleans::either));
  EXPECT_TRUE(options.to_bool(e[2], Booleans::either));
  EXPECT_FALSE(options.to_bool(e[3], Booleans::python));
  EXPECT_THROW(options.to_bool(e[2], Booleans::python), PolicySpecError);  // PyTorch's keys: True/False only
  for (const char* bad : {"flag:yes", "flag:1", "flag:TRUE", "flag:on"}) {
    const PolicyOptions one("demo", bad, {"flag"});
    EXPECT_THROW(one.to_bool(one.entries()[0], Booleans::either), PolicySpecError) << bad;
  }
}

TEST(PolicyOptions, ErrorsAreOneLineAndNameTheKeyAndTheValue) {
  const std::string unknown = error_of("colour:red");
  EXPECT_NE(unknown.find("unknown option 'colour'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("(valid: size, flag)"), std::string::npos) << unknown;
  EXPECT_NE(error_of("size").find("'size': expected ':' and a value"), std::string::npos);
  EXPECT_NE(error_of("size:").find("'size': missing value"), std::string::npos);
  EXPECT_NE(error_of("size:[1").find("missing closing ']'"), std::string::npos);
  EXPECT_NE(error_of("size:1 flag:True").find("expected ',' after the value"), std::string::npos);
  EXPECT_NE(error_of(",size:1").find("expected an option name"), std::string::npos);

  const PolicyOptions options("demo", "size:lots,flag:maybe", {"size", "flag"});
  try {
    options.to_bytes(options.entries()[0]);
    FAIL();
  } catch (const PolicySpecError& e) {
    EXPECT_EQ(std::string(e.what()), "demo option 'size': expected bytes (e.g. 1GiB, 512MiB, 64MB or 4096; units " +
                                         std::string(kByteUnits) + "), got 'lots'");
  }
  try {
    options.to_bool(options.entries()[1], Booleans::either);
    FAIL();
  } catch (const PolicySpecError& e) {
    EXPECT_EQ(std::string(e.what()), "demo option 'flag': expected True, False, true or false, got 'maybe'");
  }
  EXPECT_THROW(options.to_unsigned(options.entries()[0]), PolicySpecError);
  EXPECT_THROW(options.to_number(options.entries()[1]), PolicySpecError);
}

// Every built-in policy parses through it.
TEST(PolicyOptions, EveryPolicyParsesThroughIt) {
  SimDevice device(SimDevice::Options{});
  auto& registry = PolicyRegistry::instance();
  EXPECT_NO_THROW(registry.create("cuda_async:release_threshold:1GiB,reuse_allow_opportunistic:false", device));
  EXPECT_NO_THROW(registry.create("cuda_async:release_threshold: 64MB", device));
  for (const char* spec : {"passthrough:x:1", "cuda_async:release_threshold:1.5.2",
                           "cuda_async:reuse_allow_opportunistic:yes", "pytorch:expandable_segments:yes"})
    EXPECT_THROW(registry.create(spec, device), PolicySpecError) << spec;
  try {
    registry.create("passthrough:x:1", device);
  } catch (const PolicySpecError& e) {
    EXPECT_NE(std::string(e.what()).find("passthrough: unknown option 'x' (valid: none"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace memreplay::detail
