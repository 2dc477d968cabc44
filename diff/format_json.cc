#include <cstdint>
#include <optional>
#include <string>

#include "diff/format.h"
#include "diff/json_writer.h"

namespace nkigraph::diff {
namespace {

void OptionalString(JsonWriter& json, const char* key,
                    const std::optional<std::string>& value) {
  json.Key(key);
  if (value.has_value()) {
    json.String(*value);
  } else {
    json.Null();
  }
}

// An empty string or zero id reads as absent (null).
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

// `fields` as an array under `key`.
void WriteFields(JsonWriter& json, const char* key,
                 const std::vector<FieldChange>& fields) {
  json.Key(key);
  json.BeginArray();
  for (const FieldChange& field : fields) {
    json.BeginObject();
    json.Key("field");
    json.String(field.field);
    OptionalString(json, "before", field.before);
    OptionalString(json, "after", field.after);
    json.EndObject();
  }
  json.EndArray();
}

// The three counts as keys of the object being written.
void CountKeys(JsonWriter& json, const Counts& counts) {
  json.Key("added");
  json.Int(counts.added);
  json.Key("removed");
  json.Int(counts.removed);
  json.Key("changed");
  json.Int(counts.changed);
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
    json_.Key("change");
    json_.String(ChangeKindName(kind));
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
  json.Key("a");
  json.String(options.label_a);
  json.Key("b");
  json.String(options.label_b);
  json.Key("strict");
  json.Bool(options.strict);
  json.Key("same");
  json.Bool(result.same());

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
  json.Key("tensors_omitted");
  json.Int(result.tensors_omitted);

  json.Key("streams");
  json.BeginArray();
  for (const StreamDiff& stream : result.streams) {
    json.BeginObject();
    json.Key("core");
    json.Int(stream.core);
    json.Key("in_a");
    json.Bool(stream.in_a);
    json.Key("in_b");
    json.Bool(stream.in_b);
    json.Key("length_a");
    json.Int(stream.length_a);
    json.Key("length_b");
    json.Int(stream.length_b);
    json.Key("counts");
    WriteCounts(json, stream.counts);
    json.Key("changes");
    json.BeginArray();
    for (const InstrChange& change : stream.changes) {
      ChangeObject object(json, change.kind);
      json.Key("opcode");
      json.String(change.opcode);
      object.Ints("index_a", change.index_a, "index_b", change.index_b);
      object.Ints("id_a", change.id_a, "id_b", change.id_b);
      object.Strings("before", change.text_a, "after", change.text_b);
      object.Strings("source_a", change.source_a, "source_b", change.source_b);
      WriteFields(json, "fields", change.fields);
    }
    json.EndArray();
    json.Key("omitted");
    json.Int(stream.omitted);
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
