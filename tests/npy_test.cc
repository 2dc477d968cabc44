// Reading and writing .npy files.
#include "util/npy.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scoped_temp_dir.h"
#include "util/file_io.h"

namespace nkigraph {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class NpyTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.Path(name); }
  std::vector<std::string> DirEntries() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }
  // Writes raw bytes and reads them back as .npy.
  absl::StatusOr<HostArray> ReadBytes(const std::string& bytes) {
    const std::string path = Path("in.npy");
    EXPECT_TRUE(WriteFileAtomically(path, bytes).ok());
    return ReadNpy(path);
  }

  const testing::ScopedTempDir dir_{"npy_test"};
};

// A .npy file with the given version, header dict and raw data; the header
// is padded as numpy's format.py pads it (64 - (unpadded % 64) spaces).
std::string MakeNpy(int major, const std::string& dict,
                    const std::string& data) {
  const size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  const size_t unpadded = preamble + header.size() + 1;
  header.append(64 - unpadded % 64, ' ');
  header.push_back('\n');
  std::string bytes("\x93NUMPY", 6);
  bytes.push_back(static_cast<char>(major));
  bytes.push_back('\0');
  const uint32_t len = static_cast<uint32_t>(header.size());
  bytes.push_back(static_cast<char>(len & 0xff));
  bytes.push_back(static_cast<char>((len >> 8) & 0xff));
  if (major != 1) {
    bytes.push_back(static_cast<char>((len >> 16) & 0xff));
    bytes.push_back(static_cast<char>((len >> 24) & 0xff));
  }
  return bytes + header + data;
}

template <typename T>
std::string Raw(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;  // the test hosts are little-endian
}

HostArray FloatArray(std::vector<int64_t> shape, std::vector<float> values) {
  HostArray a;
  a.dtype = proto::FLOAT32;
  a.shape = std::move(shape);
  a.f32 = std::move(values);
  return a;
}

HostArray IntArray(std::vector<int64_t> shape, std::vector<int32_t> values) {
  HostArray a;
  a.dtype = proto::INT32;
  a.shape = std::move(shape);
  a.i32 = std::move(values);
  return a;
}

