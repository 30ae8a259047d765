// Table columns and rows of the built-in kinds, as kube-apiserver 1.32's
// server-side printers produce them (pkg/printers/internalversion). The
// printers themselves live in tables_core/apps/network/cluster.cpp; this file
// holds the registry, the default table and HumanDuration.
//
// As in kube-apiserver, column names are title case ("Name", "Nominated Node":
// kubectl upper-cases them), every column is filled (the server always
// prints wide; priority 1 marks what kubectl shows only with -o wide), and
// cell JSON types follow the Go printers, which put integers in some columns
// declared "string".
#include <cstdio>

#include "kinds.h"
#include "tables_util.h"

namespace vkube::apiserver::builtin {

namespace {

using tables::Printer;
using tables::PrinterMap;

// rest.NewDefaultTableConvertor: kinds without a printer (Role, ClusterRole,
// LimitRange, CustomResourceDefinition) show their name and creation time.
json default_cells(const json& obj, int64_t) {
  constexpr int64_t kGoZeroTime = -62135596800;  // what an unset timestamp formats as
  std::optional<int64_t> created =
      tables::parse_time(tables::find(obj, {"metadata", "creationTimestamp"}));
  return json::array({tables::str(obj, {"metadata", "name"}),
                      tables::format_rfc3339(created.value_or(kGoZeroTime))});
}

const Printer& default_printer() {
  static const Printer kDefault{
      {tables::name_column(),
       tables::column("Created At", "date",
                      "Time the object was created (metadata.creationTimestamp).")},
      default_cells};
  return kDefault;
}

const PrinterMap& printers() {
  static const PrinterMap kPrinters = [] {
    PrinterMap m;
    tables::add_core_printers(m);
    tables::add_workload_printers(m);
    tables::add_network_printers(m);
    tables::add_cluster_printers(m);
    tables::add_certificate_printers(m);
    return m;
  }();
  return kPrinters;
}

const Printer& printer_for(const api::Resource& r) {
  if (r.is_custom) return default_printer();
  const PrinterMap& m = printers();
  auto it = m.find(r.gv.group + "/" + r.plural);
  return it == m.end() ? default_printer() : it->second;
}

}  // namespace

std::vector<api::Column> table_columns(const api::Resource& r) {
  return printer_for(r).columns;
}

json table_cells(const api::Resource& r, const json& obj, int64_t now) {
  const Printer& p = printer_for(r);
  json cells = p.cells(obj, now);
  // A printer returning the wrong count is a bug; never hand clients a
  // ragged row.
  if (!cells.is_array()) cells = json::array();
  while (cells.size() < p.columns.size()) cells.push_back("");
  while (cells.size() > p.columns.size()) cells.erase(cells.size() - 1);
  return cells;
}

// duration.HumanDuration (k8s.io/apimachinery/pkg/util/duration): about two
// significant figures, with a little tolerance for clock skew.
std::string human_duration(int64_t seconds) {
  auto fmt = [](const char* pattern, int64_t a, int64_t b = 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, pattern, static_cast<long long>(a), static_cast<long long>(b));
    return std::string(buf);
  };
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return fmt("%llds", seconds);
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return s == 0 ? fmt("%lldm", minutes) : fmt("%lldm%llds", minutes, s);
  }
  if (minutes < 60 * 3) return fmt("%lldm", minutes);
  const int64_t hours = seconds / 3600;
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return m == 0 ? fmt("%lldh", hours) : fmt("%lldh%lldm", hours, m);
  }
  if (hours < 48) return fmt("%lldh", hours);
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return h == 0 ? fmt("%lldd", hours / 24) : fmt("%lldd%lldh", hours / 24, h);
  }
  if (hours < 24 * 365 * 2) return fmt("%lldd", hours / 24);
  if (hours < 24 * 365 * 8) {
    const int64_t dy = hours / 24 % 365;
    return dy == 0 ? fmt("%lldy", hours / 24 / 365) : fmt("%lldy%lldd", hours / 24 / 365, dy);
  }
  return fmt("%lldy", hours / 24 / 365);
}

}  // namespace vkube::apiserver::builtin
