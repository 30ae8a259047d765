// Shared pieces of the built-in Table printers (tables*.cpp): a registry of
// per-resource printers, tolerant JSON accessors, and the formatting helpers
// kube-apiserver's printers use (label sets, selectors, container lists, ages).
//
// Every accessor tolerates missing fields and wrong JSON types: a printer
// sees whatever was stored, and a Table must never fail because of it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "vkube/api/resource.h"

namespace vkube::apiserver::builtin::tables {

using json = nlohmann::json;
using Path = std::initializer_list<std::string_view>;

// The columns of one resource and how to fill a row of them. `cells` returns
// a JSON array with exactly one value per column.
struct Printer {
  std::vector<api::Column> columns;
  json (*cells)(const json& obj, int64_t now) = nullptr;
};

// Printers by "group/plural" ("/pods", "apps/deployments").
using PrinterMap = std::map<std::string, Printer, std::less<>>;

void add_core_printers(PrinterMap& m);      // tables_core.cpp
void add_workload_printers(PrinterMap& m);  // tables_apps.cpp
void add_network_printers(PrinterMap& m);   // tables_network.cpp
void add_cluster_printers(PrinterMap& m);   // tables_cluster.cpp
void add_certificate_printers(PrinterMap& m);  // tables_certificates.cpp

// --- columns ---------------------------------------------------------------

api::Column column(std::string name, std::string type, std::string description, int priority = 0);
api::Column name_column(int priority = 0);  // "Name", format "name"
api::Column age_column();                   // "Age"
// "Containers", "Images" (and "Selector" when `selector` is set), priority 1.
std::vector<api::Column> template_columns(std::string selector_description = "");
std::vector<api::Column> concat(std::vector<api::Column> a, const std::vector<api::Column>& b);

// --- tolerant JSON access --------------------------------------------------

// The value at `path` below `obj`, or nullptr when any step is missing or
// not an object. A JSON null counts as missing.
const json* find(const json& obj, Path path);
// The string at `path`, or `fallback` when absent or not a string.
std::string str(const json& obj, Path path, std::string_view fallback = "");
// The integer at `path`, or `fallback` when absent or not a number.
int64_t integer(const json& obj, Path path, int64_t fallback = 0);
std::optional<int64_t> opt_integer(const json& obj, Path path);
std::optional<bool> opt_bool(const json& obj, Path path);
// The array / object at `path`, or an empty one.
const json& array(const json& obj, Path path);
const json& object(const json& obj, Path path);

// --- formatting ----------------------------------------------------------

// Seconds since the Unix epoch of an RFC 3339 timestamp ("2026-12-02T13:40:01Z",
// fractions and offsets allowed); nullopt when absent, malformed, or Go's
// zero time.
std::optional<int64_t> parse_time(const json* value);
// "2026-12-02T13:40:01Z" (UTC), as Go's time.RFC3339 formats it.
std::string format_rfc3339(int64_t unix_seconds);
// translateTimestampSince: the age of a timestamp, "<unknown>" when unset.
std::string since(const json* timestamp, int64_t now);
// The AGE cell of an object.
std::string age(const json& obj, int64_t now);

std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string lower(std::string s);
// strings.TrimSpace for ASCII white space.
std::string trim(std::string_view s);
// labels.FormatLabels: "a=b,c=d" sorted by key, "<none>" when empty.
std::string format_labels(const json* labels);
// metav1.FormatLabelSelector: "app=web,tier in (a,b)", "<none>" when empty
// or absent, "<error>" when malformed.
std::string format_label_selector(const json* selector);
// LabelSelectorAsSelector(...).String(): "" when empty or absent,
// "<invalid>" when malformed (the Deployment printer's form).
std::string selector_string(const json* selector);
// layoutContainerCells: names and images, comma-separated.
std::pair<std::string, std::string> container_cells(const json& containers);
// resource.Quantity's String() for a stored quantity: strings as stored,
// numbers in decimal; `absent` when there is none.
std::string quantity(const json* value, std::string_view absent = "0");
// intstr.IntOrString's String().
std::string int_or_string(const json* value);
// "True", "False", or "<unset>" (printBoolPtr).
std::string bool_ptr(std::optional<bool> value);
// The first `max` items joined by `sep`, then " + N more..." for the rest
// (listWithMoreString and its kin); `empty` when there are none.
std::string list_with_more(const std::vector<std::string>& items, std::size_t max,
                           std::string_view sep, std::string_view empty);

}  // namespace vkube::apiserver::builtin::tables
