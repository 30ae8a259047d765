#include "local_pods.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "client.h"
#include "vkube/common/base64.h"
#include "vkube/common/dial_policy.h"
#include "vkube/common/log.h"

namespace vkube::nodesim {

namespace fs = std::filesystem;

namespace {

const json& field(const json& obj, const char* name) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(name);
  return it == obj.end() ? kNull : *it;
}

// "registry:5000/team/vkube:0.1@sha256:..." -> "vkube".
std::string repository_name(std::string image) {
  if (auto at = image.find('@'); at != std::string::npos) image.resize(at);
  auto slash = image.rfind('/');
  auto colon = image.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash))
    image.resize(colon);
  slash = image.rfind('/');
  return slash == std::string::npos ? image : image.substr(slash + 1);
}

// "metadata.labels['app']" and the other downward API fields a container's
// environment may name.
std::string downward_field(const json& pod, const std::string& path, const std::string& ip) {
  if (path == "metadata.name") return text_at(pod, {"metadata", "name"});
  if (path == "metadata.namespace") return text_at(pod, {"metadata", "namespace"});
  if (path == "metadata.uid") return text_at(pod, {"metadata", "uid"});
  if (path == "spec.nodeName") return text_at(pod, {"spec", "nodeName"});
  if (path == "spec.serviceAccountName") return text_at(pod, {"spec", "serviceAccountName"});
  if (path == "status.podIP") return ip;
  if (path == "status.podIPs") return ip;
  if (path == "status.hostIP") return text_at(pod, {"status", "hostIP"});
  for (const char* map : {"labels", "annotations"}) {
    std::string prefix = std::string("metadata.") + map + "['";
    if (path.rfind(prefix, 0) == 0 && path.size() > prefix.size() + 2 &&
        path.compare(path.size() - 2, 2, "']") == 0)
      return text_at(pod, {"metadata", map,
                           path.substr(prefix.size(), path.size() - prefix.size() - 2).c_str()});
  }
  return {};
}

// A ConfigMap's or Secret's data (Secret values decoded); nullopt when absent.
std::optional<std::map<std::string, std::string>> read_data(Client& client, const std::string& ns,
                                                            const char* plural,
                                                            const std::string& name) {
  ApiResult r = client.call("GET", "/api/v1/namespaces/" + ns + "/" + plural + "/" + name);
  if (!r.ok()) return std::nullopt;
  std::map<std::string, std::string> out;
  const bool secret = std::string_view(plural) == "secrets";
  for (auto& [k, v] : field(r.body, "data").items()) {
    if (!v.is_string()) continue;
    if (secret) {
      auto d = base64_decode(v.get<std::string>());
      if (d) out[k] = *d;
    } else {
      out[k] = v.get<std::string>();
    }
  }
  return out;
}

bool port_open(const std::string& ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = inet_pton(AF_INET, ip.c_str(), &a.sin_addr) == 1 &&
            ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// The port the readiness probe checks (a number or a container port's name); 0: none.
int probe_port(const json& container) {
  const json& probe = field(container, "readinessProbe");
  for (const char* kind : {"httpGet", "tcpSocket"}) {
    const json& port = field(field(probe, kind), "port");
    if (port.is_number_integer()) return port.get<int>();
    if (!port.is_string()) continue;
    for (const json& p : field(container, "ports"))
      if (text_at(p, {"name"}) == port.get<std::string>() &&
          field(p, "containerPort").is_number_integer())
        return field(p, "containerPort").get<int>();
  }
  return 0;
}

// The folder of a persistentVolumeClaim volume: its PersistentVolume's
// hostPath, once the claim is bound to it. Until then (or while the claim
// does not exist) the pod waits, as on a kubelet: kUnavailable, tried again
// soon.
Result<fs::path> claim_folder(Client& client, const std::string& ns, const std::string& claim) {
  const Status unbound =
      Status::unavailable("persistentvolumeclaim \"" + claim + "\" is not bound");
  ApiResult r = client.call("GET", claim_path(ns, claim));
  if (r.code == 404) return unbound;
  if (!r.ok())
    return Status::unavailable("reading persistentvolumeclaim \"" + claim + "\": " + r.body.dump());
  const std::string uid = text_at(r.body, {"metadata", "uid"});
  const std::string volume = text_at(r.body, {"spec", "volumeName"});
  if (volume.empty() || text_at(r.body, {"status", "phase"}) != "Bound") return unbound;
  r = client.call("GET", volume_path(volume));
  if (!r.ok())
    return Status::unavailable("reading persistentvolume \"" + volume + "\" of claim \"" + claim +
                               "\": " + r.body.dump());
  if (text_at(r.body, {"spec", "claimRef", "uid"}) != uid)
    return Status::unavailable("persistentvolume \"" + volume + "\" is not bound to claim \"" +
                               claim + "\"");
  const std::string path = text_at(r.body, {"spec", "hostPath", "path"});
  if (path.empty())
    return Status::invalid("persistentvolume \"" + volume +
                           "\" is not a hostPath volume, which is all a local pod can mount");
  return fs::path(path);
}

Status write_file(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::unavailable("cannot write " + path.string());
  out << content;
  return out ? Status::ok() : Status::unavailable("cannot write " + path.string());
}

}  // namespace

