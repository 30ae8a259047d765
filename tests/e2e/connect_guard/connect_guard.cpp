// A guard for the e2e suite (loaded with LD_PRELOAD into every vkube process
// the fixture starts, and into their local pods): a connect() to an address
// outside 127.0.0.0/8 and ::1 is refused (ENETUNREACH) and recorded as one
// line in the file VKUBE_CONNECT_GUARD_LOG names, which the fixture checks
// when a cluster goes. Nothing a test does may leave the machine; kubectl and
// helm (static Go, which LD_PRELOAD cannot reach) only talk to vkube.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using ConnectFn = int (*)(int, const sockaddr*, socklen_t);

bool local_v4(const in_addr& a) {
  const uint32_t ip = ntohl(a.s_addr);
  return (ip >> 24) == 127 || ip == 0;  // 0.0.0.0 connects to this machine too
}

// Whether the destination leaves the machine (then `text` names it).
bool outside(const sockaddr* addr, socklen_t len, char* text, size_t size) {
  if (addr == nullptr) return false;
  if (addr->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    if (local_v4(in->sin_addr)) return false;
    char ip[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    std::snprintf(text, size, "%s:%u", ip, ntohs(in->sin_port));
    return true;
  }
  if (addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
      return false;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      in_addr v4;
      std::memcpy(&v4, in6->sin6_addr.s6_addr + 12, sizeof v4);
      if (local_v4(v4)) return false;
    }
    char ip[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    std::snprintf(text, size, "[%s]:%u", ip, ntohs(in6->sin6_port));
    return true;
  }
  return false;  // unix sockets, netlink, AF_UNSPEC (a UDP socket's disconnect)
}

void record(const char* where) {
  const char* path = std::getenv("VKUBE_CONNECT_GUARD_LOG");
  if (path == nullptr || *path == '\0') return;
  char exe[256] = {};
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) n = 0;
  char line[640];
  int len = std::snprintf(line, sizeof line, "pid %d (%s) connect %s\n",
                          static_cast<int>(::getpid()), exe, where);
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (len > 0 && ::write(fd, line, static_cast<size_t>(len)) < 0) {
    // Nothing else to do: the guard must not change what the process sees.
  }
  ::close(fd);
}

}  // namespace

extern "C" int connect(int fd, const sockaddr* addr, socklen_t len) {
  static ConnectFn real = reinterpret_cast<ConnectFn>(::dlsym(RTLD_NEXT, "connect"));
  char where[128];
  if (outside(addr, len, where, sizeof where)) {
    record(where);
    errno = ENETUNREACH;
    return -1;
  }
  return real(fd, addr, len);
}