TEST_F(NpyTest, FloatArrayRoundTripsBitExactly) {
  const float inf = std::numeric_limits<float>::infinity();
  HostArray array =
      FloatArray({2, 3}, {1.0f, -0.0f, 3.5e-40f, inf, -inf, 1.0e30f});
  ASSERT_TRUE(WriteNpy(Path("a.npy"), array).ok());
  absl::StatusOr<HostArray> back = ReadNpy(Path("a.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype, proto::FLOAT32);
  EXPECT_THAT(back->shape, ElementsAre(2, 3));
  EXPECT_EQ(Raw(back->f32), Raw(array.f32));
  EXPECT_TRUE(back->i32.empty());
}

TEST_F(NpyTest, NanSurvivesRoundTrip) {
  HostArray array = FloatArray({1}, {std::numeric_limits<float>::quiet_NaN()});
  ASSERT_TRUE(WriteNpy(Path("nan.npy"), array).ok());
  absl::StatusOr<HostArray> back = ReadNpy(Path("nan.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(std::isnan(back->f32[0]));
}

TEST_F(NpyTest, IntArrayRoundTrips) {
  HostArray array =
      IntArray({4, 1}, {0, -1, std::numeric_limits<int32_t>::min(),
                        std::numeric_limits<int32_t>::max()});
  ASSERT_TRUE(WriteNpy(Path("i.npy"), array).ok());
  absl::StatusOr<HostArray> back = ReadNpy(Path("i.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype, proto::INT32);
  EXPECT_THAT(back->shape, ElementsAre(4, 1));
  EXPECT_EQ(back->i32, array.i32);
}

TEST_F(NpyTest, ZeroDimensionalAndEmptyArraysRoundTrip) {
  ASSERT_TRUE(WriteNpy(Path("s.npy"), FloatArray({}, {42.0f})).ok());
  absl::StatusOr<HostArray> scalar = ReadNpy(Path("s.npy"));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_THAT(scalar->f32, ElementsAre(42.0f));

  ASSERT_TRUE(WriteNpy(Path("e.npy"), IntArray({0, 3}, {})).ok());
  absl::StatusOr<HostArray> empty = ReadNpy(Path("e.npy"));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(empty->shape, ElementsAre(0, 3));
  EXPECT_TRUE(empty->i32.empty());
}

TEST_F(NpyTest, WrittenFileHasNumpysVersion1LayoutAlignedTo64Bytes) {
  for (const auto& [shape, text] :
       std::vector<std::pair<std::vector<int64_t>, std::string>>{
           {{5}, "'shape': (5,)"},
           {{2, 3}, "'shape': (2, 3)"},
           {{}, "'shape': ()"}}) {
    HostArray array = FloatArray(shape, {});
    array.f32.resize(array.num_elements(), 1.0f);
    absl::StatusOr<std::string> bytes = SerializeNpy(array);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_GT(bytes->size(), 10u);
    EXPECT_EQ(bytes->substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const size_t header_len = static_cast<uint8_t>((*bytes)[8]) |
                              (static_cast<uint8_t>((*bytes)[9]) << 8);
    EXPECT_EQ((10 + header_len) % 64, 0u);
    EXPECT_EQ((*bytes)[10 + header_len - 1], '\n');
    const std::string header = bytes->substr(10, header_len);
    EXPECT_THAT(header, HasSubstr("{'descr': '<f4', 'fortran_order': False, "));
    EXPECT_THAT(header, HasSubstr(text));
    EXPECT_EQ(bytes->size(), 10 + header_len + 4 * array.f32.size());
  }
  absl::StatusOr<std::string> ints = SerializeNpy(IntArray({1}, {7}));
  ASSERT_TRUE(ints.ok());
  EXPECT_THAT(*ints, HasSubstr("'descr': '<i4'"));
}

// np.save(f, np.arange(6, dtype='<f4').reshape(2, 3)), laid out byte for
// byte as numpy's format.py writes it: the dict repr, spaces up to a
// 64-byte boundary, a newline, then the data.
TEST_F(NpyTest, ReadsAFileAsNumpyWritesIt) {
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  ASSERT_EQ(header.size(), 0x76u);
  std::string bytes = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header +
                      Raw(std::vector<float>{0, 1, 2, 3, 4, 5});
  absl::StatusOr<HostArray> array = ParseNpy(bytes, "numpy.npy");
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_THAT(array->shape, ElementsAre(2, 3));
  EXPECT_THAT(array->f32, ElementsAre(0, 1, 2, 3, 4, 5));
  // And our writer produces the same bytes.
  absl::StatusOr<std::string> ours = SerializeNpy(*array);
  ASSERT_TRUE(ours.ok());
  EXPECT_EQ(*ours, bytes);
}

TEST_F(NpyTest, Float64IsNarrowedToFloat32) {
  absl::StatusOr<HostArray> array = ReadBytes(
      MakeNpy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
              Raw(std::vector<double>{0.5, -2.0, 0.1})));
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(array->dtype, proto::FLOAT32);
  EXPECT_THAT(array->f32, ElementsAre(0.5f, -2.0f, 0.1f));
}

TEST_F(NpyTest, Float64OutsideFloat32RangeIsAnError) {
  absl::StatusOr<HostArray> array = ReadBytes(
      MakeNpy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
              Raw(std::vector<double>{1.0, 1e300})));
  ASSERT_FALSE(array.ok());
  EXPECT_THAT(array.status().message(), HasSubstr("float32 range"));
}

TEST_F(NpyTest, Int64IsNarrowedWithARangeCheck) {
  absl::StatusOr<HostArray> array = ReadBytes(
      MakeNpy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
              Raw(std::vector<int64_t>{-5, 2147483647})));
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(array->dtype, proto::INT32);
  EXPECT_THAT(array->i32, ElementsAre(-5, 2147483647));

  array = ReadBytes(
      MakeNpy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
              Raw(std::vector<int64_t>{1, int64_t{1} << 31})));
  ASSERT_FALSE(array.ok());
  EXPECT_THAT(array.status().message(), HasSubstr("2147483648"));
  EXPECT_THAT(array.status().message(), HasSubstr("int32 range"));
}

TEST_F(NpyTest, Versions2And3AreRead) {
  for (int major : {2, 3}) {
    absl::StatusOr<HostArray> array = ReadBytes(MakeNpy(
        major, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
        Raw(std::vector<int32_t>{7, 8})));
    ASSERT_TRUE(array.ok()) << major << ": " << array.status();
    EXPECT_THAT(array->i32, ElementsAre(7, 8));
  }
}

TEST_F(NpyTest, KeysMayComeInAnyOrderWithDoubleQuotes) {
  absl::StatusOr<HostArray> array = ReadBytes(MakeNpy(
      1, "{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": \"<f4\"}",
      Raw(std::vector<float>{1, 2})));
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_THAT(array->shape, ElementsAre(1, 2));
}

struct BadFile {
  std::string what;
  std::string bytes;
  std::string message;
};

TEST_F(NpyTest, MalformedFilesAreErrorsNamingTheFile) {
  const std::string f4x2 = Raw(std::vector<float>{1, 2});
  const std::string ok_dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string huge_len = MakeNpy(1, ok_dict, f4x2);
  huge_len[8] = '\xff';
  huge_len[9] = '\xff';
  const std::vector<BadFile> cases = {
      {"empty file", "", "bad magic"},
      {"bad magic", "\x93NUMPX" + MakeNpy(1, ok_dict, f4x2).substr(6),
       "bad magic"},
      {"version 4",
       std::string("\x93NUMPY\x04\x00", 8) +
           MakeNpy(1, ok_dict, f4x2).substr(8),
       "version 4.0"},
      {"header length beyond the file", huge_len, "truncated header"},
      {"preamble only", MakeNpy(2, ok_dict, f4x2).substr(0, 11), "truncated"},
      {"truncated header", MakeNpy(1, ok_dict, f4x2).substr(0, 40),
       "truncated header"},
      {"big-endian",
       MakeNpy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
               f4x2),
       "unsupported dtype '>f4'"},
      {"unsigned",
       MakeNpy(1, "{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }",
               f4x2),
       "unsupported dtype '<u4'"},
      {"structured",
       MakeNpy(1,
               "{'descr': [('a', '<f4')], 'fortran_order': False, "
               "'shape': (2,), }",
               f4x2),
       "descr"},
      {"fortran order",
       MakeNpy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
               f4x2),
       "fortran_order"},
      {"missing key", MakeNpy(1, "{'descr': '<f4', 'shape': (2,), }", f4x2),
       "keys"},
      {"extra key",
       MakeNpy(1,
               "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
               "'x': 1}",
               f4x2),
       "unexpected key 'x'"},
      {"duplicate key",
       MakeNpy(1,
               "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
               "'shape': (2,)}",
               f4x2),
       "twice"},
      {"shape not a tuple",
       MakeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2), }",
               f4x2),
       "tuple"},
      {"negative dim",
       MakeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }",
               f4x2),
       "malformed header"},
      {"unterminated string",
       MakeNpy(1, "{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }",
               f4x2),
       "malformed header"},
      {"garbage after dict", MakeNpy(1, ok_dict + " x", f4x2),
       "trailing characters"},
      {"truncated data", MakeNpy(1, ok_dict, f4x2.substr(0, 6)),
       "truncated data"},
      {"trailing data", MakeNpy(1, ok_dict, f4x2 + "xx"), "trailing data"},
      {"dims multiplying past int64",
       MakeNpy(1,
               "{'descr': '<f4', 'fortran_order': False, 'shape': "
               "(4611686018427387904, 4611686018427387904), }",
               f4x2),
       "truncated data"},
      {"dim beyond the parser's limit",
       MakeNpy(1,
               "{'descr': '<f4', 'fortran_order': False, 'shape': "
               "(99999999999999999999999,), }",
               f4x2),
       "too large"},
  };
  for (const BadFile& c : cases) {
    absl::StatusOr<HostArray> array = ReadBytes(c.bytes);
    ASSERT_FALSE(array.ok()) << c.what;
    EXPECT_THAT(array.status().message(), HasSubstr(Path("in.npy"))) << c.what;
    EXPECT_THAT(array.status().message(), HasSubstr(c.message)) << c.what;
  }
}

