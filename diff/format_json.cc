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

void WriteFields(JsonWriter& json, const std::vector<FieldChange>& fields) {
  json.Key("fields");
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

void WriteCounts(JsonWriter& json, const Counts& counts) {
  json.BeginObject();
  json.Key("added");
  json.Int(counts.added);
  json.Key("removed");
  json.Int(counts.removed);
  json.Key("changed");
  json.Int(counts.changed);
  json.EndObject();
}

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

  json.Key("header");
  json.BeginArray();
  for (const FieldChange& field : result.header) {
    json.BeginObject();
    json.Key("field");
    json.String(field.field);
    OptionalString(json, "before", field.before);
    OptionalString(json, "after", field.after);
    json.EndObject();
  }
  json.EndArray();

  json.Key("tensors");
  json.BeginArray();
  for (const TensorChange& change : result.tensors) {
    const bool in_a = change.kind != ChangeKind::kAdded;
    const bool in_b = change.kind != ChangeKind::kRemoved;
    json.BeginObject();
    json.Key("change");
    json.String(ChangeKindName(change.kind));
    StringOrNull(json, "name_a", change.name_a, in_a);
    StringOrNull(json, "name_b", change.name_b, in_b);
    IntOrNull(json, "core", change.core, change.core >= 0);
    IntOrNull(json, "id_a", change.id_a, in_a);
    IntOrNull(json, "id_b", change.id_b, in_b);
    StringOrNull(json, "before", change.summary_a, in_a);
    StringOrNull(json, "after", change.summary_b, in_b);
    WriteFields(json, change.fields);
    json.EndObject();
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
      const bool in_a = change.kind != ChangeKind::kAdded;
      const bool in_b = change.kind != ChangeKind::kRemoved;
      json.BeginObject();
      json.Key("change");
      json.String(ChangeKindName(change.kind));
      json.Key("opcode");
      json.String(change.opcode);
      IntOrNull(json, "index_a", change.index_a, in_a);
      IntOrNull(json, "index_b", change.index_b, in_b);
      IntOrNull(json, "id_a", change.id_a, in_a);
      IntOrNull(json, "id_b", change.id_b, in_b);
      StringOrNull(json, "before", change.text_a, in_a);
      StringOrNull(json, "after", change.text_b, in_b);
      StringOrNull(json, "source_a", change.source_a, in_a);
      StringOrNull(json, "source_b", change.source_b, in_b);
      WriteFields(json, change.fields);
      json.EndObject();
    }
    json.EndArray();
    json.Key("omitted");
    json.Int(stream.omitted);
    json.EndObject();
  }
  json.EndArray();

  json.Key("summary");
  json.BeginObject();
  const Counts total = result.total();
  json.Key("added");
  json.Int(total.added);
  json.Key("removed");
  json.Int(total.removed);
  json.Key("changed");
  json.Int(total.changed);
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
