// `nkigraph diff --json`: a DiffResult as one JSON document.
#include <cstdint>
#include <optional>
#include <string>

#include "diff/format.h"
#include "diff/json_writer.h"

namespace nkigraph::diff {
namespace {

// `value` under `key`, or null when it is not `present`.
void StringOrNull(JsonWriter& json, const char* key, const std::string& value,
                  bool present) {
  json.Key(key);
  if (present) {
    json.String(value);
  } else {
    json.Null();
  }
}

void IntOrNull(JsonWriter& json, const char* key, int64_t value, bool present) {
  json.Key(key);
  if (present) {
    json.Int(value);
  } else {
    json.Null();
  }
}

void OptionalString(JsonWriter& json, const char* key,
                    const std::optional<std::string>& value) {
  StringOrNull(json, key, value.value_or(""), value.has_value());
}

// `fields` as an array under `key`.
void WriteFields(JsonWriter& json, const char* key,
                 const std::vector<FieldChange>& fields) {
  json.Key(key);
  json.BeginArray();
  for (const FieldChange& field : fields) {
    json.BeginObject();
    json.StringMember("field", field.field);
    OptionalString(json, "before", field.before);
    OptionalString(json, "after", field.after);
    json.EndObject();
  }
  json.EndArray();
}

// The three counts as keys of the object being written.
void CountKeys(JsonWriter& json, const Counts& counts) {
  json.IntMember("added", counts.added);
  json.IntMember("removed", counts.removed);
  json.IntMember("changed", counts.changed);
}

void WriteCounts(JsonWriter& json, const Counts& counts) {
  json.BeginObject();
  CountKeys(json, counts);
  json.EndObject();
}

// A change's object, open while this lives: its kind first, then values
// of the change's two sides, each null on the side the change lacks (an
// added one has no a side, a removed one no b side).
class ChangeObject {
 public:
  ChangeObject(JsonWriter& json, ChangeKind kind)
      : json_(json),
        in_a_(kind != ChangeKind::kAdded),
        in_b_(kind != ChangeKind::kRemoved) {
    json_.BeginObject();
    json_.StringMember("change", ChangeKindName(kind));
  }
  ~ChangeObject() { json_.EndObject(); }

  void Ints(const char* key_a, int64_t a, const char* key_b, int64_t b) {
    IntOrNull(json_, key_a, a, in_a_);
    IntOrNull(json_, key_b, b, in_b_);
  }
  void Strings(const char* key_a, const std::string& a, const char* key_b,
               const std::string& b) {
    StringOrNull(json_, key_a, a, in_a_);
    StringOrNull(json_, key_b, b, in_b_);
  }

 private:
  JsonWriter& json_;
  const bool in_a_;
  const bool in_b_;
};

}  // namespace

std::string FormatJson(const DiffResult& result, const FormatOptions& options) {
  std::string out;
  JsonWriter json(&out);
  json.BeginObject();
  json.StringMember("a", options.label_a);
  json.StringMember("b", options.label_b);
  json.BoolMember("strict", options.strict);
  json.BoolMember("same", result.same());

  WriteFields(json, "header", result.header);

  json.Key("tensors");
  json.BeginArray();
  for (const TensorChange& change : result.tensors) {
    ChangeObject object(json, change.kind);
    object.Strings("name_a", change.name_a, "name_b", change.name_b);
    IntOrNull(json, "core", change.core, change.core >= 0);
    object.Ints("id_a", change.id_a, "id_b", change.id_b);
    object.Strings("before", change.summary_a, "after", change.summary_b);
    WriteFields(json, "fields", change.fields);
  }
  json.EndArray();
  json.IntMember("tensors_omitted", result.tensors_omitted);

  json.Key("streams");
  json.BeginArray();
  for (const StreamDiff& stream : result.streams) {
    json.BeginObject();
    json.IntMember("core", stream.core);
    json.BoolMember("in_a", stream.in_a);
    json.BoolMember("in_b", stream.in_b);
    json.IntMember("length_a", stream.length_a);
    json.IntMember("length_b", stream.length_b);
    json.Key("counts");
    WriteCounts(json, stream.counts);
    json.Key("changes");
    json.BeginArray();
    for (const InstrChange& change : stream.changes) {
      ChangeObject object(json, change.kind);
      json.StringMember("opcode", change.opcode);
      object.Ints("index_a", change.index_a, "index_b", change.index_b);
      object.Ints("id_a", change.id_a, "id_b", change.id_b);
      object.Strings("before", change.text_a, "after", change.text_b);
      object.Strings("source_a", change.source_a, "source_b", change.source_b);
      WriteFields(json, "fields", change.fields);
    }
    json.EndArray();
    json.IntMember("omitted", stream.omitted);
    json.EndObject();
  }
  json.EndArray();

  json.Key("summary");
  json.BeginObject();
  CountKeys(json, result.total());
  json.Key("instructions");
  WriteCounts(json, result.instruction_counts);
  json.Key("tensors");
  WriteCounts(json, result.tensor_counts);
  json.Key("header");
  WriteCounts(json, result.header_counts);
  json.EndObject();
  json.EndObject();
  return out;
}

}  // namespace nkigraph::diff
