// ToValidUtf8 against hand-worked byte strings: what is valid stays, each
// byte that starts no valid sequence becomes U+FFFD.
#include "util/utf8.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace nkigraph {
namespace {

const std::string kFffd = "\xef\xbf\xbd";

TEST(Utf8Test, ValidTextIsUnchanged) {
  for (const std::string& text : std::vector<std::string>{
           "", "plain ascii\n", "caf\xc3\xa9", "\xe2\x82\xac 5",
           "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf" /* U+10FFFF */,
           std::string("nul\0in", 6)}) {
    EXPECT_EQ(ToValidUtf8(text), text);
  }
}

TEST(Utf8Test, EachByteStartingNoSequenceIsReplaced) {
  EXPECT_EQ(ToValidUtf8("a\x80z"), "a" + kFffd + "z");  // stray continuation
  EXPECT_EQ(ToValidUtf8("\xff\xfe"), kFffd + kFffd);
  EXPECT_EQ(ToValidUtf8("\xc0\xaf"), kFffd + kFffd);  // overlong '/'
  EXPECT_EQ(ToValidUtf8("\xe0\x80\xaf"), kFffd + kFffd + kFffd);  // overlong
  EXPECT_EQ(ToValidUtf8("\xed\xa0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(ToValidUtf8("\xf4\x90\x80\x80"),  // above U+10FFFF
            kFffd + kFffd + kFffd + kFffd);
  // Truncated at the end, and cut short by an ASCII byte.
  EXPECT_EQ(ToValidUtf8("x\xe2\x82"), "x" + kFffd + kFffd);
  EXPECT_EQ(ToValidUtf8("\xe2\x82z\xc3\xa9"), kFffd + kFffd + "z\xc3\xa9");
}

TEST(Utf8Test, SequenceLengths) {
  const std::string text = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x80";
  EXPECT_EQ(Utf8SequenceLength(text, 0), 1u);
  EXPECT_EQ(Utf8SequenceLength(text, 1), 2u);
  EXPECT_EQ(Utf8SequenceLength(text, 2), 0u);  // inside a sequence
  EXPECT_EQ(Utf8SequenceLength(text, 3), 3u);
  EXPECT_EQ(Utf8SequenceLength(text, 6), 4u);
  EXPECT_EQ(Utf8SequenceLength(text, 10), 0u);
}

}  // namespace
}  // namespace nkigraph
