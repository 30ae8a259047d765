// Table printer of CertificateSigningRequests, as kube-apiserver prints them
// (`kubectl get csr`: NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION).
#include "kinds.h"
#include "tables_util.h"

namespace vkube::apiserver::builtin::tables {

namespace {

// kube's extractCSRStatus: Denied wins over Approved, else Pending; then
// ",Failed" and ",Issued" as they apply.
std::string csr_condition(const json& csr) {
  bool approved = false, denied = false, failed = false;
  for (const json& c : array(csr, {"status", "conditions"})) {
    const std::string type = str(c, {"type"});
    approved = approved || type == "Approved";
    denied = denied || type == "Denied";
    failed = failed || type == "Failed";
  }
  std::string status = denied ? "Denied" : approved ? "Approved" : "Pending";
  if (failed) status += ",Failed";
  if (!str(csr, {"status", "certificate"}).empty()) status += ",Issued";
  return status;
}

json csr_cells(const json& csr, int64_t now) {
  const std::string signer = str(csr, {"spec", "signerName"});
  std::optional<int64_t> seconds = opt_integer(csr, {"spec", "expirationSeconds"});
  return json::array(
      {str(csr, {"metadata", "name"}), age(csr, now),
       signer.empty() ? std::string("<none>") : signer, str(csr, {"spec", "username"}),
       seconds ? human_duration(*seconds) : std::string("<none>"), csr_condition(csr)});
}

}  // namespace

void add_certificate_printers(PrinterMap& m) {
  m["certificates.k8s.io/certificatesigningrequests"] = {
      {name_column(), age_column(),
       column("SignerName", "string", "The signer the request is addressed to."),
       column("Requestor", "string", "The user who made the request."),
       column("RequestedDuration", "string",
              "The validity the request asks for (spec.expirationSeconds)."),
       column("Condition", "string", "Approved, Denied or Pending, and Failed or Issued.")},
      csr_cells};
}

}  // namespace vkube::apiserver::builtin::tables