uint32_t loopback_of(uint32_t ip, int slot) {
  if (slot <= 0 || slot > 255) return (ip & 0x00FFFFFFu) | 0x7F000000u;
  return 0x7F000000u | static_cast<uint32_t>(slot) << 16 | (ip & 0xFFFFu);
}

uint32_t range_address_of(uint32_t loopback, uint32_t range_base) {
  return (loopback & 0xFFFFu) | (range_base & 0xFFFF0000u);
}

std::string expand_vars(std::string_view text, const std::map<std::string, std::string>& env) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i++];
      continue;
    }
    if (text[i + 1] == '$') {  // $$ is a literal $
      out += '$';
      i += 2;
      continue;
    }
    if (text[i + 1] == '(') {
      auto close = text.find(')', i + 2);
      if (close != std::string_view::npos) {
        auto it = env.find(std::string(text.substr(i + 2, close - i - 2)));
        if (it != env.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
        out.append(text.substr(i, close - i + 1));
        i = close + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

std::string localize_arg(std::string arg,
                         const std::vector<std::pair<std::string, std::string>>& mounts,
                         const std::string& ip) {
  // A mount path at the start of the argument or of its value (after '=').
  size_t value = arg.find('=');
  for (size_t start : {size_t{0}, value == std::string::npos ? std::string::npos : value + 1}) {
    if (start == std::string::npos) continue;
    for (const auto& [path, folder] : mounts) {  // longest first
      if (arg.compare(start, path.size(), path) != 0) continue;
      size_t end = start + path.size();
      if (end != arg.size() && arg[end] != '/') continue;
      arg.replace(start, path.size(), folder);
      break;
    }
  }
  for (size_t at = arg.find("0.0.0.0:"); at != std::string::npos; at = arg.find("0.0.0.0:", at)) {
    bool bounded = at == 0 || arg[at - 1] == '=' || arg[at - 1] == ',';
    if (!bounded) {
      at += 8;
      continue;
    }
    arg.replace(at, 7, ip);
    at += ip.size() + 1;
  }
  return arg;
}

LocalPods::LocalPods(Client& client, LocalOptions options,
                     std::function<void(const std::string&)> wake)
    : client_(client), o_(std::move(options)), wake_(std::move(wake)) {}

LocalPods::~LocalPods() {
  stop_all(std::chrono::seconds(5));
}

std::string LocalPods::pod_dir(const json& pod) const {
  return (fs::path(o_.state_dir) / "pods" /
          (text_at(pod, {"metadata", "namespace"}) + "_" + text_at(pod, {"metadata", "name"}) +
           "_" + text_at(pod, {"metadata", "uid"})))
      .string();
}

std::string LocalPods::log_file(const std::string& pod_dir, const std::string& container) {
  return pod_dir + "/" + container + ".log";
}

bool LocalPods::control_plane(const json& pod) {
  // The syncer marks every pod it makes with its tenant object's UID and
  // namespace (syncer/names.h), after the tenant's own labels and
  // annotations: a tenant can neither drop the marks nor set owner
  // references, which the syncer sets to its anchor ConfigMap.
  const json& meta = field(pod, "metadata");
  if (field(meta, "annotations").contains("vkube.io/tenant-uid") ||
      field(meta, "labels").contains("vkube.io/tenant-namespace"))
    return false;
  for (const json& ref : field(meta, "ownerReferences"))
    if (ref.is_object() && ref.value("controller", false) == true &&
        text_at(ref, {"kind"}) == "StatefulSet" &&
        text_at(ref, {"apiVersion"}).starts_with("apps/"))
      return true;
  return false;
}

bool LocalPods::runs(const json& pod) const {
  if (o_.images.empty()) return false;
  bool local_image = false;
  for (const json& c : field(field(pod, "spec"), "containers")) {
    std::string repo = repository_name(text_at(c, {"image"}));
    if (std::find(o_.images.begin(), o_.images.end(), repo) != o_.images.end()) local_image = true;
  }
  if (!local_image) return false;
  if (control_plane(pod)) return true;
  return o_.unsandboxed && o_.unsandboxed(text_at(pod, {"metadata", "namespace"}));
}

Status LocalPods::start(const std::string& key, const json& pod, const std::string& ip) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Status::unavailable("the node agent is stopping");
    auto it = procs_.find(key);
    if (it != procs_.end() && !it->second.exited) return Status::ok();
  }
  const json& spec = field(pod, "spec");
  const json* container = nullptr;
  for (const json& c : field(spec, "containers")) {
    std::string repo = repository_name(text_at(c, {"image"}));
    if (std::find(o_.images.begin(), o_.images.end(), repo) != o_.images.end()) {
      container = &c;
      break;
    }
  }
  if (container == nullptr) return Status::invalid("no container of a local image");
  const std::string ns = text_at(pod, {"metadata", "namespace"});
  const std::string name = text_at(pod, {"metadata", "name"});
  const std::string uid = text_at(pod, {"metadata", "uid"});
  const std::string cname = text_at(*container, {"name"});
  const fs::path dir = pod_dir(pod);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::unavailable("cannot create " + dir.string() + ": " + ec.message());

  // Volumes first: a pod whose claims are not bound yet waits before
  // anything else is done for it (a token requested), as the kubelet waits
  // for its volumes before creating the sandbox.
  std::map<std::string, fs::path> volumes;
  for (const json& v : field(spec, "volumes")) {
    const std::string vname = text_at(v, {"name"});
    if (field(v, "persistentVolumeClaim").is_object()) {
      auto folder = claim_folder(client_, ns, text_at(v, {"persistentVolumeClaim", "claimName"}));
      if (!folder.is_ok()) return folder.status();
      volumes[vname] = std::move(folder).value();
    } else {
      volumes[vname] = dir / "volumes" / vname;
      // A Secret or ConfigMap volume holds a file per key (or per listed item), as the
      // kubelet writes them; the pod waits while the object is missing, unless optional.
      const bool secret_volume = field(v, "secret").is_object();
      if (secret_volume || field(v, "configMap").is_object()) {
        const json& src = field(v, secret_volume ? "secret" : "configMap");
        const std::string obj_name = text_at(src, {secret_volume ? "secretName" : "name"});
        auto data = read_data(client_, ns, secret_volume ? "secrets" : "configmaps", obj_name);
        if (!data) {
          if (field(src, "optional").is_boolean() && field(src, "optional").get<bool>()) continue;
          return Status::unavailable(std::string(secret_volume ? "secret" : "configmap") + " \"" +
                                     obj_name + "\" not found");
        }
        std::map<std::string, std::string> files;
        if (field(src, "items").is_array() && !field(src, "items").empty()) {
          for (const json& item : field(src, "items")) {
            auto it = data->find(text_at(item, {"key"}));
            if (it != data->end() && !text_at(item, {"path"}).empty())
              files[text_at(item, {"path"})] = it->second;
          }
        } else {
          files = std::move(*data);
        }
        for (const auto& [file, content] : files) {
          if (file.find("..") != std::string::npos) continue;
          const fs::path target = volumes[vname] / file;
          fs::create_directories(target.parent_path(), ec);
          std::FILE* f = std::fopen(target.c_str(), "wb");
          if (f == nullptr) return Status::unavailable("cannot write " + target.string());
          std::fwrite(content.data(), 1, content.size(), f);
          std::fclose(f);
        }
      }
    }
  }

  // The environment, as the kubelet builds it.
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  auto set = [&](const std::string& k, std::string v) {
    if (!env.count(k)) order.push_back(k);
    env[k] = std::move(v);
  };
  set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  {
    const json& h = field(spec, "hostname");
    set("HOSTNAME", h.is_string() && !h.get<std::string>().empty() ? h.get<std::string>() : name);
  }
  set("HOME", dir.string());
  // The addresses it must not dial (vkube/common/dial_policy.h), and what a
  // test's connection guard needs to watch this process too.
  if (std::string nets = dial_policy::simulated_networks(); !nets.empty())
    set(dial_policy::kEnvVar, nets);
  for (const char* passed : {"LD_PRELOAD", "VKUBE_CONNECT_GUARD_LOG"})
    if (const char* v = std::getenv(passed); v != nullptr && *v != '\0') set(passed, v);
  const std::string url = o_.api_url ? o_.api_url() : std::string();
  {
    // https://HOST:PORT
    std::string rest = url.substr(url.find("://") == std::string::npos ? 0 : url.find("://") + 3);
    auto colon = rest.rfind(':');
    std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
    std::string port = colon == std::string::npos ? "443" : rest.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    set("KUBERNETES_SERVICE_HOST", host);
    set("KUBERNETES_SERVICE_PORT", port);
    set("KUBERNETES_PORT", "tcp://" + host + ":" + port);
  }
  if (field(spec, "automountServiceAccountToken") != false) {
    std::string sa = text_at(spec, {"serviceAccountName"});
    if (sa.empty()) sa = "default";
    json request = {{"apiVersion", "authentication.k8s.io/v1"},
                    {"kind", "TokenRequest"},
                    {"spec",
                     {{"expirationSeconds", int64_t{365} * 24 * 3600},
                      {"boundObjectRef",
                       {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", name}, {"uid", uid}}}}}};
    ApiResult r = client_.call(
        "POST", "/api/v1/namespaces/" + ns + "/serviceaccounts/" + sa + "/token", request);
    if (!r.ok())
      return Status::unavailable("service account " + ns + "/" + sa + " token: " + r.body.dump());
    const fs::path account = dir / "serviceaccount";
    fs::create_directories(account, ec);
    std::ifstream ca_in(o_.ca_file, std::ios::binary);
    std::string ca((std::istreambuf_iterator<char>(ca_in)), std::istreambuf_iterator<char>());
    VKUBE_RETURN_IF_ERROR(write_file(account / "token", text_at(r.body, {"status", "token"})));
    VKUBE_RETURN_IF_ERROR(write_file(account / "ca.crt", ca));
    VKUBE_RETURN_IF_ERROR(write_file(account / "namespace", ns));
    set("VKUBE_SERVICE_ACCOUNT_DIR", account.string());
  }
  for (const json& from : field(*container, "envFrom")) {
    const std::string prefix = text_at(from, {"prefix"});
    for (const char* kind : {"configMapRef", "secretRef"}) {
      const json& ref = field(from, kind);
      if (!ref.is_object()) continue;
      auto data =
          read_data(client_, ns, kind[0] == 'c' ? "configmaps" : "secrets", text_at(ref, {"name"}));
      if (!data) {
        if (field(ref, "optional") == true) continue;
        return Status::not_found(std::string(kind[0] == 'c' ? "configmap" : "secret") + " \"" +
                                 text_at(ref, {"name"}) + "\" not found");
      }
      for (auto& [k, v] : *data) set(prefix + k, v);
    }
  }
  for (const json& e : field(*container, "env")) {
    const std::string k = text_at(e, {"name"});
    if (k.empty()) continue;
    if (field(e, "value").is_string()) {
      set(k, expand_vars(field(e, "value").get<std::string>(), env));
      continue;
    }
    const json& from = field(e, "valueFrom");
    if (field(from, "fieldRef").is_object()) {
      set(k, downward_field(pod, text_at(from, {"fieldRef", "fieldPath"}), ip));
      continue;
    }
    for (const char* kind : {"configMapKeyRef", "secretKeyRef"}) {
      const json& ref = field(from, kind);
      if (!ref.is_object()) continue;
      auto data =
          read_data(client_, ns, kind[0] == 'c' ? "configmaps" : "secrets", text_at(ref, {"name"}));
      auto value =
          data ? data->find(text_at(ref, {"key"})) : std::map<std::string, std::string>::iterator{};
      if (!data || value == data->end()) {
        if (field(ref, "optional") == true) break;
        return Status::not_found("couldn't find key " + text_at(ref, {"key"}) + " in " +
                                 (kind[0] == 'c' ? "ConfigMap " : "Secret ") + ns + "/" +
                                 text_at(ref, {"name"}));
      }
      set(k, value->second);
    }
  }

  // Where the volumes are mounted.
  std::vector<std::pair<std::string, std::string>> mounts;
  for (const json& m : field(*container, "volumeMounts")) {
    auto it = volumes.find(text_at(m, {"name"}));
    std::string path = text_at(m, {"mountPath"});
    if (it == volumes.end() || path.empty()) continue;
    fs::create_directories(it->second, ec);
    if (ec)
      return Status::unavailable("cannot create " + it->second.string() + ": " + ec.message());
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    mounts.emplace_back(path, it->second.string());
  }
  std::sort(mounts.begin(), mounts.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });

  std::vector<std::string> argv = {"vkube"};
  const json& command = field(*container, "command");
  if (command.is_array() && !command.empty()) {
    std::string first = command[0].is_string() ? command[0].get<std::string>() : std::string();
    if (fs::path(first).filename() != "vkube")
      return Status::invalid("a local pod runs the vkube binary only, not \"" + first + "\"");
    for (size_t i = 1; i < command.size(); ++i)
      if (command[i].is_string()) argv.push_back(command[i].get<std::string>());
  }
  for (const json& a : field(*container, "args"))
    if (a.is_string()) argv.push_back(a.get<std::string>());
  for (size_t i = 1; i < argv.size(); ++i)
    argv[i] = localize_arg(expand_vars(argv[i], env), mounts, ip);

  std::vector<std::string> envp;
  for (const std::string& k : order) envp.push_back(k + "=" + env[k]);
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : envp) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const std::string log_path = log_file(dir.string(), cname);
  // The last run's log stays as the previous container's (pods/log with
  // previous=true); older ones go.
  if (fs::exists(log_path, ec) && fs::file_size(log_path, ec) > 0)
    fs::rename(log_path, log_path + ".previous", ec);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Status::unavailable(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Status::unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const std::string cwd = dir.string();
  const char* binary = o_.binary.c_str();
  const pid_t parent = ::getpid();

  std::unique_lock lock(mu_);
  // vfork, not fork: fork would copy the page tables of the whole host
  // (hundreds of MiB, many threads) only for exec to drop them, and make
  // every page copy-on-write for the host meanwhile; with a hundred tenants
  // that was most of the host's time. The child shares our memory until it
  // execs, so it makes system calls only, on what was prepared above.
  pid_t pid = ::vfork();
  if (pid == 0) {
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlives the node agent
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (::chdir(cwd.c_str()) != 0) ::_exit(127);
    ::execve(binary, cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return Status::unavailable(std::string("fork: ") + std::strerror(errno));
  }
  if (Status s = logs_.add(out_pipe[0], err_pipe[0], log_path); !s.is_ok())
    VKUBE_LOG(warn, "simulated kubelet: a local pod's log is lost", {"pod", key},
              {"error", s.message()});
  Proc& p = procs_[key];
  p = Proc{};
  p.pid = pid;
  p.ip = ip;
  p.probe_port = probe_port(*container);
  p.env = std::move(envp);
  p.cwd = cwd;
  ++live_;
  if (!reaper_.joinable()) reaper_ = std::thread([this] { reap(); });
  cv_.notify_all();
  lock.unlock();
  VKUBE_LOG(info, "simulated kubelet: started a local process", {"pod", key}, {"pid", pid},
            {"ip", ip}, {"log", log_path});
  return Status::ok();
}

LocalPods::State LocalPods::state(const std::string& key, int* exit_code) {
  std::unique_lock lock(mu_);
  auto it = procs_.find(key);
  if (it == procs_.end()) return State::kNone;
  Proc& p = it->second;
  if (p.exited) {
    if (exit_code) *exit_code = p.exit_code;
    return State::kExited;
  }
  if (p.ready || p.probe_port == 0) return State::kReady;
  std::string ip = p.ip;
  int port = p.probe_port;
  lock.unlock();
  bool open = port_open(ip, port);
  lock.lock();
  it = procs_.find(key);
  if (it == procs_.end()) return State::kNone;
  if (open) it->second.ready = true;
  return it->second.exited ? State::kExited : open ? State::kReady : State::kStarting;
}

void LocalPods::terminate(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = procs_.find(key);
  if (it != procs_.end() && !it->second.exited) ::kill(-it->second.pid, SIGTERM);
}

void LocalPods::kill(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = procs_.find(key);
  if (it != procs_.end() && !it->second.exited) ::kill(-it->second.pid, SIGKILL);
}

std::optional<LocalPods::Sandbox> LocalPods::sandbox(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = procs_.find(key);
  if (it == procs_.end() || it->second.exited) return std::nullopt;
  return Sandbox{it->second.env, it->second.cwd, it->second.ip, it->second.pid};
}

bool LocalPods::has_probe(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = procs_.find(key);
  return it != procs_.end() && it->second.probe_port != 0;
}

void LocalPods::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = procs_.find(key);
  if (it != procs_.end() && it->second.exited) procs_.erase(it);
}

void LocalPods::stop_all(std::chrono::milliseconds grace) {
  std::unique_lock lock(mu_);
  stopping_ = true;
  for (auto& [key, p] : procs_)
    if (!p.exited) ::kill(-p.pid, SIGTERM);
  if (!cv_.wait_for(lock, grace, [&] { return live_ == 0; })) {
    for (auto& [key, p] : procs_)
      if (!p.exited) ::kill(-p.pid, SIGKILL);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return live_ == 0; });
  }
  cv_.notify_all();
  lock.unlock();
  if (reaper_.joinable()) reaper_.join();
}

void LocalPods::reap() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return live_ > 0 || stopping_; });
      if (live_ == 0 && stopping_) return;
    }
    // Waits without reaping first: the children of execs into these pods
    // (pod_exec.cpp) are their own waiters' to reap, so only a pod's process
    // is reaped here.
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    {
      std::lock_guard lock(mu_);
      bool ours = false;
      for (auto& [key, p] : procs_) ours = ours || (p.pid == info.si_pid && !p.exited);
      if (!ours) {
        // An exec's child, reaped by its waiter in a moment.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
    }
    int status = 0;
    pid_t pid = ::waitpid(info.si_pid, &status, 0);
    if (pid < 0) continue;
    std::string woke;
    {
      std::lock_guard lock(mu_);
      for (auto& [key, p] : procs_) {
        if (p.pid != pid || p.exited) continue;
        p.exited = true;
        p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --live_;
        woke = key;
        VKUBE_LOG(info, "simulated kubelet: a local process ended", {"pod", key}, {"pid", pid},
                  {"exit_code", p.exit_code});
        break;
      }
      cv_.notify_all();
    }
    if (!woke.empty() && wake_) wake_(woke);
  }
}

}  // namespace vkube::nodesim