TEST_F(NpyTest, MissingFileIsAnErrorNamingIt) {
  absl::StatusOr<HostArray> array = ReadNpy(Path("absent.npy"));
  ASSERT_FALSE(array.ok());
  EXPECT_THAT(array.status().message(), HasSubstr("absent.npy"));
}

TEST_F(NpyTest, InconsistentArraysAreNotWritten) {
  absl::Status status =
      WriteNpy(Path("bad.npy"), FloatArray({2, 2}, {1, 2, 3}));
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("bad.npy"));
  HostArray bf16 = FloatArray({1}, {1});
  bf16.dtype = proto::BFLOAT16;
  EXPECT_FALSE(WriteNpy(Path("bad.npy"), bf16).ok());
  EXPECT_FALSE(WriteNpy(Path("bad.npy"), FloatArray({-1}, {})).ok());
  // An int array whose values sit in the float vector is inconsistent too.
  HostArray mixed = IntArray({1}, {});
  mixed.f32 = {1.0f};
  EXPECT_FALSE(WriteNpy(Path("bad.npy"), mixed).ok());
  EXPECT_TRUE(DirEntries().empty());
}

TEST_F(NpyTest, WriteLeavesOnlyTheTargetFile) {
  ASSERT_TRUE(WriteNpy(Path("x.npy"), FloatArray({2}, {1, 2})).ok());
  ASSERT_TRUE(WriteNpy(Path("x.npy"), FloatArray({3}, {1, 2, 3})).ok());
  EXPECT_THAT(DirEntries(), ElementsAre("x.npy"));
  absl::StatusOr<HostArray> back = ReadNpy(Path("x.npy"));
  ASSERT_TRUE(back.ok());
  EXPECT_THAT(back->f32, ElementsAre(1, 2, 3));
}

