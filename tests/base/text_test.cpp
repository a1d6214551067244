// Printable text (base/text.h): what a plugin's name and messages must be, and how any bytes are
// shown on one line.
#include "base/text.h"

#include <gtest/gtest.h>

#include <string>

namespace memreplay {
namespace {

TEST(Text, PrintableUtf8HasNoControlCharactersAndIsValidUtf8) {
  for (const char* good : {"", "pytorch", "my policy", "größe", "日本語", "emoji \xf0\x9f\x98\x80"})
    EXPECT_TRUE(is_printable_utf8(good)) << good;
  const std::string nul("a\0b", 3);
  for (const std::string bad : {std::string("two\nlines"), std::string("tab\there"), std::string("\x1b[31mred"), nul,
                                std::string("del\x7f"), std::string("c1 \xc2\x85"), std::string("\xff"),
                                std::string("\xc0\xaf"),  // an overlong '/'
                                std::string("\xed\xa0\x80"),  // a surrogate
                                std::string("\xf4\x90\x80\x80"),  // past U+10FFFF
                                std::string("cut \xe6\x97")})
    EXPECT_FALSE(is_printable_utf8(bad)) << escape_unprintable(bad);
}

TEST(Text, PrintableEscapesWhatIsNotAndKeepsWhatIs) {
  EXPECT_EQ(escape_unprintable("plain größe"), "plain größe");
  EXPECT_EQ(escape_unprintable("two\nlines"), "two\\x0alines");
  EXPECT_EQ(escape_unprintable("a\\b"), "a\\\\b");
  EXPECT_EQ(escape_unprintable("bad \xff\xfe end"), "bad \\xff\\xfe end");
  EXPECT_EQ(escape_unprintable(std::string("nul\0", 4)), "nul\\x00");
  EXPECT_TRUE(is_printable_utf8(escape_unprintable("\x1b[31m\xc0\xaf\xed\xa0\x80")));
}

}  // namespace
}  // namespace memreplay