// --- In parts: the rows of one process of a run spread over several ------

TEST_F(NpyTest, RowsOfTheFirstAxisAreReadAlone) {
  ASSERT_TRUE(
      WriteNpy(Path("a.npy"), FloatArray({3, 2}, {1, 2, 3, 4, 5, 6})).ok());
  int64_t total = 0;
  absl::StatusOr<HostArray> rows = ReadNpyRows(Path("a.npy"), 1, 2, &total);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(total, 3);
  EXPECT_THAT(rows->shape, ElementsAre(2, 2));
  EXPECT_THAT(rows->f32, ElementsAre(3, 4, 5, 6));
  // Doubles are narrowed as ReadNpy narrows them; rows past the end are an
  // error that still tells the file's first dim.
  ASSERT_TRUE(
      WriteFileAtomically(Path("d.npy"),
                          MakeNpy(1,
                                  "{'descr': '<f8', 'fortran_order': False, "
                                  "'shape': (2, 1), }",
                                  Raw(std::vector<double>{0.5, -2})))
          .ok());
  rows = ReadNpyRows(Path("d.npy"), 1, 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(rows->f32, ElementsAre(-2.0f));
  total = 0;
  EXPECT_THAT(ReadNpyRows(Path("d.npy"), 1, 2, &total).status().message(),
              HasSubstr("rows [1, 3)"));
  EXPECT_EQ(total, 2);
}

TEST_F(NpyTest, MappedFilesGiveTheValuesWhereTheyLie) {
  ASSERT_TRUE(WriteNpy(Path("i.npy"), IntArray({2, 2}, {7, -1, 3, 9})).ok());
  absl::StatusOr<MappedNpy> mapped = MapNpy(Path("i.npy"));
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(mapped->dtype, proto::INT32);
  EXPECT_THAT(mapped->shape, ElementsAre(2, 2));
  ASSERT_EQ(mapped->elements, 4);
  const int32_t* values = static_cast<const int32_t*>(mapped->values);
  EXPECT_THAT(std::vector<int32_t>(values, values + 4),
              ElementsAre(7, -1, 3, 9));
  // Values that need converting are left to ReadNpy.
  ASSERT_TRUE(
      WriteFileAtomically(Path("l.npy"),
                          MakeNpy(1,
                                  "{'descr': '<i8', 'fortran_order': False, "
                                  "'shape': (1,), }",
                                  Raw(std::vector<int64_t>{5})))
          .ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(MapNpy(Path("l.npy")).status()));
  // A malformed file is ReadNpy's error.
  ASSERT_TRUE(WriteFileAtomically(Path("bad.npy"), "not npy").ok());
  EXPECT_EQ(MapNpy(Path("bad.npy")).status().message(),
            ReadNpy(Path("bad.npy")).status().message());
}

TEST_F(NpyTest, PartsWrittenAtTheirOffsetsMakeTheWholeFile) {
  const HostArray whole = FloatArray({3, 2}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(WriteNpy(Path("whole.npy"), whole).ok());
  // The first part's writer makes the file; the others write into it.
  ASSERT_TRUE(WriteNpyRows(Path("parts.npy"), FloatArray({1, 2}, {1, 2}), 3, 0,
                           /*create=*/true)
                  .ok());
  ASSERT_TRUE(WriteNpyRows(Path("parts.npy"), FloatArray({2, 2}, {3, 4, 5, 6}),
                           3, 1, /*create=*/false)
                  .ok());
  std::ifstream a(Path("whole.npy"), std::ios::binary);
  std::ifstream b(Path("parts.npy"), std::ios::binary);
  const std::string want((std::istreambuf_iterator<char>(a)), {});
  const std::string got((std::istreambuf_iterator<char>(b)), {});
  EXPECT_TRUE(got == want);
  EXPECT_THAT(WriteNpyRows(Path("parts.npy"), FloatArray({2, 2}, {0, 0, 0, 0}),
                           3, 2, /*create=*/false)
                  .message(),
              HasSubstr("do not fit"));
}

}  // namespace
}  // namespace nkigraph
